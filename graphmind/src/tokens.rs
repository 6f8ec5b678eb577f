//! The token batcher: streamed deltas of one node go out as one `node.token` per interval
//! (34 ms by default). The first delta of a batch arms a timer on the current tokio runtime;
//! without a runtime the batch is flushed at once. A node's pending deltas are flushed before
//! its `node.finished`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use graphmind_protocol::{DeltaKind, Extra, Message, NodeToken, TokenDelta};
use serde_json::Value;

use crate::exec::Host;

/// Pending deltas of one node execution.
pub(crate) struct TokenBuf {
    host: Arc<dyn Host>,
    run_id: crate::exec::RunId,
    node_id: String,
    instance_id: String,
    pending: Mutex<Vec<TokenDelta>>,
    armed: AtomicBool,
    closed: AtomicBool,
}

impl TokenBuf {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        run_id: crate::exec::RunId,
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

    /// Adds one delta; consecutive deltas of one kind are merged.
    pub(crate) fn push(self: &Arc<Self>, kind: DeltaKind, text: &str) {
        if text.is_empty() || self.closed.load(Ordering::Relaxed) {
            return;
        }
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match pending.last_mut() {
                Some(last) if last.t == kind => last.v.push_str(text),
                _ => pending.push(TokenDelta {
                    t: kind,
                    v: text.to_owned(),
                    extra: Extra::new(),
                }),
            }
            if self.armed.swap(true, Ordering::AcqRel) {
                return;
            }
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let me = Arc::clone(self);
                let every = self.host.token_interval();
                rt.spawn(async move {
                    tokio::time::sleep(every).await;
                    me.flush();
                });
            }
            Err(_) => self.flush(),
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
