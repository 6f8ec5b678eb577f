//! Unknown message types and unknown fields are stored opaquely, never stripped.

mod support;

use serde_json::json;
use support::*;

#[test]
fn unknown_types_and_fields_are_stored_as_sent() {
    let h = hub(|_| {});
    let run = "run_cccccccccccc";
    block_on(async {
        let mut app = App::running(h.port, run, "opaque").await;
        app.emit(
            run,
            "x.future.thing",
            json!({"anything": [1, {"deep": true}], "n": 1.5}),
        )
        .await;
        app.peer
            .send(&json!({"gm": 1, "seq": 9, "ts": 5, "runId": run, "type": "node.started",
                          "payload": {"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": "c1", "newField": {"x": 1}},
                          "envelopeExtra": "kept"}))
            .await;
    });
    let events = wait_for(10, "3 events", || {
        let e = h.events(run);
        (e.len() == 3).then_some(e)
    });
    assert_eq!(events[1]["type"], json!("x.future.thing"));
    assert_eq!(
        events[1]["payload"],
        json!({"anything": [1, {"deep": true}], "n": 1.5})
    );
    assert_eq!(events[2]["payload"]["newField"], json!({"x": 1}));
    assert_eq!(events[2]["envelopeExtra"], json!("kept"));
    assert_eq!(h.health()["stats"]["unknownTypes"], json!(1));
}

/// Regression: an event of an unknown type sent without a `payload` key was dropped as
/// invalid; the reference hub stores it, and so does this one (as sent: no payload added).
#[test]
fn an_unknown_type_without_a_payload_is_stored_not_dropped() {
    let h = hub(|_| {});
    let run = "run_dddddddddddd";
    block_on(async {
        let mut app = App::running(h.port, run, "bare").await;
        app.peer
            .send(
                &json!({"gm": 1, "seq": 50, "ts": 6, "runId": run, "type": "x.bare.marker",
                          "note": "no payload"}),
            )
            .await;
        // A known type without a payload is still invalid.
        app.peer
            .send(&json!({"gm": 1, "seq": 51, "ts": 7, "runId": run, "type": "node.error"}))
            .await;
        app.emit(run, "x.after", json!({"n": 1})).await;
    });
    let events = wait_for(10, "the bare event and the one after it", || {
        let e = h.events(run);
        (e.len() == 3).then_some(e)
    });
    let bare = events
        .iter()
        .find(|e| e["type"] == json!("x.bare.marker"))
        .unwrap_or_else(|| panic!("the bare event is stored: {events:?}"));
    assert_eq!(bare["seq"], json!(50));
    assert_eq!(bare["note"], json!("no payload"));
    assert!(bare.get("payload").is_none(), "{bare}");
    assert!(events.iter().any(|e| e["type"] == json!("x.after")));
    assert!(events.iter().all(|e| e["type"] != json!("node.error")));
    let stats = &h.health()["stats"];
    assert_eq!(stats["unknownTypes"], json!(2), "{stats}");
    assert_eq!(stats["invalidFrames"], json!(1), "{stats}");
}
