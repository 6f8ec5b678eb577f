//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a destructive MCP tool held before it runs with no breakpoint set, answered over the
//! hub's HTTP API with a reject; the server never sees the call and the hub stores why.

mod support;

use std::time::Duration;

use graphmind_rmcp::{Config, GatedPeer};
use graphmind_tests::adapter::hub::RealHub;
use serde_json::json;
use support::{call, connect, first_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_call_held_at_the_real_hub_is_rejected_over_its_api() {
    let hub = RealHub::start("rmcp-hub").await;
    let (client, files) = connect().await;
    let mcp = GatedPeer::with_config(client.peer().clone(), Config::default());
    let task = tokio::spawn({
        let gm = hub.session.clone();
        async move {
            gm.run("cleanup", async move {
                mcp.call_tool(call("delete_file", json!({"path": "/"})))
                    .await
            })
            .await
        }
    });
    let pause = hub.first_pause().await;
    assert_eq!(pause["nodeId"], "tool:delete_file", "{pause}");
    assert_eq!(pause["point"], "before");
    hub.resume(
        &pause,
        &json!({"action": "reject", "reason": "not the root"}),
    )
    .await;
    let out = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("answered");
    assert_eq!(out.is_error, Some(true));
    assert_eq!(
        first_text(&out),
        "the call was rejected by a person: not the root"
    );
    assert_eq!(files.seen.count("delete_file"), 0, "never sent");
    let run_id = pause["runId"].as_str().expect("runId");
    let finished = hub.stored_finish(run_id, "tool:delete_file").await;
    assert_eq!(finished["status"], "error", "{finished}");
    assert_eq!(finished["rejected"]["reason"], "not the root");
    hub.stop().await;
}
