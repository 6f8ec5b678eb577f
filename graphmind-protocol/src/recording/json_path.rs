//! The first difference between two JSON values, named by its path (`$.messages[0].content`).

use serde_json::Value;

/// Where two values first differ, and what each holds there.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstDiff {
    /// `$` for the whole value, then `.key` and `[index]` steps.
    pub path: String,
    /// The value at `path` on the left (`None`: absent).
    pub left: Option<Value>,
    /// The value at `path` on the right (`None`: absent).
    pub right: Option<Value>,
}

/// The first (depth-first, in key order of `left`, then keys only `right` has) place where
/// `left` and `right` differ; `None` when they are equal.
pub fn first_diff(left: &Value, right: &Value) -> Option<FirstDiff> {
    let mut path = String::from("$");
    walk(left, right, &mut path)
}

fn push_key(path: &mut String, key: &str) {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

fn walk(left: &Value, right: &Value, path: &mut String) -> Option<FirstDiff> {
    match (left, right) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let len = path.len();
                push_key(path, k);
                let found = match b.get(k) {
                    Some(vb) => walk(va, vb, path),
                    None => Some(FirstDiff {
                        path: path.clone(),
                        left: Some(va.clone()),
                        right: None,
                    }),
                };
                if found.is_some() {
                    return found;
                }
                path.truncate(len);
            }
            b.iter().find(|(k, _)| !a.contains_key(*k)).map(|(k, vb)| {
                push_key(path, k);
                FirstDiff {
                    path: path.clone(),
                    left: None,
                    right: Some(vb.clone()),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(x, y, path),
                    (x, y) => Some(FirstDiff {
                        path: path.clone(),
                        left: x.cloned(),
                        right: y.cloned(),
                    }),
                };
                if found.is_some() {
                    return found;
                }
                path.truncate(len);
            }
            None
        }
        (a, b) if a == b => None,
        (a, b) => Some(FirstDiff {
            path: path.clone(),
            left: Some(a.clone()),
            right: Some(b.clone()),
        }),
    }
}

/// How many bytes of a value's JSON a one-line message shows (see [`shown_json`]).
pub const SHOWN_JSON_BYTES: usize = 300;

/// A JSON value as a one-line message shows it: its JSON text cut to at most `max` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownJson {
    /// The JSON text, cut at a character boundary, with `…` appended when cut.
    pub text: String,
    /// The length of the whole JSON text, in bytes.
    pub len: usize,
    /// Whether `text` was cut.
    pub cut: bool,
}

/// `v`'s JSON text cut to at most `max` bytes (a 20 MB input in a divergence message would
/// otherwise be a 20 MB line), and the whole text's length. The value is serialized once,
/// keeping only the first `max` bytes.
#[must_use]
pub fn shown_json(v: &Value, max: usize) -> ShownJson {
    /// Keeps the first `max` bytes written and counts them all.
    struct Head {
        kept: Vec<u8>,
        max: usize,
        len: usize,
    }
    impl std::io::Write for Head {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.max.saturating_sub(self.kept.len());
            self.kept.extend_from_slice(&buf[..room.min(buf.len())]);
            self.len += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut head = Head {
        kept: Vec::with_capacity(max.min(4096)),
        max,
        len: 0,
    };
    // Writing a `Value` into memory cannot fail.
    let _ = serde_json::to_writer(&mut head, v);
    let cut = head.len > head.kept.len();
    let text = match String::from_utf8(head.kept) {
        Ok(t) => t,
        // Cut inside a character: keep the whole characters before it.
        Err(e) => {
            let upto = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(upto);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    let text = if cut { format!("{text}…") } else { text };
    ShownJson {
        text,
        len: head.len,
        cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shown_value_is_cut_at_a_character_boundary_with_its_whole_length() {
        let small = shown_json(&json!({"a": [1, 2]}), SHOWN_JSON_BYTES);
        assert_eq!(
            small,
            ShownJson {
                text: r#"{"a":[1,2]}"#.into(),
                len: 11,
                cut: false
            }
        );
        let big = json!("é".repeat(10_000_000));
        let shown = shown_json(&big, SHOWN_JSON_BYTES);
        assert!(shown.cut);
        assert_eq!(shown.len, 20_000_002);
        // `"` then 149 two-byte characters: the 300th byte would split one.
        assert_eq!(shown.text, format!("\"{}…", "é".repeat(149)));
        assert_eq!(shown_json(&json!(null), 0).text, "…");
    }

    #[test]
    fn names_the_first_differing_field() {
        let a = json!({"request": {"messages": [{"role": "system", "content": "be brief"}]}});
        let b = json!({"request": {"messages": [{"role": "system", "content": "be short"}]}});
        let d = first_diff(&a, &b).expect("differs");
        assert_eq!(d.path, "$.request.messages[0].content");
        assert_eq!(d.left, Some(json!("be brief")));
        assert_eq!(d.right, Some(json!("be short")));
        assert_eq!(first_diff(&a, &a), None);
        let d = first_diff(&json!([1]), &json!([1, 2])).expect("longer");
        assert_eq!(
            (d.path.as_str(), d.left, d.right),
            ("$[1]", None, Some(json!(2)))
        );
        let d = first_diff(&json!({"a b": 1}), &json!({})).expect("missing");
        assert_eq!(d.path, "$[\"a b\"]");
    }
}
