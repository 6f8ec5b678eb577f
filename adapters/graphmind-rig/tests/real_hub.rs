//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a failing tool held at the hub's default error breakpoint, answered over the hub's
//! HTTP API with a retry; the tool runs again, the run succeeds and the hub stores it.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use graphmind_rig::Instrument;
use graphmind_tests::adapter::hub::RealHub;
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;
use support::tools::Flaky;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_held_at_the_real_hub_is_retried_over_its_api() {
    let hub = RealHub::start("rig-hub").await;
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_f", "flaky", json!({})),
        MockTurn::text("done"),
    ]);
    let flaky = Flaky {
        fail_first: 1,
        ..Flaky::default()
    };
    let agent = AgentBuilder::new(model)
        .name("hub-agent")
        .tool(flaky.clone())
        .build();
    let task = tokio::spawn({
        let gm = hub.session.clone();
        async move {
            agent
                .graphmind()
                .prompt("go")
                .with(|r| r.max_turns(4))
                .session(&gm)
                .await
        }
    });

    let pause = hub.first_pause().await;
    assert_eq!(pause["nodeId"], "tool:flaky", "{pause}");
    assert_eq!(pause["point"], "error");
    hub.resume(&pause, &json!({"action": "retry"})).await;

    let out = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("the run succeeds");
    assert_eq!(out.output(), "done");
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 2, "retried once");

    let run_id = pause["runId"].as_str().expect("runId");
    let finished = hub.stored_finish(run_id, "tool:flaky").await;
    assert_eq!(finished["status"], "ok", "{finished}");
    assert_eq!(finished["attempts"], 2);
    assert_eq!(finished["instanceId"], "call_f");
    hub.stop().await;
}
