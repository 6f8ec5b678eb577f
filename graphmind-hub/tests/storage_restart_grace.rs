//! Runs an earlier start left `running` get the abandon grace after a restart, like any run
//! whose app went away: they stay `running` (not live) meanwhile and become `abandoned` — in the
//! API and the stored row — only if no app claims them in time. (A restart used to mark every
//! unfinished run abandoned at once, so a quick hub restart showed live runs as abandoned.)

mod support;

use serde_json::{Value, json};
use support::{App, InProcessHub, TempDir, block_on, env, wait_for};

fn status(s: &InProcessHub, run: &str) -> Value {
    s.get_json(&format!("/api/runs/{run}"))["status"].clone()
}

/// A first start where one app leaves `run_gone` and `run_back` unfinished; returns the
/// session token of that app and its next seq.
fn first_start(dir: &TempDir) -> (String, u64) {
    let s = InProcessHub::start_in(&dir.0, |_| {});
    let (token, seq) = block_on(async {
        let mut app = App::running(s.port, "run_gone", "gone").await;
        app.start_run("run_back", "back").await;
        (app.session_token(), app.seq)
    });
    wait_for(10, "both runs stored", || {
        (s.seqs("run_gone") == [1] && s.seqs("run_back") == [2]).then_some(())
    });
    s.stop();
    (token, seq)
}

#[test]
fn unclaimed_runs_of_an_earlier_start_are_abandoned_after_the_grace() {
    let dir = TempDir::new("restart-grace");
    let (token, seq) = first_start(&dir);
    let s = InProcessHub::start_in(&dir.0, |c| {
        c.abandon_grace = std::time::Duration::from_millis(2500)
    });
    for run in ["run_gone", "run_back"] {
        assert_eq!(
            status(&s, run),
            json!("running"),
            "{run} right after the start"
        );
        assert_eq!(s.stored_status(run), "running");
    }
    // The app of run_back comes back (a fresh session: its old token means nothing here) and
    // replays it: it claims the run, which is live again.
    block_on(async {
        let mut app = App::connect_resuming(s.port, Some(&token), seq).await;
        // The same frame again (seq 2 of the first session): a duplicate.
        app.peer
            .send(&env(
                2,
                "run_back",
                "run.started",
                json!({"app": "test-app", "sdk": {"name": "rust", "version": "0.1.0"}, "meta": {"name": "back"}}),
            ))
            .await;
        wait_for(10, "run_back claimed", || {
            (s.get_json("/api/runs/run_back")["live"] == json!(true)).then_some(())
        });
        wait_for(10, "run_gone abandoned", || {
            (status(&s, "run_gone") == json!("abandoned")).then_some(())
        });
        assert_eq!(s.stored_status("run_gone"), "abandoned");
        assert_eq!(
            status(&s, "run_back"),
            json!("running"),
            "a claimed run stays"
        );
        assert_eq!(s.stored_status("run_back"), "running");
        drop(app);
    });
    assert_eq!(s.health()["stats"]["duplicates"], json!(1));
}
