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
