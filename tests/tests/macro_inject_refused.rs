//! An injected value that does not fit the tool's return type is refused (`exec.refused`,
//! code schema, a readable message) and the gate stays held until a fitting one arrives.

mod macro_support;

use graphmind_tests::FakeDebugger;
use macro_support::{
    SECOND, attached, events, finished, pause_id, paused, run_finished, wait_count,
};
use serde_json::json;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Order {
    id: String,
    cents: u64,
}

#[graphmind::tool]
async fn lookup(id: String) -> Result<Order, String> {
    Err(format!("no order {id}"))
}

#[tokio::test]
async fn a_misfit_inject_at_the_error_gate_is_refused_then_a_fitting_one_recovers() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", lookup("ORD-1O42".into())).await }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["point"], "error");
    let id = pause_id(&held);
    assert!(hub.inject(
        held.run_id(),
        &id,
        json!({"id": "ORD-1042", "cents": "lots"})
    ));
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "schema");
    let message = refused[0].payload()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(r#"cents: invalid type: string "lots", expected u64"#),
        "the refusal names the field path: {message}"
    );
    tokio::time::sleep(SECOND / 10).await;
    assert!(!task.is_finished(), "the gate stays held after a refusal");

    assert!(hub.inject(held.run_id(), &id, json!({"id": "ORD-1042", "cents": 4999})));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Ok(Order {
            id: "ORD-1042".into(),
            cents: 4999
        })
    );
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:r",
            "node.started tool:lookup",
            "node.error tool:lookup String",
            "exec.paused tool:lookup error",
            "exec.refused schema",
            "exec.resumed inject",
            "node.finished tool:lookup ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ]
    );
    let fin = &finished(&hub, "tool:lookup")[0];
    assert_eq!(
        (
            fin["injected"].as_bool(),
            fin["recoveredFromError"].as_bool()
        ),
        (Some(true), Some(true))
    );
    gm.dispose().await;
}
