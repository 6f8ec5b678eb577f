//! Every action at the gates of a rig agent run's model calls and tool calls, as exact event
//! sequences against the fake debugger, with rig's scripted model and counting tools telling
//! what actually ran.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use graphmind_rig::Instrument;
use graphmind_tests::FakeDebugger;
use rig_agent::AgentBuilder;
use rig_agent::completion::PromptError;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Value, json};
use support::tools::{Add, Flaky};
use support::{
    Gated, abort_at, attached, continue_at, events, finished, gated, inject_at, join, lines,
    pause_id, paused, reject_at, retry_at, runs_finished,
};

fn tool_then_text() -> MockCompletionModel {
    MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ])
}

/// The tool result the model's second request carried.
fn tool_result_sent(model: &MockCompletionModel) -> Value {
    let requests = model.requests();
    let second = serde_json::to_value(&requests[1]).expect("serializes");
    let history = second["chat_history"].as_array().expect("history").clone();
    history
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "toolresult")
        .expect("a tool result")
}

const HEAD: [&str; 5] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "graph.hint tool:add",
];

fn expect(head: &[&str], tail: &[&str]) -> Vec<String> {
    head.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn model_before_holds_with_nothing_sent_then_continue_sends_it() {
    let model = MockCompletionModel::text("hello");
    let agent = AgentBuilder::new(model.clone()).build();
    let run = gated("llm", "before", agent, "hi").await;
    let p = paused(&run.hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "llm:step");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        model.request_count(),
        0,
        "nothing leaves while before holds"
    );
    assert!(run.hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let done = run.finish().await;
    assert_eq!(done.response().output(), "hello");
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        done.events,
        expect(
            &HEAD[..4],
            &[
                "exec.paused llm:step before",
                "exec.resumed continue",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
}

#[tokio::test]
async fn model_before_inject_without_graphminds_layer_is_refused_with_the_reason() {
    // rig calls the provider for this call whatever the gate says, and keeps an answer that
    // calls tools: an inject here could be accepted and not applied, so it is refused.
    let model = MockCompletionModel::text("real");
    let agent = AgentBuilder::new(model.clone())
        .tool(Add::default())
        .build();
    let run = gated("llm", "before", agent, "hi").await;
    let hub = &run.hub;
    let p = inject_at(hub, 1, json!("canned")).await;
    support::wait_count(hub, "exec.refused", 1).await;
    let refused = &hub.frames_of("exec.refused")[0];
    let message = refused.payload()["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        message.contains("rig calls the provider for this model call whatever the gate says"),
        "{message}"
    );
    assert!(message.contains("gate_model_errors"), "{message}");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let done = run.finish().await;
    assert_eq!(done.response().output(), "real");
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn model_before_inject_with_graphminds_layer_answers_without_calling_the_provider() {
    use graphmind_rig::GateModelErrors;
    let model = MockCompletionModel::text("real");
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone())
        .tool(add.clone())
        .gate_model_errors(model.clone())
        .build();
    let run = gated("llm", "before", agent, "2+3?").await;
    // A whole turn, tool calls included: rig runs the tool, then asks the model again.
    let turn = json!({"text": "", "toolCalls": [{"id": "call_9", "name": "add", "arguments": {"x": 2, "y": 3}}]});
    inject_at(&run.hub, 1, turn).await;
    continue_at(&run.hub, 2).await;
    let done = run.finish().await;
    assert_eq!(done.response().output(), "real");
    assert_eq!(add.calls.load(Ordering::SeqCst), 1, "the injected call ran");
    assert_eq!(
        model.request_count(),
        1,
        "only the second model call reached the model"
    );
    let fin = &finished(&done.hub, "llm:step")[0];
    assert_eq!(fin["output"]["toolCalls"][0]["name"], "add");
    assert_eq!(fin["injected"], true);
}

#[tokio::test]
async fn model_after_refuses_an_inject_rig_cannot_apply_and_stays_held() {
    let model = tool_then_text();
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone()).tool(add.clone()).build();
    let run = gated("llm", "after", agent, "2+3?").await;
    let hub = &run.hub;
    let p = paused(hub, 1).await;
    assert_eq!(p.payload()["point"], "after");
    // The turn called a tool: rig refuses to replace it, so the gate refuses the inject.
    assert!(hub.inject(p.run_id(), &pause_id(&p), json!("no tools")));
    support::wait_count(hub, "exec.refused", 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let p2 = paused(hub, 2).await;
    // A text turn: an inject naming tool calls is refused, text is taken.
    let calls = json!({"text": "", "toolCalls": [{"name": "add", "input": {}}]});
    assert!(hub.inject(p2.run_id(), &pause_id(&p2), calls));
    support::wait_count(hub, "exec.refused", 2).await;
    assert!(hub.inject(p2.run_id(), &pause_id(&p2), json!({"text": "five"})));
    let done = run.finish().await;
    assert_eq!(done.response().output(), "five");
    assert_eq!(add.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        done.events,
        expect(
            &HEAD,
            &[
                "exec.paused llm:step after",
                "exec.refused schema",
                "exec.resumed continue",
                "node.finished llm:step ok",
                "node.started tool:add",
                "node.finished tool:add ok",
                "node.started llm:step",
                "exec.paused llm:step after",
                "exec.refused schema",
                "exec.resumed inject",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let steps = finished(&done.hub, "llm:step");
    assert_eq!(steps[0]["output"]["toolCalls"][0]["id"], "call_1");
    assert_eq!(steps[1]["output"]["text"], "five");
    assert_eq!(steps[1]["injected"], true);
}

#[tokio::test]
async fn model_after_retry_repeats_a_tool_free_turn_as_one_execution() {
    let model =
        MockCompletionModel::from_turns([MockTurn::text("first"), MockTurn::text("second")]);
    let agent = AgentBuilder::new(model.clone()).build();
    let run = gated("llm", "after", agent, "hi").await;
    retry_at(&run.hub, 1).await;
    continue_at(&run.hub, 2).await;
    let done = run.finish().await;
    assert_eq!(done.response().output(), "second");
    assert_eq!(model.request_count(), 2);
    assert_eq!(
        done.events,
        expect(
            &HEAD[..4],
            &[
                "exec.paused llm:step after",
                "exec.resumed retry",
                "exec.paused llm:step after",
                "exec.resumed continue",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let fin = &finished(&done.hub, "llm:step")[0];
    assert_eq!(fin["attempts"], 2);
    assert_eq!(fin["output"]["text"], "second");
}

/// A prompt call of `tool_then_text` with the `add` tool, the breakpoint `{tool, point}`
/// set: the model, the tool and the held call.
async fn adding(point: &str) -> (MockCompletionModel, Add, Gated) {
    let model = tool_then_text();
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone()).tool(add.clone()).build();
    let run = gated("tool", point, agent, "2+3?").await;
    (model, add, run)
}

#[tokio::test]
async fn tool_before_inject_skips_the_tool_and_the_model_sees_a_successful_result() {
    let (model, add, run) = adding("before").await;
    let p = paused(&run.hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "tool:add");
    assert!(
        run.hub
            .inject(p.run_id(), &pause_id(&p), json!({"sum": 42}))
    );
    let done = run.finish().await;
    done.response();
    assert_eq!(
        add.calls.load(Ordering::SeqCst),
        0,
        "an inject at before runs nothing"
    );
    let sent = tool_result_sent(&model);
    assert_eq!(sent["content"][0]["value"]["sum"], 42, "{sent}");
    assert_ne!(sent["is_error"], true);
    assert_eq!(
        done.events,
        expect(
            &HEAD,
            &[
                "node.finished llm:step ok",
                "node.started tool:add",
                "exec.paused tool:add before",
                "exec.resumed inject",
                "node.finished tool:add ok",
                "node.started llm:step",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let fin = &finished(&done.hub, "tool:add")[0];
    assert_eq!(
        fin["instanceId"], "call_1",
        "the instance id is rig's tool-call id"
    );
    assert_eq!(fin["injected"], true);
}

#[tokio::test]
async fn tool_before_reject_skips_the_tool_and_the_model_sees_the_reason() {
    let (model, add, run) = adding("before").await;
    let p = paused(&run.hub, 1).await;
    assert!(
        p.payload()["actions"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("reject"))),
        "the gate offers reject: {:?}",
        p.payload()
    );
    reject_at(&run.hub, 1, "use the calculator app").await;
    let done = run.finish().await;
    done.response();
    assert_eq!(
        add.calls.load(Ordering::SeqCst),
        0,
        "a rejected tool never runs"
    );
    let sent = tool_result_sent(&model).to_string();
    assert!(
        sent.contains("the call was rejected by a person: use the calculator app"),
        "the model's next turn sees the reason: {sent}"
    );
    assert_eq!(
        done.events,
        expect(
            &HEAD,
            &[
                "node.finished llm:step ok",
                "node.started tool:add",
                "exec.paused tool:add before",
                "exec.resumed reject",
                "node.error tool:add Rejected",
                "node.finished tool:add error",
                "node.started llm:step",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let fin = &finished(&done.hub, "tool:add")[0];
    assert_eq!(fin["rejected"]["reason"], "use the calculator app", "{fin}");
}

#[tokio::test]
async fn tool_after_inject_replaces_the_result_the_model_sees() {
    let (model, add, run) = adding("after").await;
    let p = paused(&run.hub, 1).await;
    assert_eq!(p.payload()["point"], "after");
    assert!(run.hub.inject(p.run_id(), &pause_id(&p), json!("seven")));
    let done = run.finish().await;
    done.response();
    assert_eq!(add.calls.load(Ordering::SeqCst), 1);
    let sent = tool_result_sent(&model);
    assert_eq!(sent["content"][0]["text"], "seven", "{sent}");
    assert_eq!(finished(&done.hub, "tool:add")[0]["output"], "seven");
}

/// A prompt call whose model calls `flaky` (failing its first `fail_first` calls), then
/// answers, with the breakpoint on tool errors: the model, the tool and the held call.
async fn flaky_held(fail_first: usize) -> (MockCompletionModel, Flaky, Gated) {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_f", "flaky", json!({})),
        MockTurn::text("done"),
    ]);
    let flaky = Flaky {
        fail_first,
        ..Flaky::default()
    };
    let agent = AgentBuilder::new(model.clone()).tool(flaky.clone()).build();
    let run = gated("tool", "error", agent, "go").await;
    (model, flaky, run)
}

const FLAKY_HEAD: [&str; 8] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "graph.hint tool:flaky",
    "node.finished llm:step ok",
    "node.started tool:flaky",
    "node.error tool:flaky ToolError",
];

#[tokio::test]
async fn tool_error_retry_runs_the_tool_again_and_the_second_result_goes_on() {
    let (model, flaky, run) = flaky_held(1).await;
    let p = paused(&run.hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(run.hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let done = run.finish().await;
    done.response();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 2);
    let sent = tool_result_sent(&model);
    assert_eq!(sent["content"][0]["text"], "ok", "{sent}");
    assert_eq!(
        done.events,
        expect(
            &FLAKY_HEAD,
            &[
                "exec.paused tool:flaky error",
                "exec.resumed retry",
                "node.finished tool:flaky ok",
                "node.started llm:step",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    assert_eq!(finished(&done.hub, "tool:flaky")[0]["attempts"], 2);
}

#[tokio::test]
async fn tool_error_continue_passes_the_real_error_to_the_model() {
    let (model, flaky, run) = flaky_held(9).await;
    continue_at(&run.hub, 1).await;
    let done = run.finish().await;
    done.response();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
    let sent = tool_result_sent(&model);
    // rig 0.44 marks the result `is_error`; 0.43 sends the failure as its text.
    let failure_text = sent["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        sent["is_error"] == true || failure_text.contains("failed"),
        "the model sees the failure: {sent}"
    );
    let fin = &finished(&done.hub, "tool:flaky")[0];
    assert_eq!(fin["status"], "error");
}

#[tokio::test]
async fn tool_error_inject_answers_the_model_with_a_success() {
    let (model, _flaky, run) = flaky_held(9).await;
    inject_at(&run.hub, 1, json!("patched")).await;
    let done = run.finish().await;
    done.response();
    let sent = tool_result_sent(&model);
    assert_eq!(sent["content"][0]["text"], "patched", "{sent}");
    assert_ne!(sent["is_error"], true);
    let fin = &finished(&done.hub, "tool:flaky")[0];
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["injected"], true);
}

#[tokio::test]
async fn abort_at_a_tool_gate_inside_a_run_drops_the_run_and_the_tool_never_runs() {
    let (model, add, run) = adding("before").await;
    abort_at(&run.hub, 1).await;
    let done = run.finish().await;
    assert!(done.out.is_err(), "the enclosing run returns Aborted");
    assert_eq!(add.calls.load(Ordering::SeqCst), 0);
    assert_eq!(model.request_count(), 1, "no model call after the abort");
    assert_eq!(
        done.events,
        expect(
            &HEAD,
            &[
                "node.finished llm:step ok",
                "node.started tool:add",
                "exec.paused tool:add before",
                "exec.resumed abort",
                "node.finished tool:add aborted",
                "node.finished agent:a aborted",
                "run.finished aborted",
            ]
        )
    );
}

#[tokio::test]
async fn abort_of_a_prompt_call_that_is_its_own_run_returns_rigs_cancelled_error() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let model = tool_then_text();
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone())
        .name("calc")
        .tool(add.clone())
        .build();
    let gm2 = gm.clone();
    let task = tokio::spawn(async move {
        agent
            .graphmind()
            .prompt("2+3?")
            .with(|r| r.max_turns(4))
            .session(&gm2)
            .await
    });
    abort_at(&hub, 1).await;
    let out = join(task).await;
    match out {
        Err(PromptError::Report(report)) => {
            assert_eq!(report.kind, rig_core::error::ErrorKind::Cancelled);
            assert!(
                report.message.contains("aborted from the debugger"),
                "{report}"
            );
        }
        other => panic!("expected a Cancelled report, got {other:?}"),
    }
    assert_eq!(
        add.calls.load(Ordering::SeqCst),
        0,
        "the turn's tool call never ran"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:calc",
            "graph.hint agent:calc,llm:step",
            "node.started llm:step",
            "graph.hint tool:add",
            "exec.paused llm:step after",
            "exec.resumed abort",
            "node.finished llm:step aborted",
            "node.finished agent:calc aborted",
            "run.finished aborted",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn parallel_tool_calls_hold_apart_and_resume_in_any_order() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents([
            rig_core::completion::AssistantContent::ToolCall(
                rig_core::message::ToolCall::from_wire(
                    "call_a",
                    rig_core::message::ToolFunction::new(
                        rig_core::message::ToolName::new("add").expect("name"),
                        json!({"x": 1, "y": 1}),
                    ),
                ),
            ),
            rig_core::completion::AssistantContent::ToolCall(
                rig_core::message::ToolCall::from_wire(
                    "call_b",
                    rig_core::message::ToolFunction::new(
                        rig_core::message::ToolName::new("add").expect("name"),
                        json!({"x": 2, "y": 2}),
                    ),
                ),
            ),
        ]),
        MockTurn::text("2 and 4"),
    ]);
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone()).tool(add.clone()).build();
    let gm2 = gm.clone();
    let task = tokio::spawn(async move {
        gm2.run("a", async move {
            agent
                .graphmind()
                .prompt("1+1 and 2+2")
                .with(|r| r.max_turns(4).tool_concurrency(2))
                .await
        })
        .await
    });
    let p1 = paused(&hub, 1).await;
    let p2 = paused(&hub, 2).await;
    let ids: Vec<Value> = support::started(&hub, "tool:add")
        .iter()
        .map(|p| p["instanceId"].clone())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(
        ids.contains(&json!("call_a")) && ids.contains(&json!("call_b")),
        "{ids:?}"
    );
    assert_eq!(add.calls.load(Ordering::SeqCst), 0, "both held at once");
    // The second one first: the first stays held.
    assert!(hub.resume(p2.run_id(), &pause_id(&p2), "continue"));
    support::wait_count(&hub, "node.finished", 2).await;
    assert_eq!(add.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        support::wait_count(&hub, "exec.resumed", 1).await.len(),
        1,
        "the first is still held"
    );
    assert!(hub.inject(p1.run_id(), &pause_id(&p1), json!(100)));
    join(task).await.expect("not aborted").expect("ok");
    assert_eq!(
        add.calls.load(Ordering::SeqCst),
        1,
        "the injected one never ran"
    );
    runs_finished(&hub, 1).await;
    let tools = finished(&hub, "tool:add");
    assert_eq!(tools.len(), 2);
    let injected: Vec<&Value> = tools.iter().filter(|f| f["injected"] == true).collect();
    assert_eq!(injected.len(), 1);
    assert_eq!(injected[0]["output"], 100);
    let ran = tools
        .iter()
        .find(|f| f["injected"] != true)
        .expect("one ran");
    assert!(ran["output"] == 2 || ran["output"] == 4, "{ran}");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn tool_before_edit_runs_the_tool_with_the_edited_arguments() {
    // The regression of issue 35: rig refused a tool `--input` edit ("the app did not mark it
    // editable").
    let model = tool_then_text();
    let add = Add::default();
    let agent = AgentBuilder::new(model.clone()).tool(add.clone()).build();
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let task = support::spawn_in_run(&gm, agent, "2+3?");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["editable"], true, "{:?}", p.payload());
    support::resume_with(
        &hub,
        &p,
        json!({"action": "continue", "input": {"x": 40, "y": 2}, "requestId": "e-1"}),
    );
    join(task).await.expect("not aborted").expect("answered");
    runs_finished(&hub, 1).await;
    assert_eq!(add.calls.load(Ordering::SeqCst), 1);
    let sent = tool_result_sent(&model).to_string();
    assert!(sent.contains("42"), "the edited arguments ran: {sent}");
    let fin = &finished(&hub, "tool:add")[0];
    assert_eq!(fin["output"], 42);
    assert_eq!(fin["edited"]["after"], json!({"x": 40, "y": 2}));
    gm.dispose().await;
}
