//! Shrinking payloads to the 512 KB budget, field by field, with the GraphMind family's
//! truncation markers (`__graphmindTruncated`, `bytes`, `preview`, `fields`, and the string
//! suffix `…[graphmind: truncated]`), so every GraphMind viewer recognises a shrunk value.
//!
//! Tiers, as in the other GraphMind clients: (1) a payload within budget is untouched;
//! (2) the biggest top-level fields are shrunk until at most half the budget is left in
//! unshrunk fields; (3) if that is still too big, a skeleton keeps only short scalar fields
//! (ids, status, numbers). Lengths are counted in chars (the TypeScript client counts UTF-16
//! units; the difference only matters for text outside the BMP).
//!
//! Every walk is bounded: values nested deeper than [`SHRINK_DEPTH`] are replaced before any
//! other step looks at them.

use serde_json::{Map, Value};

/// Bytes of UTF-8 JSON a payload may take on the wire.
pub const PAYLOAD_BUDGET: usize = 512 * 1024;

/// Nesting depth a payload may have before deeper values are replaced by a marker.
pub const SHRINK_DEPTH: usize = 32;

/// Chars of a string kept by a shrink, and of a `preview`.
pub const PREVIEW_CHARS: usize = 2000;

/// Appended to a cut string.
pub const TRUNCATION_SUFFIX: &str = "…[graphmind: truncated]";

/// The marker key of a shrunk object.
pub const TRUNCATED_KEY: &str = "__graphmindTruncated";

const NESTED_DEPTH: usize = 6;
const MAX_KEYS: usize = 256;
const SKELETON_CHARS: usize = 256;

/// What a shrink did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShrinkReport {
    /// Serialized size before.
    pub original_bytes: usize,
    /// Serialized size after.
    pub final_bytes: usize,
    /// Whether anything was changed.
    pub shrunk: bool,
}

/// Shrinks a payload object in place until its compact JSON fits `budget` bytes.
///
/// Small identifying fields (`nodeId`, `status`, …) are never touched by tier 2 because the
/// biggest fields go first; tier 3 keeps them too. A changed payload carries
/// `"__graphmindTruncated": true`, its original size in `bytes`, a `preview` and the list of
/// shrunk `fields`.
pub fn shrink_payload(payload: &mut Map<String, Value>, budget: usize) -> ShrinkReport {
    let mut capped = false;
    for v in payload.values_mut() {
        capped |= cap_depth(v, 1);
    }
    let original_bytes = json_len(payload);
    if original_bytes <= budget && !capped {
        return ShrinkReport {
            original_bytes,
            final_bytes: original_bytes,
            shrunk: false,
        };
    }
    let preview = preview_of(payload);
    let mut fields = Vec::new();
    if original_bytes > budget {
        let mut sizes: Vec<(String, usize)> = payload
            .iter()
            .map(|(k, v)| (k.clone(), json_len(v)))
            .collect();
        sizes.sort_by_key(|s| std::cmp::Reverse(s.1));
        let mut remaining = original_bytes;
        for (key, size) in sizes {
            if remaining <= budget / 2 {
                break;
            }
            if let Some(v) = payload.get_mut(&key) {
                shrink_field(v);
                fields.push(Value::String(key));
            }
            remaining = remaining.saturating_sub(size);
        }
    }
    payload.insert(TRUNCATED_KEY.into(), Value::Bool(true));
    payload.insert("bytes".into(), Value::from(original_bytes));
    payload.insert("preview".into(), Value::String(preview));
    payload.insert("fields".into(), Value::Array(fields));
    let mut final_bytes = json_len(payload);
    if final_bytes > budget {
        skeleton(payload, original_bytes);
        final_bytes = json_len(payload);
    }
    ShrinkReport {
        original_bytes,
        final_bytes,
        shrunk: true,
    }
}

/// Shrinks one value the way a top-level field is shrunk: long strings cut to
/// [`PREVIEW_CHARS`], arrays emptied, objects walked to a small depth and marked.
pub fn shrink_value(value: &mut Value) {
    cap_depth(value, 0);
    shrink_field(value);
}

fn shrink_field(v: &mut Value) {
    let bytes = json_len(v);
    let preview = match v {
        Value::Object(_) => Some(preview_of(v)),
        _ => None,
    };
    shrink_nested(v, 0);
    if let (Value::Object(map), Some(preview)) = (v, preview) {
        map.insert(TRUNCATED_KEY.into(), Value::Bool(true));
        map.insert("bytes".into(), Value::from(bytes));
        map.insert("preview".into(), Value::String(preview));
    }
}

fn shrink_nested(v: &mut Value, depth: usize) {
    match v {
        Value::String(s) => cut_string(s, PREVIEW_CHARS),
        Value::Array(items) => items.clear(),
        Value::Object(map) if depth >= NESTED_DEPTH => {
            *map = marker(0, "[deeply nested]");
        }
        Value::Object(map) => {
            let dropped = map.len().saturating_sub(MAX_KEYS);
            if dropped > 0 {
                let keep: Vec<String> = map.keys().take(MAX_KEYS).cloned().collect();
                map.retain(|k, _| keep.contains(k));
            }
            for x in map.values_mut() {
                shrink_nested(x, depth + 1);
            }
            if dropped > 0 {
                map.insert(TRUNCATED_KEY.into(), Value::Bool(true));
                map.insert("keysDropped".into(), Value::from(dropped));
            }
        }
        _ => {}
    }
}

/// Tier 3: only short scalars survive (ids, status, durations), plus the markers.
fn skeleton(payload: &mut Map<String, Value>, original_bytes: usize) {
    let mut fields = Vec::new();
    payload.retain(|k, v| {
        let keep = match v {
            Value::String(s) => s.chars().count() <= SKELETON_CHARS,
            Value::Number(_) | Value::Bool(_) | Value::Null => true,
            _ => false,
        };
        if !keep {
            fields.push(Value::String(k.clone()));
        }
        keep || k == TRUNCATED_KEY
    });
    payload.insert(TRUNCATED_KEY.into(), Value::Bool(true));
    payload.insert("bytes".into(), Value::from(original_bytes));
    payload.insert("preview".into(), Value::String(String::new()));
    payload.insert("fields".into(), Value::Array(fields));
}

fn marker(bytes: usize, preview: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(TRUNCATED_KEY.into(), Value::Bool(true));
    m.insert("bytes".into(), Value::from(bytes));
    m.insert("preview".into(), Value::String(preview.into()));
    m
}

fn cut_string(s: &mut String, chars: usize) {
    if let Some((idx, _)) = s.char_indices().nth(chars) {
        s.truncate(idx);
        s.push_str(TRUNCATION_SUFFIX);
    }
}

fn preview_of<T: serde::Serialize + ?Sized>(v: &T) -> String {
    let mut w = Limited {
        buf: Vec::new(),
        limit: PREVIEW_CHARS * 4,
    };
    let _ = serde_json::to_writer(&mut w, v);
    let mut s = String::from_utf8_lossy(&w.buf).into_owned();
    if let Some((idx, _)) = s.char_indices().nth(PREVIEW_CHARS) {
        s.truncate(idx);
    }
    s
}

/// Replaces values nested deeper than [`SHRINK_DEPTH`] with a marker. Returns whether any was.
fn cap_depth(v: &mut Value, depth: usize) -> bool {
    match v {
        Value::Array(_) | Value::Object(_) if depth >= SHRINK_DEPTH => {
            *v = Value::Object(marker(0, "[deeply nested]"));
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

/// Length of the compact JSON of `v`, without building it.
pub fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, v);
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

/// A writer that stops accepting bytes after `limit` (the serializer then gives up early).
struct Limited {
    buf: Vec<u8>,
    limit: usize,
}

impl std::io::Write for Limited {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() >= self.limit {
            return Err(std::io::Error::other("preview full"));
        }
        let n = buf.len().min(self.limit - self.buf.len());
        self.buf.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn small_payloads_are_untouched() {
        let mut p = obj(json!({"nodeId": "tool:x", "output": {"a": [1, 2, 3]}}));
        let before = p.clone();
        let r = shrink_payload(&mut p, PAYLOAD_BUDGET);
        assert!(!r.shrunk);
        assert_eq!(p, before);
    }

    #[test]
    fn a_huge_string_field_is_cut_with_family_markers_and_ids_survive() {
        let mut p = obj(
            json!({"nodeId": "tool:x", "status": "ok", "durationMs": 1.5, "output": "é".repeat(600_000)}),
        );
        let r = shrink_payload(&mut p, PAYLOAD_BUDGET);
        assert!(r.shrunk);
        assert!(r.final_bytes <= PAYLOAD_BUDGET, "{r:?}");
        assert_eq!(p["nodeId"], "tool:x");
        assert_eq!(p["status"], "ok");
        assert_eq!(p[TRUNCATED_KEY], true);
        assert_eq!(p["fields"], json!(["output"]));
        assert_eq!(p["bytes"], json!(r.original_bytes));
        let out = p["output"].as_str().unwrap_or_default();
        assert!(out.ends_with(TRUNCATION_SUFFIX));
        assert_eq!(
            out.chars().count(),
            PREVIEW_CHARS + TRUNCATION_SUFFIX.chars().count()
        );
    }

    #[test]
    fn an_object_field_is_walked_and_marked() {
        let mut p = obj(
            json!({"nodeId": "n", "output": {"big": "a".repeat(600_000), "n": 1, "arr": [1, 2]}}),
        );
        let r = shrink_payload(&mut p, PAYLOAD_BUDGET);
        assert!(r.final_bytes <= PAYLOAD_BUDGET);
        assert_eq!(p["output"]["n"], 1);
        assert_eq!(p["output"]["arr"], json!([]));
        assert_eq!(p["output"][TRUNCATED_KEY], true);
        assert!(
            p["output"]["preview"]
                .as_str()
                .is_some_and(|s| s.starts_with("{\"big\":\"aaa"))
        );
    }

    #[test]
    fn many_mid_sized_fields_fall_back_to_a_skeleton() {
        let mut m = Map::new();
        m.insert("nodeId".into(), json!("tool:x"));
        for i in 0..2000 {
            m.insert(format!("f{i}"), json!("x".repeat(1500)));
        }
        let r = shrink_payload(&mut m, 64 * 1024);
        assert!(r.final_bytes <= 64 * 1024, "{r:?}");
        assert_eq!(m["nodeId"], "tool:x");
        assert_eq!(m[TRUNCATED_KEY], true);
    }

    #[test]
    fn deep_values_are_cut_off_before_anything_recurses() {
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        let mut p = obj(json!({"nodeId": "n", "input": deep}));
        let r = shrink_payload(&mut p, PAYLOAD_BUDGET);
        assert!(r.shrunk);
        assert!(serde_json::to_string(&p).is_ok_and(|s| s.contains("[deeply nested]")));
    }
}
