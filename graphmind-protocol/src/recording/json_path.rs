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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
