//! The low-level node API adapters use: start a node, gate it, stream tokens, tee a stream,
//! finish it.

use std::time::Duration;

use futures_util::{StreamExt, stream};
use graphmind::node::{Node, Resume};
use graphmind::protocol::{DeltaKind, NodeKind, PausePoint, Status};
use graphmind_tests::FakeDebugger;
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

async fn retrieve(q: &str) -> serde_json::Value {
    let Some(mut node) = Node::start(NodeKind::Retriever, "docs", Some(json!({"q": q}))) else {
        return json!(["real"]);
    };
    let hits = match node.gate_typed::<Vec<String>>(PausePoint::Before).await {
        Resume::Inject(v) => v,
        _ => json!(["real"]),
    };
    node.token(DeltaKind::Text, "found ");
    node.token(DeltaKind::Text, "hits");
    node.finish(Status::Ok, Some(hits.clone()));
    hits
}

#[tokio::test]
async fn a_custom_node_is_gated_typed_and_finished() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"kind": "retriever"})]);
    let gm = graphmind::Session::new(hub.config("lowlevel"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", retrieve("refunds")).await }
    });
    let p = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(p.payload()["nodeId"], "retriever:docs");
    let id = p.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.inject(p.run_id(), &id, json!({"not": "a list"})));
    assert_eq!(
        hub.wait_for_kind("exec.refused", SECOND).await.payload()["code"],
        "schema"
    );
    assert!(hub.inject(p.run_id(), &id, json!(["a", "b"])));
    assert_eq!(task.await.expect("joined").expect("ok"), json!(["a", "b"]));
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let token = frames
        .iter()
        .find(|f| f.kind() == "node.token")
        .expect("token");
    assert_eq!(
        token.payload()["deltas"],
        json!([{"t": "text", "v": "found hits"}])
    );
    let started = frames
        .iter()
        .find(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "retriever:docs")
        .expect("started");
    assert_eq!(started.payload()["parentId"], "agent:r");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_teed_stream_yields_the_same_items_and_records_chunks() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("lowlevel-tee"));
    assert!(gm.ready(2 * SECOND).await);
    let items: Vec<u32> = gm
        .run("t", async {
            let node = Node::start(NodeKind::Custom, "feed", None).expect("enabled");
            node.tee(stream::iter([3u32, 4, 5]), |obs, item| {
                obs.chunk();
                obs.token(DeltaKind::Text, &item.to_string());
            })
            .collect()
            .await
        })
        .await
        .expect("ok");
    assert_eq!(items, [3, 4, 5]);
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "custom:feed")
        .expect("finished");
    assert_eq!(fin.payload()["chunks"], 3);
    assert_eq!(fin.payload()["streaming"], true);
    gm.dispose().await;
}
