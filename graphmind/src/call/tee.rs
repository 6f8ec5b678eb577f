//! Stream tee: every item of a wrapped stream is observed (token deltas, chunk count, usage,
//! errors) without changing what the consumer gets or when; the node finishes when the
//! stream ends, and also when the consumer drops it half-way.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use graphmind_protocol::{Extra, Status};

use crate::call::node_run::{Finish, NodeRun};

/// What a tee has seen so far; finishes its node on drop.
pub struct Observer {
    pub(crate) node: NodeRun,
    /// The run the stream was opened in: a stream dropped because that run was aborted
    /// finishes `aborted`, not `ok` (weak: a stream kept past its run does not keep it).
    run: Option<std::sync::Weak<crate::call::scope::RunCtx>>,
    pub(crate) chunks: u64,
    pub(crate) errors: u64,
    pub(crate) usage: Option<crate::model::Usage>,
    pub(crate) finish_reason: Option<String>,
    /// A model stream's answer so far (text and tool calls), recorded as its output in
    /// GraphMind 0.6's shape; `None` until a text or tool-argument delta is seen.
    pub(crate) reply: Option<Box<crate::model::StreamedReply>>,
    /// The chunks as their codec records them for replay (`recordedChunks`).
    pub(crate) recorded: Option<Vec<serde_json::Value>>,
    /// What the stream's codec keeps between chunks ([`ChunkCodec::stream_deltas`](crate::model::ChunkCodec::stream_deltas)).
    pub(crate) codec: crate::model::ChunkState,
    /// Extra fields for `node.finished` (a replayed stream says so).
    pub(crate) extra: Extra,
    ended: bool,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("node", &self.node.node_id)
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

impl Observer {
    pub(crate) fn new(node: NodeRun) -> Self {
        Self {
            node,
            run: crate::call::scope::Scope::run().map(|r| std::sync::Arc::downgrade(&r)),
            chunks: 0,
            errors: 0,
            usage: None,
            finish_reason: None,
            reply: None,
            recorded: None,
            codec: crate::model::ChunkState::default(),
            extra: Extra::new(),
            ended: false,
        }
    }
}

impl Observer {
    /// Adds a streamed delta to the node (batched into `node.token`).
    pub fn token(&mut self, kind: graphmind_protocol::DeltaKind, text: &str) {
        self.node.push_token(kind, text);
    }

    /// Counts one chunk (shown as `chunks` on node.finished).
    pub fn chunk(&mut self) {
        self.chunks += 1;
    }

    /// Records usage (shown on node.finished).
    pub fn usage(&mut self, usage: crate::model::Usage) {
        self.usage = Some(usage);
    }

    /// Records the finish reason.
    pub fn finish_reason(&mut self, reason: &str) {
        self.finish_reason = Some(reason.to_owned());
    }

    /// Records an error seen mid-stream (`node.error`; the node finishes `error`).
    pub fn error(&mut self, message: &str) {
        self.errors += 1;
        self.node
            .error(crate::errors::error_info("StreamError", message.to_owned()));
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let mut extra = std::mem::take(&mut self.extra);
        extra.insert("streaming".into(), true.into());
        extra.insert("chunks".into(), self.chunks.into());
        // The finish reason is said once (see `step::response_usage`): in the output when
        // there is a reply, else as the loose field.
        let output = self
            .reply
            .take()
            .map(|reply| reply.into_value(self.finish_reason.as_deref()));
        if output.is_none()
            && let Some(r) = self.finish_reason.take()
        {
            extra.insert("finishReason".into(), r.into());
        }
        if !self.ended {
            extra.insert("dropped".into(), true.into());
        }
        if let Some(chunks) = self.recorded.take() {
            extra.insert(
                graphmind_protocol::recording::CHUNKS_KEY.into(),
                serde_json::Value::Array(chunks),
            );
        }
        let aborted = !self.ended
            && self
                .run
                .as_ref()
                .and_then(std::sync::Weak::upgrade)
                .is_some_and(|r| r.is_aborted());
        let status = if self.errors > 0 {
            Status::Error
        } else if aborted {
            // Cut short by the debugger's abort, not by a consumer done reading.
            extra.insert("cancelled".into(), true.into());
            Status::Aborted
        } else {
            Status::Ok
        };
        // `finish` consumes the node; swap in nothing by finishing through a clone-free path.
        self.node.finish_ref(
            status,
            Finish {
                output: output.map(crate::captured::Val::from_value),
                usage: self.usage.take(),
                extra: extra.into(),
            },
        );
    }
}

pin_project_lite::pin_project! {
    /// A stream whose items are observed by graphmind on their way to the consumer.
    /// It yields exactly the inner stream's items, when the inner stream yields them (or,
    /// replayed from a recording, the recorded items in order).
    pub struct Tee<S: Stream> {
        #[pin]
        inner: Source<S>,
        observer: Option<Observer>,
        observe: fn(&mut Observer, &S::Item),
    }
}

pin_project_lite::pin_project! {
    /// Where a tee's items come from.
    #[project = SourceProj]
    enum Source<S: Stream> {
        Live { #[pin] stream: S },
        Replayed { items: std::collections::VecDeque<S::Item> },
    }
}

impl<S: Stream> std::fmt::Debug for Tee<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tee")
            .field("observer", &self.observer)
            .finish_non_exhaustive()
    }
}

impl<S: Stream> Tee<S> {
    pub(crate) fn new(inner: S, observer: Observer, observe: fn(&mut Observer, &S::Item)) -> Self {
        Self {
            inner: Source::Live { stream: inner },
            observer: Some(observer),
            observe,
        }
    }

    /// A tee that yields recorded items (a replayed stream), observed as live ones are.
    pub(crate) fn replayed(
        items: Vec<S::Item>,
        observer: Observer,
        observe: fn(&mut Observer, &S::Item),
    ) -> Self {
        Self {
            inner: Source::Replayed {
                items: items.into(),
            },
            observer: Some(observer),
            observe,
        }
    }

    /// A tee that observes nothing (disabled session).
    pub(crate) fn passthrough(inner: S) -> Self {
        Self {
            inner: Source::Live { stream: inner },
            observer: None,
            observe: |_, _| {},
        }
    }
}

impl<S: Stream> Stream for Tee<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        let polled = match this.inner.project() {
            SourceProj::Live { stream } => stream.poll_next(cx),
            SourceProj::Replayed { items } => Poll::Ready(items.pop_front()),
        };
        match &polled {
            Poll::Ready(Some(item)) => {
                if let Some(obs) = this.observer.as_mut() {
                    (this.observe)(obs, item);
                }
            }
            Poll::Ready(None) => {
                if let Some(mut obs) = this.observer.take() {
                    obs.ended = true;
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            Source::Live { stream } => stream.size_hint(),
            Source::Replayed { items } => (items.len(), Some(items.len())),
        }
    }
}
