//! [`Genai`]: the codec for genai's types, for a `#[graphmind::model_step]` function of your
//! own over `ChatRequest` and `ChatResponse` (the orphan rule forbids implementing
//! graphmind's traits for genai's types, so this type reads them instead):
//!
//! ```no_run
//! use std::pin::Pin;
//!
//! use futures_core::Stream;
//! use genai::chat::{ChatRequest, ChatResponse, ChatStreamEvent};
//!
//! // `skip(client)`: the client is no part of the step's input.
//! #[graphmind::model_step(codec = graphmind_genai::Genai, skip(client))]
//! async fn step(client: &genai::Client, req: ChatRequest) -> genai::Result<ChatResponse> {
//!     client.exec_chat("gpt-4o-mini", req, None).await
//! }
//!
//! // A stream step returns genai's stream as the adapter's `ChatStream` (`.into()`; genai's
//! // own type cannot be built outside genai, so the attribute could not hand the teed
//! // stream back in it) …
//! #[graphmind::model_step(codec = graphmind_genai::Genai, skip(client), stream = true)]
//! async fn step_stream(
//!     client: &genai::Client,
//!     req: ChatRequest,
//! ) -> genai::Result<graphmind_genai::ChatStream> {
//!     Ok(client.exec_chat_stream("gpt-4o-mini", req, None).await?.stream.into())
//! }
//!
//! // … or boxed.
//! #[graphmind::model_step(codec = graphmind_genai::Genai, skip(client), stream = true)]
//! async fn step_boxed(
//!     client: &genai::Client,
//!     req: ChatRequest,
//! ) -> genai::Result<Pin<Box<dyn Stream<Item = genai::Result<ChatStreamEvent>> + Send>>> {
//!     Ok(Box::pin(client.exec_chat_stream("gpt-4o-mini", req, None).await?.stream))
//! }
//! ```
//!
//! Call genai's own client inside such a step, not the wrapped [`Client`](crate::Client):
//! each of its calls is a model step already.
//!
//! The codec reads what the wrapped client reads: text, reasoning, and each tool call's
//! arguments in pieces, per call (index, call id, tool name). genai's `ToolCallChunk`
//! carries, depending on the provider, a piece of the arguments or all of them so far, so
//! the codec keeps the stream's calls in its [`ChunkState`](graphmind::model::ChunkState)
//! and tees only what is new.

use std::borrow::Cow;

use genai::chat::{ChatRequest, ChatResponse, ChatStreamEvent};
use graphmind::model::{
    ChunkCodec, ChunkState, Delta, DeltaKind, RequestCodec, ResponseCodec, ToolCall, Usage,
};

use crate::output::{from_response, raw_finish, usage_of};
use crate::tool_chunks::ToolChunks;

/// Reads genai's `ChatRequest`, `ChatResponse` and the stream's `ChatStreamEvent` (also as
/// `genai::Result<ChatStreamEvent>`, the stream's item).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Genai;

impl ResponseCodec<ChatResponse> for Genai {
    fn usage(r: &ChatResponse) -> Option<Usage> {
        usage_of(&r.usage)
    }
    fn finish_reason(r: &ChatResponse) -> Option<Cow<'_, str>> {
        r.stop_reason.as_ref().map(|s| Cow::Borrowed(s.raw()))
    }
    fn text(r: &ChatResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(r.content.texts().concat()))
    }
    fn tool_calls(r: &ChatResponse) -> Vec<ToolCall<'_>> {
        from_response(r)
            .tool_calls
            .into_iter()
            .map(|c| ToolCall::new(c.name, c.arguments).with_id(c.id))
            .collect()
    }
    fn model(r: &ChatResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(r.provider_model_iden.model_name.to_string()))
    }
    fn response_id(r: &ChatResponse) -> Option<Cow<'_, str>> {
        r.response_id.as_deref().map(Cow::Borrowed)
    }
}

impl ChunkCodec<ChatStreamEvent> for Genai {
    fn call_deltas(e: &ChatStreamEvent, emit: &mut dyn FnMut(Delta<'_>)) {
        match e {
            ChatStreamEvent::Chunk(c) => emit(Delta::new(DeltaKind::Text, &c.content)),
            ChatStreamEvent::ReasoningChunk(c) => {
                emit(Delta::new(DeltaKind::Reasoning, &c.content));
            }
            _ => {}
        }
    }
    fn stream_deltas(e: &ChatStreamEvent, state: &mut ChunkState, emit: &mut dyn FnMut(Delta<'_>)) {
        match e {
            ChatStreamEvent::ToolCallChunk(t) => state
                .get_or_default::<ToolChunks>()
                .chunk(&t.tool_call, emit),
            _ => <Self as ChunkCodec<ChatStreamEvent>>::call_deltas(e, emit),
        }
    }
    fn usage(e: &ChatStreamEvent) -> Option<Usage> {
        match e {
            ChatStreamEvent::End(end) => end.captured_usage.as_ref().and_then(usage_of),
            _ => None,
        }
    }
    fn finish_reason(e: &ChatStreamEvent) -> Option<Cow<'_, str>> {
        match e {
            ChatStreamEvent::End(end) => end
                .captured_stop_reason
                .as_ref()
                .map(|r| Cow::Owned(raw_finish(r))),
            _ => None,
        }
    }
}

impl ChunkCodec<genai::Result<ChatStreamEvent>> for Genai {
    fn call_deltas(e: &genai::Result<ChatStreamEvent>, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Ok(e) = e {
            <Self as ChunkCodec<ChatStreamEvent>>::call_deltas(e, emit);
        }
    }
    fn stream_deltas(
        e: &genai::Result<ChatStreamEvent>,
        state: &mut ChunkState,
        emit: &mut dyn FnMut(Delta<'_>),
    ) {
        if let Ok(e) = e {
            <Self as ChunkCodec<ChatStreamEvent>>::stream_deltas(e, state, emit);
        }
    }
    fn usage(e: &genai::Result<ChatStreamEvent>) -> Option<Usage> {
        e.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<ChatStreamEvent>>::usage)
    }
    fn finish_reason(e: &genai::Result<ChatStreamEvent>) -> Option<Cow<'_, str>> {
        e.as_ref()
            .ok()
            .and_then(<Self as ChunkCodec<ChatStreamEvent>>::finish_reason)
    }
    fn error(e: &genai::Result<ChatStreamEvent>) -> Option<String> {
        e.as_ref().err().map(ToString::to_string)
    }
}

impl RequestCodec<ChatRequest> for Genai {
    fn first_message(q: &ChatRequest) -> Option<Cow<'_, str>> {
        q.messages
            .first()
            .and_then(|m| serde_json::to_string(m).ok())
            .map(Cow::Owned)
    }
    fn message_count(q: &ChatRequest) -> usize {
        q.messages.len()
    }
    fn previous_response_id(q: &ChatRequest) -> Option<Cow<'_, str>> {
        q.previous_response_id.as_deref().map(Cow::Borrowed)
    }
}
