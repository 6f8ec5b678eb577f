//! A rig prompt with a tool, recorded and replayed with `graphmind::testing`. With the
//! agent's model served through graphmind's layer (`gate_model_errors`), the replay answers
//! every model call from the recording (the model gets no request), the tool from its
//! recorded result (it does not run), and the answers' provider-minted ids (a new response id
//! per call) are no divergence. Without the layer rig calls the provider for every model
//! call: the replay runs those calls live and the check fails naming them.

mod support;

use std::sync::atomic::Ordering;

use graphmind::testing::Replay;
use graphmind_rig::{GateModelErrors, Instrument};
use rig_agent::{Agent, AgentBuilder};
use rig_core::completion::FinishReason;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Value, json};
use support::tools::Add;

/// A scripted model: a call of `add`, then `answer`; each response with an id of `ids`.
fn model(ids: &str, answer: &str) -> MockCompletionModel {
    MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3}))
            .with_finish_reason(FinishReason::ToolCalls)
            .with_response_id(format!("{ids}-1"))
            .with_raw(json!({"id": format!("{ids}-1"), "model": "mock-model"})),
        MockTurn::text(answer)
            .with_finish_reason(FinishReason::Stop)
            .with_response_id(format!("{ids}-2"))
            .with_raw(json!({"id": format!("{ids}-2"), "model": "mock-model"})),
    ])
}

fn layered(model: &MockCompletionModel, add: &Add) -> Agent {
    AgentBuilder::new(model.clone())
        .name("calc")
        .tool(add.clone())
        .gate_model_errors(model.clone())
        .build()
}

async fn ask(agent: Agent) -> String {
    agent
        .graphmind()
        .prompt("2+3?")
        .with(|r| r.max_turns(4))
        .await
        .expect("answered")
        .output()
        .to_owned()
}

fn recording(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "graphmind-rig-replay-{name}-{}.ndjson",
        std::process::id()
    ))
}

fn finished<'a>(events: &'a [Value], node: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == node)
        .map(|e| &e["payload"])
        .collect()
}

#[tokio::test]
async fn a_recorded_prompt_with_a_tool_replays_with_no_model_request_and_no_tool_run() {
    let file = recording("layered");
    let recording_model = model("chatcmpl-69", "5");
    let add = Add::default();
    let recorded = Replay::new(&file)
        .record(true)
        .run("calc", ask(layered(&recording_model, &add)))
        .await;
    assert_eq!(recorded.output().map(String::as_str), Some("5"));
    assert_eq!(recording_model.request_count(), 2);
    assert_eq!(add.calls.load(Ordering::SeqCst), 1);

    // The model would answer otherwise now (another answer, other response ids).
    let replay_model = model("chatcmpl-92", "7");
    let replayed = Replay::new(&file)
        .run("calc", ask(layered(&replay_model, &add)))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(
        replay_model.request_count(),
        0,
        "no request reached the model"
    );
    assert_eq!(add.calls.load(Ordering::SeqCst), 1, "the tool did not run");
    assert_eq!(replayed.served(), 3, "{:?}", replayed.outcomes());
    assert_eq!(replayed.went_live(), 0);
    assert_eq!(
        replayed.output().map(String::as_str),
        Some("5"),
        "the recorded answer"
    );
    let events = replayed.events();
    let steps = finished(events, "llm:step");
    let tools = finished(events, "tool:add");
    assert_eq!((steps.len(), tools.len()), (2, 1));
    for node in steps.iter().chain(&tools) {
        assert_eq!(node["status"], "ok", "{node}");
        assert_eq!(node["replayed"], true, "{node}");
        assert!(node["replayStep"].is_u64(), "{node}");
        assert!(node.get("injected").is_none(), "{node}");
    }
    assert_eq!(steps[0]["output"]["toolCalls"][0]["name"], "add");
    assert_eq!(tools[0]["output"], 5);
}

#[tokio::test]
async fn without_graphminds_model_layer_a_replayed_model_call_runs_live_and_fails_the_check() {
    let file = recording("bare");
    let add = Add::default();
    let bare = |m: &MockCompletionModel| {
        AgentBuilder::new(m.clone())
            .name("calc")
            .tool(add.clone())
            .build()
    };
    let recording_model = model("chatcmpl-69", "5");
    Replay::new(&file)
        .record(true)
        .run("calc", ask(bare(&recording_model)))
        .await;
    assert_eq!(recording_model.request_count(), 2);

    let replay_model = model("chatcmpl-92", "5");
    let replayed = Replay::new(&file)
        .run("calc", ask(bare(&replay_model)))
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(replay_model.request_count(), 2, "rig called the model");
    assert_eq!(replayed.unanswered(), 2, "{:?}", replayed.outcomes());
    let message = replayed.check().expect_err("not whole");
    assert!(
        message.contains(
            "step 1 (llm:step) ran live: its adapter cannot answer it without calling the provider"
        ),
        "{message}"
    );
    assert!(message.contains("step 3 (llm:step) ran live"), "{message}");
}
