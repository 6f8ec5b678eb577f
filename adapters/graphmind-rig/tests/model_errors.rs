//! The `error` gate of a failed model call (rig's scripted model answering with an error),
//! through `GateModelErrors::gate_model_errors`: every action as an exact event sequence,
//! with the model's request count telling what was called.

mod support;

use std::time::Duration;

use graphmind_rig::{GateModelErrors, Instrument};
use graphmind_tests::FakeDebugger;
use rig_agent::completion::PromptError;
use rig_agent::{Agent, AgentBuilder};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;
use support::{
    Gated, abort_at, attached, continue_at, finished, gated, inject_at, join, lines, retry_at,
    runs_finished, spawn_in_run,
};

/// The breakpoint on model errors.
fn error_gate() -> Vec<serde_json::Value> {
    vec![json!({"kind": "llm", "point": "error"})]
}

/// An agent whose model fails first with "upstream 503", then plays `then`.
fn failing_then(then: Vec<MockTurn>) -> (MockCompletionModel, Agent) {
    let mut turns = vec![MockTurn::error("upstream 503")];
    turns.extend(then);
    let model = MockCompletionModel::from_turns(turns);
    let agent = AgentBuilder::new(model.clone())
        .gate_model_errors(model.clone())
        .build();
    (model, agent)
}

/// `failing_then(then)` prompted inside the run `a`, the breakpoint on model errors set.
async fn failing(then: Vec<MockTurn>) -> (MockCompletionModel, Gated) {
    let (model, agent) = failing_then(then);
    (model, gated("llm", "error", agent, "hi").await)
}

const HEAD: [&str; 6] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "node.error llm:step PromptError",
    "exec.paused llm:step error",
];

fn expect(action: &str, tail: &[&str]) -> Vec<String> {
    let mut out = lines(&HEAD);
    out.push(format!("exec.resumed {action}"));
    out.extend(lines(tail));
    out
}

#[tokio::test]
async fn model_error_retry_calls_the_model_again_and_the_run_goes_on() {
    let (model, run) = failing(vec![MockTurn::text("recovered")]).await;
    let p = retry_at(&run.hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "llm:step");
    let done = run.finish().await;
    assert_eq!(done.response().output(), "recovered");
    assert_eq!(model.request_count(), 2, "the failed call and its retry");
    assert_eq!(
        done.events,
        expect(
            "retry",
            &[
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let fin = &finished(&done.hub, "llm:step")[0];
    assert_eq!(fin["attempts"], 2, "{fin}");
    assert_eq!(fin["output"]["text"], "recovered");
}

#[tokio::test]
async fn model_error_retry_that_fails_again_holds_again() {
    let (model, run) = failing(vec![
        MockTurn::error("still down"),
        MockTurn::text("third time"),
    ])
    .await;
    retry_at(&run.hub, 1).await;
    let p2 = retry_at(&run.hub, 2).await;
    assert_eq!(p2.payload()["point"], "error");
    let done = run.finish().await;
    assert_eq!(done.response().output(), "third time");
    assert_eq!(model.request_count(), 3);
    assert_eq!(
        done.events,
        expect(
            "retry",
            &[
                "node.error llm:step PromptError",
                "exec.paused llm:step error",
                "exec.resumed retry",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let second = &done.hub.frames_of("node.error")[1];
    assert!(
        second.payload()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("still down"),
        "the second hold shows the retry's error: {:?}",
        second.payload()
    );
    assert_eq!(finished(&done.hub, "llm:step")[0]["attempts"], 3);
}

#[tokio::test]
async fn model_error_inject_answers_the_turn_without_calling_the_model_again() {
    let (model, run) = failing(vec![]).await;
    inject_at(&run.hub, 1, json!("canned")).await;
    let done = run.finish().await;
    assert_eq!(done.response().output(), "canned");
    assert_eq!(model.request_count(), 1, "only the failed call went out");
    assert_eq!(
        done.events,
        expect(
            "inject",
            &[
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
    let fin = &finished(&done.hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], "canned", "{fin}");
    assert_eq!(fin["injected"], true);
}

#[tokio::test]
async fn model_error_continue_passes_rigs_error_to_the_app() {
    let (model, run) = failing(vec![]).await;
    continue_at(&run.hub, 1).await;
    let done = run.finish().await;
    let err = match done.out {
        Ok(Err(err)) => err,
        other => panic!("rig's error reaches the app, got {other:?}"),
    };
    assert!(err.to_string().contains("upstream 503"), "{err}");
    assert_eq!(model.request_count(), 1);
    assert_eq!(
        done.events,
        expect(
            "continue",
            &[
                "node.finished llm:step error",
                // `run` ends ok: its block returned (rig's `Err` is the block's value).
                "node.finished agent:a ok",
                "run.finished ok",
            ]
        )
    );
}

#[tokio::test]
async fn model_error_abort_ends_the_enclosing_run() {
    let (model, run) = failing(vec![MockTurn::text("never")]).await;
    abort_at(&run.hub, 1).await;
    let done = run.finish().await;
    assert!(done.out.is_err(), "the run returns Aborted");
    assert_eq!(model.request_count(), 1, "nothing more is called");
    assert_eq!(
        done.events,
        expect(
            "abort",
            &[
                "node.finished llm:step aborted",
                "node.finished agent:a aborted",
                "run.finished aborted",
            ]
        )
    );
}

#[tokio::test]
async fn model_error_abort_of_a_prompt_call_that_is_its_own_run_returns_a_cancelled_report() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, error_gate()).await;
    let (_model, agent) = failing_then(vec![]);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { agent.graphmind().prompt("hi").session(&gm).await }
    });
    abort_at(&hub, 1).await;
    let err = join(task).await.expect_err("cancelled");
    match &err {
        PromptError::Report(report) => {
            assert_eq!(report.kind, rig_core::error::ErrorKind::Cancelled, "{err}");
        }
        other => panic!("expected a cancelled report, got {other:?}"),
    }
    runs_finished(&hub, 1).await;
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn without_a_debugger_a_gated_model_error_reaches_the_app_at_once() {
    let (model, agent) = failing_then(vec![]);
    let gm = graphmind::Session::new(
        graphmind::Config::new("rig-detached")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        agent.graphmind().prompt("hi").session(&gm),
    )
    .await
    .expect("not held");
    assert!(out.is_err());
    assert_eq!(model.request_count(), 1);
    gm.dispose().await;
}

#[tokio::test]
async fn two_agents_failing_at_once_each_hold_at_their_own_error_gate() {
    // Both agents' buses mint the same effect ids: the graphmind run tells their steps apart.
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, error_gate()).await;
    let (model_a, agent_a) = failing_then(vec![MockTurn::text("A")]);
    let (model_b, agent_b) = failing_then(vec![MockTurn::text("B")]);
    let a = spawn_in_run(&gm, agent_a, "hi");
    let b = spawn_in_run(&gm, agent_b, "hi");
    let held = support::wait_count(&hub, "exec.paused", 2).await;
    let runs: std::collections::HashSet<&str> = held.iter().map(|p| p.run_id()).collect();
    assert_eq!(runs.len(), 2, "one hold per run");
    retry_at(&hub, 1).await;
    retry_at(&hub, 2).await;
    assert_eq!(
        join(a).await.expect("not aborted").expect("ok").output(),
        "A"
    );
    assert_eq!(
        join(b).await.expect("not aborted").expect("ok").output(),
        "B"
    );
    assert_eq!(model_a.request_count() + model_b.request_count(), 4);
    runs_finished(&hub, 2).await;
    hub.assert_valid();
    gm.dispose().await;
}
