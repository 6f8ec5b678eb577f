//! Codecs for async-openai's types, for a `#[graphmind::model_step]` function of your own
//! over the SDK's request and response types (the orphan rule forbids implementing
//! graphmind's traits for them, so these types read them instead):
//!
//! ```no_run
//! use async_openai::config::OpenAIConfig;
//! use async_openai::error::OpenAIError;
//! use async_openai::types::chat::{
//!     ChatCompletionResponseStream, CreateChatCompletionRequest, CreateChatCompletionResponse,
//! };
//!
//! // `skip(client)`: the client is no part of the step's input (and not `Serialize`).
//! #[graphmind::model_step(codec = graphmind_openai::codec::Chat, skip(client))]
//! async fn step(
//!     client: &async_openai::Client<OpenAIConfig>,
//!     req: CreateChatCompletionRequest,
//! ) -> Result<CreateChatCompletionResponse, OpenAIError> {
//!     client.chat().create(req).await
//! }
//!
//! // The SDK's stream alias needs `stream = true` to be teed (the attribute cannot see
//! // through an alias).
//! #[graphmind::model_step(codec = graphmind_openai::codec::Chat, skip(client), stream = true)]
//! async fn step_stream(
//!     client: &async_openai::Client<OpenAIConfig>,
//!     req: CreateChatCompletionRequest,
//! ) -> Result<ChatCompletionResponseStream, OpenAIError> {
//!     client.chat().create_stream(req).await
//! }
//! ```
//!
//! Call the SDK's own client inside such a step, not the wrapped
//! [`Client`](crate::Client): each of its calls is a model step already.
//!
//! They read the same fields, the same way, as the wrapped [`Client`](crate::Client) does,
//! so both paths record the same output.

use std::borrow::Cow;

use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    CreateChatCompletionRequest, CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
};
use async_openai::types::responses::{CreateResponse, Response, ResponseStreamEvent};
use graphmind::model::{
    ChunkCodec, ChunkState, Delta, DeltaKind, RequestCodec, ResponseCodec, ToolCall, Usage,
};
use serde::Serialize;
use serde_json::Value;

use crate::finish::Api;
use crate::output::{
    StepOut, StreamedCalls, chat_usage, event_delta, from_chat, from_response, is_unknown_event,
};

/// Reads the Chat Completions types: `CreateChatCompletionRequest`,
/// `CreateChatCompletionResponse` and the stream's `CreateChatCompletionStreamResponse`
/// (also as `Result<_, OpenAIError>`, the SDK's stream item), and a stream chunk as raw
/// `serde_json::Value` (also in a `Result`), which keeps `delta.reasoning_content`: see the
/// README's "Reasoning of OpenAI-compatible servers".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chat;

/// Reads the Responses types: `CreateResponse` (its `previous_response_id` groups steps),
/// `Response` and the stream's `ResponseStreamEvent` (also as `Result<_, OpenAIError>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Responses;

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn owned(s: Option<String>) -> Option<Cow<'static, str>> {
    s.map(Cow::Owned)
}

fn tool_calls(out: StepOut) -> Vec<ToolCall<'static>> {
    out.tool_calls
        .into_iter()
        .map(|c| {
            let call = ToolCall::new(c.name, c.arguments);
            if c.id.is_empty() {
                call
            } else {
                call.with_id(c.id)
            }
        })
        .collect()
}

impl ResponseCodec<CreateChatCompletionResponse> for Chat {
    fn usage(r: &CreateChatCompletionResponse) -> Option<Usage> {
        from_chat(&json(r)).usage
    }
    fn finish_reason(r: &CreateChatCompletionResponse) -> Option<Cow<'_, str>> {
        owned(from_chat(&json(r)).raw_finish)
    }
    fn text(r: &CreateChatCompletionResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(from_chat(&json(r)).text))
    }
    fn tool_calls(r: &CreateChatCompletionResponse) -> Vec<ToolCall<'_>> {
        tool_calls(from_chat(&json(r)))
    }
    fn model(r: &CreateChatCompletionResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&r.model))
    }
    fn response_id(r: &CreateChatCompletionResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&r.id))
    }
}

/// The deltas of one chat chunk, as JSON: `content` and `refusal` (text),
/// `reasoning_content` (reasoning; kept only in a raw JSON chunk, see [`Chat`]), and each
/// tool call's `function.arguments` by index, with its id and name when the chunk has them.
fn chat_deltas(v: &Value, emit: &mut dyn FnMut(Delta<'_>)) {
    for choice in v
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        for (key, kind) in [
            ("content", DeltaKind::Text),
            ("refusal", DeltaKind::Text),
            ("reasoning_content", DeltaKind::Reasoning),
        ] {
            if let Some(t) = delta.get(key).and_then(Value::as_str) {
                emit(Delta::new(kind, t));
            }
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) else {
                continue;
            };
            let mut d = Delta::tool_args(index, args);
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                d = d.with_call_id(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                d = d.with_tool_name(name);
            }
            emit(d);
        }
    }
}

/// Reads a chunk through `read` with the stream's tool calls kept in `state`: each
/// tool-argument piece names the id and tool its call was first named with (a chat call's
/// first piece, a Responses `output_item.added` event), as the wrapped client's pieces do.
fn named(
    state: &mut ChunkState,
    read: impl FnOnce(&mut dyn FnMut(Delta<'_>)),
    emit: &mut dyn FnMut(Delta<'_>),
) {
    let calls: &mut StreamedCalls = state.get_or_default();
    read(&mut |d| match (d.kind, d.index) {
        (DeltaKind::ToolArgs, Some(i)) => {
            emit(calls.piece(i, d.call_id, d.tool_name, d.text, false))
        }
        _ => emit(d),
    });
}

impl ChunkCodec<CreateChatCompletionStreamResponse> for Chat {
    fn call_deltas(c: &CreateChatCompletionStreamResponse, emit: &mut dyn FnMut(Delta<'_>)) {
        chat_deltas(&json(c), emit);
    }
    fn stream_deltas(
        c: &CreateChatCompletionStreamResponse,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        named(
            state,
            |e| <Self as ChunkCodec<CreateChatCompletionStreamResponse>>::call_deltas(c, e),
            emit,
        );
    }
    fn usage(c: &CreateChatCompletionStreamResponse) -> Option<Usage> {
        json(c).get("usage").and_then(chat_usage)
    }
    fn finish_reason(c: &CreateChatCompletionStreamResponse) -> Option<Cow<'_, str>> {
        let v = json(c);
        owned(
            v.pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
    }
    fn to_recorded(c: &CreateChatCompletionStreamResponse) -> Option<Value> {
        serde_json::to_value(c).ok()
    }
    fn from_recorded(v: Value) -> Option<CreateChatCompletionStreamResponse> {
        serde_json::from_value(v).ok()
    }
}

impl ChunkCodec<Result<CreateChatCompletionStreamResponse, OpenAIError>> for Chat {
    fn call_deltas(
        c: &Result<CreateChatCompletionStreamResponse, OpenAIError>,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        if let Ok(c) = c {
            <Self as ChunkCodec<CreateChatCompletionStreamResponse>>::call_deltas(c, emit);
        }
    }
    fn stream_deltas(
        c: &Result<CreateChatCompletionStreamResponse, OpenAIError>,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        named(
            state,
            |e| {
                <Self as ChunkCodec<Result<CreateChatCompletionStreamResponse, OpenAIError>>>::call_deltas(c, e)
            },
            emit,
        );
    }
    fn usage(c: &Result<CreateChatCompletionStreamResponse, OpenAIError>) -> Option<Usage> {
        c.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<CreateChatCompletionStreamResponse>>::usage)
    }
    fn finish_reason(
        c: &Result<CreateChatCompletionStreamResponse, OpenAIError>,
    ) -> Option<Cow<'_, str>> {
        c.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<CreateChatCompletionStreamResponse>>::finish_reason)
    }
    fn error(c: &Result<CreateChatCompletionStreamResponse, OpenAIError>) -> Option<String> {
        c.as_ref().err().map(ToString::to_string)
    }
    fn to_recorded(c: &Result<CreateChatCompletionStreamResponse, OpenAIError>) -> Option<Value> {
        c.as_ref().ok().and_then(|c| serde_json::to_value(c).ok())
    }
    fn from_recorded(v: Value) -> Option<Result<CreateChatCompletionStreamResponse, OpenAIError>> {
        serde_json::from_value(v).ok().map(Ok)
    }
}

/// A chat chunk as raw JSON, as async-openai's `byot` calls
/// (`create_stream_byot::<_, serde_json::Value>`) yield it: the same reading as the typed
/// chunk, plus `delta.reasoning_content`, which the typed chunk has no field for.
impl ChunkCodec<Value> for Chat {
    fn call_deltas(c: &Value, emit: &mut dyn FnMut(Delta<'_>)) {
        chat_deltas(c, emit);
    }
    fn stream_deltas(c: &Value, state: &mut ChunkState, emit: &mut dyn FnMut(Delta<'_>)) {
        named(
            state,
            |e| <Self as ChunkCodec<Value>>::call_deltas(c, e),
            emit,
        );
    }
    fn usage(c: &Value) -> Option<Usage> {
        c.get("usage").and_then(chat_usage)
    }
    fn finish_reason(c: &Value) -> Option<Cow<'_, str>> {
        c.pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .map(Cow::Borrowed)
    }
    fn to_recorded(c: &Value) -> Option<Value> {
        Some(c.clone())
    }
    fn from_recorded(v: Value) -> Option<Value> {
        Some(v)
    }
}

impl ChunkCodec<Result<Value, OpenAIError>> for Chat {
    fn call_deltas(c: &Result<Value, OpenAIError>, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Ok(c) = c {
            chat_deltas(c, emit);
        }
    }
    fn stream_deltas(
        c: &Result<Value, OpenAIError>,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        named(
            state,
            |e| <Self as ChunkCodec<Result<Value, OpenAIError>>>::call_deltas(c, e),
            emit,
        );
    }
    fn usage(c: &Result<Value, OpenAIError>) -> Option<Usage> {
        c.as_ref().ok().and_then(<Self as ChunkCodec<Value>>::usage)
    }
    fn finish_reason(c: &Result<Value, OpenAIError>) -> Option<Cow<'_, str>> {
        c.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<Value>>::finish_reason)
    }
    fn error(c: &Result<Value, OpenAIError>) -> Option<String> {
        c.as_ref().err().map(ToString::to_string)
    }
    fn to_recorded(c: &Result<Value, OpenAIError>) -> Option<Value> {
        c.as_ref().ok().cloned()
    }
    fn from_recorded(v: Value) -> Option<Result<Value, OpenAIError>> {
        Some(Ok(v))
    }
}

impl RequestCodec<CreateChatCompletionRequest> for Chat {
    fn api() -> Option<&'static str> {
        Some(Api::Chat.name())
    }
    fn bare_input() -> bool {
        true
    }
    fn first_message(q: &CreateChatCompletionRequest) -> Option<Cow<'_, str>> {
        q.messages.first().map(|m| Cow::Owned(json(m).to_string()))
    }
    fn message_count(q: &CreateChatCompletionRequest) -> usize {
        q.messages.len()
    }
}

/// A chat request as raw JSON (a `byot` call's): grouped by its `messages` as the typed one.
impl RequestCodec<Value> for Chat {
    fn api() -> Option<&'static str> {
        Some(Api::Chat.name())
    }
    fn bare_input() -> bool {
        true
    }
    fn first_message(q: &Value) -> Option<Cow<'_, str>> {
        q.pointer("/messages/0").map(|m| Cow::Owned(m.to_string()))
    }
    fn message_count(q: &Value) -> usize {
        q.get("messages")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }
}

impl ResponseCodec<Response> for Responses {
    fn usage(r: &Response) -> Option<Usage> {
        from_response(&json(r)).usage
    }
    fn finish_reason(r: &Response) -> Option<Cow<'_, str>> {
        owned(from_response(&json(r)).raw_finish)
    }
    fn text(r: &Response) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(from_response(&json(r)).text))
    }
    fn tool_calls(r: &Response) -> Vec<ToolCall<'_>> {
        tool_calls(from_response(&json(r)))
    }
    fn model(r: &Response) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&r.model))
    }
    fn response_id(r: &Response) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&r.id))
    }
}

impl ChunkCodec<ResponseStreamEvent> for Responses {
    /// Text, reasoning and tool-argument deltas. An argument delta event names its call by
    /// output index only; the call's id and tool name come once, in the
    /// `response.output_item.added` event of a function (or custom tool) call, reported as
    /// an empty tool-argument delta at that index that names them, so that the recorded
    /// `toolCalls` carry the `call_id` and name as the wrapped client's do.
    fn call_deltas(e: &ResponseStreamEvent, emit: &mut dyn FnMut(Delta<'_>)) {
        let v = json(e);
        if let Some((kind, text, index, _)) = event_delta(&v) {
            emit(if kind == DeltaKind::ToolArgs {
                Delta::tool_args(index, text)
            } else {
                Delta::new(kind, text)
            });
        } else if let Some((index, call_id, name)) = added_call(&v) {
            let mut d = Delta::tool_args(index, "");
            if let Some(id) = call_id {
                d = d.with_call_id(id);
            }
            if let Some(name) = name {
                d = d.with_tool_name(name);
            }
            emit(d);
        }
    }
    fn stream_deltas(
        c: &ResponseStreamEvent,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        named(
            state,
            |e| <Self as ChunkCodec<ResponseStreamEvent>>::call_deltas(c, e),
            emit,
        );
    }
    fn usage(e: &ResponseStreamEvent) -> Option<Usage> {
        let v = json(e);
        from_response(v.get("response")?).usage
    }
    fn finish_reason(e: &ResponseStreamEvent) -> Option<Cow<'_, str>> {
        let v = json(e);
        match v.get("type")?.as_str()? {
            "response.completed" | "response.incomplete" | "response.failed" => {
                owned(from_response(v.get("response")?).raw_finish)
            }
            _ => None,
        }
    }
    fn error(e: &ResponseStreamEvent) -> Option<String> {
        let v = json(e);
        (v.get("type")?.as_str()? == "error")
            .then(|| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .flatten()
    }
    fn to_recorded(c: &ResponseStreamEvent) -> Option<Value> {
        serde_json::to_value(c).ok()
    }
    fn from_recorded(v: Value) -> Option<ResponseStreamEvent> {
        serde_json::from_value(v).ok()
    }
}

/// A `response.output_item.added` event of a function or custom tool call: (output index,
/// `call_id`, tool name).
fn added_call(v: &Value) -> Option<(u64, Option<&str>, Option<&str>)> {
    if v.get("type")?.as_str()? != "response.output_item.added" {
        return None;
    }
    let item = v.get("item")?;
    match item.get("type")?.as_str()? {
        "function_call" | "custom_tool_call" => Some((
            v.get("output_index").and_then(Value::as_u64).unwrap_or(0),
            item.get("call_id").and_then(Value::as_str),
            item.get("name").and_then(Value::as_str),
        )),
        _ => None,
    }
}

impl ChunkCodec<Result<ResponseStreamEvent, OpenAIError>> for Responses {
    fn call_deltas(c: &Result<ResponseStreamEvent, OpenAIError>, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Ok(c) = c {
            <Self as ChunkCodec<ResponseStreamEvent>>::call_deltas(c, emit);
        }
    }
    fn stream_deltas(
        c: &Result<ResponseStreamEvent, OpenAIError>,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        named(
            state,
            |e| <Self as ChunkCodec<Result<ResponseStreamEvent, OpenAIError>>>::call_deltas(c, e),
            emit,
        );
    }
    fn usage(c: &Result<ResponseStreamEvent, OpenAIError>) -> Option<Usage> {
        c.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<ResponseStreamEvent>>::usage)
    }
    fn finish_reason(c: &Result<ResponseStreamEvent, OpenAIError>) -> Option<Cow<'_, str>> {
        c.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<ResponseStreamEvent>>::finish_reason)
    }
    /// An event type this async-openai does not know (an `Err` whose raw JSON has a `type`)
    /// is not an error of the stream; any other `Err` is.
    fn error(c: &Result<ResponseStreamEvent, OpenAIError>) -> Option<String> {
        match c {
            Ok(e) => <Self as ChunkCodec<ResponseStreamEvent>>::error(e),
            Err(OpenAIError::JSONDeserialize(_, raw)) if is_unknown_event(raw) => None,
            Err(e) => Some(e.to_string()),
        }
    }
    fn to_recorded(c: &Result<ResponseStreamEvent, OpenAIError>) -> Option<Value> {
        c.as_ref().ok().and_then(|c| serde_json::to_value(c).ok())
    }
    fn from_recorded(v: Value) -> Option<Result<ResponseStreamEvent, OpenAIError>> {
        serde_json::from_value(v).ok().map(Ok)
    }
}

impl RequestCodec<CreateResponse> for Responses {
    fn api() -> Option<&'static str> {
        Some(Api::Responses.name())
    }
    fn bare_input() -> bool {
        true
    }
    fn previous_response_id(q: &CreateResponse) -> Option<Cow<'_, str>> {
        q.previous_response_id.as_deref().map(Cow::Borrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One delta as (kind, text, index, call id, tool name).
    type Seen = (
        DeltaKind,
        String,
        Option<u64>,
        Option<String>,
        Option<String>,
    );

    fn deltas(event: Value) -> Vec<Seen> {
        let e: ResponseStreamEvent = serde_json::from_value(event).expect("an SDK event");
        let mut out = Vec::new();
        <Responses as ChunkCodec<ResponseStreamEvent>>::call_deltas(&e, &mut |d| {
            out.push((
                d.kind,
                d.text.to_owned(),
                d.index,
                d.call_id.map(str::to_owned),
                d.tool_name.map(str::to_owned),
            ));
        });
        out
    }

    #[test]
    fn a_raw_json_chat_chunk_streams_its_reasoning_content() {
        let chunk = json!({
            "id": "chatcmpl-r1", "object": "chat.completion.chunk", "created": 1764547200,
            "model": "deepseek-reasoner",
            "choices": [{"index": 0, "delta": {"reasoning_content": "First, convert."}, "finish_reason": null}]
        });
        let mut got = Vec::new();
        <Chat as ChunkCodec<Value>>::call_deltas(&chunk, &mut |d| {
            got.push((d.kind, d.text.to_owned()));
        });
        assert_eq!(got, [(DeltaKind::Reasoning, "First, convert.".to_owned())]);
        let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 5, "completion_tokens": 7}});
        assert_eq!(
            <Chat as ChunkCodec<Value>>::finish_reason(&last).as_deref(),
            Some("stop")
        );
        assert_eq!(
            <Chat as ChunkCodec<Value>>::usage(&last),
            Some(Usage::inclusive(5, 7))
        );
    }

    #[test]
    fn a_responses_function_call_names_its_call_id_and_tool_at_its_output_index() {
        let added = deltas(json!({
            "type": "response.output_item.added", "sequence_number": 3, "output_index": 1,
            "item": {"type": "function_call", "id": "fc_0002", "call_id": "call_convert_2",
                     "name": "convert", "arguments": "", "status": "in_progress"}
        }));
        assert_eq!(
            added,
            [(
                DeltaKind::ToolArgs,
                String::new(),
                Some(1),
                Some("call_convert_2".to_owned()),
                Some("convert".to_owned())
            )]
        );
        let piece = deltas(json!({
            "type": "response.function_call_arguments.delta", "sequence_number": 4,
            "item_id": "fc_0002", "output_index": 1, "delta": "{\"amount\""
        }));
        assert_eq!(
            piece,
            [(
                DeltaKind::ToolArgs,
                "{\"amount\"".to_owned(),
                Some(1),
                None,
                None
            )]
        );
        let message = deltas(json!({
            "type": "response.output_item.added", "sequence_number": 5, "output_index": 2,
            "item": {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}
        }));
        assert!(message.is_empty(), "{message:?}");
    }
}
