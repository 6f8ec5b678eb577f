//! Every action at every gate of a wrapped request, as exact event sequences against the
//! fake debugger, with the mock OpenAI server counting what actually went out.

mod support;

use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionRequest, CreateChatCompletionResponse,
};
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::{Mock, fixture_json};
use support::{
    SECOND, abort_at, attached, continue_at, edit_at, events, finished, lines, pause_id, paused,
    retry_at, runs_finished, sdk,
};

fn request(model: &str) -> CreateChatCompletionRequest {
    sdk(json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon?"}
        ]
    }))
}

const HEAD: [&str; 4] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
];

fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

type Outcome = Result<Result<CreateChatCompletionResponse, OpenAIError>, graphmind::Aborted>;

fn spawn_create(
    gm: &graphmind::Session,
    client: graphmind_openai::Client<async_openai::config::OpenAIConfig>,
    req: CreateChatCompletionRequest,
) -> tokio::task::JoinHandle<Outcome> {
    let gm = gm.clone();
    tokio::spawn(async move { gm.run("a", async { client.chat().create(req).await }).await })
}

async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
}

#[tokio::test]
async fn before_holds_with_nothing_in_flight_then_continue_sends_it() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("text"));
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "llm:step");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        mock.count(),
        0,
        "nothing leaves while the before gate holds"
    );
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let resp = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(resp.id, "chatcmpl-text-1");
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
    let task = spawn_create(&gm, mock.client().graphmind(), request("text"));
    let p = paused(&hub, 1).await;
    let mut canned = fixture_json("chat_refusal.json");
    canned["id"] = json!("chatcmpl-canned");
    assert!(hub.inject(p.run_id(), &pause_id(&p), canned));
    let resp = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(resp.id, "chatcmpl-canned");
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
    assert_eq!(fin["output"]["text"], "I can't help with that.");
    assert_eq!(fin["responseId"], "chatcmpl-canned");
    hub.assert_valid();
    gm.dispose().await;
}

/// Regression (issue 11): an after-gate inject recorded the replaced response's finish
/// reason and usage beside the injected output.
#[tokio::test]
async fn after_inject_records_the_injected_responses_finish_reason_and_usage() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("tools"));
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "after");
    assert!(hub.inject(p.run_id(), &pause_id(&p), fixture_json("chat_text.json")));
    let resp = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(
        resp.id, "chatcmpl-text-1",
        "the caller gets the injected response"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step after",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["injected"], true);
    assert_eq!(fin["output"]["finishReason"], "stop");
    assert_eq!(fin["output"]["toolCalls"], json!([]));
    assert_eq!(
        fin["usage"]["inputTokens"], 1320,
        "the injected response's usage"
    );
    assert_eq!(fin["usage"]["cacheReadTokens"], 1280);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn after_retry_sends_the_request_again_as_one_execution() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("text"));
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
async fn error_continue_returns_the_sdks_429_untouched() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let bare = mock.client().chat().create(request("quota")).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("quota"));
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let err = join(task)
        .await
        .expect("not aborted")
        .expect_err("the SDK's error");
    assert!(matches!(err, OpenAIError::ApiError(_)), "{err:?}");
    assert!(err.to_string().contains("insufficient_quota"), "{err}");
    assert_eq!(
        err.to_string(),
        bare.expect_err("bare fails too").to_string()
    );
    assert_eq!(
        mock.count(),
        2,
        "one request each: the SDK does not retry a quota error"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step ApiError",
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

/// The numbers: the SDK retries a 500 three times inside `create`, so the error
/// gate sees the fourth failure; a retry there is the fifth request, and `attempts` counts
/// the adapter's two dispatches.
#[tokio::test]
async fn error_retry_after_the_sdks_own_retries_succeeds_with_two_attempts() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("fail-4"));
    let p = paused(&hub, 1).await;
    assert_eq!(
        mock.count(),
        4,
        "1 request + the SDK's 3 retries, before the gate"
    );
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let resp = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(resp.id, "chatcmpl-text-1");
    assert_eq!(mock.count(), 5);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step ApiError",
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
async fn error_inject_of_a_bad_body_is_refused_until_it_is_a_completion() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("bad-body"));
    let p = paused(&hub, 1).await;
    let id = pause_id(&p);
    assert!(hub.inject(
        p.run_id(),
        &id,
        json!({"choices": "still not a completion"})
    ));
    assert_eq!(
        hub.wait_for_kind("exec.refused", 5 * SECOND)
            .await
            .payload()["code"],
        "schema"
    );
    assert!(!task.is_finished(), "the gate stays held");
    assert!(hub.inject(p.run_id(), &id, fixture_json("chat_text.json")));
    let resp = join(task)
        .await
        .expect("not aborted")
        .expect("the injected response");
    assert_eq!(resp.id, "chatcmpl-text-1");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step JSONDeserialize",
            "exec.paused llm:step error",
            "exec.refused schema",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["injected"], true);
    assert_eq!(fin["output"]["finishReason"], "stop");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn error_abort_ends_the_run() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("quota"));
    abort_at(&hub, 1).await;
    let aborted = join(task).await.expect_err("aborted");
    assert_eq!(aborted.name(), "a");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step ApiError",
            "exec.paused llm:step error",
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
async fn a_connection_error_is_gated_and_continue_returns_it() {
    // A port that refuses connections, held for the whole test (a closed listener's port
    // was once handed to another test's mock server, and the request succeeded).
    let refusing = graphmind_tests::RefusingPort::bind();
    let client = async_openai::Client::with_config(
        async_openai::config::OpenAIConfig::new()
            .with_api_base(format!("http://127.0.0.1:{}/v1", refusing.port))
            .with_api_key("sk-mock"),
    )
    .graphmind();
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_create(&gm, client, request("text"));
    continue_at(&hub, 1).await;
    let err = join(task)
        .await
        .expect("not aborted")
        .expect_err("connection refused");
    assert!(matches!(err, OpenAIError::Reqwest(_)), "{err:?}");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step HttpError",
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

async fn drain(mut s: ChatCompletionResponseStream) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        out.push(serde_json::to_value(item.expect("a chunk")).expect("json"));
    }
    out
}

fn stream_request(model: &str) -> CreateChatCompletionRequest {
    let mut req = request(model);
    req.stream = Some(true);
    req
}

type Streamed = Result<Result<Vec<Value>, OpenAIError>, graphmind::Aborted>;

/// A streamed request in run `a`, drained, on a task of its own (its gates are held).
fn spawn_stream(
    gm: &graphmind::Session,
    client: graphmind_openai::Client<async_openai::config::OpenAIConfig>,
    req: CreateChatCompletionRequest,
) -> tokio::task::JoinHandle<Streamed> {
    let gm = gm.clone();
    tokio::spawn(async move {
        gm.run("a", async {
            let s = client.chat().create_stream(req).await?;
            Ok::<_, OpenAIError>(drain(s).await)
        })
        .await
    })
}

#[tokio::test]
async fn a_stream_that_fails_to_open_is_gated_and_retry_opens_it() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), stream_request("fail-4"));
    retry_at(&hub, 1).await;
    let chunks = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(chunks.len(), 3);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step ApiError",
            "exec.paused llm:step error",
            "exec.resumed retry",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["attempts"], 2);
    assert_eq!(fin["streamed"], true);
    assert_eq!(
        fin["output"]["text"],
        "It is 21 °C and sunny in Lisbon; 120 USD is 103 EUR."
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_has_no_after_gate_and_before_inject_streams_the_chunks() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(
        &hub,
        vec![
            json!({"kind": "llm", "point": "before"}),
            json!({"kind": "llm", "point": "after"}),
        ],
    )
    .await;
    let task = spawn_stream(&gm, mock.client().graphmind(), stream_request("text"));
    let p = paused(&hub, 1).await;
    let chunks = fixture_json("chat_refusal.sse.json");
    assert!(hub.inject(p.run_id(), &pause_id(&p), chunks.clone()));
    let got = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(got.len(), 4);
    assert_eq!(got[1]["choices"][0]["delta"]["refusal"], "I can't ");
    assert_eq!(mock.count(), 0);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:a",
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "exec.paused llm:step before",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ]),
        "no after gate on a stream"
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["injected"], true);
    assert_eq!(fin["output"]["text"], "I can't help with that.");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn before_edit_sends_the_edited_request_to_the_model() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_create(&gm, mock.client().graphmind(), request("text"));
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["editable"], true);
    let messages = json!([{"role": "user", "content": "Weather in Porto?"}]);
    edit_at(&hub, &p, json!({"messages": messages}), "e-1");
    join(task).await.expect("not aborted").expect("ok");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["messages"][0]["content"], "Weather in Porto?",
        "the edited request is what left: {}",
        seen[0].body
    );
    assert_eq!(
        seen[0].body["model"], "text",
        "the keys not edited are kept"
    );
    runs_finished(&hub, 1).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["requestId"], "e-1");
    assert_eq!(
        resumed.payload()["edited"]["after"]["messages"][0]["content"],
        "Weather in Porto?"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn before_edit_of_a_stream_sends_the_edited_request_to_the_model() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), stream_request("text"));
    let p = paused(&hub, 1).await;
    assert_eq!(
        p.payload()["editable"],
        true,
        "a stream's request is editable"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(mock.count(), 0, "nothing leaves while the gate holds");
    let messages = json!([{"role": "user", "content": "Weather in Porto?"}]);
    edit_at(&hub, &p, json!({"messages": messages}), "e-2");
    let chunks = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(chunks.len(), 3, "the stream reaches the caller");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["messages"][0]["content"], "Weather in Porto?",
        "the edited request is what left: {}",
        seen[0].body
    );
    assert_eq!(seen[0].body["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        seen[0].body["model"], "text",
        "the keys not edited are kept"
    );
    assert_eq!(seen[0].body["stream"], true, "still a stream");
    runs_finished(&hub, 1).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["requestId"], "e-2");
    assert_eq!(
        resumed.payload()["edited"]["after"]["messages"][0]["content"],
        "Weather in Porto?"
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["streamed"], true);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_edit_that_does_not_fit_the_request_is_refused_and_the_gate_stays_held() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), stream_request("text"));
    let p = paused(&hub, 1).await;
    edit_at(&hub, &p, json!({"messages": 7}), "e-3");
    let refused = hub
        .wait_for("exec.refused", 5 * SECOND, |fs| {
            fs.iter().any(|f| f.kind() == "exec.refused")
        })
        .await;
    let refused = refused
        .iter()
        .find(|f| f.kind() == "exec.refused")
        .expect("refused");
    assert_eq!(refused.payload()["code"], "schema");
    assert_eq!(refused.payload()["requestId"], "e-3");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!task.is_finished(), "still held after the refusal");
    assert_eq!(mock.count(), 0);
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let chunks = join(task).await.expect("not aborted").expect("ok");
    assert_eq!(chunks.len(), 3);
    assert_eq!(
        mock.seen()[0].body["messages"][1]["content"],
        "Weather in Lisbon?",
        "continued without an edit: the original request"
    );
    gm.dispose().await;
}
