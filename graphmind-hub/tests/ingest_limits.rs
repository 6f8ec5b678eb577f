//! Protocol limits on /ingest: gm mismatch closes 1002, a frame over 16 MiB closes 1009, and a
//! payload over 512 KB is shrunk before it is stored or fanned out.

mod support;

use serde_json::json;
use support::*;

#[test]
fn gm_mismatch_closes_with_1002_before_and_after_hello() {
    let h = hub(|_| {});
    block_on(async {
        let mut peer = Peer::connect(h.port, "/ingest").await;
        peer.send(
            &json!({"gm": 2, "seq": 0, "ts": 0, "runId": "*", "type": "hello", "payload": {}}),
        )
        .await;
        assert_eq!(peer.close_code(5000).await, Some(1002));

        let mut app = App::running(h.port, "run_dddddddddddd", "x").await;
        app.peer.send(&json!({"gm": 3, "seq": 5, "ts": 0, "runId": "run_dddddddddddd", "type": "run.finished", "payload": {"status": "ok"}})).await;
        assert_eq!(app.peer.close_code(5000).await, Some(1002));
    });
    // The frame before the mismatch was kept.
    wait_for(10, "the run", || {
        (h.seqs("run_dddddddddddd") == vec![1]).then_some(())
    });
}

#[test]
fn frame_over_16_mib_closes_with_1009_and_the_hub_lives_on() {
    let h = hub(|_| {});
    block_on(async {
        let mut app = App::connect(h.port).await;
        let big = "x".repeat(16 * 1024 * 1024 + 1);
        let _ = app.peer.try_send_text(big).await;
        assert_eq!(app.peer.close_code(10_000).await, Some(1009));
        let _again = App::running(h.port, "run_eeeeeeeeeeee", "after").await;
    });
    wait_for(10, "the run after", || (h.runs().len() == 1).then_some(()));
    assert_eq!(h.health()["ok"], json!(true));
}

#[test]
fn payload_over_512_kb_is_shrunk_before_storing_and_fan_out() {
    let h = hub(|_| {});
    let run = "run_ffffffffffff";
    block_on(async {
        let mut viewer = Peer::viewer(h.port).await;
        viewer.until(5000, |v| v["type"] == "hello").await;
        let mut app = App::running(h.port, run, "big").await;
        viewer
            .send(&json!({"type": "subscribe", "runId": run}))
            .await;
        viewer.until(5000, |v| v["type"] == "replayed").await;
        app.emit(
            run,
            "node.finished",
            json!({
                "nodeId": "tool:big", "instanceId": "c1", "durationMs": 1.0, "status": "ok",
                "output": {"blob": "a".repeat(700_000), "n": 7}
            }),
        )
        .await;
        let live = viewer
            .until(10_000, |v| {
                v["type"] == "events"
                    && v["events"]
                        .as_array()
                        .is_some_and(|e| e.iter().any(|e| e["type"] == "node.finished"))
            })
            .await;
        let ev = live["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "node.finished")
            .unwrap();
        assert_eq!(ev["type"], json!("node.finished"));
        assert!(ev.to_string().len() < 600 * 1024, "fan-out was not shrunk");
        assert_eq!(ev["payload"]["nodeId"], json!("tool:big"));
        assert_eq!(ev["payload"]["__graphmindTruncated"], json!(true));
    });
    let events = wait_for(10, "2 events", || {
        let e = h.events(run);
        (e.len() == 2).then_some(e)
    });
    let stored = &events[1];
    let payload_len = stored["payload"].to_string().len();
    assert!(
        payload_len <= 512 * 1024,
        "stored payload is {payload_len} bytes"
    );
    assert_eq!(stored["payload"]["nodeId"], json!("tool:big"));
    assert_eq!(stored["payload"]["status"], json!("ok"));
    assert_eq!(stored["payload"]["__graphmindTruncated"], json!(true));
    assert_eq!(h.health()["stats"]["shrunk"], json!(1));
}
