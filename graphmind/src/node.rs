//! Node executions: `node.started` … `node.finished`, with durations, held time, token
//! batches and the payload budget. A [`NodeRun`] always finishes: dropped unfinished (the
//! call's future was cancelled, or it panicked) it emits `node.finished` `aborted` / `error`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use graphmind_protocol::{
    DeltaKind, ErrorInfo, Extra, Message, NodeError, NodeFinished, NodeKind, NodeStarted,
    PAYLOAD_BUDGET, Status, TokenUsage, shrink_payload,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::exec::{Host, millis, millis_between};
use crate::tokens::TokenBuf;

/// One execution of one node.
pub(crate) struct NodeRun {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: String,
    pub(crate) node_id: String,
    pub(crate) instance_id: String,
    started: Instant,
    held: Duration,
    tokens: Option<Arc<TokenBuf>>,
    finished: bool,
}

/// What `node.started` says.
pub(crate) struct StartSpec {
    pub(crate) node_id: String,
    pub(crate) kind: NodeKind,
    pub(crate) name: String,
    pub(crate) instance_id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) input: Option<Value>,
    pub(crate) extra: Extra,
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
    pub(crate) fn start(host: Arc<dyn Host>, run_id: String, spec: StartSpec) -> Self {
        let started = Instant::now();
        let instance_id = spec.instance_id.clone();
        let node_id = spec.node_id.clone();
        emit_budgeted(
            &*host,
            &run_id,
            Message::NodeStarted(NodeStarted {
                node_id: spec.node_id,
                kind: spec.kind,
                name: spec.name,
                instance_id: spec.instance_id,
                parent_id: spec.parent_id,
                input: spec.input,
                extra: spec.extra,
            }),
        );
        Self {
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
        if text.is_empty() {
            return;
        }
        let buf = self.tokens.get_or_insert_with(|| {
            Arc::new(TokenBuf::new(
                Arc::clone(&self.host),
                self.run_id.clone(),
                self.node_id.clone(),
                self.instance_id.clone(),
            ))
        });
        buf.push(kind, text);
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
        self.host.emit(
            &self.run_id,
            Message::NodeError(NodeError {
                node_id: self.node_id.clone(),
                instance_id: Some(self.instance_id.clone()),
                error,
                held_ms: Some(millis(self.held)),
                extra: Extra::new(),
            }),
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
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(buf) = &self.tokens {
            buf.close();
        }
        emit_budgeted(
            &*self.host,
            &self.run_id,
            Message::NodeFinished(NodeFinished {
                node_id: self.node_id.clone(),
                instance_id: Some(self.instance_id.clone()),
                duration_ms: millis_between(self.started, Instant::now()),
                status,
                output: finish.output,
                usage: finish.usage,
                held_ms: Some(millis(self.held)),
                extra: finish.extra,
            }),
        );
    }
}

impl Drop for NodeRun {
    fn drop(&mut self) {
        if !self.finished {
            let mut extra = Extra::new();
            let status = if std::thread::panicking() {
                extra.insert("panicked".into(), true.into());
                Status::Error
            } else {
                extra.insert("cancelled".into(), true.into());
                Status::Aborted
            };
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

/// Serializes a value for an event; a value that cannot be serialized becomes a marker.
pub(crate) fn to_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(
        |e| serde_json::json!({"__graphmindUnserializable": true, "error": e.to_string()}),
    )
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
pub(crate) fn emit_budgeted(host: &dyn Host, run_id: &str, message: Message) {
    let big = match &message {
        Message::NodeStarted(p) => p.input.as_ref().map_or(0, |v| rough_len(v, 0)),
        Message::NodeFinished(p) => p.output.as_ref().map_or(0, |v| rough_len(v, 0)),
        _ => 0,
    };
    if big <= PAYLOAD_BUDGET / 2 {
        host.emit(run_id, message);
        return;
    }
    host.emit(run_id, shrink_message(message));
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
