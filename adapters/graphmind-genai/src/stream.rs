//! [`ChatStream`]: the stream `exec_chat_stream` returns. genai's own `ChatStream` cannot be
//! built outside genai, so the adapter's has the same item (`genai::Result<ChatStreamEvent>`)
//! and yields exactly genai's events, when genai yields them, while the tee turns them into
//! batched `node.token` deltas (text, reasoning, tool arguments per call) and, at the end,
//! `node.finished` with the whole step's output and usage.
//!
//! A request that fails before its first event (an HTTP error status, a refused
//! connection: genai reports them as the first `Err` item, after its `Start`) holds the
//! `error` gate inside the stream: retry opens the stream again, inject streams the
//! injected events, continue yields genai's error, abort ends the run. A stream that fails
//! after its first event (the connection breaks mid-way) holds the same gate, without
//! retry: the caller has read part of the reply, and a new attempt would answer it again
//! from its start. Inject there streams the injected events as the rest of the reply,
//! continue yields genai's error, abort ends the run.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use genai::chat::{ChatOptions, ChatStreamEvent, StreamEnd};
use genai::{ModelIden, ModelSpec};
use graphmind::model::{Delta, DeltaKind};
use graphmind::node::Node;
use graphmind::protocol::{Extra, PausePoint, Status};

use crate::guard;
use crate::output::{Call, StepOut, call_of, raw_finish, usage_of};
use crate::step::{Gate, Step, aborted, error_name, extras, gate};
use crate::tool_chunks::ToolChunks;

type Boxed = Pin<Box<dyn Stream<Item = genai::Result<ChatStreamEvent>> + Send>>;

/// The stream of one `exec_chat_stream`: genai's events, observed on their way.
pub struct ChatStream {
    inner: Inner,
}

enum Inner {
    /// Uninstrumented: genai's stream as it is.
    Bare(genai::chat::ChatStream),
    /// Observed by the adapter.
    Observed(Boxed),
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream").finish_non_exhaustive()
    }
}

impl ChatStream {
    pub(crate) fn bare(inner: genai::chat::ChatStream) -> Self {
        Self {
            inner: Inner::Bare(inner),
        }
    }
}

/// genai's own stream, uninstrumented: what a
/// `#[graphmind::model_step(codec = graphmind_genai::Genai, stream = true)]` of yours
/// returns (the attribute tees it and hands it back as a `ChatStream`).
impl From<genai::chat::ChatStream> for ChatStream {
    fn from(inner: genai::chat::ChatStream) -> Self {
        Self::bare(inner)
    }
}

/// A `#[graphmind::model_step(stream = true)]` returning `ChatStream` (or
/// `genai::Result<ChatStream>`) gets the teed stream back in this type.
impl graphmind::tee::Restream for ChatStream {
    fn restream(tee: graphmind::tee::Tee<Self>) -> Self {
        Self {
            inner: Inner::Observed(Box::pin(tee)),
        }
    }
}

impl Stream for ChatStream {
    type Item = genai::Result<ChatStreamEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match &mut self.inner {
            Inner::Bare(s) => Pin::new(s).poll_next(cx),
            Inner::Observed(s) => s.as_mut().poll_next(cx),
        }
    }
}

/// What `exec_chat_stream` returns: genai's `ChatStreamResponse` with the adapter's
/// [`ChatStream`].
#[derive(Debug)]
pub struct ChatStreamResponse {
    /// The stream of events.
    pub stream: ChatStream,
    /// The model that answers (as genai resolved it).
    pub model_iden: ModelIden,
}

/// What a stream needs to open itself again (an error-gate retry).
pub(crate) struct Reopen {
    pub(crate) client: genai::Client,
    pub(crate) model: ModelSpec,
    /// The recorded request (shared with the step's lazily captured input).
    pub(crate) request: Arc<crate::step::Recorded>,
    pub(crate) options: ChatOptions,
}

impl Reopen {
    async fn open(&self) -> genai::Result<genai::chat::ChatStream> {
        self.client
            .exec_chat_stream(
                self.model.clone(),
                self.request.request.clone(),
                Some(&self.options),
            )
            .await
            .map(|r| r.stream)
    }
}

enum Source {
    Sdk(genai::chat::ChatStream),
    Items(std::vec::IntoIter<ChatStreamEvent>),
}

/// The observed stream's state.
struct Flow {
    source: Option<Source>,
    reopen: Reopen,
    /// The caller did not ask for usage: the adapter did; `captured_usage` is taken off
    /// the end event before the caller sees it.
    strip_usage: bool,
    /// A `Start` reached the caller (a reopened stream's own `Start` is not repeated).
    started: bool,
    /// An event other than `Start` reached the caller: errors no longer hold the gate.
    flowing: bool,
    seen: Seen,
}

/// Tees a stream into the step's node. `items`: an injected list instead of a request.
pub(crate) fn observed(
    step: Step,
    source: Result<genai::chat::ChatStream, Vec<ChatStreamEvent>>,
    reopen: Reopen,
    strip_usage: bool,
) -> ChatStream {
    let injected = source.is_err();
    let source = match source {
        Ok(s) => Source::Sdk(s),
        Err(items) => Source::Items(items.into_iter()),
    };
    let flow = Flow {
        source: Some(source),
        reopen,
        strip_usage,
        started: false,
        flowing: false,
        seen: Seen::new(step, injected),
    };
    let stream = futures_util::stream::unfold(flow, |mut flow| async move {
        let item = flow.next().await?;
        Some((item, flow))
    });
    ChatStream {
        inner: Inner::Observed(Box::pin(stream)),
    }
}

impl Flow {
    async fn next(&mut self) -> Option<genai::Result<ChatStreamEvent>> {
        loop {
            let item = match self.source.as_mut()? {
                Source::Sdk(s) => std::future::poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)).await,
                Source::Items(items) => items.next().map(Ok),
            };
            let Some(mut item) = item else {
                self.source = None;
                self.seen.end(false);
                return None;
            };
            match &mut item {
                Ok(ChatStreamEvent::Start) if self.started => continue,
                Ok(ChatStreamEvent::Start) => self.started = true,
                Ok(_) => self.flowing = true,
                Err(e) if self.seen.node.is_some() => {
                    match self.error_gate(e).await {
                        Some(Gate::Retry) => continue,
                        Some(Gate::Inject(())) => continue,
                        Some(Gate::Abort) => {
                            self.source = None;
                            return Some(Err(aborted()));
                        }
                        Some(Gate::Go) => {
                            // Recorded by the gate already; the step ends `error`.
                            self.seen.errors += 1;
                            self.seen.chunks += 1;
                            return Some(item);
                        }
                        None => {}
                    }
                }
                Err(_) => {}
            }
            if self.seen.node.is_some() {
                let seen = &mut self.seen;
                if guard("reading a streamed event", || seen.item(&item)).is_none() {
                    // The node finishes as dropped; the caller's stream goes on untouched.
                    seen.node = None;
                }
            }
            if self.strip_usage
                && let Ok(ChatStreamEvent::End(end)) = &mut item
            {
                end.captured_usage = None;
            }
            return Some(item);
        }
    }

    /// The error gate of a failed stream. `Retry` / `Inject`: the source was replaced, read
    /// on; `Go`: pass the error on; `Abort`: end the stream. Once an event other than `Start`
    /// reached the caller the gate offers no retry, and an inject is the rest of the reply.
    async fn error_gate(&mut self, e: &genai::Error) -> Option<Gate<()>> {
        let midway = self.flowing;
        let node = self.seen.node.as_mut()?;
        node.error(&error_name(e), e.to_string());
        node.retryable(!midway);
        let decided = gate::<Vec<ChatStreamEvent>>(node, PausePoint::Error).await;
        node.retryable(true);
        match decided {
            Gate::Go => Some(Gate::Go),
            Gate::Retry => {
                self.seen.attempts += 1;
                match self.reopen.open().await {
                    Ok(s) => {
                        self.source = Some(Source::Sdk(s));
                        Some(Gate::Retry)
                    }
                    // Opening again failed before any request: pass that error on.
                    Err(_) => Some(Gate::Go),
                }
            }
            Gate::Inject(items) => {
                self.seen.injected = true;
                self.source = Some(Source::Items(items.into_iter()));
                Some(Gate::Inject(()))
            }
            Gate::Abort => {
                if let Some(node) = self.seen.node.take() {
                    node.abort_run().await;
                }
                Some(Gate::Abort)
            }
        }
    }
}

/// What the tee has seen of one streamed step.
struct Seen {
    node: Option<Node>,
    attempts: u32,
    injected: bool,
    out: StepOut,
    /// Tool calls in the order they first appeared, with the arguments seen so far.
    calls: ToolChunks,
    chunks: u64,
    errors: u64,
    /// Tool calls from the end event's captured content (complete), when genai captured them.
    final_calls: Option<Vec<Call>>,
    /// The events as JSON, kept on `node.finished` (`recordedChunks`) so that a replay of
    /// the run streams them back instead of opening the stream.
    recorded: Vec<serde_json::Value>,
}

impl Seen {
    fn new(step: Step, injected: bool) -> Self {
        Self {
            node: Some(step.node),
            attempts: step.attempts,
            injected,
            out: StepOut::default(),
            calls: ToolChunks::default(),
            chunks: 0,
            errors: 0,
            final_calls: None,
            recorded: Vec::new(),
        }
    }

    fn item(&mut self, item: &genai::Result<ChatStreamEvent>) {
        self.chunks += 1;
        let ev = match item {
            Ok(ev) => {
                if let Ok(v) = serde_json::to_value(ev) {
                    self.recorded.push(v);
                }
                ev
            }
            Err(e) => {
                self.errors += 1;
                if let Some(node) = &self.node {
                    node.error(&error_name(e), e.to_string());
                }
                return;
            }
        };
        match ev {
            ChatStreamEvent::Chunk(c) if !c.content.is_empty() => {
                self.out.text.push_str(&c.content);
                self.delta(&Delta::new(DeltaKind::Text, &c.content));
            }
            ChatStreamEvent::ReasoningChunk(c) if !c.content.is_empty() => {
                self.delta(&Delta::new(DeltaKind::Reasoning, &c.content));
            }
            ChatStreamEvent::ToolCallChunk(t) => self.tool_chunk(&t.tool_call),
            ChatStreamEvent::End(end) => self.end_event(end),
            _ => {}
        }
    }

    fn delta(&mut self, d: &Delta<'_>) {
        if let Some(node) = self.node.as_mut() {
            node.delta(d);
        }
    }

    /// One `ToolCallChunk`: its new piece of arguments, teed per call (see [`ToolChunks`]).
    fn tool_chunk(&mut self, tc: &genai::chat::ToolCall) {
        let node = &mut self.node;
        self.calls.chunk(tc, &mut |d| {
            if let Some(node) = node.as_mut() {
                node.delta(&d);
            }
        });
    }

    fn end_event(&mut self, end: &StreamEnd) {
        if let Some(u) = end.captured_usage.as_ref().and_then(usage_of) {
            self.out.usage = Some(u);
        }
        if let Some(r) = &end.captured_stop_reason {
            self.out.raw_finish = Some(raw_finish(r));
        }
        if let Some(id) = &end.captured_response_id {
            self.out.response_id = Some(id.clone());
        }
        if let Some(calls) = end.captured_tool_calls()
            && !calls.is_empty()
        {
            self.final_calls = Some(calls.into_iter().map(call_of).collect());
        }
    }

    /// Finishes the node: the stream ended, or (`dropped`) the caller dropped it first.
    fn end(&mut self, dropped: bool) {
        let Some(node) = self.node.take() else {
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        out.tool_calls = self
            .final_calls
            .take()
            .unwrap_or_else(|| std::mem::take(&mut self.calls.calls));
        let mut extra: Extra = extras(self.attempts, &out, self.injected).streamed().into();
        extra.insert("chunks".into(), self.chunks.into());
        if dropped {
            extra.insert("dropped".into(), true.into());
        }
        if !self.recorded.is_empty() {
            extra.insert(
                graphmind::protocol::recording::CHUNKS_KEY.into(),
                serde_json::Value::Array(std::mem::take(&mut self.recorded)),
            );
        }
        let status = if self.errors > 0 {
            Status::Error
        } else {
            Status::Ok
        };
        node.finish_with(status, Some(out.to_json(None)), out.usage, extra);
    }
}

impl Drop for Seen {
    fn drop(&mut self) {
        if self.node.is_some() {
            guard("finishing a dropped stream", || self.end(true));
        }
    }
}
