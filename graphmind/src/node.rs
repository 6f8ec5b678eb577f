//! Node executions (and the low-level [`Node`] API for adapters): `node.started` … `node.finished`, with durations, held time, token
//! batches and the payload budget. A node execution always finishes: dropped unfinished (the
//! call's future was cancelled, or it panicked) it emits `node.finished` `aborted` / `error`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::{
    DeltaKind, ErrorInfo, Extra, Message, NodeError, NodeFinished, NodeKind, NodeStarted,
    PAYLOAD_BUDGET, PausePoint, Status, TokenUsage, shrink_payload,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::capture::Val;
use crate::exec::{Host, Instant, millis, millis_between};
use crate::record::{Finished, InstanceId, Label, Payload, Record, Started};
use crate::tokens::TokenBuf;

pub use crate::extras::Extras;

/// One execution of one node.
pub(crate) struct NodeRun {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: crate::exec::RunId,
    pub(crate) node_id: Cow<'static, str>,
    pub(crate) instance_id: InstanceId,
    started: Instant,
    /// Seq of its `node.started` (when recorded).
    pub(crate) started_seq: Option<u64>,
    /// The loop guard's fingerprint of its input (attached tool calls).
    pub(crate) loop_fp: Option<u64>,
    held: Duration,
    tokens: Option<Arc<TokenBuf>>,
    finished: bool,
}

/// What `node.started` says.
pub(crate) struct StartSpec {
    pub(crate) node_id: Cow<'static, str>,
    pub(crate) kind: NodeKind,
    pub(crate) name: Cow<'static, str>,
    pub(crate) instance_id: InstanceId,
    pub(crate) parent_id: Option<crate::small::SmallStr>,
    pub(crate) input: Option<Payload>,
}

/// How a node ended.
#[derive(Default)]
pub(crate) struct Finish {
    pub(crate) output: Option<Value>,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) extra: Extra,
}

impl NodeRun {
    /// Emits `node.started` and starts the clock.
    pub(crate) fn start(host: Arc<dyn Host>, run_id: crate::exec::RunId, spec: StartSpec) -> Self {
        let instance_id = spec.instance_id.clone();
        let node_id = spec.node_id.clone();
        let (started, started_seq) = record_started(&*host, &run_id, spec);
        Self {
            started_seq,
            loop_fp: None,
            host,
            run_id,
            node_id,
            instance_id,
            started,
            held: Duration::ZERO,
            tokens: None,
            finished: false,
        }
    }

    /// Adds time spent held at a gate of this node.
    pub(crate) fn add_held(&mut self, held: Duration) {
        self.held += held;
    }

    /// Queues one streamed delta; batched into one `node.token` per interval.
    pub(crate) fn push_token(&mut self, kind: DeltaKind, text: &str) {
        self.push_delta(&crate::model::Delta::new(kind, text));
    }

    /// Queues one streamed delta with the tool call it names, if any.
    pub(crate) fn push_delta(&mut self, delta: &crate::model::Delta<'_>) {
        if delta.text.is_empty() {
            return;
        }
        let buf = self.tokens.get_or_insert_with(|| {
            Arc::new(TokenBuf::new(
                Arc::clone(&self.host),
                Arc::clone(&self.run_id),
                self.node_id.to_string(),
                self.instance_id.to_string(),
            ))
        });
        buf.push_delta(delta);
    }

    /// Sends pending token deltas now.
    pub(crate) fn flush_tokens(&self) {
        if let Some(buf) = &self.tokens {
            buf.flush();
        }
    }

    /// Emits `node.error` (held time so far); the node stays open.
    pub(crate) fn error(&self, error: ErrorInfo) {
        self.flush_tokens();
        emit_error(
            &*self.host,
            &self.run_id,
            &self.node_id,
            &self.instance_id,
            error,
            millis(self.held),
        );
    }

    /// Flushes tokens and emits `node.finished`.
    pub(crate) fn finish(mut self, status: Status, finish: Finish) {
        self.finish_inner(status, finish);
    }

    /// [`NodeRun::finish`] through a reference (for owners that finish on drop).
    pub(crate) fn finish_ref(&mut self, status: Status, finish: Finish) {
        self.finish_inner(status, finish);
    }

    fn finish_inner(&mut self, status: Status, finish: Finish) {
        let Some((now, duration_ms)) = self.close() else {
            return;
        };
        // Finished for good: the ids move into the last event.
        record_finished(
            &*self.host,
            &self.run_id,
            Finished {
                node_id: std::mem::take(&mut self.node_id),
                instance_id: std::mem::replace(&mut self.instance_id, InstanceId::Call(0)),
                duration_ms,
                status,
                output: finish.output.map(Val::from_value),
                held_ms: millis(self.held),
            },
            finish.usage,
            finish.extra,
            now,
        );
    }

    /// Marks the node finished (closing its token buffer) and reads the clock once: the
    /// duration's end and the event's `ts`. `None` if it was finished already.
    fn close(&mut self) -> Option<(Instant, f64)> {
        if self.finished {
            return None;
        }
        self.finished = true;
        if let Some(buf) = &self.tokens {
            buf.close();
        }
        let now = Instant::now();
        Some((now, millis_between(self.started, now)))
    }
}

/// How a node dropped unfinished ends: `error` with `panicked: true` while its thread
/// panics, else `aborted` with `cancelled: true` (its future was dropped).
pub(crate) fn dropped_unfinished() -> (Status, Extra) {
    let mut extra = Extra::new();
    let status = if std::thread::panicking() {
        extra.insert("panicked".into(), true.into());
        Status::Error
    } else {
        extra.insert("cancelled".into(), true.into());
        Status::Aborted
    };
    (status, extra)
}

impl Drop for NodeRun {
    fn drop(&mut self) {
        if !self.finished {
            let (status, extra) = dropped_unfinished();
            self.finish_inner(
                status,
                Finish {
                    extra,
                    ..Finish::default()
                },
            );
        }
    }
}

/// Reads the clock and records `node.started` at that instant: as a compact record, or, with a
/// large input, as a message shrunk to the payload budget. Returns the instant and the
/// event's seq.
pub(crate) fn record_started(
    host: &dyn Host,
    run_id: &crate::exec::RunId,
    spec: StartSpec,
) -> (Instant, Option<u64>) {
    let label = Label::named(spec.node_id, spec.kind, spec.name);
    record_labelled(
        host,
        run_id,
        label,
        spec.instance_id,
        spec.parent_id,
        spec.input,
    )
}

/// [`record_started`] for a `#[graphmind::tool]` call (its site names the node).
pub(crate) fn record_tool_started(
    host: &dyn Host,
    run_id: &crate::exec::RunId,
    site: &'static crate::__private::ToolSite,
    instance_id: InstanceId,
    parent_id: Option<crate::small::SmallStr>,
    input: Payload,
) -> Instant {
    record_labelled(
        host,
        run_id,
        Label::Tool(site),
        instance_id,
        parent_id,
        Some(input),
    )
    .0
}

fn record_labelled(
    host: &dyn Host,
    run_id: &crate::exec::RunId,
    label: Label,
    instance_id: InstanceId,
    parent_id: Option<crate::small::SmallStr>,
    input: Option<Payload>,
) -> (Instant, Option<u64>) {
    let started = Instant::now();
    let seq = if input.as_ref().is_none_or(compact_input) {
        host.record(
            run_id,
            Record::Started(Started {
                label,
                instance_id,
                parent_id,
                input,
            }),
            started,
        )
    } else {
        emit_budgeted(
            host,
            run_id,
            Message::NodeStarted(NodeStarted {
                node_id: label.node_id().to_owned(),
                kind: label.kind(),
                name: label.name().to_owned(),
                instance_id: instance_id.to_string(),
                parent_id: parent_id.map(|p| p.to_string()),
                input: input.map(Payload::into_value),
                extra: Extra::new(),
            }),
        )
    };
    (started, seq)
}

/// Emits `node.error` (the node stays open).
pub(crate) fn emit_error(
    host: &dyn Host,
    run_id: &str,
    node_id: &str,
    instance_id: &InstanceId,
    error: ErrorInfo,
    held_ms: f64,
) {
    host.emit(
        run_id,
        Message::NodeError(NodeError {
            node_id: node_id.to_owned(),
            instance_id: Some(instance_id.to_string()),
            error,
            held_ms: Some(held_ms),
            extra: Extra::new(),
        }),
    );
}

/// Records `node.finished` that happened at `at`: as a compact record when it has no usage,
/// no extra fields and a small output, else as a message shrunk to the payload budget.
pub(crate) fn record_finished(
    host: &dyn Host,
    run_id: &crate::exec::RunId,
    finished: Finished,
    usage: Option<TokenUsage>,
    extra: Extra,
    at: Instant,
) {
    if usage.is_none() && extra.is_empty() && finished.output.as_ref().is_none_or(compact_val) {
        host.record(run_id, Record::Finished(finished), at);
        return;
    }
    emit_budgeted(
        host,
        run_id,
        Message::NodeFinished(NodeFinished {
            node_id: finished.node_id.into_owned(),
            instance_id: Some(finished.instance_id.to_string()),
            duration_ms: finished.duration_ms,
            status: finished.status,
            output: finished.output.map(Val::into_value),
            usage,
            held_ms: Some(finished.held_ms),
            extra,
        }),
    );
}

/// Serializes a value for an event; a value that cannot be serialized becomes a marker.
pub(crate) fn to_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(
        |e| serde_json::json!({"__graphmindUnserializable": true, "error": e.to_string()}),
    )
}

/// Inputs and outputs up to about this many JSON bytes are recorded as compact ring records
/// (the transport serializes those while it holds the ring's lock, so they stay small).
const COMPACT_MAX: usize = 1024;

/// Whether a payload value is small enough for a compact record.
fn compact(v: &Value) -> bool {
    rough_len(v, 0) <= COMPACT_MAX
}

/// [`compact`] for a captured value.
fn compact_val(v: &Val) -> bool {
    rough_len_val(v, 0) <= COMPACT_MAX
}

/// [`compact`] for an input.
fn compact_input(p: &Payload) -> bool {
    match p {
        Payload::Json(v) => compact(v),
        Payload::Fields(f) => {
            f.iter().fold(2usize, |n, (k, v)| {
                n.saturating_add(k.len() * 6 + 4 + rough_len_val(v, 1))
            }) <= COMPACT_MAX
        }
    }
}

/// [`rough_len`] for a captured value.
fn rough_len_val(v: &Val, depth: usize) -> usize {
    match v {
        Val::Null | Val::Bool(_) => 5,
        Val::U64(_) | Val::I64(_) | Val::F64(_) => 24,
        Val::Str(s) => s.len() * 6 + 2,
        Val::Json(v) => rough_len(v, depth),
    }
}

/// A rough upper bound of a value's JSON size, to skip measuring small payloads.
fn rough_len(v: &Value, depth: usize) -> usize {
    if depth > 64 {
        return usize::MAX / 4;
    }
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => s.len() * 6 + 2,
        Value::Array(a) => a
            .iter()
            .fold(2usize, |n, x| n.saturating_add(rough_len(x, depth + 1) + 1)),
        Value::Object(m) => m.iter().fold(2usize, |n, (k, x)| {
            n.saturating_add(k.len() * 6 + 4 + rough_len(x, depth + 1))
        }),
    }
}

/// Emits `message`, shrinking its payload to the 512 KB budget first when it carries a large
/// input or output.
pub(crate) fn emit_budgeted(host: &dyn Host, run_id: &str, message: Message) -> Option<u64> {
    let big = match &message {
        Message::NodeStarted(p) => p.input.as_ref().map_or(0, |v| rough_len(v, 0)),
        Message::NodeFinished(p) => p.output.as_ref().map_or(0, |v| rough_len(v, 0)),
        _ => 0,
    };
    if big <= PAYLOAD_BUDGET / 2 {
        return host.emit(run_id, message);
    }
    host.emit(run_id, shrink_message(message))
}

fn shrink_message(message: Message) -> Message {
    fn redo<T: Serialize + DeserializeOwned>(p: T) -> Option<T> {
        let Value::Object(mut map) = serde_json::to_value(&p).ok()? else {
            return None;
        };
        shrink_payload(&mut map, PAYLOAD_BUDGET);
        serde_json::from_value(Value::Object(map)).ok()
    }
    match message {
        Message::NodeStarted(p) => {
            let fallback = NodeStarted {
                input: Some(serde_json::json!({"__graphmindTruncated": true})),
                ..p.clone()
            };
            Message::NodeStarted(redo(p).unwrap_or(fallback))
        }
        Message::NodeFinished(p) => {
            let fallback = NodeFinished {
                output: Some(serde_json::json!({"__graphmindTruncated": true})),
                ..p.clone()
            };
            Message::NodeFinished(redo(p).unwrap_or(fallback))
        }
        other => other,
    }
}

/// `exec.paused` extras for what a gate holds: `{"output": …}` (shrunk to the payload budget
/// like a `node.finished` output) or `{"error": {name, message, stack?}}`.
pub(crate) fn held_extra(output: Option<Value>, error: Option<&ErrorInfo>) -> Extra {
    let mut extra = Extra::new();
    if let Some(v) = output {
        let big = rough_len(&v, 0) > PAYLOAD_BUDGET / 2;
        extra.insert("output".into(), v);
        if big {
            shrink_payload(&mut extra, PAYLOAD_BUDGET);
        }
    }
    if let Some(e) = error {
        extra.insert("error".into(), to_value(e));
    }
    extra
}

/// `{name, message}` for `node.error` from any displayable error.
pub(crate) fn error_info(name: &str, message: String) -> ErrorInfo {
    ErrorInfo {
        name: name.to_owned(),
        message,
        stack: None,
        extra: Extra::new(),
    }
}

/// The last path segment of a type name, generics dropped (`my::Error<T>` → `Error`).
pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

// ---- the low-level public API --------------------------------------------------------------

/// What the debugger decided at a gate of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Resume {
    /// Go on (also every automatic release: detached, disconnect, timeout, dispose).
    Continue,
    /// Run the call again (only when the gate allowed retry).
    Retry,
    /// Use this value instead (already validated when the gate was given a type).
    Inject(Value),
    /// The debugger aborted the run. Call [`Node::abort_run`] to finish the node and cancel
    /// the run, or finish the node yourself.
    Abort,
}

/// One execution of a node, for adapters and hand-written instrumentation: start it, gate it,
/// stream tokens into it, and finish it. A `Node` dropped unfinished finishes `aborted`.
///
/// ```no_run
/// use graphmind::node::{Node, Resume};
/// use graphmind::protocol::{NodeKind, PausePoint, Status};
///
/// # async fn demo() {
/// if let Some(mut node) = Node::start(NodeKind::Retriever, "docs", Some(serde_json::json!({"q": "refunds"}))) {
///     let hits = match node.gate(PausePoint::Before).await {
///         Resume::Inject(v) => v,
///         _ => serde_json::json!(["doc-1", "doc-2"]), // the real work
///     };
///     node.finish(Status::Ok, Some(hits));
/// }
/// # }
/// ```
pub struct Node {
    call: crate::exec::tool::Call,
    run: NodeRun,
    instance_id: String,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node_id", &self.run.node_id)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Starts node `<kind>:<name>` in the running task's run (emits `node.started`; the
    /// parent is the run's agent node). Outside any run it goes to the session's implicit run
    /// (named `implicit`, no agent node, so no parent). `None` when the session is disabled:
    /// call straight through then.
    #[must_use]
    pub fn start(kind: NodeKind, name: &str, input: Option<Value>) -> Option<Self> {
        Self::start_with(kind, name, &format!("{kind}:{name}"), None, input)
    }

    /// Whether a node started now would be recorded (the running task's session is
    /// enabled): a cheap check an adapter makes before preparing a node's input.
    #[must_use]
    pub fn enabled() -> bool {
        crate::exec::scope::Scope::enabled_now()
    }

    /// Starts a model step by hand: node `llm:step` with instanceId `<invocation>:s<N>`,
    /// where `grouping` (e.g. [`Grouping::of`](crate::model::Grouping::of) the request)
    /// decides whether it continues the run's current invocation, exactly as for
    /// `#[graphmind::model_step]`; an invocation's first step sends `graph.hint`. `input` is
    /// the request as recorded. `None` when the session is disabled.
    #[must_use]
    pub fn start_step(input: Value, grouping: crate::model::Grouping) -> Option<Self> {
        if !crate::exec::scope::Scope::enabled_now() {
            return None;
        }
        let (call, run) = crate::exec::step::begin_by_hand(input, &grouping)?;
        let instance_id = run.instance_id.to_string();
        Some(Self {
            call,
            run,
            instance_id,
        })
    }

    /// [`Node::start`] with an explicit nodeId and instanceId (e.g. a model's tool-call id).
    #[must_use]
    pub fn start_with(
        kind: NodeKind,
        name: &str,
        node_id: &str,
        instance_id: Option<String>,
        input: Option<Value>,
    ) -> Option<Self> {
        if !crate::exec::scope::Scope::enabled_now() {
            return None;
        }
        let (call, host, run_id) =
            crate::exec::tool::Call::current(kind, std::borrow::Cow::Owned(name.to_owned()), true);
        if !host.enabled() {
            return None;
        }
        let instance_id = instance_id.unwrap_or_else(|| crate::exec::next_id("call"));
        let run = NodeRun::start(
            host,
            run_id,
            StartSpec {
                node_id: Cow::Owned(node_id.to_owned()),
                kind,
                name: Cow::Owned(name.to_owned()),
                instance_id: InstanceId::Text(instance_id.as_str().into()),
                parent_id: call.run.as_ref().map(|r| r.agent_node.clone()),
                input: input.map(|v| Payload::Json(Box::new(v))),
            },
        );
        Some(Self {
            call,
            run,
            instance_id,
        })
    }

    /// This execution's instanceId.
    #[must_use]
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// A gate at `point`: continues at once unless a debugger is attached and a breakpoint
    /// or step mode holds it. `inject` is accepted as any JSON without the redaction
    /// placeholder; `retry` is allowed.
    pub async fn gate(&mut self, point: PausePoint) -> Resume {
        self.gate_inner(point, Some(crate::gate::any_json)).await
    }

    /// A gate whose `inject` must deserialize into `T` (otherwise `exec.refused`, code
    /// `schema`, and the gate stays held).
    pub async fn gate_typed<T: DeserializeOwned>(&mut self, point: PausePoint) -> Resume {
        self.gate_inner(point, Some(crate::gate::validator_for::<T>))
            .await
    }

    async fn gate_inner(
        &mut self,
        point: PausePoint,
        inject: Option<fn() -> crate::gate::Validator>,
    ) -> Resume {
        let out = crate::gate::decide(crate::gate::GateSpec {
            host: &self.run.host,
            run_id: &self.run.run_id,
            node_id: &self.run.node_id,
            kind: self.call.kind,
            name: &self.call.name,
            point,
            retry: true,
            inject,
            abort: true,
            clock: self.call.scope.clock.clone(),
            run_clock: self.call.run.as_ref().map(|r| Arc::clone(&r.held)),
            held_value: Extra::new(),
            forced: None,
        })
        .await;
        self.run.add_held(out.held);
        match out.decision.action {
            graphmind_protocol::ResumeAction::Continue => Resume::Continue,
            graphmind_protocol::ResumeAction::Retry => Resume::Retry,
            graphmind_protocol::ResumeAction::Inject => {
                Resume::Inject(out.decision.output.unwrap_or(Value::Null))
            }
            graphmind_protocol::ResumeAction::Abort => Resume::Abort,
        }
    }

    /// Queues a streamed delta (batched into one `node.token` per
    /// [`Config::token_interval`](crate::Config::token_interval), 34 ms by default).
    pub fn token(&mut self, kind: DeltaKind, text: &str) {
        self.run.push_token(kind, text);
    }

    /// Queues a streamed delta that may name its tool call (index, id, tool name), so that
    /// parallel tool calls stream apart; batched like [`Node::token`].
    pub fn delta(&mut self, delta: &crate::model::Delta<'_>) {
        self.run.push_delta(delta);
    }

    /// Emits a protocol message into this node's run, on the node's session (for example a
    /// `graph.hint` naming the tools a request offers). Returns its seq when recorded.
    pub fn emit(&self, message: graphmind_protocol::Message) -> Option<u64> {
        self.run.host.emit(&self.run.run_id, message)
    }

    /// Emits `node.error`; the node stays open (finish it after).
    pub fn error(&self, name: &str, message: impl Into<String>) {
        self.run.error(error_info(name, message.into()));
    }

    /// Finishes the node (tokens flushed first).
    pub fn finish(self, status: Status, output: Option<Value>) {
        self.finish_with(status, output, None, Extra::new());
    }

    /// Finishes the node with usage and loose fields: a raw [`Extra`] map, or typed
    /// [`Extras`] (`api`, `attempts`, `injected`, `streamed`, `providerExecuted`, `ungated`,
    /// `model`, `responseId`) turned into one with `.into()`.
    pub fn finish_with(
        self,
        status: Status,
        output: Option<Value>,
        usage: Option<crate::model::Usage>,
        extra: Extra,
    ) {
        // A step that answered with a response id: a later request naming it as its
        // previous response continues this invocation (`Grouping::After`).
        if self.run.node_id == crate::exec::step::STEP_NODE
            && let Some(id) = extra.get("responseId").and_then(Value::as_str)
        {
            crate::exec::step::note_response(&self.call, &self.instance_id, id);
        }
        self.run.finish(
            status,
            Finish {
                output,
                usage: usage.map(crate::model::Usage::to_wire),
                extra,
            },
        );
    }

    /// Finishes the node `aborted` and cancels the running task's run: the run scope drops
    /// its future and returns [`Aborted`](crate::Aborted). Outside a run this only finishes
    /// the node and returns.
    pub async fn abort_run(self) {
        let Self { call, run, .. } = self;
        run.finish(Status::Aborted, Finish::default());
        if let Some(ctx) = &call.run {
            ctx.abort();
            std::future::pending::<()>().await;
        }
    }

    /// Hands the node to a stream: every item is observed by `observe` on its way to the
    /// consumer; the node finishes when the stream ends or is dropped (`streaming: true`,
    /// `chunks`, and `dropped: true` when dropped before its end; the status stays `ok` unless
    /// `observe` reported an error, or the stream was dropped because the debugger aborted its
    /// run: then `aborted` with `cancelled: true`). `chunks` counts the
    /// [`Observer::chunk`](crate::tee::Observer::chunk) calls that `observe` makes.
    pub fn tee<S: futures_core::Stream>(
        self,
        stream: S,
        observe: fn(&mut crate::tee::Observer, &S::Item),
    ) -> crate::tee::Tee<S> {
        crate::tee::Tee::new(stream, crate::tee::Observer::new(self.run), observe)
    }

    /// [`Node::tee`] for a stream of model chunks: each item's
    /// [`StepChunk`](crate::model::StepChunk) deltas, usage, finish reason and error are
    /// recorded as those of a `#[graphmind::model_step]` stream are.
    pub fn tee_chunks<S>(self, stream: S) -> crate::tee::Tee<S>
    where
        S: futures_core::Stream,
        S::Item: crate::model::StepChunk,
    {
        self.tee(
            stream,
            crate::exec::step::observe_chunk::<crate::model::Native, S::Item>,
        )
    }

    /// [`Node::tee_chunks`] for chunks of another crate, read through the codec `K` (see
    /// [`ChunkCodec`](crate::model::ChunkCodec)): `node.tee_codec::<MyCodec, _>(stream)`.
    pub fn tee_codec<K, S>(self, stream: S) -> crate::tee::Tee<S>
    where
        S: futures_core::Stream,
        K: crate::model::ChunkCodec<S::Item>,
    {
        self.tee(stream, crate::exec::step::observe_chunk::<K, S::Item>)
    }
}
