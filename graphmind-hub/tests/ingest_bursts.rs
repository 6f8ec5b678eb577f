//! Frames that arrive together (one write of many frames, read by the hub in one go and taken
//! in as a batch) are handled as if they had come one by one: each is stored, deduped or
//! refused and counted, in order, and a close right behind them loses none of them.

mod support;

use futures_util::SinkExt;
use serde_json::json;
use support::*;
use tokio_tungstenite::tungstenite::Message;

fn node(seq: u64, run: &str) -> String {
    let (kind, payload) = if seq.is_multiple_of(2) {
        (
            "node.started",
            json!({"nodeId": "tool:add", "kind": "tool", "name": "add",
                   "instanceId": format!("call_{seq}"), "input": {"a": seq}}),
        )
    } else {
        (
            "node.finished",
            json!({"nodeId": "tool:add", "instanceId": format!("call_{}", seq - 1),
                   "durationMs": 0.5, "status": "ok", "output": seq}),
        )
    };
    env(seq, run, kind, payload).to_string()
}

/// The run's `run.started` at seq 1.
fn run_started(run: &str) -> String {
    env(
        1,
        run,
        "run.started",
        json!({"app": "test-app", "sdk": {"name": "rust", "version": "0.1.0"}}),
    )
    .to_string()
}

/// Writes `frames` as one burst: fed without flushing, then flushed at once.
async fn feed_all(app: &mut App, frames: Vec<String>) {
    for f in frames {
        app.peer.ws.feed(Message::text(f)).await.expect("feed");
    }
    app.peer.ws.flush().await.expect("flush");
}

#[test]
fn a_burst_closed_right_after_is_taken_in_whole_and_counted_as_one_by_one() {
    let h = hub(|_| {});
    let run = "run_burst0000001";
    block_on(async {
        let mut app = App::connect(h.port).await;
        let mut frames = vec![run_started(run)];
        frames.extend((2..=300).map(|seq| node(seq, run)));
        // Within the burst: a frame that is no envelope, a duplicate, a run-independent frame.
        frames.insert(100, "{not json".to_owned());
        frames.insert(200, node(150, run));
        frames.insert(250, env(0, "*", "x.ping", json!({})).to_string());
        feed_all(&mut app, frames).await;
        app.peer.ws.close(None).await.expect("close");
    });
    wait_for(10, "300 stored events", || {
        (h.seqs(run).len() == 300).then_some(())
    });
    assert_eq!(h.seqs(run), (1..=300).collect::<Vec<u64>>());
    let stats = &h.health()["stats"];
    assert_eq!(stats["eventsAccepted"], json!(300));
    assert_eq!(stats["duplicates"], json!(1));
    assert_eq!(stats["invalidFrames"], json!(1));
    assert_eq!(stats["framesIn"], json!(304), "hello, 300 events, 3 others");
    let runs = h.runs();
    assert_eq!(runs[0]["eventCount"], json!(300));
}

#[test]
fn frames_behind_a_version_mismatch_in_the_same_burst_are_not_taken_in() {
    let h = hub(|_| {});
    let run = "run_burst0000002";
    let code = block_on(async {
        let mut app = App::connect(h.port).await;
        let mut frames = vec![run_started(run)];
        frames.extend((2..=5).map(|seq| node(seq, run)));
        let mut v2 = env(6, run, "x.custom", json!({}));
        v2["gm"] = json!(2);
        frames.push(v2.to_string());
        frames.extend((7..=10).map(|seq| node(seq, run)));
        feed_all(&mut app, frames).await;
        app.peer.close_code(5000).await
    });
    assert_eq!(code, Some(1002));
    wait_for(10, "5 stored events", || {
        (h.seqs(run).len() == 5).then_some(())
    });
    assert_eq!(h.seqs(run), vec![1, 2, 3, 4, 5]);
    assert_eq!(h.health()["stats"]["eventsAccepted"], json!(5));
}
