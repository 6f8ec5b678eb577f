//! The stream tee: the caller reads exactly the SDK's items, when the SDK yields them, while
//! the adapter turns each into batched `node.token` deltas (text, refusal, reasoning, tool
//! arguments by call) and, at the end, `node.finished` with the whole step's output.
//!
//! Responses events async-openai does not know reach the caller as the SDK makes them, an
//! `Err(OpenAIError::JSONDeserialize(_, raw))` item, and the stream goes on (the SDK's
//! reader keeps reading after an item it cannot parse). The tee recognizes such an item by
//! its raw JSON having a `type` and counts it (`unknownEvents` on `node.finished`) instead
//! of reporting a stream error.

use std::pin::Pin;
use std::task::{Context, Poll};

use async_openai::error::OpenAIError;
use futures_core::Stream;
use graphmind::model::{Delta, DeltaKind};
use graphmind::node::{Extras, Node};
use graphmind::protocol::Extra;
use serde::Serialize;
use serde_json::Value;

use crate::finish::{Api, SdkStream, finish_builtin, finish_out, start_builtin};
use crate::guard;
use crate::output::{
    StepOut, StreamedCalls, chat_usage, event_delta, from_response, is_unknown_event,
};

/// What the tee has seen of one streamed step.
struct Seen {
    node: Option<Node>,
    api: Api,
    attempts: u32,
    injected: bool,
    out: StepOut,
    /// Tool calls by their index (chat) or output index (responses).
    calls: StreamedCalls,
    /// Built-in tool nodes still open, by output item id.
    builtins: Vec<(String, Node)>,
    /// The final response of a Responses stream (`response.completed` and the like), read
    /// and whole.
    final_out: Option<(StepOut, Value)>,
    chunks: u64,
    unknown: u64,
    errors: u64,
    /// The chunks / events as JSON, kept on `node.finished` (`recordedChunks`) so that a
    /// replay of the run streams them back.
    recorded: Vec<Value>,
}

/// A stream observed by the adapter on its way to the caller.
struct Observed<T> {
    inner: SdkStream<T>,
    seen: Option<Seen>,
}

/// What a streamed step hands to its tee.
pub(crate) struct Parts {
    pub(crate) node: Node,
    pub(crate) api: Api,
    pub(crate) attempts: u32,
}

/// Tees `inner` into the step's node.
pub(crate) fn observed<T: Serialize + Send + 'static>(
    step: Parts,
    inner: SdkStream<T>,
    injected: bool,
) -> SdkStream<T> {
    let Parts {
        node,
        api,
        attempts,
    } = step;
    Box::pin(Observed {
        inner,
        seen: Some(Seen {
            node: Some(node),
            api,
            attempts,
            injected,
            out: StepOut::default(),
            calls: StreamedCalls::default(),
            builtins: Vec::new(),
            final_out: None,
            chunks: 0,
            unknown: 0,
            errors: 0,
            recorded: Vec::new(),
        }),
    })
}

/// An injected list of chunks / events, streamed and observed like the server's.
pub(crate) fn injected<T: Serialize + Send + 'static>(step: Parts, items: Vec<T>) -> SdkStream<T> {
    let inner: SdkStream<T> = Box::pin(Items(items.into_iter()));
    observed(step, inner, true)
}

/// A stream of ready items.
struct Items<T>(std::vec::IntoIter<T>);

impl<T> Unpin for Items<T> {}

impl<T> Stream for Items<T> {
    type Item = Result<T, OpenAIError>;
    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

impl<T> Unpin for Observed<T> {}

impl<T: Serialize> Stream for Observed<T> {
    type Item = Result<T, OpenAIError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = this.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(item)) => {
                if let Some(seen) = this.seen.as_mut()
                    && guard("reading a streamed chunk", || seen.item(item)).is_none()
                {
                    // The node finishes as dropped; the caller's stream goes on untouched.
                    this.seen = None;
                }
            }
            Poll::Ready(None) => {
                if let Some(seen) = this.seen.take() {
                    guard("finishing a streamed step", || seen.end(false));
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T> Drop for Observed<T> {
    fn drop(&mut self) {
        if let Some(seen) = self.seen.take() {
            guard("finishing a dropped stream", || seen.end(true));
        }
    }
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Seen {
    fn item<T: Serialize>(&mut self, item: &Result<T, OpenAIError>) {
        self.chunks += 1;
        match item {
            Ok(chunk) => {
                let Ok(v) = serde_json::to_value(chunk) else {
                    return;
                };
                match self.api {
                    Api::Chat => self.chat_chunk(&v),
                    Api::Responses => self.response_event(&v),
                }
                self.recorded.push(v);
            }
            Err(OpenAIError::JSONDeserialize(_, raw))
                if self.api == Api::Responses && is_unknown_event(raw) =>
            {
                // An event type this async-openai does not know: passed through, counted.
                self.unknown += 1;
            }
            Err(e) => {
                self.errors += 1;
                if let Some(node) = &self.node {
                    node.error("StreamError", e.to_string());
                }
            }
        }
    }

    fn delta(&mut self, d: &Delta<'_>) {
        if let Some(node) = self.node.as_mut() {
            node.delta(d);
        }
    }

    fn text(&mut self, kind: DeltaKind, text: &str) {
        if text.is_empty() {
            return;
        }
        if kind == DeltaKind::Text {
            self.out.text.push_str(text);
        }
        self.delta(&Delta::new(kind, text));
    }

    fn tool_args(&mut self, index: u64, id: Option<&str>, name: Option<&str>, args: &str) {
        let d = self.calls.piece(index, id, name, args, true);
        if let (false, Some(node)) = (args.is_empty(), self.node.as_mut()) {
            node.delta(&d);
        }
    }

    /// A `CreateChatCompletionStreamResponse` as JSON.
    fn chat_chunk(&mut self, v: &Value) {
        if self.out.response_id.is_none() {
            self.out.response_id = s(v, "id");
        }
        if self.out.model.is_none() {
            self.out.model = s(v, "model");
        }
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                self.text(DeltaKind::Text, t);
            }
            if let Some(t) = delta.get("refusal").and_then(Value::as_str) {
                self.text(DeltaKind::Text, t);
            }
            // OpenAI-compatible reasoning servers; only when the SDK's type carries it.
            if let Some(t) = delta.get("reasoning_content").and_then(Value::as_str) {
                self.text(DeltaKind::Reasoning, t);
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let function = call.get("function").unwrap_or(&Value::Null);
                let args = function
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.tool_args(
                    index,
                    call.get("id").and_then(Value::as_str),
                    function.get("name").and_then(Value::as_str),
                    args,
                );
            }
            if let Some(r) = s(choice, "finish_reason") {
                self.out.raw_finish = Some(r);
            }
        }
        if let Some(u) = v.get("usage").and_then(chat_usage) {
            self.out.usage = Some(u);
        }
    }

    /// A `ResponseStreamEvent` as JSON.
    fn response_event(&mut self, v: &Value) {
        if let Some((kind, text, index, _)) = event_delta(v) {
            if kind == DeltaKind::ToolArgs {
                self.tool_args(index, None, None, text);
            } else {
                self.text(kind, text);
            }
            return;
        }
        let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(r) = v.get("response") {
                    self.out.response_id = s(r, "id").or(self.out.response_id.take());
                    self.out.model = s(r, "model").or(self.out.model.take());
                }
            }
            "response.output_item.added" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call" | "custom_tool_call") => {
                        self.tool_args(
                            index,
                            item.get("call_id").and_then(Value::as_str),
                            item.get("name").and_then(Value::as_str),
                            "",
                        );
                    }
                    _ => {
                        if let Some(node) = start_builtin(item) {
                            let id = s(item, "id").unwrap_or_default();
                            self.builtins.push((id, node));
                        }
                    }
                }
            }
            "response.output_item.done" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                let id = s(item, "id").unwrap_or_default();
                if let Some(pos) = self.builtins.iter().position(|(i, _)| *i == id) {
                    let (_, node) = self.builtins.remove(pos);
                    finish_builtin(node, item, self.injected);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                if let Some(r) = v.get("response") {
                    self.final_out = Some((from_response(r), r.clone()));
                }
            }
            "error" => {
                self.errors += 1;
                if let Some(node) = &self.node {
                    node.error(
                        "ResponseError",
                        s(v, "message").unwrap_or_else(|| v.to_string()),
                    );
                }
            }
            _ => {}
        }
    }

    /// Finishes every node: the stream ended, or (`dropped`) the caller dropped it first.
    fn end(mut self, dropped: bool) {
        for (_, node) in self.builtins.drain(..) {
            let mut extras = Extras::new().api("responses").provider_executed().ungated();
            if self.injected {
                extras = extras.injected();
            }
            node.finish_with(graphmind::protocol::Status::Ok, None, None, extras.into());
        }
        let Some(node) = self.node.take() else {
            return;
        };
        let (mut out, response) = match self.final_out.take() {
            Some((out, response)) => (out, Some(response)),
            None => {
                let mut out = std::mem::take(&mut self.out);
                out.tool_calls = std::mem::take(&mut self.calls.0).into_values().collect();
                (out, None)
            }
        };
        if out.response_id.is_none() {
            out.response_id = self.out.response_id.take();
        }
        if out.model.is_none() {
            out.model = self.out.model.take();
        }
        let mut more = Extra::new();
        more.insert("chunks".into(), self.chunks.into());
        if self.unknown > 0 {
            more.insert("unknownEvents".into(), self.unknown.into());
        }
        if dropped {
            more.insert("dropped".into(), true.into());
        }
        if !self.recorded.is_empty() {
            more.insert(
                graphmind::protocol::recording::CHUNKS_KEY.into(),
                Value::Array(std::mem::take(&mut self.recorded)),
            );
        }
        let extras = Extras::new()
            .api(self.api.name())
            .attempts(self.attempts)
            .streamed();
        if self.errors > 0 {
            let mut extra: Extra = extras.into();
            extra.extend(more);
            node.finish_with(
                graphmind::protocol::Status::Error,
                Some(out.to_json(response)),
                out.usage,
                extra,
            );
            return;
        }
        finish_out(node, &out, response, extras, self.injected, more);
    }
}
