//! One node execution: `node.started` … `node.finished`, with durations, held time, token
//! batches and the payload budget. A node execution always finishes: dropped unfinished (the
//! call's future was cancelled, or it panicked) it emits `node.finished` `aborted` / `error`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::{
    DeltaKind, ErrorInfo, Extra, Message, NodeError, NodeFinished, NodeKind, NodeStarted,
    PAYLOAD_BUDGET, Status, shrink_payload,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call::Host;
use crate::call::tokens::TokenBuf;
use crate::captured::{Val, to_value};
use crate::clock::{Instant, millis, millis_between};
use crate::event::{Finished, FinishedMore, InstanceId, Label, Payload, Record, Started};
use crate::extras::Extras;

/// One execution of one node.
pub(crate) struct NodeRun {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: crate::ids::RunId,
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
    /// The replayer's decision for this call (a replay is configured): taken by its policy.
    pub(crate) replay: Option<Box<crate::replay::Decision>>,
    /// The recorded step whose answer a replay handed this node's `before` gate (a node
    /// started by hand): its `node.finished` says `replayed: true` and `replayStep`, not
    /// `injected`.
    pub(crate) served: Option<usize>,
    /// The input the call runs with now, kept (attached only) while a `before` gate may
    /// take an edited input; boxed, so a node without one stays small.
    pub(crate) edit: Option<Box<EditState>>,
    /// The `api` extra of its `node.finished` (a model step whose codec names it).
    pub(crate) api: Option<&'static str>,
}

/// A node's input as edits see it: the input it runs with now, and the recorded one once
/// an edit was accepted.
pub(crate) struct EditState {
    /// The input the next attempt runs with.
    pub(crate) live: serde_json::Map<String, Value>,
    /// The input `node.started` recorded, once an edit replaced it.
    pub(crate) before: Option<Value>,
    /// The argument that is the whole input (a model step recording its request): an edit
    /// names its fields, and the body runs with the merged whole as that argument.
    pub(crate) bare: Option<&'static str>,
}

/// What `node.started` says.
pub(crate) struct StartSpec {
    pub(crate) node_id: Cow<'static, str>,
    pub(crate) kind: NodeKind,
    pub(crate) name: Cow<'static, str>,
    pub(crate) instance_id: InstanceId,
    pub(crate) parent_id: Option<crate::inline_str::SmallStr>,
    pub(crate) input: Option<Payload>,
    /// Loose fields of its `node.started` (a node with any is recorded as a message).
    pub(crate) extra: Extra,
}

/// How a node ended.
#[derive(Default)]
pub(crate) struct Finish {
    pub(crate) output: Option<Val>,
    pub(crate) usage: Option<crate::model::Usage>,
    pub(crate) extra: Extras,
}

impl NodeRun {
    /// Emits `node.started` and starts the clock.
    pub(crate) fn start(host: Arc<dyn Host>, run_id: crate::ids::RunId, spec: StartSpec) -> Self {
        Self::start_at(host, run_id, spec, Instant::now())
    }

    /// [`NodeRun::start`] for a node whose work began at `at` (its `node.started` stamped
    /// then, its duration counted from then).
    pub(crate) fn start_at(
        host: Arc<dyn Host>,
        run_id: crate::ids::RunId,
        spec: StartSpec,
        at: Instant,
    ) -> Self {
        let instance_id = spec.instance_id.clone();
        let node_id = spec.node_id.clone();
        let replay = match crate::replay::any() {
            true => replay_decision(&*host, &spec),
            false => None,
        };
        let (started, started_seq) = record_started_at(&*host, &run_id, spec, at);
        Self {
            replay,
            served: None,
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
            edit: None,
            api: None,
        }
    }

    /// An edit was accepted: the call runs with `after` from now on.
    pub(crate) fn edited(&mut self, after: &Value) {
        if let (Some(state), Value::Object(map)) = (self.edit.as_deref_mut(), after) {
            let old = std::mem::replace(&mut state.live, map.clone());
            state.before.get_or_insert(Value::Object(old));
        }
    }

    /// The arguments an accepted edit hands the body: those it changed, or, when the input
    /// is one argument itself ([`EditState::bare`]), that argument as the edited whole.
    pub(crate) fn edit_args(
        &self,
        after: Value,
        changed: serde_json::Map<String, Value>,
    ) -> serde_json::Map<String, Value> {
        match self.edit.as_ref().and_then(|s| s.bare) {
            Some(name) => std::iter::once((name.to_owned(), after)).collect(),
            None => changed,
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

    fn finish_inner(&mut self, status: Status, mut finish: Finish) {
        let Some((now, duration_ms)) = self.close() else {
            return;
        };
        // An edited input: the node shows the input that ran, marked, with the original.
        if let Some(state) = self.edit.take()
            && let Some(before) = state.before
        {
            let mut edited = Extra::new();
            edited.insert("before".into(), before);
            edited.insert("after".into(), Value::Object(state.live));
            finish
                .extra
                .rest
                .insert("edited".into(), Value::Object(edited));
        }
        // A node started by hand whose served answer no `before` gate took (an observe-only
        // node, a tool the provider ran inside a replayed answer): its output came from the
        // replay when the adapter says it was injected, else the call ran live.
        if let Some(decision) = self.replay.take()
            && let crate::replay::Decision::Serve(served) = *decision
        {
            let injected = finish.extra.injected
                || finish.extra.rest.get("injected") == Some(&Value::Bool(true));
            if injected {
                self.served = Some(served.step);
            } else if let Some(r) = self.host.replayer() {
                r.unserved(served.step, crate::replay::LiveReason::NotAnswerable);
            }
        }
        // Answered from a recording: replayed, not injected by a person.
        if let Some(step) = self.served {
            finish.extra.injected = false;
            finish.extra.rest.shift_remove("injected");
            finish.extra.rest.extend(served_extra(step));
        }
        // An answer from the recording that ended in an error the recorded call did not have.
        if status == Status::Error
            && let Some(step) = finish.extra.rest.get("replayStep").and_then(Value::as_u64)
            && let Some(r) = self.host.replayer()
        {
            r.finished_with_error(usize::try_from(step).unwrap_or(usize::MAX), &self.node_id);
        }
        if let Some(api) = self.api
            && finish.extra.api.is_none()
        {
            finish.extra.rest.entry("api").or_insert_with(|| api.into());
        }
        // Finished for good: the ids move into the last event.
        record_finished(
            &*self.host,
            &self.run_id,
            Finished {
                node_id: std::mem::take(&mut self.node_id),
                instance_id: std::mem::replace(&mut self.instance_id, InstanceId::Call(0)),
                duration_ms,
                status,
                output: finish.output,
                held_ms: millis(self.held),
                more: None,
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

/// The replayer's decision for a tool call or model step about to start, when the host has
/// a replayer.
fn replay_decision(host: &dyn Host, spec: &StartSpec) -> Option<Box<crate::replay::Decision>> {
    if !matches!(spec.kind, NodeKind::Tool | NodeKind::Llm) {
        return None;
    }
    let replayer = host.replayer()?;
    let input = spec.input.as_ref().map(Payload::to_value);
    // Provider-minted fields are named for model steps only (`model::provider_minted`).
    let minted = match spec.kind {
        NodeKind::Llm => crate::model::minted_now(),
        _ => &[],
    };
    Some(Box::new(replayer.take(
        &spec.node_id,
        &spec.name,
        input.as_ref(),
        minted,
    )))
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
                    extra: extra.into(),
                    ..Finish::default()
                },
            );
        }
    }
}

/// Records `node.started` stamped at `at`: as a compact record, or, with a large input, as a
/// message shrunk to the payload budget (stamped when recorded). Returns `at` and the event's
/// seq.
fn record_started_at(
    host: &dyn Host,
    run_id: &crate::ids::RunId,
    spec: StartSpec,
    at: Instant,
) -> (Instant, Option<u64>) {
    if !spec.extra.is_empty() {
        let seq = emit_budgeted(
            host,
            run_id,
            Message::NodeStarted(NodeStarted {
                node_id: spec.node_id.into_owned(),
                kind: spec.kind,
                name: spec.name.into_owned(),
                instance_id: spec.instance_id.to_string(),
                parent_id: spec.parent_id.map(|p| p.to_string()),
                input: spec.input.map(Payload::into_value),
                extra: spec.extra,
            }),
        );
        return (at, seq);
    }
    let label = Label::named(spec.node_id, spec.kind, spec.name);
    record_labelled(
        host,
        run_id,
        label,
        spec.instance_id,
        spec.parent_id,
        spec.input,
        at,
    )
}

/// [`record_started`] for a `#[graphmind::tool]` call (its site names the node).
pub(crate) fn record_tool_started(
    host: &dyn Host,
    run_id: &crate::ids::RunId,
    site: &'static crate::sites::ToolSite,
    instance_id: InstanceId,
    parent_id: Option<crate::inline_str::SmallStr>,
    input: Payload,
) -> Instant {
    record_labelled(
        host,
        run_id,
        Label::Tool(site),
        instance_id,
        parent_id,
        Some(input),
        Instant::now(),
    )
    .0
}

fn record_labelled(
    host: &dyn Host,
    run_id: &crate::ids::RunId,
    label: Label,
    instance_id: InstanceId,
    parent_id: Option<crate::inline_str::SmallStr>,
    input: Option<Payload>,
    started: Instant,
) -> (Instant, Option<u64>) {
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

/// Records `node.finished` that happened at `at`: as a compact record (with its usage and
/// extra fields, if any) when its output and extra fields are small or its output is held as
/// text, else as a message shrunk to the payload budget.
pub(crate) fn record_finished(
    host: &dyn Host,
    run_id: &crate::ids::RunId,
    mut finished: Finished,
    usage: Option<crate::model::Usage>,
    extra: Extras,
    at: Instant,
) {
    if finished.output.as_ref().is_none_or(compact_val)
        && (extra.is_empty()
            || extra
                .typed_len(6, 24)
                .saturating_add(rough_len_map(&extra.rest, 0))
                <= COMPACT_MAX)
    {
        if usage.is_some() || !extra.is_empty() {
            finished.more = Some(Box::new(FinishedMore { usage, extra }));
        }
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
            usage: usage.map(crate::model::Usage::to_wire),
            held_ms: Some(finished.held_ms),
            extra: extra.into(),
        }),
    );
}

/// Inputs and outputs up to about this many JSON bytes are recorded as compact ring records
/// (the transport serializes those while it holds the ring's lock, so they stay small).
const COMPACT_MAX: usize = 1024;

/// A value held as its JSON text is recorded compact up to this many bytes: the transport
/// copies it while it holds the ring's lock, nothing is walked (larger ones are shrunk to the
/// payload budget first).
pub(crate) const RAW_COMPACT_MAX: usize = crate::lazy::COMPACT_TEXT_MAX;

/// Whether a payload value is small enough for a compact record.
fn compact(v: &Value) -> bool {
    rough_len(v, 0) <= COMPACT_MAX
}

/// [`compact`] for a captured value.
pub(crate) fn compact_val(v: &Val) -> bool {
    match v.raw_len() {
        Some(n) => n <= RAW_COMPACT_MAX,
        None => rough_len_val(v, 0) <= COMPACT_MAX,
    }
}

/// [`compact`] for an input.
pub(crate) fn compact_input(p: &Payload) -> bool {
    match p {
        Payload::Json(v) => compact(v),
        Payload::Fields(f) => {
            f.iter().fold(2usize, |n, (k, v)| {
                n.saturating_add(k.len() * 6 + 4 + rough_len_val(v, 1))
            }) <= COMPACT_MAX
        }
        Payload::Raw(r) => r.get().len() <= RAW_COMPACT_MAX,
        Payload::Lazy(l) => l.len() <= RAW_COMPACT_MAX,
    }
}

/// [`rough_len`] for a captured value.
fn rough_len_val(v: &Val, depth: usize) -> usize {
    match v {
        Val::Null | Val::Bool(_) => 5,
        Val::U64(_) | Val::I64(_) | Val::F64(_) => 24,
        Val::Str(s) => s.len() * 6 + 2,
        Val::Json(v) => rough_len(v, depth),
        Val::Raw(r) => r.get().len(),
        Val::Lazy(l) => l.len(),
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
        Value::Object(m) => rough_len_map(m, depth),
    }
}

/// [`rough_len`] for an object.
fn rough_len_map(m: &serde_json::Map<String, Value>, depth: usize) -> usize {
    m.iter().fold(2usize, |n, (k, x)| {
        n.saturating_add(k.len() * 6 + 4 + rough_len(x, depth + 1))
    })
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

/// `node.finished` extras of a call answered from the recording: `replayed` and the recorded
/// step, never `injected` (which says a person replaced the result).
pub(crate) fn served_extra(step: usize) -> Extra {
    let mut extra = Extra::new();
    extra.insert("replayed".into(), true.into());
    extra.insert("replayStep".into(), step.into());
    extra
}
