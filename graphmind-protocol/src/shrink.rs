//! Shrinking payloads to the 512 KB budget, field by field, and cutting off deep values.
//!
//! The walk is bounded: values nested deeper than [`SHRINK_DEPTH`] are replaced by a marker
//! string before anything else looks at them, so no step recurses without a cap.

use serde_json::{Map, Value};

/// Bytes of UTF-8 JSON a payload may take on the wire.
pub const PAYLOAD_BUDGET: usize = 512 * 1024;

/// Nesting depth kept; deeper values become `"[graphmind: depth limit]"`.
pub const SHRINK_DEPTH: usize = 32;

/// What [`shrink_value`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShrinkReport {
    /// Serialized size before.
    pub original_bytes: usize,
    /// Serialized size after.
    pub final_bytes: usize,
    /// Whether anything was changed.
    pub shrunk: bool,
}

/// Shrinks `value` in place until its compact JSON fits `budget` bytes: first deep values are
/// cut off, then long strings and long arrays are truncated with visible markers, halving
/// the limits until it fits; as a last resort the value becomes a marker object.
pub fn shrink_value(value: &mut Value, budget: usize) -> ShrinkReport {
    let mut shrunk = cap_depth(value, 0);
    let original_bytes = json_len(value);
    if original_bytes <= budget {
        return ShrinkReport {
            original_bytes,
            final_bytes: original_bytes,
            shrunk,
        };
    }
    let mut str_limit = (budget / 4).max(64);
    let mut item_limit = 1024usize;
    let mut size = original_bytes;
    while size > budget && (str_limit > 16 || item_limit > 2) {
        cut(value, str_limit, item_limit, 0);
        shrunk = true;
        size = json_len(value);
        str_limit = (str_limit / 2).max(16);
        item_limit = (item_limit / 2).max(2);
    }
    if size > budget {
        *value = serde_json::json!({
            "__graphmind": "truncated",
            "originalBytes": original_bytes,
        });
        size = json_len(value);
    }
    ShrinkReport {
        original_bytes,
        final_bytes: size,
        shrunk,
    }
}

/// Shrinks a payload object field by field: the largest fields are shrunk first so small
/// identifying fields (`nodeId`, `status`) are never touched. Returns what was done; a
/// payload that was changed gets `"truncated": true`.
pub fn shrink_payload(payload: &mut Map<String, Value>, budget: usize) -> ShrinkReport {
    let mut capped = false;
    for v in payload.values_mut() {
        capped |= cap_depth(v, 1);
    }
    let original_bytes = json_len_map(payload);
    if original_bytes <= budget {
        if capped {
            payload.insert("truncated".into(), Value::Bool(true));
        }
        return ShrinkReport {
            original_bytes,
            final_bytes: json_len_map(payload),
            shrunk: capped,
        };
    }
    let mut sizes: Vec<(String, usize)> = payload
        .iter()
        .map(|(k, v)| (k.clone(), json_len(v)))
        .collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1));
    let mut total = original_bytes;
    for (key, len) in sizes {
        if total <= budget {
            break;
        }
        let rest = total - len;
        let room = budget.saturating_sub(rest + 64).max(256);
        if let Some(v) = payload.get_mut(&key) {
            let r = shrink_value(v, room);
            total = rest + r.final_bytes;
        }
    }
    payload.insert("truncated".into(), Value::Bool(true));
    ShrinkReport {
        original_bytes,
        final_bytes: json_len_map(payload),
        shrunk: true,
    }
}

fn cap_depth(v: &mut Value, depth: usize) -> bool {
    match v {
        Value::Array(_) | Value::Object(_) if depth >= SHRINK_DEPTH => {
            *v = Value::String("[graphmind: depth limit]".into());
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, x| cap_depth(x, depth + 1) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, x| cap_depth(x, depth + 1) | acc),
        _ => false,
    }
}

fn cut(v: &mut Value, str_limit: usize, item_limit: usize, depth: usize) {
    if depth > SHRINK_DEPTH {
        return;
    }
    match v {
        Value::String(s) if s.len() > str_limit => {
            let total = s.chars().count();
            let mut end = str_limit;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            let kept = s.chars().count();
            s.push_str(&format!("…[truncated {} chars]", total - kept));
        }
        Value::Array(items) => {
            if items.len() > item_limit {
                let dropped = items.len() - item_limit;
                items.truncate(item_limit);
                items.push(Value::String(format!("…[{dropped} more items]")));
            }
            for x in items {
                cut(x, str_limit, item_limit, depth + 1);
            }
        }
        Value::Object(map) => {
            for x in map.values_mut() {
                cut(x, str_limit, item_limit, depth + 1);
            }
        }
        _ => {}
    }
}

fn json_len(v: &Value) -> usize {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, v);
    counter.0
}

fn json_len_map(m: &Map<String, Value>) -> usize {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, m);
    counter.0
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_values_are_untouched() {
        let mut v = json!({"a": "b", "n": [1, 2, 3]});
        let before = v.clone();
        let r = shrink_value(&mut v, PAYLOAD_BUDGET);
        assert!(!r.shrunk);
        assert_eq!(v, before);
    }

    #[test]
    fn a_huge_string_field_is_cut_and_ids_survive() {
        let mut p = json!({"nodeId": "tool:x", "status": "ok", "output": "x".repeat(3_000_000)});
        let Value::Object(map) = &mut p else {
            unreachable!()
        };
        let r = shrink_payload(map, PAYLOAD_BUDGET);
        assert!(r.shrunk);
        assert!(r.final_bytes <= PAYLOAD_BUDGET, "{r:?}");
        assert_eq!(map["nodeId"], "tool:x");
        assert_eq!(map["truncated"], true);
        assert!(map["output"].as_str().is_some_and(|s| s.contains("truncated")));
    }

    #[test]
    fn huge_arrays_and_deep_values_fit() {
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let mut v = json!({"deep": deep, "many": vec!["abcdefgh"; 200_000]});
        let r = shrink_value(&mut v, 64 * 1024);
        assert!(r.final_bytes <= 64 * 1024, "{r:?}");
        assert!(serde_json::to_string(&v).is_ok_and(|s| s.contains("depth limit")));
    }
}
