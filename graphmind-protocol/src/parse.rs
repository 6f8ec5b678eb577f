//! Parsing a frame into an outcome. Never panics; nesting is capped before serde sees it.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::envelope::{Envelope, Message};
use crate::{Extra, PROTOCOL_VERSION};

/// Deepest JSON nesting a frame may have (objects and arrays). serde_json's own limit is
/// 128; this one is checked first on the raw bytes so the answer is a clean `Invalid`.
pub const MAX_DEPTH: usize = 100;

/// The outcome of parsing one frame, in the protocol's order of checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A known type with a valid payload.
    Ok(Envelope),
    /// Envelope-shaped with `gm == 1` but an unknown `type`: tolerate, keep opaque.
    /// The envelope's message is [`Message::Unknown`].
    UnknownType(Envelope),
    /// `gm` is not 1. Carries the `gm` value seen.
    VersionMismatch(Value),
    /// Not an envelope, or a known type with a bad payload.
    Invalid(String),
}

/// Parses one text frame.
#[must_use]
pub fn parse(text: &str) -> Parsed {
    if let Err(e) = check_depth(text.as_bytes()) {
        return Parsed::Invalid(e);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => parse_shallow(v),
        Err(e) => Parsed::Invalid(format!("not JSON: {e}")),
    }
}

/// Parses an already-decoded JSON value. A value nested deeper than [`MAX_DEPTH`] (possible
/// when it was built in code rather than parsed) is `Invalid`; it is measured and dropped
/// without recursion, so no depth can overflow the stack.
#[must_use]
pub fn parse_value(v: Value) -> Parsed {
    if deeper_than(&v, MAX_DEPTH) {
        dismantle(v);
        return Parsed::Invalid(format!("nesting deeper than {MAX_DEPTH}"));
    }
    parse_shallow(v)
}

/// [`parse_value`] for a value whose depth is known to be within [`MAX_DEPTH`].
fn parse_shallow(v: Value) -> Parsed {
    let Value::Object(mut obj) = v else {
        return Parsed::Invalid("frame is not a JSON object".into());
    };
    let gm = match obj.shift_remove("gm") {
        Some(g) => g,
        None => return Parsed::Invalid("missing gm".into()),
    };
    let (Some(seq), Some(ts), Some(run_id), Some(kind)) = (
        obj.shift_remove("seq"),
        obj.shift_remove("ts"),
        obj.shift_remove("runId"),
        obj.shift_remove("type"),
    ) else {
        return Parsed::Invalid("missing one of seq, ts, runId, type, payload".into());
    };
    // An unknown type may come without a payload (the reference hub stores it so); a known
    // type without one is a bad payload, below.
    let payload = obj.shift_remove("payload");
    if gm.as_u64() != Some(PROTOCOL_VERSION) {
        return Parsed::VersionMismatch(gm);
    }
    let Some(seq) = seq.as_u64().filter(|s| *s <= MAX_SAFE_INTEGER) else {
        return Parsed::Invalid("seq must be an integer in 0..=2^53-1".into());
    };
    let Some(ts) = ts.as_u64() else {
        return Parsed::Invalid("ts must be a non-negative integer".into());
    };
    let Value::String(run_id) = run_id else {
        return Parsed::Invalid("runId must be a string".into());
    };
    let Value::String(kind) = kind else {
        return Parsed::Invalid("type must be a string".into());
    };
    let extra: Extra = obj;
    let Some(payload) = payload else {
        if is_known(&kind) {
            return Parsed::Invalid(format!("bad {kind} payload: missing payload"));
        }
        return Parsed::UnknownType(Envelope {
            gm: PROTOCOL_VERSION,
            seq,
            ts,
            run_id,
            message: Message::Unknown {
                kind,
                payload: Value::Null,
            },
            extra,
        });
    };
    if !payload.is_object() {
        return Parsed::Invalid("payload must be an object".into());
    }
    let message = match decode(&kind, payload) {
        Decoded::Known(Ok(m)) => m,
        Decoded::Known(Err(e)) => return Parsed::Invalid(format!("bad {kind} payload: {e}")),
        Decoded::Unknown(payload) => {
            return Parsed::UnknownType(Envelope {
                gm: PROTOCOL_VERSION,
                seq,
                ts,
                run_id,
                message: Message::Unknown { kind, payload },
                extra,
            });
        }
    };
    Parsed::Ok(Envelope {
        gm: PROTOCOL_VERSION,
        seq,
        ts,
        run_id,
        message,
        extra,
    })
}

/// 2^53 − 1, the largest integer every JSON peer (JavaScript included) reads exactly.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

#[allow(clippy::large_enum_variant)] // short-lived, never stored
enum Decoded {
    Known(Result<Message, String>),
    Unknown(Value),
}

fn typed<T: DeserializeOwned>(payload: Value, wrap: fn(T) -> Message) -> Decoded {
    Decoded::Known(
        serde_json::from_value::<T>(payload)
            .map(wrap)
            .map_err(|e| e.to_string()),
    )
}

/// Whether `kind` is one of the protocol's types (whose payload is required).
fn is_known(kind: &str) -> bool {
    !matches!(decode(kind, Value::Null), Decoded::Unknown(_))
}

fn decode(kind: &str, payload: Value) -> Decoded {
    match kind {
        "run.started" => typed(payload, Message::RunStarted),
        "run.finished" => typed(payload, Message::RunFinished),
        "graph.hint" => typed(payload, Message::GraphHint),
        "node.started" => typed(payload, Message::NodeStarted),
        "node.token" => typed(payload, Message::NodeToken),
        "node.finished" => typed(payload, Message::NodeFinished),
        "node.error" => typed(payload, Message::NodeError),
        "exec.paused" => typed(payload, Message::ExecPaused),
        "exec.resumed" => typed(payload, Message::ExecResumed),
        "exec.refused" => typed(payload, Message::ExecRefused),
        "exec.resume" => typed(payload, Message::ExecResume),
        "breakpoint.set" => typed(payload, Message::BreakpointSet),
        "breakpoint.clear" => typed(payload, Message::BreakpointClear),
        "mode.set" => typed(payload, Message::ModeSet),
        "hello" => typed(payload, Message::Hello),
        "hello.ack" => typed(payload, Message::HelloAck),
        _ => Decoded::Unknown(payload),
    }
}

/// Whether `v` nests objects and arrays more than `max` deep; an explicit stack, no recursion.
fn deeper_than(v: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::Array(_) | Value::Object(_) if depth >= max => return true,
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Drops `v` without recursion (the derived drop of a `Value` recurses once per level).
fn dismantle(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, c)| c)),
            _ => {}
        }
    }
}

/// Whether `text` nests objects and arrays at most [`MAX_DEPTH`] deep (the check [`parse`]
/// makes first, on the raw bytes, strings skipped): for parsers of frames that skip
/// [`parse`] but must refuse what it refuses.
#[must_use]
pub fn within_depth(text: &str) -> bool {
    check_depth(text.as_bytes()).is_ok()
}

/// Rejects nesting deeper than [`MAX_DEPTH`] by scanning bytes (strings skipped), so no
/// recursive code ever sees a hostile depth.
fn check_depth(bytes: &[u8]) -> Result<(), String> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for &b in bytes {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!("nesting deeper than {MAX_DEPTH}"));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_order_follows_the_protocol() {
        assert!(matches!(parse("nope"), Parsed::Invalid(_)));
        assert!(matches!(parse("[1]"), Parsed::Invalid(_)));
        assert!(matches!(
            parse(r#"{"gm":2,"seq":0,"ts":0,"runId":"*","type":"hello","payload":{}}"#),
            Parsed::VersionMismatch(_)
        ));
        assert!(matches!(
            parse(r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"x.new","payload":{"a":1}}"#),
            Parsed::UnknownType(_)
        ));
        assert!(matches!(
            parse(r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"hello","payload":{}}"#),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn an_unknown_type_without_a_payload_is_kept_and_written_back_without_one() {
        let text = r#"{"gm":1,"seq":3,"ts":5,"runId":"run_a","type":"x.bare","extra":1}"#;
        let Parsed::UnknownType(env) = parse(text) else {
            panic!("an unknown type without a payload is tolerated");
        };
        assert_eq!(env.message.type_name(), "x.bare");
        let back: Value = serde_json::from_str(&env.to_json()).expect("JSON");
        assert_eq!(
            back,
            serde_json::json!({"gm":1,"seq":3,"ts":5,"runId":"run_a","type":"x.bare","extra":1})
        );
        // A known type still needs its payload.
        assert!(matches!(
            parse(r#"{"gm":1,"seq":3,"ts":5,"runId":"run_a","type":"node.started"}"#),
            Parsed::Invalid(why) if why.contains("missing payload")
        ));
        // And a payload that is there must be an object.
        assert!(matches!(
            parse(r#"{"gm":1,"seq":3,"ts":5,"runId":"run_a","type":"x.bare","payload":null}"#),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn deep_nesting_is_invalid_not_a_crash() {
        let deep = format!(
            r#"{{"gm":1,"seq":0,"ts":0,"runId":"r","type":"x","payload":{{"a":{}{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(matches!(parse(&deep), Parsed::Invalid(_)));
    }

    #[test]
    fn text_and_built_values_share_one_depth_limit() {
        // The envelope object is level 1; `levels` counts it.
        let frame = |levels: usize| {
            let inner = levels - 2; // the envelope and the payload object
            format!(
                r#"{{"gm":1,"seq":0,"ts":0,"runId":"r","type":"x.deep","payload":{{"a":{}{}}}}}"#,
                "[".repeat(inner),
                "]".repeat(inner)
            )
        };
        for (levels, ok) in [(MAX_DEPTH, true), (MAX_DEPTH + 1, false)] {
            let text = frame(levels);
            assert_eq!(
                matches!(parse(&text), Parsed::UnknownType(_)),
                ok,
                "text, {levels}"
            );
            let v: Value = serde_json::from_str(&text).expect("json");
            assert_eq!(!deeper_than(&v, MAX_DEPTH), ok, "value, {levels}");
        }
    }

    #[test]
    fn huge_numbers_and_wrong_types_are_invalid() {
        for bad in [
            r#"{"gm":1,"seq":1e400,"ts":0,"runId":"r","type":"run.finished","payload":{"status":"ok"}}"#,
            r#"{"gm":1,"seq":-1,"ts":0,"runId":"r","type":"run.finished","payload":{"status":"ok"}}"#,
            r#"{"gm":1,"seq":9007199254740992,"ts":0,"runId":"r","type":"run.finished","payload":{"status":"ok"}}"#,
            r#"{"gm":1,"seq":0,"ts":0,"runId":5,"type":"run.finished","payload":{"status":"ok"}}"#,
            r#"{"gm":1,"seq":0,"ts":0,"runId":"r","type":"run.finished","payload":{"status":"meh"}}"#,
            r#"{"gm":1,"seq":0,"ts":0,"runId":"r","type":"run.finished","payload":[]}"#,
        ] {
            assert!(matches!(parse(bad), Parsed::Invalid(_)), "{bad}");
        }
    }

    #[test]
    fn present_null_survives_a_round_trip() {
        let f = r#"{"gm":1,"seq":0,"ts":0,"runId":"r","type":"node.finished","payload":{"nodeId":"tool:x","durationMs":1.5,"status":"ok","output":null}}"#;
        let Parsed::Ok(env) = parse(f) else {
            panic!("not ok")
        };
        assert_eq!(env.to_json(), f);
    }
}
