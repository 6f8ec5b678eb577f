//! The token batcher: streamed deltas of one node go out as one `node.token` per interval
//! (34 ms by default). The first delta of a batch arms the runtime's timer thread (any
//! executor works); a node's pending deltas are flushed before its `node.finished`, and every
//! pending batch of a session is flushed when the session is disposed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use graphmind_protocol::{Extra, Message, NodeToken, TokenDelta};
use serde_json::Value;

use crate::call::Host;

/// Bytes of delta text one `node.token` carries at most (half the payload budget: JSON
/// escaping can double it).
pub(crate) const BATCH_LIMIT: usize = graphmind_protocol::PAYLOAD_BUDGET / 4;

/// A delta cut to [`BATCH_LIMIT`] bytes (at a char boundary) with a visible marker.
fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= BATCH_LIMIT {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = BATCH_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}{}",
        &text[..end],
        graphmind_protocol::TRUNCATION_SUFFIX
    ))
}

/// The loose fields that name a delta's tool call, as the viewer reads them.
fn call_fields(delta: &crate::model::Delta<'_>) -> Extra {
    let mut extra = Extra::new();
    if let Some(index) = delta.index {
        extra.insert("index".into(), Value::from(index));
    }
    if let Some(id) = delta.call_id {
        extra.insert("toolCallId".into(), Value::String(id.to_owned()));
    }
    if let Some(name) = delta.tool_name {
        extra.insert("toolName".into(), Value::String(name.to_owned()));
    }
    extra
}

/// Whether `delta` may be appended to `last`: it names the same call, or it gives only the
/// index of the call `last` belongs to (later pieces of a call often carry nothing else).
/// A piece that names a call id or tool name `last` lacks starts a delta of its own, so the
/// name reaches the viewer.
fn continues(last: &TokenDelta, delta: &crate::model::Delta<'_>) -> bool {
    let index = last.extra.get("index").and_then(Value::as_u64);
    let field = |key: &str| last.extra.get(key).and_then(Value::as_str);
    if index != delta.index {
        return false;
    }
    let same = |have: Option<&str>, new: Option<&str>| {
        new.is_none_or(|n| have == Some(n)) && (index.is_some() || have == new)
    };
    same(field("toolCallId"), delta.call_id) && same(field("toolName"), delta.tool_name)
}

/// Pending deltas of one node execution.
pub(crate) struct TokenBuf {
    host: Arc<dyn Host>,
    run_id: crate::ids::RunId,
    node_id: String,
    instance_id: String,
    pending: Mutex<Vec<TokenDelta>>,
    armed: AtomicBool,
    closed: AtomicBool,
}

impl TokenBuf {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        run_id: crate::ids::RunId,
        node_id: String,
        instance_id: String,
    ) -> Self {
        Self {
            host,
            run_id,
            node_id,
            instance_id,
            pending: Mutex::new(Vec::new()),
            armed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// Adds one delta; consecutive deltas of one kind are merged. A batch that grows past
    /// [`BATCH_LIMIT`] bytes goes out at once, and a single delta longer than that is cut, so
    /// every `node.token` stays inside the payload budget.
    #[cfg(test)]
    pub(crate) fn push(self: &Arc<Self>, kind: graphmind_protocol::DeltaKind, text: &str) {
        self.push_delta(&crate::model::Delta::new(kind, text));
    }

    /// Adds one delta. Consecutive deltas merge only when they belong to the same tool call
    /// (see [`continues`]), so that parallel calls' arguments never mix in one delta.
    pub(crate) fn push_delta(self: &Arc<Self>, delta: &crate::model::Delta<'_>) {
        let (kind, text) = (delta.kind, delta.text);
        if text.is_empty() || self.closed.load(Ordering::Relaxed) {
            return;
        }
        let text = cut(text);
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let size: usize = pending.iter().map(|d| d.v.len()).sum();
            if size + text.len() > BATCH_LIMIT {
                drop(pending);
                self.flush();
                pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            }
            match pending.last_mut() {
                Some(last) if last.t == kind && continues(last, delta) => {
                    last.v.push_str(&text);
                }
                _ => pending.push(TokenDelta {
                    t: kind,
                    v: text.into_owned(),
                    extra: call_fields(delta),
                }),
            }
            if self.armed.swap(true, Ordering::AcqRel) {
                return;
            }
        }
        let pending: std::sync::Weak<Self> = Arc::downgrade(self);
        self.host.track_tokens(pending);
        let me = Arc::clone(self);
        if !crate::delay_queue::after(self.host.token_interval(), move || me.flush()) {
            self.flush();
        }
    }

    /// Emits the pending deltas as one `node.token` (nothing if none are pending).
    pub(crate) fn flush(&self) {
        let deltas = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            self.armed.store(false, Ordering::Release);
            std::mem::take(&mut *pending)
        };
        if deltas.is_empty() {
            return;
        }
        let mut extra = Extra::new();
        extra.insert("instanceId".into(), Value::String(self.instance_id.clone()));
        self.host.emit(
            &self.run_id,
            Message::NodeToken(NodeToken {
                node_id: self.node_id.clone(),
                deltas,
                extra,
            }),
        );
    }

    /// Flushes and ignores later pushes (the node finished).
    pub(crate) fn close(&self) {
        self.flush();
        self.closed.store(true, Ordering::Relaxed);
    }
}

impl crate::session::PendingTokens for TokenBuf {
    fn flush(&self) {
        TokenBuf::flush(self);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use graphmind_protocol::DeltaKind;

    use super::*;
    use crate::call::recorder::Recorder;

    fn buf() -> (Arc<Recorder>, Arc<TokenBuf>) {
        let rec = Arc::new(Recorder::default());
        let host: Arc<dyn Host> = rec.clone();
        let buf = TokenBuf::new(host, "run_1".into(), "llm:step".into(), "inv:s1".into());
        (rec, Arc::new(buf))
    }

    fn tokens(rec: &Recorder) -> Vec<NodeToken> {
        rec.events
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|m| match m {
                Message::NodeToken(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn batches_without_any_runtime_carry_the_instance_id() {
        let (rec, buf) = buf();
        buf.push(DeltaKind::Text, "a");
        buf.push(DeltaKind::Text, "");
        buf.push(DeltaKind::Reasoning, "b");
        assert!(tokens(&rec).is_empty(), "nothing before the interval");
        std::thread::sleep(Duration::from_millis(500));
        let t = tokens(&rec);
        assert_eq!(t.len(), 1, "one batch");
        assert_eq!(t[0].extra["instanceId"], "inv:s1");
        assert_eq!(t[0].deltas.len(), 2, "empty deltas are dropped");
        assert_eq!(t[0].deltas[1].t, DeltaKind::Reasoning);
    }

    #[tokio::test]
    async fn one_batch_per_interval_merging_same_kind_deltas() {
        let (rec, buf) = buf();
        for _ in 0..10 {
            buf.push(DeltaKind::Text, "x");
        }
        buf.push(DeltaKind::ToolArgs, "{");
        assert!(tokens(&rec).is_empty(), "nothing before the interval");
        tokio::time::sleep(Duration::from_millis(500)).await;
        tokio::task::yield_now().await;
        let t = tokens(&rec);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].deltas.len(), 2);
        assert_eq!(t[0].deltas[0].v, "x".repeat(10));
        buf.push(DeltaKind::Text, "y");
        buf.close();
        buf.push(DeltaKind::Text, "ignored after close");
        let t = tokens(&rec);
        assert_eq!(t.len(), 2, "close flushes");
        assert_eq!(t[1].deltas[0].v, "y");
    }

    #[test]
    fn deltas_of_different_tool_calls_never_merge() {
        use crate::model::Delta;
        let (rec, buf) = buf();
        buf.push_delta(
            &Delta::tool_args(0, "{\"ci")
                .with_call_id("call_a")
                .with_tool_name("weather"),
        );
        buf.push_delta(&Delta::tool_args(0, "ty\""));
        buf.push_delta(
            &Delta::tool_args(1, "{\"am")
                .with_call_id("call_b")
                .with_tool_name("refund"),
        );
        buf.push_delta(&Delta::tool_args(0, ": \"Lisbon\"}"));
        buf.push_delta(&Delta::tool_args(1, "ount\": 120}"));
        buf.push_delta(&Delta::tool_args(1, "").with_call_id("call_b"));
        buf.push(DeltaKind::ToolArgs, "{}");
        buf.push(DeltaKind::ToolArgs, "[]");
        buf.close();
        let t = tokens(&rec);
        assert_eq!(t.len(), 1);
        type Named<'a> = (Option<u64>, Option<&'a str>, Option<&'a str>, &'a str);
        let got: Vec<Named<'_>> = t[0]
            .deltas
            .iter()
            .map(|d| {
                (
                    d.extra.get("index").and_then(Value::as_u64),
                    d.extra.get("toolCallId").and_then(Value::as_str),
                    d.extra.get("toolName").and_then(Value::as_str),
                    d.v.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), Some("call_a"), Some("weather"), "{\"city\""),
                (Some(1), Some("call_b"), Some("refund"), "{\"am"),
                (Some(0), None, None, ": \"Lisbon\"}"),
                (Some(1), None, None, "ount\": 120}"),
                (None, None, None, "{}[]"),
            ],
            "a call's later pieces join it by index only; other calls stay apart"
        );
    }

    #[test]
    fn oversized_text_is_cut_and_batches_stay_under_the_limit() {
        let (rec, buf) = buf();
        buf.push(DeltaKind::Text, &"é".repeat(BATCH_LIMIT));
        buf.push(DeltaKind::Text, &"z".repeat(BATCH_LIMIT / 2 + 1));
        buf.push(DeltaKind::Text, &"w".repeat(BATCH_LIMIT / 2 + 1));
        for t in tokens(&rec) {
            let len: usize = t.deltas.iter().map(|d| d.v.len()).sum();
            assert!(len <= BATCH_LIMIT + 64, "{len}");
        }
        assert!(
            tokens(&rec)[0].deltas[0]
                .v
                .ends_with(graphmind_protocol::TRUNCATION_SUFFIX)
        );
    }
}
