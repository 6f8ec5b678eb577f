//! Disabled (the process default session off): `GatedPeer` calls straight through, adds no
//! traceparent, lists no tools, and graphmind records nothing.

mod support;

use graphmind_rmcp::{Config, GatedPeer};
use serde_json::json;
use support::{call, connect, first_text};

#[tokio::test]
async fn disabled_calls_go_straight_through_and_nothing_is_recorded() {
    let gm = graphmind::init(
        graphmind::Config::new("disabled")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!graphmind::node::Node::enabled());
    let (client, files) = connect().await;
    let mcp = GatedPeer::with_config(client.peer().clone(), Config::default());
    let out = mcp
        .call_tool(call("delete_file", json!({"path": "/tmp/x"})))
        .await
        .expect("answered");
    assert_eq!(first_text(&out), "deleted /tmp/x");
    assert_eq!(files.seen.count("delete_file"), 1);
    assert_eq!(
        files.traceparents.lock().expect("not poisoned").clone(),
        vec![None],
        "the request went as the app made it"
    );
    assert_eq!(gm.stats().recorded, 0, "nothing recorded");
}
