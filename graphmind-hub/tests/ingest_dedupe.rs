//! Replays are idempotent: (runId, seq) is stored once, across reconnects and hub restarts.

mod support;

use serde_json::json;
use support::*;

fn run_frames(run: &str) -> Vec<serde_json::Value> {
    vec![
        env(
            1,
            run,
            "run.started",
            json!({"app": "test-app", "sdk": {"name": "python", "version": "0.5.1"}, "meta": {"name": "dedupe"}}),
        ),
        env(
            2,
            run,
            "node.started",
            json!({"nodeId": "tool:add", "kind": "tool", "name": "add", "instanceId": "call_1", "input": {"a": 1}}),
        ),
        env(
            3,
            run,
            "node.finished",
            json!({"nodeId": "tool:add", "instanceId": "call_1", "durationMs": 0.5, "status": "ok", "output": 2}),
        ),
        env(4, run, "run.finished", json!({"status": "ok"})),
    ]
}

#[test]
fn replay_after_reconnect_stores_no_duplicate() {
    let h = hub(|_| {});
    let run = "run_aaaaaaaaaaaa";
    let token = block_on(async {
        let mut app = App::connect(h.port).await;
        for f in run_frames(run) {
            app.peer.send(&f).await;
        }
        // The same frames again on the same connection.
        for f in run_frames(run) {
            app.peer.send(&f).await;
        }
        app.session_token()
    });
    wait_for(10, "4 stored events", || {
        (h.seqs(run).len() == 4).then_some(())
    });
    // Python style: reconnect with the session token, a fresh hello seq, then the whole ring.
    block_on(async {
        let mut app = App::connect_resuming(h.port, Some(&token), 5).await;
        for f in run_frames(run) {
            app.peer.send(&f).await;
        }
        app.emit(run, "x.custom", json!({"late": true})).await;
    });
    wait_for(10, "the late event", || {
        (h.seqs(run).len() == 5).then_some(())
    });
    assert_eq!(h.seqs(run), vec![1, 2, 3, 4, 6]);
    let runs = h.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["eventCount"], json!(5));
    assert_eq!(runs[0]["status"], json!("ok"));
    assert_eq!(runs[0]["name"], json!("dedupe"));
    assert_eq!(h.health()["stats"]["duplicates"], json!(8));
}

#[test]
fn replay_after_a_hub_restart_stores_no_duplicate() {
    let dir = TempDir::new("restart");
    let run = "run_bbbbbbbbbbbb";
    {
        let s = InProcessHub::start_in(&dir.0, |_| {});
        block_on(async {
            let mut app = App::connect(s.port).await;
            for f in &run_frames(run)[..3] {
                app.peer.send(f).await;
            }
        });
        wait_for(10, "3 stored events", || {
            (s.seqs(run).len() == 3).then_some(())
        });
        s.stop();
    }
    let s = InProcessHub::start_in(&dir.0, |_| {});
    // The unfinished run of the earlier start waits (not live) for its app to report again.
    let before = s.runs();
    assert_eq!(before[0]["status"], json!("running"));
    assert_eq!(before[0]["live"], json!(false));
    assert_eq!(before[0]["eventCount"], json!(3));
    block_on(async {
        let mut app = App::connect_resuming(s.port, Some("stale-token"), 10).await;
        for f in run_frames(run) {
            app.peer.send(&f).await;
        }
    });
    wait_for(10, "the finished run", || {
        (s.runs()[0]["status"] == json!("ok")).then_some(())
    });
    assert_eq!(s.seqs(run), vec![1, 2, 3, 4]);
    assert_eq!(s.runs()[0]["eventCount"], json!(4));
}
