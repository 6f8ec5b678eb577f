//! `dispose()` sends the token deltas still waiting for their batch interval before the
//! session closes (a regression: they were lost when the app disposed within the interval).

use std::time::Duration;

use graphmind::node::Node;
use graphmind::protocol::{DeltaKind, NodeKind};
use graphmind_tests::FakeDebugger;
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn dispose_sends_the_pending_token_batch_before_closing() {
    let hub = FakeDebugger::start().await;
    // A batch interval far longer than the test: only dispose can send the deltas.
    let gm = graphmind::Session::new(hub.config("tokens").token_interval(60 * SECOND));
    assert!(gm.ready(2 * SECOND).await);
    let node = gm
        .run("typing", async {
            let mut node = Node::start(NodeKind::Custom, "typist", None).expect("enabled");
            node.token(DeltaKind::Text, "hello ");
            node.token(DeltaKind::Text, "world");
            node
        })
        .await
        .expect("not aborted");
    hub.wait_for_kind("run.finished", 2 * SECOND).await;
    assert!(
        hub.frames_of("node.token").is_empty(),
        "the batch waits for its interval"
    );

    gm.dispose().await;
    hub.wait_for_kind("node.token", 2 * SECOND).await;
    let frames = hub.frames();
    let tokens: Vec<_> = frames.iter().filter(|f| f.kind() == "node.token").collect();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].payload()["nodeId"], "custom:typist");
    assert_eq!(
        tokens[0].payload()["deltas"],
        json!([{"t": "text", "v": "hello world"}])
    );
    assert_eq!(tokens[0].payload()["instanceId"], node.instance_id());
    drop(node);
    hub.assert_valid();
}
