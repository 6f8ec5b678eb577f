//! Every action at every gate of a wrapped call, as exact event sequences against the fake
//! debugger, with the mock provider counting what actually went out.

mod support;

use std::time::Duration;

use genai::chat::ChatResponse;
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::{Mock, TEXT};
use support::{
    abort_at, attached, continue_at, events, finished, inject_at, join, pause_id, paused, request,
    retry_at, runs_finished, spawn_stream,
};

const HEAD: [&str; 4] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
];

fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

type Outcome = Result<genai::Result<ChatResponse>, graphmind::Aborted>;

fn spawn_chat(
    gm: &graphmind::Session,
    client: graphmind_genai::Client,
    model: &'static str,
) -> tokio::task::JoinHandle<Outcome> {
    let gm = gm.clone();
    tokio::spawn(async move {
        gm.run("a", async {
            client.exec_chat(model, request(), None).await
        })
        .await
    })
}

/// A `ChatResponse` as JSON, as a debugger would inject it.
fn canned(text: &str) -> Value {
    json!({
        "content": [{"Text": text}],
        "model_iden": {"adapter_kind": "OpenAI", "model_name": "canned"},
        "provider_model_iden": {"adapter_kind": "OpenAI", "model_name": "canned-1"},
        "stop_reason": {"Completed": "stop"},
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    })
}

#[tokio::test]
async fn before_holds_with_nothing_in_flight_then_continue_sends_it() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-text");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "llm:step");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        mock.count(),
        0,
        "nothing leaves while the before gate holds"
    );
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let res = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(res.first_text(), Some(TEXT));
    assert_eq!(mock.count(), 1);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed continue",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn before_inject_skips_the_request_and_records_the_injected_response() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "claude-text");
    inject_at(&hub, 1, canned("From the debugger.")).await;
    let res = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(res.first_text(), Some("From the debugger."));
    assert_eq!(mock.count(), 0, "an inject at before sends nothing");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["injected"], true);
    assert_eq!(fin["output"]["text"], "From the debugger.");
    assert_eq!(
        fin["usage"]["inputTokens"], 3,
        "the injected response's usage"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn an_inject_that_is_not_a_chat_response_is_refused_and_the_gate_stays_held() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-text");
    let p = paused(&hub, 1).await;
    assert!(hub.inject(
        p.run_id(),
        &pause_id(&p),
        json!({"text": "not genai's shape"})
    ));
    support::wait_count(&hub, "exec.refused", 1).await;
    assert!(hub.inject(p.run_id(), &pause_id(&p), canned("Fits.")));
    let res = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(res.first_text(), Some("Fits."));
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step after",
            "exec.refused schema",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn after_retry_sends_the_request_again_as_one_execution() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-text");
    retry_at(&hub, 1).await;
    continue_at(&hub, 2).await;
    join(task).await.expect("not aborted").expect("ok");
    assert_eq!(mock.count(), 2);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step after",
            "exec.resumed retry",
            "exec.paused llm:step after",
            "exec.resumed continue",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&hub, "llm:step")[0]["attempts"], 2);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn error_retry_reissues_a_failed_request_and_succeeds() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "claude-fail-1");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let res = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(res.first_text(), Some(TEXT));
    assert_eq!(mock.count(), 2);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step WebModelCall",
            "exec.paused llm:step error",
            "exec.resumed retry",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&hub, "llm:step")[0]["attempts"], 2);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn error_continue_returns_genais_error_untouched() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let bare = mock
        .client()
        .exec_chat("gpt-always-500", request(), None)
        .await
        .expect_err("bare fails");
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-always-500");
    continue_at(&hub, 1).await;
    let err = join(task)
        .await
        .expect("not aborted")
        .expect_err("the error");
    assert_eq!(err.to_string(), bare.to_string());
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step WebModelCall",
            "exec.paused llm:step error",
            "exec.resumed continue",
            "node.finished llm:step error",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn error_inject_substitutes_a_response_for_the_failure() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-always-500");
    inject_at(&hub, 1, canned("Recovered.")).await;
    let res = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(res.first_text(), Some("Recovered."));
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step WebModelCall",
            "exec.paused llm:step error",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&hub, "llm:step")[0]["injected"], true);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn abort_at_before_ends_the_run_and_sends_nothing() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-text");
    abort_at(&hub, 1).await;
    assert!(join(task).await.is_err(), "the run returns Err(Aborted)");
    assert_eq!(mock.count(), 0);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed abort",
            "node.finished llm:step aborted",
            "node.finished agent:a aborted",
            "run.finished aborted",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_that_fails_before_its_first_event_holds_the_error_gate_and_retry_reopens_it() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "gpt-fail-1");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let got = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(
        got,
        [
            "start",
            "chunk Sunny, ",
            "chunk 24 °C ",
            "chunk in Lisbon.",
            "end usage=false"
        ],
        "one Start, then the reopened stream's events"
    );
    assert_eq!(mock.count(), 2);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step WebStream",
            "exec.paused llm:step error",
            "exec.resumed retry",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["attempts"], 2);
    assert_eq!(fin["output"]["text"], TEXT);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_error_continued_reaches_the_caller_and_the_step_ends_error() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "claude-always-500");
    continue_at(&hub, 1).await;
    let got = join(task).await.expect("not aborted").expect("opened");
    assert_eq!(got.first().map(String::as_str), Some("start"));
    assert!(got.get(1).is_some_and(|l| l.starts_with("err ")), "{got:?}");
    runs_finished(&hub, 1).await;
    let evs = events(&hub);
    assert_eq!(
        evs[..8],
        expect(&[
            "node.error llm:step WebStream",
            "exec.paused llm:step error",
            "exec.resumed continue",
            "node.finished llm:step error",
        ])[..],
        "{evs:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_injected_at_before_streams_the_injected_events_and_sends_nothing() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "claude-text");
    let p = paused(&hub, 1).await;
    let events_json = json!([
        "Start",
        {"Chunk": {"content": "Canned "}},
        {"Chunk": {"content": "answer."}},
        {"End": {"captured_stop_reason": {"Completed": "end_turn"}}}
    ]);
    assert!(hub.inject(p.run_id(), &pause_id(&p), events_json));
    let got = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(
        got,
        ["start", "chunk Canned ", "chunk answer.", "end usage=false"]
    );
    assert_eq!(mock.count(), 0);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["injected"], true);
    assert_eq!(fin["output"]["text"], "Canned answer.");
    assert_eq!(fin["output"]["finishReason"], "stop");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_that_cannot_be_prepared_holds_the_error_gate_and_retry_prepares_it_again() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "gpt-unresolved-1");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert_eq!(mock.count(), 0, "nothing was sent");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let got = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(
        got,
        [
            "start",
            "chunk Sunny, ",
            "chunk 24 °C ",
            "chunk in Lisbon.",
            "end usage=false"
        ]
    );
    assert_eq!(mock.count(), 1);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step Resolver",
            "exec.paused llm:step error",
            "exec.resumed retry",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&hub, "llm:step")[0]["attempts"], 2);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_that_cannot_be_prepared_continued_returns_genais_error() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "gpt-unresolved-9");
    continue_at(&hub, 1).await;
    let err = join(task)
        .await
        .expect("not aborted")
        .expect_err("genai's error");
    assert!(
        err.to_string().contains("no target for this model yet"),
        "{err}"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step Resolver",
            "exec.paused llm:step error",
            "exec.resumed continue",
            "node.finished llm:step error",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

/// `exec.resume` with an edited input (GraphMind 0.6 `edit-input`).
fn edit_at(hub: &FakeDebugger, held: &graphmind_tests::Frame, input: Value) {
    support::resume_with(
        hub,
        held,
        json!({"action": "continue", "input": input, "requestId": "e-1"}),
    );
}

#[tokio::test]
async fn before_edit_sends_the_edited_request_to_the_model() {
    // The regression of issue 35: genai model calls were not editable.
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_chat(&gm, mock.client().graphmind(), "gpt-text");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["editable"], true, "{:?}", p.payload());
    edit_at(&hub, &p, json!({"system": "Answer in French."}));
    join(task).await.expect("not aborted").expect("answered");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    let body = seen[0].body.to_string();
    assert!(
        body.contains("Answer in French."),
        "the edited request left: {body}"
    );
    assert!(
        body.contains("Weather in Lisbon?"),
        "the rest is kept: {body}"
    );
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["edited"]["after"]["system"], "Answer in French.");
    gm.dispose().await;
}

#[tokio::test]
async fn before_edit_of_a_stream_sends_the_edited_request_to_the_model() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "gpt-text");
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["editable"], true, "{:?}", p.payload());
    edit_at(&hub, &p, json!({"system": "Answer in French."}));
    join(task).await.expect("not aborted").expect("streamed");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    let body = seen[0].body.to_string();
    assert!(
        body.contains("Answer in French."),
        "the edited request left: {body}"
    );
    gm.dispose().await;
}
