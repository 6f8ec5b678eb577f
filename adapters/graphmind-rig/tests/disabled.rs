//! Disabled (the process default session off): the hook returns at its first check, the run
//! is rig's own and graphmind records nothing.

mod support;

use graphmind_rig::Instrument;
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;
use support::tools::Add;

#[tokio::test]
async fn disabled_the_run_is_rigs_own_and_nothing_is_recorded() {
    let gm = graphmind::init(
        graphmind::Config::new("disabled")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!graphmind::node::Node::enabled());
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ]);
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone()).tool(add.clone()).build();
    let out = agent
        .graphmind()
        .prompt("2+3?")
        .with(|r| r.max_turns(4))
        .await
        .expect("ok");
    assert_eq!(out.output(), "5");
    assert_eq!(model.request_count(), 2);
    assert_eq!(add.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(gm.stats().recorded, 0, "nothing recorded");
}
