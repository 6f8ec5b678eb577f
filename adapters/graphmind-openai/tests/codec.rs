//! The codecs read async-openai's types as the wrapped client does: the fixtures, typed by
//! the SDK, through `graphmind_openai::codec::{Chat, Responses}`.

mod support;

use std::borrow::Cow;

use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    CreateChatCompletionRequest, CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
};
use async_openai::types::responses::{CreateResponse, Response, ResponseStreamEvent};
use graphmind::model::{
    ChunkCodec, DeltaKind, FinishReason, Grouping, RequestCodec, ResponseCodec, Usage,
};
use graphmind_openai::codec::{Chat, Responses};
use serde_json::json;
use support::mock::fixture_json;
use support::sdk;

#[test]
fn the_chat_codec_reads_text_tool_calls_usage_and_finish_reason() {
    let r: CreateChatCompletionResponse = sdk(fixture_json("chat_tools.json"));
    assert_eq!(
        <Chat as ResponseCodec<_>>::usage(&r),
        Some(
            Usage::inclusive(1200, 80)
                .with_total(1280)
                .with_cache_read(1000)
                .with_reasoning(30)
        )
    );
    let raw = <Chat as ResponseCodec<_>>::finish_reason(&r).expect("a reason");
    assert_eq!(FinishReason::from_raw(&raw), FinishReason::ToolCalls);
    let calls = <Chat as ResponseCodec<_>>::tool_calls(&r);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id.as_deref(), Some("call_weather_1"));
    assert_eq!(calls[1].name, "convert");
    assert_eq!(calls[1].arguments, r#"{"amount":120,"to":"EUR"}"#);
    assert_eq!(
        <Chat as ResponseCodec<_>>::response_id(&r),
        Some(Cow::Borrowed("chatcmpl-tools-1"))
    );
    let refusal: CreateChatCompletionResponse = sdk(fixture_json("chat_refusal.json"));
    assert_eq!(
        <Chat as ResponseCodec<_>>::text(&refusal).as_deref(),
        Some("I can't help with that.")
    );
}

#[test]
fn the_chat_codec_streams_tool_arguments_by_index() {
    let chunks: Vec<CreateChatCompletionStreamResponse> = sdk(fixture_json("chat_tools.sse.json"));
    let mut by_index: [String; 2] = Default::default();
    let mut named = Vec::new();
    for c in chunks.into_iter().map(Ok::<_, OpenAIError>) {
        <Chat as ChunkCodec<_>>::call_deltas(&c, &mut |d| {
            assert_eq!(d.kind, DeltaKind::ToolArgs);
            let i = usize::try_from(d.index.expect("an index")).expect("small");
            by_index[i].push_str(d.text);
            if let Some(name) = d.tool_name {
                named.push((i, name.to_owned()));
            }
        });
    }
    assert_eq!(by_index[0], r#"{"city":"Lisbon"}"#);
    assert_eq!(by_index[1], r#"{"amount":120,"to":"EUR"}"#);
    assert_eq!(
        named,
        [(0, "get_weather".to_owned()), (1, "convert".to_owned())]
    );
    let err: Result<CreateChatCompletionStreamResponse, OpenAIError> =
        Err(OpenAIError::InvalidArgument("cut".into()));
    assert_eq!(
        <Chat as ChunkCodec<_>>::error(&err).as_deref(),
        Some("invalid args: cut")
    );
}

#[test]
fn the_chat_codec_groups_by_first_message_and_count() {
    let q: CreateChatCompletionRequest = sdk(json!({
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    }));
    assert!(matches!(Chat::grouping(&q), Grouping::Messages(_, 2)));
}

#[test]
fn the_responses_codec_reads_a_response_and_groups_by_previous_response_id() {
    let r: Response = sdk(fixture_json("responses_web_search.json"));
    assert_eq!(
        <Responses as ResponseCodec<_>>::text(&r).as_deref(),
        Some("Lisbon is 21 °C and sunny today.")
    );
    assert_eq!(
        <Responses as ResponseCodec<_>>::usage(&r).and_then(|u| u.cache_read_tokens),
        Some(256)
    );
    let tools: Response = sdk(fixture_json("responses_tools.json"));
    assert_eq!(<Responses as ResponseCodec<_>>::tool_calls(&tools).len(), 2);
    let q: CreateResponse =
        sdk(json!({"model": "m", "input": "more", "previous_response_id": "resp_7"}));
    assert_eq!(Responses::grouping(&q), Grouping::after("resp_7"));
}

#[test]
fn the_responses_codec_streams_text_and_an_unknown_event_is_no_error() {
    let events: Vec<serde_json::Value> = sdk(fixture_json("responses_web_search.sse.json"));
    let mut text = String::new();
    let mut errors = 0;
    for raw in events {
        let item: Result<ResponseStreamEvent, OpenAIError> = serde_json::from_value(raw.clone())
            .map_err(|e| OpenAIError::JSONDeserialize(e, raw.to_string()));
        <Responses as ChunkCodec<_>>::call_deltas(&item, &mut |d| text.push_str(d.text));
        errors += usize::from(<Responses as ChunkCodec<_>>::error(&item).is_some());
        if let Some(reason) = <Responses as ChunkCodec<_>>::finish_reason(&item) {
            assert_eq!(reason, "completed");
        }
    }
    assert_eq!(text, "Lisbon is 21 °C and sunny today.");
    assert_eq!(errors, 0, "the unknown event type is not a stream error");
}
