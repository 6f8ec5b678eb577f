//! `Node::finish_with` takes typed `Extras` (through `.into()`): each field set reaches `node.finished` under its
//! wire name, and nothing else is added.

use std::time::Duration;

use graphmind::node::{Extras, Node};
use graphmind::protocol::{NodeKind, Status};
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

/// Every key of each `node.finished` of `node_id` other than the ones every node carries.
async fn finished_extras(agent: impl Future<Output = ()>, node_id: &str) -> Vec<Value> {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("finish-extras"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm.run("a", agent).await.expect("not aborted");
    hub.wait_for_kind("run.finished", 3 * SECOND).await;
    let frames = hub.frames();
    hub.assert_valid();
    gm.dispose().await;
    frames
        .iter()
        .filter(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == node_id)
        .map(|f| {
            let mut p = f.payload().as_object().expect("object").clone();
            for key in ["nodeId", "instanceId", "durationMs", "status", "heldMs"] {
                p.remove(key);
            }
            Value::Object(p)
        })
        .collect()
}

#[tokio::test]
async fn a_provider_executed_tool_carries_every_extra_it_was_given() {
    let got = finished_extras(
        async {
            let node = Node::start(NodeKind::Tool, "web_search", None).expect("enabled");
            let extras = Extras::new()
                .api("responses")
                .attempts(3)
                .injected()
                .streamed()
                .provider_executed()
                .ungated()
                .model("gpt-5-mini")
                .response_id("resp_1");
            node.finish_with(Status::Ok, Some(json!("found")), None, extras.into());
        },
        "tool:web_search",
    )
    .await;
    assert_eq!(
        got,
        [json!({
            "output": "found",
            "api": "responses",
            "attempts": 3,
            "injected": true,
            "streamed": true,
            "providerExecuted": true,
            "ungated": true,
            "model": "gpt-5-mini",
            "responseId": "resp_1",
        })]
    );
}

#[tokio::test]
async fn unset_extras_and_a_single_attempt_add_nothing() {
    let got = finished_extras(
        async {
            let node = Node::start(NodeKind::Tool, "plain", None).expect("enabled");
            node.finish_with(Status::Ok, None, None, Extras::new().attempts(1).into());
            let node = Node::start(NodeKind::Tool, "plain", None).expect("enabled");
            node.finish_with(Status::Ok, None, None, graphmind::protocol::Extra::new());
        },
        "tool:plain",
    )
    .await;
    assert_eq!(got, [json!({}), json!({})]);
}
