//! An edited input at a held gate (GraphMind 0.6's `edit-input`: at `before`, or with a
//! retry at `after` / `error`): what the gate accepts ([`EditGate`]), the checks an
//! `exec.resume.input` passes before the call may run with it (shape, truncated,
//! placeholder, schema), and the merge of the edit over the call's input. Refusal messages name arguments and types, never the values sent.

use graphmind_protocol::{RefusedCode, TRUNCATED_KEY, TRUNCATION_SUFFIX};
use serde_json::{Map, Value};

/// Longest refusal message sent (characters).
pub(crate) const MESSAGE_CHARS: usize = 200;

/// Checks one edit: the merged input and the keys sent; `Err(message)` is a `schema` refusal.
pub(crate) type EditCheck =
    Box<dyn Fn(&Map<String, Value>, &Map<String, Value>) -> Result<(), String> + Send + Sync>;

/// How a held gate takes an edited input.
pub(crate) struct EditGate {
    /// The input the call would run with now (the recorded input, or the last edit).
    pub(crate) base: Map<String, Value>,
    /// The keys an edit may name; `None` = any key.
    pub(crate) keys: Option<Vec<&'static str>>,
    /// The type check of an edit.
    pub(crate) check: EditCheck,
}

/// An accepted edit: the whole input that runs and the keys that were sent.
pub(crate) struct Accepted {
    pub(crate) after: Value,
    pub(crate) changed: Map<String, Value>,
}

/// `message` cut to [`MESSAGE_CHARS`] characters.
pub(crate) fn short(message: String) -> String {
    if message.chars().count() <= MESSAGE_CHARS {
        return message;
    }
    let mut out: String = message.chars().take(MESSAGE_CHARS - 1).collect();
    out.push('…');
    out
}

/// Runs every check on `input` against `gate`, in the documented order (shape, truncated,
/// placeholder, schema), and merges it over the gate's base when it passes.
pub(crate) fn check(gate: &EditGate, input: &Value) -> Result<Accepted, (RefusedCode, String)> {
    let Value::Object(changed) = input else {
        return Err((
            RefusedCode::Shape,
            format!(
                "the edited input must be a JSON object of arguments, not {}",
                kind_of(input)
            ),
        ));
    };
    if let Some(keys) = &gate.keys
        && let Some(bad) = changed.keys().find(|k| !keys.contains(&k.as_str()))
    {
        let known = keys.join(", ");
        return Err((
            RefusedCode::Shape,
            short(format!(
                "no argument named `{}` (the arguments: {known})",
                clip(bad, 40)
            )),
        ));
    }
    for (key, value) in changed {
        if holds_truncated(value, 0) {
            return Err((
                RefusedCode::Truncated,
                short(format!(
                    "`{}` holds a value the recording shrank ({TRUNCATED_KEY}); send the whole value",
                    clip(key, 40)
                )),
            ));
        }
        if holds_placeholder(value, 0) {
            return Err((
                RefusedCode::Placeholder,
                short(format!(
                    "`{}` still holds a placeholder (\"__REDACTED__\" or a truncation marker); replace it with a real value",
                    clip(key, 40)
                )),
            ));
        }
    }
    let mut merged = gate.base.clone();
    for (k, v) in changed {
        merged.insert(k.clone(), v.clone());
    }
    (gate.check)(&merged, changed).map_err(|m| (RefusedCode::Schema, short(m)))?;
    Ok(Accepted {
        after: Value::Object(merged),
        changed: changed.clone(),
    })
}

/// At most `n` characters of `s` (an argument name sent by the hub).
fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `v` is or holds an object the payload budget shrank (depth-capped walk).
fn holds_truncated(v: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match v {
        Value::Array(items) => items.iter().any(|x| holds_truncated(x, depth + 1)),
        Value::Object(map) => {
            map.contains_key(TRUNCATED_KEY) || map.values().any(|x| holds_truncated(x, depth + 1))
        }
        _ => false,
    }
}

/// Whether `v` holds `"__REDACTED__"` or a string cut with the truncation suffix.
fn holds_placeholder(v: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match v {
        Value::String(s) => s == "__REDACTED__" || s.ends_with(TRUNCATION_SUFFIX),
        Value::Array(items) => items.iter().any(|x| holds_placeholder(x, depth + 1)),
        Value::Object(map) => map
            .iter()
            .any(|(k, x)| k == "__REDACTED__" || holds_placeholder(x, depth + 1)),
        _ => false,
    }
}

/// The message of a value that does not deserialize into `T`, without quoting it: the path
/// inside the argument and the type expected.
pub(crate) fn schema_message<T: serde::de::DeserializeOwned>(
    key: &str,
    v: &Value,
) -> Option<String> {
    let err = serde_path_to_error::deserialize::<_, T>(v).err()?;
    let path = err.path().to_string();
    let at = if path == "." {
        String::new()
    } else {
        format!(" at {path}")
    };
    Some(format!(
        "`{}`{at} does not fit `{}`",
        clip(key, 40),
        crate::errors::short_type_name::<T>()
    ))
}

/// An edit check for a whole input of type `T` (an adapter's model request): the merged
/// input must deserialize into `T`.
pub(crate) fn whole<T: serde::de::DeserializeOwned>() -> EditCheck {
    Box::new(
        |merged: &Map<String, Value>, _changed: &Map<String, Value>| {
            let v = Value::Object(merged.clone());
            match schema_message::<T>("input", &v) {
                Some(m) => Err(m),
                None => Ok(()),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate() -> EditGate {
        let mut base = Map::new();
        base.insert("q".into(), json!("a"));
        base.insert("limit".into(), json!(5));
        EditGate {
            base,
            keys: Some(vec!["q", "limit"]),
            check: Box::new(|_m, changed| match changed.get("limit") {
                Some(v) if !v.is_u64() => Err("`limit` does not fit `u32`".into()),
                _ => Ok(()),
            }),
        }
    }

    fn code(input: Value) -> RefusedCode {
        check(&gate(), &input).err().expect("refused").0
    }

    #[test]
    fn each_check_refuses_with_its_code() {
        assert_eq!(code(json!([1])), RefusedCode::Shape);
        assert_eq!(code(json!({"nope": 1})), RefusedCode::Shape);
        assert_eq!(
            code(json!({"q": {"__graphmindTruncated": true}})),
            RefusedCode::Truncated
        );
        assert_eq!(code(json!({"q": "__REDACTED__"})), RefusedCode::Placeholder);
        assert_eq!(
            code(json!({"q": format!("abc{TRUNCATION_SUFFIX}")})),
            RefusedCode::Placeholder
        );
        assert_eq!(code(json!({"limit": "many"})), RefusedCode::Schema);
    }

    #[test]
    fn an_accepted_edit_is_merged_over_the_base() {
        let ok = check(&gate(), &json!({"q": "b"})).expect("accepted");
        assert_eq!(ok.after, json!({"q": "b", "limit": 5}));
        assert_eq!(Value::Object(ok.changed), json!({"q": "b"}));
    }

    #[test]
    fn messages_are_short_and_never_quote_values() {
        let secret = "s3cr3t-value";
        let long_key = "k".repeat(500);
        let (_, m) = check(&gate(), &json!({ long_key: secret }))
            .err()
            .expect("refused");
        assert!(m.chars().count() <= MESSAGE_CHARS, "{m}");
        assert!(!m.contains(secret));
        let m = schema_message::<u32>("limit", &json!(secret)).expect("refused");
        assert!(!m.contains(secret), "{m}");
        assert!(m.contains("`limit`") && m.contains("u32"), "{m}");
    }
}
