//! Detached (graphmind enabled, no debugger listening): an instrumented prompt call returns
//! exactly what the bare agent returns, and its nodes still reach the replay ring.

mod support;

use graphmind_rig::Instrument;
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;
use support::tools::Add;

fn model() -> MockCompletionModel {
    MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ])
}

#[tokio::test]
async fn detached_an_instrumented_run_returns_what_the_bare_run_returns() {
    // Nothing listens on port 9 (discard).
    let gm = graphmind::Session::new(
        graphmind::Config::new("detached")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let wrapped_agent = AgentBuilder::new(model()).tool(Add::default()).build();
    let bare_agent = AgentBuilder::new(model()).tool(Add::default()).build();
    let wrapped = wrapped_agent
        .graphmind()
        .prompt("2+3?")
        .with(|r| r.max_turns(4))
        .session(&gm)
        .await
        .expect("ok");
    let bare = bare_agent.prompt("2+3?").max_turns(4).await.expect("ok");
    assert_eq!(wrapped.output(), bare.output());
    assert_eq!(
        serde_json::to_value(&wrapped.messages).expect("json"),
        serde_json::to_value(&bare.messages).expect("json")
    );
    assert!(!gm.is_attached());
    assert!(gm.stats().buffered > 0, "the nodes reached the replay ring");
    gm.dispose().await;
}
