//! The low-level node API with feature `enabled` off: the same items, doing nothing.
//! [`Node::start`] always returns `None`, so the other methods are never reached.

use graphmind_protocol::{DeltaKind, Extra, NodeKind, PausePoint, Status};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use crate::extras::Extras;
pub use crate::poll_once::poll_once_then;
pub use crate::recording::Recording;

/// The length of `v`'s compact JSON text (`None` when serializing it fails).
#[must_use]
pub fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> Option<usize> {
    serde_json::to_string(v).ok().map(|s| s.len())
}
pub use crate::fail_open::fail_open;

pub use crate::resume::Resume;

#[derive(Debug)]
enum Never {}

/// An instant (compiled out: carries nothing).
#[derive(Debug, Clone, Copy)]
pub struct Moment(());

impl Moment {
    /// Now (compiled out: nothing is read).
    #[must_use]
    pub fn now() -> Self {
        Self(())
    }
}

/// One execution of a node (compiled out: never exists).
#[derive(Debug)]
pub struct Node(Never);

impl Node {
    /// Always `None` when compiled out.
    #[must_use]
    pub fn start(kind: NodeKind, name: &str, input: Option<Value>) -> Option<Self> {
        let _ = (kind, name, input);
        None
    }

    /// Always `false` when compiled out.
    #[must_use]
    pub fn enabled() -> bool {
        false
    }

    /// Always [`Recording::Off`] when compiled out.
    #[must_use]
    pub fn recording() -> Recording {
        Recording::Off
    }

    /// Always `None` when compiled out.
    #[must_use]
    pub fn start_step(input: Value, grouping: crate::model::Grouping) -> Option<Self> {
        let _ = (input, grouping);
        None
    }

    /// Starts a model step with its request serialized once: never, graphmind is compiled out.
    #[must_use]
    pub fn start_step_serialized<T: serde::Serialize + ?Sized>(
        request: &T,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        let _ = (request, grouping);
        None
    }

    /// Always `false` when compiled out.
    #[must_use]
    pub fn detached_now() -> bool {
        false
    }

    /// Always `None` when compiled out.
    #[must_use]
    pub fn start_step_lazy_since<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        request: std::sync::Arc<T>,
        grouping: crate::model::Grouping,
        since: Moment,
    ) -> Option<Self> {
        let _ = (request, grouping, since);
        None
    }

    /// Always `None` when compiled out.
    #[must_use]
    pub fn start_step_lazy<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        request: std::sync::Arc<T>,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        let _ = (request, grouping);
        None
    }

    /// Always `None` when compiled out.
    #[must_use]
    pub fn start_with(
        kind: NodeKind,
        name: &str,
        node_id: &str,
        instance_id: Option<String>,
        input: Option<Value>,
    ) -> Option<Self> {
        let _ = (kind, name, node_id, instance_id, input);
        None
    }

    /// Always `None` when compiled out.
    #[must_use]
    pub fn start_call(
        kind: NodeKind,
        name: &str,
        node_id: &str,
        instance_id: Option<String>,
        input: Option<Value>,
        extra: graphmind_protocol::Extra,
    ) -> Option<Self> {
        let _ = (kind, name, node_id, instance_id, input, extra);
        None
    }

    /// Holds the next `before` gate while attached.
    pub fn hold_before(&mut self, why: impl Into<String>) -> &mut Self {
        let _ = why.into();
        match self.0 {}
    }

    /// Whether a debugger is attached.
    #[must_use]
    pub fn attached(&self) -> bool {
        match self.0 {}
    }

    /// This execution's instanceId.
    #[must_use]
    pub fn instance_id(&self) -> &str {
        match self.0 {}
    }

    /// This execution's W3C `traceparent`.
    #[must_use]
    pub fn traceparent(&self) -> String {
        match self.0 {}
    }

    /// A gate.
    pub async fn gate(&mut self, point: PausePoint) -> Resume {
        let _ = point;
        match self.0 {}
    }

    /// A typed gate.
    pub async fn gate_typed<T: DeserializeOwned>(&mut self, point: PausePoint) -> Resume {
        let _ = point;
        match self.0 {}
    }

    /// Offers an edit of the input at the next `before` gate.
    pub fn editable<T: serde::Serialize + DeserializeOwned>(&mut self, input: &T) -> &mut Self {
        let _ = input;
        match self.0 {}
    }

    /// Offers a reject at the next `before` gate.
    pub fn rejectable(&mut self) -> &mut Self {
        match self.0 {}
    }

    /// Tells a replay that this node's call cannot be answered from a recording.
    pub fn decline_replay(&mut self) -> &mut Self {
        match self.0 {}
    }

    /// Whether the next gates offer retry.
    pub fn retryable(&mut self, yes: bool) -> &mut Self {
        let _ = yes;
        match self.0 {}
    }

    /// Finishes a rejected node.
    pub fn reject(self, reason: &str) {
        let _ = reason;
        match self.0 {}
    }

    /// Queues a streamed delta.
    pub fn token(&mut self, kind: DeltaKind, text: &str) {
        let _ = (kind, text);
        match self.0 {}
    }

    /// Queues a streamed delta naming its tool call.
    pub fn delta(&mut self, delta: &crate::model::Delta<'_>) {
        let _ = delta;
        match self.0 {}
    }

    /// Emits a protocol message into this node's run.
    pub fn emit(&self, message: graphmind_protocol::Message) -> Option<u64> {
        let _ = message;
        match self.0 {}
    }

    /// Starts a model step with its request already serialized: never, graphmind is
    /// compiled out.
    #[must_use]
    pub fn start_step_raw(
        request: Box<serde_json::value::RawValue>,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        let _ = (request, grouping);
        None
    }

    /// Emits a `graph.hint` unless the run got an identical one.
    pub fn emit_hint(&self, hint: graphmind_protocol::GraphHint) -> Option<u64> {
        let _ = hint;
        match self.0 {}
    }

    /// Emits `node.error`.
    pub fn error(&self, name: &str, message: impl Into<String>) {
        let _ = (name, message.into());
        match self.0 {}
    }

    /// Finishes the node.
    pub fn finish(self, status: Status, output: Option<Value>) {
        let _ = (status, output);
        match self.0 {}
    }

    /// Finishes the node with usage and loose fields (a raw [`Extra`] map, or [`Extras`]
    /// turned into one).
    pub fn finish_with(
        self,
        status: Status,
        output: Option<Value>,
        usage: Option<crate::model::Usage>,
        extra: Extra,
    ) {
        let _ = (status, output, usage, extra);
        match self.0 {}
    }

    /// Finishes the node with its output serialized once.
    pub fn finish_serialized<T: serde::Serialize + ?Sized>(
        self,
        status: Status,
        output: &T,
        usage: Option<crate::model::Usage>,
        extra: Extra,
    ) {
        let _ = (status, output, usage, extra);
        match self.0 {}
    }

    /// Unreachable when compiled out (no node exists).
    pub fn finish_lazy<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        self,
        status: Status,
        output: std::sync::Arc<T>,
        usage: Option<crate::model::Usage>,
        extra: Extras,
    ) {
        let _ = (status, output, usage, extra);
        match self.0 {}
    }

    /// Unreachable when compiled out (no node exists).
    pub fn finish_lazy_within<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        self,
        status: Status,
        output: std::sync::Arc<T>,
        max_len: usize,
        usage: Option<crate::model::Usage>,
        extra: Extras,
    ) {
        let _ = (status, output, max_len, usage, extra);
        match self.0 {}
    }

    /// Finishes the node `aborted` and cancels the run.
    pub async fn abort_run(self) {
        match self.0 {}
    }

    /// Hands the node to a stream.
    pub fn tee<S: futures_core::Stream>(
        self,
        stream: S,
        observe: fn(&mut crate::tee::Observer, &S::Item),
    ) -> crate::tee::Tee<S> {
        let _ = (stream, observe);
        match self.0 {}
    }

    /// Hands the node to a stream of model chunks.
    pub fn tee_chunks<S>(self, stream: S) -> crate::tee::Tee<S>
    where
        S: futures_core::Stream,
        S::Item: crate::model::StepChunk,
    {
        let _ = stream;
        match self.0 {}
    }

    /// Hands the node to a stream of another crate's chunks, read through codec `K`.
    pub fn tee_codec<K, S>(self, stream: S) -> crate::tee::Tee<S>
    where
        S: futures_core::Stream,
        K: crate::model::ChunkCodec<S::Item>,
    {
        let _ = stream;
        match self.0 {}
    }
}
