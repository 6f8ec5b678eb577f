//! The loop guard's state: the streak of identical tool calls of one run, and the input
//! fingerprint that says two calls are the same. The check that holds a call on a loop is
//! in the call layer.

use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::event::Payload;

/// The current streak of identical tool calls of one run.
#[derive(Debug, Default)]
pub(crate) struct Streak {
    node_id: String,
    fingerprint: u64,
    repeats: u32,
    pub(crate) first_seq: u64,
    pub(crate) last_seq: u64,
}

impl Streak {
    /// Counts one call; returns the streak's length.
    pub(crate) fn observe(&mut self, node_id: &str, fingerprint: u64, seq: u64) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captured::Val;
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
