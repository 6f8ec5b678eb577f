//! An app announces events its replay ring lost (`"dropped": n` on the next envelope it
//! sends): the hub stores that envelope as sent and counts the loss once in `/health`
//! (`clientDropped`), not again when the same frame is replayed.

mod support;

use serde_json::json;
use support::{App, block_on, env, hub, wait_for};

#[test]
fn announced_losses_are_counted_once() {
    let h = hub(|_| {});
    let mut frame = env(
        9,
        "run_lossy",
        "node.started",
        json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": "c1"}),
    );
    frame["dropped"] = json!(7);
    block_on(async {
        let mut app = App::running(h.port, "run_lossy", "lossy").await;
        app.peer.send(&frame).await;
        app.peer.send(&frame).await; // a replay of it
    });
    let events = wait_for(10, "both events", || {
        let ev = h.events("run_lossy");
        (ev.len() == 2).then_some(ev)
    });
    assert_eq!(events[1], frame, "stored as sent, dropped included");
    let stats = h.health()["stats"].clone();
    assert_eq!(stats["clientDropped"], json!(7), "{stats}");
    assert_eq!(stats["duplicates"], json!(1), "{stats}");
}
