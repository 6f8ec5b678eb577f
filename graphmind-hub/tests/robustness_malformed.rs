//! Malformed frames of every kind are counted and ignored: the hub never crashes and one bad
//! frame never poisons a run or a connection.

mod support;

use serde_json::json;
use support::*;

fn junk(run: &str) -> Vec<String> {
    let deep = format!(
        r#"{{"gm":1,"seq":50,"ts":0,"runId":"{run}","type":"x.deep","payload":{{"a":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let deep_objects = format!(
        r#"{{"gm":1,"seq":51,"ts":0,"runId":"{run}","type":"x.deep","payload":{}1{}}}"#,
        r#"{"a":"#.repeat(5_000),
        "}".repeat(5_000)
    );
    let mut v: Vec<String> = vec![
        // Not JSON at all.
        "not json".into(), String::new(), "{".into(), "[]".into(), "null".into(), "123".into(),
        "\"just a string\"".into(), "{\"gm\":1,".into(), "\u{0}\u{1}".into(),
        // Envelope fields of the wrong type or missing.
        json!({"gm": 1, "seq": "7", "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "seq": -1, "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "seq": 1.5, "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": 5, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": 7, "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "run.finished", "payload": []}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "run.finished", "payload": "ok"}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": "now", "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"seq": 7, "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        json!({"gm": 1, "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "ok"}}).to_string(),
        // Known types with bad payloads.
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "run.finished", "payload": {"status": "meh"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "node.started", "payload": {"kind": "tool"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "exec.paused", "payload": {"pauseId": 1, "nodeId": "x", "point": "sideways"}}).to_string(),
        json!({"gm": 1, "seq": 7, "ts": 0, "runId": run, "type": "exec.resumed", "payload": {"pauseId": "p"}}).to_string(),
        // Huge numbers.
        format!(r#"{{"gm":1,"seq":1e400,"ts":0,"runId":"{run}","type":"run.finished","payload":{{"status":"ok"}}}}"#),
        format!(r#"{{"gm":1,"seq":18446744073709551616,"ts":0,"runId":"{run}","type":"run.finished","payload":{{"status":"ok"}}}}"#),
        format!(r#"{{"gm":1,"seq":9007199254740992,"ts":0,"runId":"{run}","type":"run.finished","payload":{{"status":"ok"}}}}"#),
        format!(r#"{{"gm":1,"seq":8,"ts":1e30,"runId":"{run}","type":"run.finished","payload":{{"status":"ok"}}}}"#),
        format!(r#"{{"gm":1,"seq":8,"ts":0,"runId":"{run}","type":"node.finished","payload":{{"nodeId":"n","durationMs":1e999,"status":"ok"}}}}"#),
        // Deep nesting.
        deep,
        deep_objects,
    ];
    // Hub → app types from an app are ignored, not stored.
    v.push(json!({"gm": 1, "seq": 60, "ts": 0, "runId": run, "type": "exec.resume", "payload": {"pauseId": "p", "action": "continue"}}).to_string());
    v.push(json!({"gm": 1, "seq": 61, "ts": 0, "runId": "*", "type": "mode.set", "payload": {"mode": "step"}}).to_string());
    v
}

#[test]
fn malformed_frames_never_crash_the_hub_or_poison_a_run() {
    let h = hub(|_| {});
    let run = "run_500000000001";
    let n_junk = junk(run).len();
    block_on(async {
        let mut app = App::running(h.port, run, "robust").await; // seq 1
        for (i, j) in junk(run).into_iter().enumerate() {
            app.peer.send_text(&j).await;
            app.peer.send_binary(vec![0xff, 0x00, 0x13]).await;
            // A valid event after every bad frame.
            app.emit(run, "x.ok", json!({"i": i})).await;
        }
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
    });
    let want = 1 + n_junk + 1;
    wait_for(20, "every valid event", || {
        (h.seqs(run).len() == want).then_some(())
    });
    let seqs = h.seqs(run);
    assert_eq!(seqs, (1..=u64::try_from(want).unwrap()).collect::<Vec<_>>());
    assert_eq!(h.get("/health").status, 200, "the hub stopped serving");
    let health = h.health();
    let stats = &health["stats"];
    assert_eq!(stats["binaryFrames"], json!(n_junk));
    // Everything except the two ignored hub → app frames is counted invalid.
    assert_eq!(stats["invalidFrames"], json!(n_junk - 2), "{stats}");
    let runs = h.runs();
    assert_eq!(runs[0]["status"], json!("ok"));
    assert_eq!(runs[0]["eventCount"], json!(want));
    assert_eq!(h.get_json("/api/debug")["mode"], json!("run"));
    // The hub still takes new connections.
    block_on(async {
        let _again = App::running(h.port, "run_500000000002", "after").await;
    });
    wait_for(10, "the second run", || (h.runs().len() == 2).then_some(()));
}

#[test]
fn junk_before_hello_does_not_stop_the_handshake() {
    let h = hub(|_| {});
    block_on(async {
        let mut peer = Peer::connect(h.port, "/ingest").await;
        for j in junk("run_500000000003") {
            peer.send_text(&j).await;
        }
        peer.send_binary(vec![1, 2, 3]).await;
        peer.send(&hello(0, None)).await;
        let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
        assert_eq!(ack["payload"]["versions"]["protocol"], json!(1));
    });
    assert!(h.runs().is_empty());
}

#[test]
fn lone_surrogate_escapes_from_python_are_mended_not_dropped() {
    let h = hub(|_| {});
    let run = "run_500000000004";
    block_on(async {
        let mut app = App::running(h.port, run, "surrogates").await;
        app.peer
            .send_text(&format!(
                r#"{{"gm": 1, "seq": 100, "ts": 0, "runId": "{run}", "type": "node.finished", "payload": {{"nodeId": "tool:t", "instanceId": "c", "durationMs": 1.0, "status": "ok", "output": "a\ud800b \ud83d\ude00"}}}}"#
            ))
            .await;
    });
    let events = wait_for(10, "2 events", || {
        let e = h.events(run);
        (e.len() == 2).then_some(e)
    });
    assert_eq!(
        events[1]["payload"]["output"],
        json!("a\u{fffd}b \u{1f600}")
    );
    assert_eq!(h.health()["stats"]["invalidFrames"], json!(0));
}
