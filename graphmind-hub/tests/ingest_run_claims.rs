//! Runs are claimed: a run's events, pauses and releases are taken only from the `/ingest`
//! connection that wrote the run first (or its reconnect presenting the session's
//! resumeToken). Another local process could, with one frame each, close an app's pause
//! (the user's resume then answered `410 gone` and the app stayed held), move the pause to
//! itself (the user's inject went to it) or write the run's next seqs first (the real events
//! were dropped as duplicates). Those frames are now dropped and counted on `/health`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// `stats.foreignRunFrames` of the hub on `port`.
async fn foreign(port: u16) -> u64 {
    let h = get_async(port, "/health".into()).await.json();
    h["stats"]["foreignRunFrames"]
        .as_u64()
        .expect("foreignRunFrames")
}

/// Waits until the hub counted at least `n` foreign-run frames.
async fn wait_foreign(port: u16, n: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while foreign(port).await < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hub did not count {n} foreign-run frames"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the hub knows `run` (its first writer has claimed it).
async fn wait_run(port: u16, run: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while get_async(port, format!("/api/runs/{run}")).await.status != 200 {
        assert!(tokio::time::Instant::now() < deadline, "no run {run}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pause as the HTTP API shows it.
async fn pause_state(port: u16, run: &str, pause: &str) -> Value {
    let r = get_async(port, format!("/api/runs/{run}/pauses/{pause}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn another_app_cannot_close_a_pause_of_a_run_it_did_not_claim() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let (port, ctl) = (h.port, h.control());
    let run = "run_claim_close";
    block_on(async {
        let mut victim = App::holding(port, run, "victim", "pay", "p_1", "before", json!({})).await;
        wait_for_pause(port).await;
        let mut attacker = App::connect(port).await;
        attacker.confirm(run, "p_1", "continue").await;
        wait_foreign(port, 1).await;
        assert_eq!(pause_state(port, run, "p_1").await["state"], json!("open"));

        // The user's resume still reaches the real app and is answered.
        let resume = tokio::spawn(ctl.resume(run, "p_1", json!({"action": "continue"})));
        let frame = victim.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["pauseId"], json!("p_1"));
        victim.confirm(run, "p_1", "continue").await;
        let r = resume.await.expect("join");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["outcome"], json!("resumed"));
    });
}

#[test]
fn another_app_cannot_move_a_pause_to_itself() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let (port, ctl) = (h.port, h.control());
    let run = "run_claim_move";
    block_on(async {
        let mut victim =
            App::holding(port, run, "victim", "is_admin", "p_1", "before", json!({})).await;
        wait_for_pause(port).await;
        let mut attacker = App::connect(port).await;
        attacker
            .pause_at(run, "is_admin", "p_1", "before", json!({}))
            .await;
        wait_foreign(port, 2).await;

        let resume = tokio::spawn(ctl.resume(
            run,
            "p_1",
            json!({"action": "inject", "output": {"admin": false}}),
        ));
        let frame = victim.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["output"], json!({"admin": false}));
        victim.confirm(run, "p_1", "inject").await;
        let r = resume.await.expect("join");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["outcome"], json!("resumed"));
        // The attacker saw no resume at all.
        match attacker.peer.recv(1000).await {
            Got::Json(v) => assert_ne!(v["type"], json!("exec.resume"), "{v}"),
            Got::Timeout | Got::Closed(_) => {}
        }
    });
}

#[test]
fn another_app_cannot_write_a_runs_next_seqs_first() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_claim_seqs";
    block_on(async {
        let mut victim = App::running(port, run, "victim").await;
        wait_run(port, run).await;
        let next = victim.seq;
        let mut attacker = App::connect(port).await;
        for i in 0..5 {
            attacker
                .peer
                .send(&env(
                    next + i,
                    run,
                    "node.finished",
                    json!({"nodeId": "tool:pay", "instanceId": "call_1", "durationMs": 1.0, "status": "ok", "output": "forged"}),
                ))
                .await;
        }
        attacker
            .peer
            .send(&env(
                next + 5,
                run,
                "run.finished",
                json!({"status": "error"}),
            ))
            .await;
        wait_foreign(port, 6).await;
        for _ in 0..5 {
            victim
                .emit(
                    run,
                    "node.finished",
                    json!({"nodeId": "tool:pay", "instanceId": "call_1", "durationMs": 1.0, "status": "ok", "output": "real"}),
                )
                .await;
        }
        victim
            .emit(run, "run.finished", json!({"status": "ok"}))
            .await;
    });
    let events = wait_for(10, "the real events", || {
        let e = h.events(run);
        (e.len() == 7).then_some(e)
    });
    for e in &events[1..6] {
        assert_eq!(e["payload"]["output"], json!("real"), "{e}");
    }
    assert_eq!(
        h.get_json(&format!("/api/runs/{run}"))["status"],
        json!("ok")
    );
    assert_eq!(h.health()["stats"]["duplicates"], json!(0));
}

#[test]
fn a_reconnect_with_the_resume_token_keeps_the_claim_one_without_it_does_not() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_claim_reconnect";
    block_on(async {
        let app = App::running(port, run, "reconnects").await;
        wait_run(port, run).await;
        let token = app.session_token();
        let seq = app.seq;
        drop(app);
        // A stranger's frame while the owner is away is not taken.
        let mut stranger = App::connect(port).await;
        stranger
            .peer
            .send(&env(
                seq,
                run,
                "node.started",
                json!({"nodeId": "tool:x", "kind": "tool", "name": "x", "instanceId": "call_x", "input": {}}),
            ))
            .await;
        wait_foreign(port, 1).await;
        // The owner, back with its token, goes on.
        let mut app = App::connect_resuming(port, Some(&token), seq).await;
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
    });
    wait_for(10, "the run finished", || {
        (h.get_json(&format!("/api/runs/{run}"))["status"] == json!("ok")).then_some(())
    });
    assert_eq!(h.events(run).len(), 2);
}
