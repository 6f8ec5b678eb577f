//! `#[graphmind::model_step(codec = graphmind_openai::codec::Chat)]` over async-openai's own
//! request and response types: a user's hand-written step records the same output as the
//! wrapped client does for the same request, and a stream under the SDK's alias is teed.

mod support;

use std::sync::OnceLock;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionRequest, CreateChatCompletionResponse,
};
use async_openai::types::responses::{CreateResponse, Response};
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::json;
use support::mock::Mock;
use support::{attached, deltas, finished, runs_finished, sdk, started};

static CLIENT: OnceLock<async_openai::Client<OpenAIConfig>> = OnceLock::new();

fn client() -> &'static async_openai::Client<OpenAIConfig> {
    CLIENT.get().expect("set by the test")
}

#[graphmind::model_step(codec = graphmind_openai::codec::Chat)]
async fn step(
    req: CreateChatCompletionRequest,
) -> Result<CreateChatCompletionResponse, OpenAIError> {
    client().chat().create(req).await
}

#[graphmind::model_step(codec = graphmind_openai::codec::Chat, stream = true)]
async fn step_stream(
    req: CreateChatCompletionRequest,
) -> Result<ChatCompletionResponseStream, OpenAIError> {
    client().chat().create_stream(req).await
}

#[graphmind::model_step(codec = graphmind_openai::codec::Responses)]
async fn respond(req: CreateResponse) -> Result<Response, OpenAIError> {
    client().responses().create(req).await
}

/// The same step over a client of its own (the test's mock), not the shared one.
#[graphmind::model_step(codec = graphmind_openai::codec::Responses, skip(client))]
async fn respond_with(
    client: &async_openai::Client<OpenAIConfig>,
    req: CreateResponse,
) -> Result<Response, OpenAIError> {
    client.responses().create(req).await
}

fn request(stream: bool) -> CreateChatCompletionRequest {
    sdk(json!({
        "model": "tools",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon, and 120 USD in EUR?"}
        ]
    }))
}

#[tokio::test]
async fn a_codec_step_records_what_the_wrapped_client_records() {
    let mock = Mock::start().await;
    CLIENT.get_or_init(|| mock.client());
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    gm.run("a", async {
        step(request(false)).await.expect("ok");
        wrapped.chat().create(request(false)).await.expect("ok");
        let mut s = step_stream(request(true)).await.expect("ok");
        let mut chunks = 0;
        while let Some(c) = s.next().await {
            c.expect("a chunk");
            chunks += 1;
        }
        assert_eq!(chunks, 8);
        let first = respond(sdk(json!({"model": "text", "input": "hi"})))
            .await
            .expect("ok");
        respond(sdk(
            json!({"model": "text", "input": "more", "previous_response_id": first.id}),
        ))
        .await
        .expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 5);
    let (by_macro, by_wrapper) = (&fins[0], &fins[1]);
    for key in [
        "text",
        "finishReason",
        "rawFinishReason",
        "toolCalls",
        "response",
    ] {
        assert_eq!(by_macro["output"][key], by_wrapper["output"][key], "{key}");
    }
    assert_eq!(by_macro["usage"], by_wrapper["usage"]);
    assert_eq!(by_macro["responseId"], by_wrapper["responseId"]);
    assert_eq!(by_macro["output"]["finishReason"], "tool-calls");
    let streamed: String = deltas(&hub, "llm:step")
        .iter()
        .filter(|d| d["t"] == "tool-args" && d["index"] == 1)
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        streamed, r#"{"amount":120,"to":"EUR"}"#,
        "the alias stream was teed"
    );
    let ids: Vec<String> = started(&hub, "llm:step")
        .iter()
        .map(|s| s["instanceId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        ids[4].ends_with(":s2"),
        "previous_response_id continued: {ids:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

/// Regression: a Responses answer ends `completed` even when it stops for tool calls; the
/// codec path recorded `finishReason: "stop"` there while the wrapped client said
/// `tool-calls`. Both now go through `Reply`, which maps a normal end with tool calls.
#[tokio::test]
async fn a_codec_step_ending_completed_with_tool_calls_is_tool_calls_like_the_wrapper() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    gm.run("tools", async {
        respond_with(
            &mock.client(),
            sdk(json!({"model": "tools", "input": "weather?"})),
        )
        .await
        .expect("ok");
        wrapped
            .responses()
            .create(sdk(json!({"model": "tools", "input": "weather?"})))
            .await
            .expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 2);
    for (path, fin) in ["codec", "wrapper"].iter().zip(&fins) {
        assert_eq!(fin["output"]["finishReason"], "tool-calls", "{path}");
        assert_eq!(fin["output"]["rawFinishReason"], "completed", "{path}");
        assert_eq!(fin["output"]["toolCalls"][1]["name"], "convert", "{path}");
    }
    assert_eq!(fins[0]["output"], fins[1]["output"]);
    hub.assert_valid();
    gm.dispose().await;
}
