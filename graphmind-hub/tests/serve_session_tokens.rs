//! The hub's session tokens (hello.ack `sessionToken`, sent back as `resumeToken`) stay
//! bounded over a long life: the tokens of an app that went away more than the abandon grace
//! ago and owns no unfinished run are forgotten, and an app keeps only its newest few. An app
//! that owns an unfinished run can still reclaim it with its latest token, also after the
//! grace (the run is `abandoned` meanwhile) and after other apps' tokens expired.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{App, TestHub, block_on, hub, wait_for};

fn tokens(h: &TestHub) -> u64 {
    h.health()["sessionTokens"]
        .as_u64()
        .expect("sessionTokens in /health")
}

fn summary(h: &TestHub, run: &str) -> Value {
    let r = h.get(&format!("/api/runs/{run}"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn tokens_of_apps_gone_with_nothing_to_reclaim_are_forgotten() {
    let h = hub(|c| c.abandon_grace = std::time::Duration::from_millis(300));
    let n = 20;
    let old_token = block_on(async {
        let mut first = None;
        for i in 0..n {
            let mut app = App::connect(h.port).await;
            first.get_or_insert_with(|| app.session_token());
            let run = format!("run_tok_{i:03}");
            app.start_run(&run, "short").await;
            app.emit(&run, "run.finished", json!({"status": "ok"}))
                .await;
            // The hub takes the frames in before the socket goes.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        first.expect("a token")
    });
    wait_for(10, "every run finished", || {
        (h.runs()
            .iter()
            .filter(|r| r["status"] == json!("ok"))
            .count()
            == n)
            .then_some(())
    });
    wait_for(10, "the tokens forgotten", || {
        (tokens(&h) == 0).then_some(())
    });
    let health = h.health();
    assert_eq!(
        health["stats"]["sessionTokensExpired"],
        json!(n),
        "{health}"
    );
    assert_eq!(health["apps"], json!(0), "{health}");

    // An app coming back with a forgotten token is simply a new session.
    block_on(async {
        let app = App::connect_resuming(h.port, Some(&old_token), 100).await;
        let t = app.session_token();
        assert_ne!(t, old_token);
        assert_eq!(tokens(&h), 1);
        drop(app);
    });
    wait_for(10, "that token forgotten too", || {
        (tokens(&h) == 0).then_some(())
    });
}

#[test]
fn an_app_keeps_its_newest_tokens_and_reclaims_its_run_after_others_expired() {
    let h = hub(|c| c.abandon_grace = std::time::Duration::from_millis(300));
    let run = "run_tok_reclaim";
    let (token, seq) = block_on(async {
        let mut app = App::running(h.port, run, "reclaim-me").await;
        let mut token = app.session_token();
        let mut seq = app.seq;
        // A flaky link: ten reconnects, each with the latest token.
        for _ in 0..10 {
            drop(app);
            app = App::connect_resuming(h.port, Some(&token), seq).await;
            token = app.session_token();
            seq = app.seq;
        }
        // A bystander that finishes and leaves: its token expires.
        let mut other = App::running(h.port, "run_tok_other", "other").await;
        other
            .emit("run_tok_other", "run.finished", json!({"status": "ok"}))
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(other);
        // Only the newest few of the flaky app's eleven tokens stay.
        wait_for(10, "old tokens trimmed", || (tokens(&h) <= 4).then_some(()));
        assert_eq!(summary(&h, run)["live"], json!(true));
        drop(app);
        (token, seq)
    });
    wait_for(10, "the run abandoned", || {
        (summary(&h, run)["status"] == json!("abandoned")).then_some(())
    });
    // Well past the grace: the bystander's token is gone, the flaky app's are kept (it owns an
    // unfinished run).
    std::thread::sleep(Duration::from_millis(1500));
    let left = tokens(&h);
    assert!((1..=4).contains(&left), "{left} tokens left");
    block_on(async {
        let mut app = App::connect_resuming(h.port, Some(&token), seq).await;
        let s = summary(&h, run);
        assert_eq!(s["status"], json!("running"), "{s}");
        assert_eq!(s["live"], json!(true), "{s}");
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(app);
    });
    wait_for(10, "finished", || {
        (summary(&h, run)["status"] == json!("ok")).then_some(())
    });
    // Finished and gone: nothing left to reclaim, no token left.
    wait_for(10, "all tokens forgotten", || {
        (tokens(&h) == 0).then_some(())
    });
}
