//! An agent run's model calls and tool calls against the fake debugger: exact event
//! sequences, the step output, usage, grouping, streaming, and the run's end in every way
//! rig ends it.

mod support;

use std::future::IntoFuture;

use futures_util::StreamExt;
use graphmind_rig::{GraphmindHook, Instrument};
use graphmind_tests::FakeDebugger;
use rig_agent::AgentBuilder;
use rig_core::completion::{FinishReason, Usage};
use rig_core::test_utils::{MockCompletionModel, MockStreamEvent, MockTurn};
use serde_json::json;
use support::tools::Add;
use support::{attached, deltas, events, finished, lines, runs_finished, started};

fn usage(input: u64, output: u64) -> Usage {
    let mut u = Usage::default();
    u.input_tokens = Some(input);
    u.output_tokens = Some(output);
    u.total_tokens = Some(input + output);
    u.cached_input_tokens = Some(4);
    u
}

#[tokio::test]
async fn a_tool_turn_then_a_text_turn_are_two_steps_of_one_invocation_and_one_tool_node() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3}))
            .with_usage(usage(10, 3))
            .with_finish_reason(FinishReason::ToolCalls)
            .with_response_id("resp_1")
            .with_raw(json!({"id": "resp_1", "model": "mock-model-7"})),
        MockTurn::text("5")
            .with_usage(usage(20, 1))
            .with_finish_reason(FinishReason::Stop),
    ]);
    let add = Add::default();
    let agent = AgentBuilder::new(model)
        .name("calc")
        .tool(add.clone())
        .build();
    let out = agent
        .graphmind()
        .prompt("2+3?")
        .with(|r| r.max_turns(4))
        .session(&gm)
        .await
        .expect("ok");
    assert_eq!(out.output(), "5");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:calc",
            "graph.hint agent:calc,llm:step",
            "node.started llm:step",
            "graph.hint tool:add",
            "node.finished llm:step ok",
            "node.started tool:add",
            "node.finished tool:add ok",
            "node.started llm:step",
            "node.finished llm:step ok",
            "node.finished agent:calc ok",
            "run.finished ok",
        ])
    );
    let steps = finished(&hub, "llm:step");
    let (s1, s2) = (&steps[0], &steps[1]);
    let inv = |id: &serde_json::Value| {
        id.as_str()
            .expect("id")
            .split(':')
            .next()
            .map(str::to_owned)
    };
    assert_eq!(
        inv(&s1["instanceId"]),
        inv(&s2["instanceId"]),
        "one invocation"
    );
    assert!(s1["instanceId"].as_str().expect("id").ends_with(":s1"));
    assert!(s2["instanceId"].as_str().expect("id").ends_with(":s2"));
    assert_eq!(s1["output"]["finishReason"], "tool-calls");
    assert_eq!(s1["output"]["toolCalls"][0]["name"], "add");
    assert_eq!(s1["output"]["toolCalls"][0]["input"]["x"], 2);
    assert_eq!(s1["usage"]["inputTokens"], 10);
    assert_eq!(s1["usage"]["outputTokens"], 3);
    assert_eq!(s1["usage"]["cacheReadTokens"], 4);
    assert_eq!(s1["responseId"], "resp_1");
    assert_eq!(s1["model"], "mock-model-7", "the model the provider named");
    assert_eq!(s2["output"]["text"], "5");
    assert_eq!(s2["output"]["finishReason"], "stop");
    let tool = &finished(&hub, "tool:add")[0];
    assert_eq!(tool["instanceId"], "call_1");
    assert_eq!(tool["output"], 5);
    assert_eq!(
        started(&hub, "tool:add")[0]["input"],
        json!({"x": 2, "y": 3})
    );
    assert_eq!(
        started(&hub, "llm:step")[0]["input"]["tools"][0]["name"],
        "add"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn max_turns_exhausted_ends_the_run_error_with_nothing_left_running() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ]);
    let agent = AgentBuilder::new(model)
        .name("calc")
        .tool(Add::default())
        .build();
    let out = agent.graphmind().prompt("2+3?").session(&gm).await;
    let err = out.expect_err("max turns");
    assert!(err.to_string().contains("max turns"), "{err}");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:calc",
            "graph.hint agent:calc,llm:step",
            "node.started llm:step",
            "graph.hint tool:add",
            "node.finished llm:step ok",
            "node.started tool:add",
            "node.finished tool:add ok",
            "node.error agent:calc PromptError",
            "node.finished agent:calc error",
            "run.finished error",
        ])
    );
    let err = &hub.frames_of("node.error")[0];
    assert!(
        err.payload()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("max turns"),
        "{}",
        err.payload()
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_failed_model_call_finishes_its_step_error_with_the_error() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let model = MockCompletionModel::from_turns([MockTurn::error("upstream 503")]);
    let agent = AgentBuilder::new(model).name("calc").build();
    let out = agent.graphmind().prompt("hi").session(&gm).await;
    assert!(out.is_err(), "rig's error reaches the app");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:calc",
            "graph.hint agent:calc,llm:step",
            "node.started llm:step",
            "node.error llm:step PromptError",
            "node.finished llm:step error",
            "node.error agent:calc PromptError",
            "node.finished agent:calc error",
            "run.finished error",
        ])
    );
    let err = hub.frames_of("node.error")[0].payload().clone();
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("upstream 503"),
        "{err}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn two_concurrent_prompt_calls_in_one_run_never_share_an_invocation() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let a = AgentBuilder::new(MockCompletionModel::text("A")).build();
    let b = AgentBuilder::new(MockCompletionModel::text("B")).build();
    let (ra, rb) = gm
        .run("pair", async {
            futures_util::join!(
                a.graphmind().prompt("a").into_future(),
                b.graphmind().prompt("b").into_future()
            )
        })
        .await
        .expect("not aborted");
    assert_eq!(ra.expect("a").output(), "A");
    assert_eq!(rb.expect("b").output(), "B");
    runs_finished(&hub, 1).await;
    let steps = finished(&hub, "llm:step");
    assert_eq!(steps.len(), 2);
    let inv: Vec<String> = steps
        .iter()
        .map(|s| s["instanceId"].as_str().expect("id").to_owned())
        .collect();
    assert!(inv.iter().all(|i| i.ends_with(":s1")), "{inv:?}");
    assert_ne!(inv[0], inv[1], "{inv:?}");
    assert_eq!(
        hub.frames_of("run.started").len(),
        1,
        "both joined the enclosing run"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_streamed_run_tees_text_reasoning_and_tool_argument_deltas() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let model = MockCompletionModel::from_stream_turns([
        vec![
            MockStreamEvent::reasoning_delta("thinking"),
            MockStreamEvent::tool_call_name_delta("t1", "add"),
            MockStreamEvent::tool_call_arguments_delta("t1", "{\"x\":1,"),
            MockStreamEvent::tool_call_arguments_delta("t1", "\"y\":2}"),
            MockStreamEvent::tool_call_end("t1"),
            MockStreamEvent::final_response(usage(5, 2)),
        ],
        vec![
            MockStreamEvent::text("Three"),
            MockStreamEvent::text(" it is"),
            MockStreamEvent::final_response(usage(9, 2)),
        ],
    ]);
    let add = Add::default();
    let agent = AgentBuilder::new(model).tool(add.clone()).build();
    let hook = GraphmindHook::for_agent(&agent);
    let items = gm
        .run("streamed", async {
            let mut stream = agent.prompt("1+2").max_turns(4).add_hook(hook).stream();
            let mut n = 0;
            while let Some(item) = stream.next().await {
                item.expect("item");
                n += 1;
            }
            n
        })
        .await
        .expect("not aborted");
    assert!(items > 0);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:streamed",
            "graph.hint agent:streamed,llm:step",
            "node.started llm:step",
            "graph.hint tool:add",
            "node.finished llm:step ok",
            "node.started tool:add",
            "node.finished tool:add ok",
            "node.started llm:step",
            "node.finished llm:step ok",
            "node.finished agent:streamed ok",
            "run.finished ok",
        ])
    );
    let ds = deltas(&hub, "llm:step");
    let kinds: Vec<&str> = ds.iter().map(|d| d["t"].as_str().unwrap_or("-")).collect();
    assert!(kinds.contains(&"reasoning"), "{ds:?}");
    assert!(kinds.contains(&"tool-args"), "{ds:?}");
    assert!(kinds.contains(&"text"), "{ds:?}");
    let text: String = ds
        .iter()
        .filter(|d| d["t"] == "text")
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, "Three it is");
    let args: String = ds
        .iter()
        .filter(|d| d["t"] == "tool-args")
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(args, "{\"x\":1,\"y\":2}");
    let steps = finished(&hub, "llm:step");
    assert_eq!(steps[0]["streamed"], true);
    assert_eq!(steps[1]["output"]["text"], "Three it is");
    assert_eq!(add.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    hub.assert_valid();
    gm.dispose().await;
}
