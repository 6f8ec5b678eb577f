//! The loop guard: a tool called with the same input several times in a row within a run
//! holds at its `before` gate with `reason: "loop"` (see [`crate::Config::on_loop`]). Only
//! calls that run while a debugger is attached are observed; one streak per run (tool
//! calls only: a model step between two tool calls does not break their streak).

use std::hash::{Hash, Hasher};

use graphmind_protocol::{Extra, PauseReason};
use serde_json::Value;

use super::Host;
use super::tool::Call;
use crate::config::OnLoop;
use crate::node::NodeRun;
use crate::record::Payload;

/// The current streak of identical tool calls of one run.
#[derive(Debug, Default)]
pub(crate) struct Streak {
    node_id: String,
    fingerprint: u64,
    repeats: u32,
    first_seq: u64,
    last_seq: u64,
}

impl Streak {
    /// Counts one call; returns the streak's length.
    fn observe(&mut self, node_id: &str, fingerprint: u64, seq: u64) -> u32 {
        if self.repeats > 0 && self.fingerprint == fingerprint && self.node_id == node_id {
            self.repeats = self.repeats.saturating_add(1);
            self.last_seq = seq;
        } else {
            node_id.clone_into(&mut self.node_id);
            self.fingerprint = fingerprint;
            self.repeats = 1;
            self.first_seq = seq;
            self.last_seq = seq;
        }
        self.repeats
    }
}

/// A fingerprint of a call's node and input: equal for equal JSON whatever the key order
/// (an input's top-level `_meta` is ignored). Stable within a process.
pub(crate) fn fingerprint(node_id: &str, input: &Payload) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    node_id.hash(&mut h);
    hash_value(
        &serde_json::to_value(input).unwrap_or(Value::Null),
        &mut h,
        0,
    );
    h.finish()
}

/// Hashes `v` as canonical JSON (object keys sorted); the input's own `_meta` (depth 0) is
/// left out.
fn hash_value(v: &Value, h: &mut impl Hasher, depth: usize) {
    if depth > 64 {
        // Deeper than any sensible input: the rest counts as one opaque value.
        return;
    }
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for x in items {
                hash_value(x, h, depth + 1);
            }
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> =
                map.keys().filter(|k| depth > 0 || *k != "_meta").collect();
            keys.sort();
            (5u8, keys.len()).hash(h);
            for k in keys {
                k.hash(h);
                hash_value(&map[k.as_str()], h, depth + 1);
            }
        }
    }
}

/// Observes the first `before` gate of an attached tool call: when it completes a loop and
/// the guard pauses, the reason and the `loop` summary its `exec.paused` carries.
pub(crate) fn check(call: &Call, node: &NodeRun) -> Option<(PauseReason, Extra)> {
    let (Some(fingerprint), Some(seq)) = (node.loop_fp, node.started_seq) else {
        return None;
    };
    let host: &dyn Host = &*node.host;
    let guard = host.loop_guard();
    if guard.on == OnLoop::Off
        || guard
            .allow
            .iter()
            .any(|a| *a == *node.node_id || *a == *call.name)
    {
        return None;
    }
    let observe = |streak: &mut Streak| {
        let repeats = streak.observe(&node.node_id, fingerprint, seq);
        (repeats, streak.first_seq, streak.last_seq)
    };
    let (repeats, first, last) = match &call.run {
        Some(run) => observe(
            &mut run
                .streak
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
        None => observe(
            &mut host
                .implicit()
                .streak
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
    };
    if repeats < guard.threshold {
        return None;
    }
    if guard.on == OnLoop::Warn {
        // No fingerprint here: it hashes the input, which redaction may be hiding.
        if repeats == guard.threshold {
            host.warn(&format!(
                "loop: {} called {repeats} times in a row with the same input",
                node.node_id
            ));
        }
        return None;
    }
    let fingerprint = format!("{fingerprint:016x}");
    let mut extra = Extra::new();
    extra.insert(
        "loop".into(),
        serde_json::json!({
            "repeats": repeats,
            "firstSeq": first,
            "lastSeq": last,
            "fingerprint": fingerprint,
            "kind": "repeat",
        }),
    );
    Some((PauseReason::Loop, extra))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Val;
    use serde_json::json;

    #[test]
    fn streaks_count_identical_calls_back_to_back() {
        let mut s = Streak::default();
        assert_eq!(s.observe("tool:a", 1, 10), 1);
        assert_eq!(s.observe("tool:a", 1, 12), 2);
        assert_eq!(s.observe("tool:a", 1, 14), 3);
        assert_eq!((s.first_seq, s.last_seq), (10, 14));
        assert_eq!(s.observe("tool:a", 2, 16), 1, "other input");
        assert_eq!(s.observe("tool:b", 2, 18), 1, "other tool");
        assert_eq!(s.first_seq, 18);
    }

    #[test]
    fn fingerprints_ignore_key_order_and_meta() {
        let fields = |pairs: Vec<(&'static str, Val)>| Payload::Fields(pairs.into_boxed_slice());
        let a = fields(vec![("x", Val::U64(1)), ("y", Val::Str("s".into()))]);
        let b = Payload::Json(Box::new(json!({"y": "s", "x": 1, "_meta": {"t": 5}})));
        assert_eq!(fingerprint("tool:t", &a), fingerprint("tool:t", &b));
        let c = Payload::Json(Box::new(json!({"y": "s", "x": 2})));
        assert_ne!(fingerprint("tool:t", &a), fingerprint("tool:t", &c));
        assert_ne!(fingerprint("tool:t", &a), fingerprint("tool:u", &a));
        let nested = |v: Value| Payload::Json(Box::new(json!({"q": v})));
        assert_eq!(
            fingerprint(
                "tool:t",
                &nested(json!({"b": [1, {"d": 1, "c": 2}], "a": null}))
            ),
            fingerprint(
                "tool:t",
                &nested(json!({"a": null, "b": [1, {"c": 2, "d": 1}]}))
            )
        );
        assert_ne!(
            fingerprint("tool:t", &nested(json!([1, 2]))),
            fingerprint("tool:t", &nested(json!([2, 1])))
        );
    }
}
