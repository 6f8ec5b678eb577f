//! The quick parse of the frames most of an app's traffic is made of (`node.started`,
//! `node.finished`, `node.token`): the envelope's fields and the payload's fields the hub uses
//! are read borrowed from the frame in one pass, and nothing else is built (no JSON tree of the
//! whole frame, no map of its unknown fields).
//!
//! It accepts exactly the frames [`graphmind_protocol::parse`] accepts as these types, or
//! gives up: any frame it is not sure of (a parse error, a duplicate field, a lone surrogate
//! escape, a number that might not fit an `f64`, a `gm` other than 1, a frame over the
//! payload budget) returns `None`, and the caller parses it the full way, which then decides.
//!
//! The envelope it returns is the hub's view: the payload's unknown fields (and a token
//! frame's deltas) are not in it, and of the envelope's unknown fields only `dropped` and
//! `lostRuns`. Nor are a node's `input` and `output`: they are not parsed, [`Spans`] says
//! where they are in the frame (the hub parses them only when a pause shows them). The hub
//! stores the frame's own text, so nothing of it is lost.

use std::borrow::Cow;

use std::ops::Range;

use graphmind_protocol::{
    DeltaKind, Envelope, Extra, MAX_DEPTH, Message, NodeFinished, NodeKind, NodeStarted, NodeToken,
    PAYLOAD_BUDGET, Status, TokenUsage,
};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// 2^53 − 1: the largest seq the protocol takes.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// The envelope's fields, with the payload read in the same pass.
#[derive(Deserialize)]
struct Head<'a> {
    gm: u64,
    seq: u64,
    ts: u64,
    #[serde(rename = "runId", borrow)]
    run_id: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    payload: PayloadObject<'a>,
    #[serde(default, borrow)]
    dropped: Option<&'a RawValue>,
    #[serde(default, rename = "lostRuns", borrow)]
    lost_runs: Option<&'a RawValue>,
}

/// A field that is `Some` whenever present, `null` included (as the payload types read it).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// The payload's fields the hub reads of any of the three types, borrowed, in one pass
/// (whatever comes first in the frame, `type` or `payload`): each field has the type the
/// payload types give it, optional here; which are required is checked once the type is
/// known ([`NodeHead::message`]). A field of the wrong type fails the quick parse even where
/// the frame's type does not know it (the full parse then decides): slower, never wrong.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeHead<'a> {
    #[serde(borrow)]
    node_id: Cow<'a, str>,
    #[serde(default)]
    kind: Option<NodeKind>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    instance_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    input: Option<&'a RawValue>,
    #[serde(default)]
    duration_ms: Option<f64>,
    #[serde(default)]
    status: Option<Status>,
    #[serde(default, borrow, deserialize_with = "present")]
    output: Option<&'a RawValue>,
    #[serde(default)]
    usage: Option<TokenUsage>,
    #[serde(default)]
    held_ms: Option<f64>,
    /// A token frame's deltas, read to check their types, as the full parse does.
    #[serde(default, borrow)]
    deltas: Option<Vec<DeltaHead<'a>>>,
}

/// The payload as a JSON object only: a struct read by `serde_json` would take an array too.
struct PayloadObject<'a>(NodeHead<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for PayloadObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Object<'a> {
            type Value = PayloadObject<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a payload object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                NodeHead::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(PayloadObject)
            }
        }
        d.deserialize_map(Object(std::marker::PhantomData))
    }
}

impl NodeHead<'_> {
    /// The message of a frame of type `kind` with this payload and the spans of its `input` /
    /// `output`, or `None` when a field its type requires is missing (or `null`) or the type
    /// is not one of the three.
    fn message(self, kind: &str, text: &str) -> Option<(Message, Spans)> {
        let mut spans = Spans::default();
        let message = match kind {
            "node.started" => {
                spans.input = span_of(text, self.input)?;
                Message::NodeStarted(NodeStarted {
                    node_id: self.node_id.into_owned(),
                    kind: self.kind?,
                    name: self.name?.into_owned(),
                    instance_id: self.instance_id?.into_owned(),
                    parent_id: self.parent_id.map(Cow::into_owned),
                    input: None,
                    extra: Extra::new(),
                })
            }
            "node.finished" => {
                spans.output = span_of(text, self.output)?;
                Message::NodeFinished(NodeFinished {
                    node_id: self.node_id.into_owned(),
                    instance_id: self.instance_id.map(Cow::into_owned),
                    duration_ms: self.duration_ms?,
                    status: self.status?,
                    output: None,
                    usage: self.usage,
                    held_ms: self.held_ms,
                    extra: Extra::new(),
                })
            }
            "node.token" => {
                self.deltas?;
                Message::NodeToken(NodeToken {
                    node_id: self.node_id.into_owned(),
                    deltas: Vec::new(),
                    extra: Extra::new(),
                })
            }
            _ => return None,
        };
        Some((message, spans))
    }
}

/// [`graphmind_protocol::TokenDelta`]'s fields.
#[derive(Deserialize)]
struct DeltaHead<'a> {
    #[allow(dead_code)] // read to check its type, as the full parse does
    t: DeltaKind,
    #[allow(dead_code)]
    #[serde(borrow)]
    v: Cow<'a, str>,
}

/// Where a quickly read node frame holds its payload's `input` or `output` (byte ranges of
/// the frame's text; `None`: the field is absent). The envelope's `input` / `output` are
/// `None` then: these ranges stand in for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spans {
    /// `node.started`'s `input`.
    pub input: Option<Range<usize>>,
    /// `node.finished`'s `output`.
    pub output: Option<Range<usize>>,
}

/// The hub's view of a `node.started`, `node.finished` or `node.token` frame, with the spans
/// of its `input` / `output`, or `None` when the frame must be parsed the full way.
pub fn quick_parse(text: &str) -> Option<(Box<Envelope>, Spans)> {
    if text.len() > PAYLOAD_BUDGET || !plain_text(text.as_bytes()) {
        return None;
    }
    let head: Head<'_> = serde_json::from_str(text).ok()?;
    if head.gm != 1 || head.seq > MAX_SAFE_INTEGER {
        return None;
    }
    let (message, spans) = head.payload.0.message(&head.kind, text)?;
    let mut extra = Extra::new();
    for (key, v) in [("dropped", head.dropped), ("lostRuns", head.lost_runs)] {
        if let Some(v) = v {
            extra.insert(key.to_owned(), serde_json::from_str(v.get()).ok()?);
        }
    }
    let env = Box::new(Envelope {
        gm: 1,
        seq: head.seq,
        ts: head.ts,
        run_id: head.run_id.into_owned(),
        message,
        extra,
    });
    Some((env, spans))
}

/// Where a present field's value is in `text`; `None` (give up) if it is not a slice of it
/// (a borrowed raw value always is).
#[allow(clippy::option_option)]
fn span_of(text: &str, raw: Option<&RawValue>) -> Option<Option<Range<usize>>> {
    let Some(r) = raw else {
        return Some(None);
    };
    let start = (r.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let range = start..start.checked_add(r.get().len())?;
    (text.get(range.clone()) == Some(r.get())).then_some(Some(range))
}

/// The value of a span [`quick_parse`] gave, read from the frame's text.
pub fn value_at(text: &str, span: &Range<usize>) -> Option<Value> {
    serde_json::from_str(text.get(span.clone())?).ok()
}

/// Whether the frame holds nothing the skipping parts of `serde_json` would let through but a
/// full parse refuses, in one byte scan: no nesting deeper than [`MAX_DEPTH`] (the check
/// [`graphmind_protocol::parse`] makes first, strings skipped alike), no `\uD…` escape (a
/// lone surrogate is refused in a string, not in a skipped one; pairs are sent the full way
/// too, which is correct, only slower) and no number that might overflow an `f64` (a run of
/// 200 or more digits, or an exponent of three digits or more).
fn plain_text(b: &[u8]) -> bool {
    let mut run = 0usize;
    let mut depth = 0usize;
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            match c {
                b'\\' => {
                    if b.get(i + 1) == Some(&b'u') && matches!(b.get(i + 2), Some(b'd' | b'D')) {
                        return false;
                    }
                    // Skip the escaped character (an escaped backslash or quote is not one).
                    i += 2;
                    continue;
                }
                b'"' => in_str = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                run = 0;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
                run = 0;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                run = 0;
            }
            b'0'..=b'9' | b'.' => {
                run += 1;
                if run >= 200 {
                    return false;
                }
            }
            b'e' | b'E' if run > 0 => {
                let mut j = i + 1;
                if matches!(b.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                let digits = b[j.min(b.len())..]
                    .iter()
                    .take_while(|d| d.is_ascii_digit())
                    .count();
                if digits >= 3 {
                    return false;
                }
                run = 0;
            }
            _ => run = 0,
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphmind_protocol::{Parsed, parse};

    /// The full parse's envelope, cut to the hub's view the way [`quick_parse`] builds it,
    /// and the node's `input` / `output` it took out.
    fn full_view(text: &str) -> Option<(Envelope, Option<Value>, Option<Value>)> {
        let Parsed::Ok(mut env) = parse(text) else {
            return None;
        };
        env.extra.retain(|k, _| k == "dropped" || k == "lostRuns");
        let (mut input, mut output) = (None, None);
        match &mut env.message {
            Message::NodeStarted(p) => {
                p.extra.clear();
                input = p.input.take();
            }
            Message::NodeFinished(p) => {
                p.extra.clear();
                output = p.output.take();
            }
            Message::NodeToken(p) => {
                p.extra.clear();
                p.deltas.clear();
            }
            _ => return None,
        }
        Some((env, input, output))
    }

    const STARTED: &str = r#"{"gm":1,"seq":7,"ts":1700000000000,"runId":"run_a","type":"node.started","payload":{"nodeId":"tool:search","kind":"tool","name":"search","instanceId":"call_1","input":{"query":"x","limit":5},"extraKey":[1,2]},"dropped":3}"#;
    const FINISHED: &str = r#"{"gm":1,"seq":8,"ts":1700000000001,"runId":"run_a","type":"node.finished","payload":{"nodeId":"tool:search","instanceId":"call_1","durationMs":1.25,"status":"ok","output":null,"usage":{"inputTokens":3,"outputTokens":4,"cacheReadTokens":1},"heldMs":0}}"#;
    const TOKEN: &str = r#"{"gm":1,"seq":9,"ts":1700000000002,"runId":"run_\"a\"","type":"node.token","payload":{"nodeId":"model:chat","deltas":[{"t":"text","v":"hi"}]},"lostRuns":["run_b"]}"#;

    #[test]
    fn quick_and_full_parse_agree_on_the_hot_types() {
        let no_input = STARTED.replace(r#","input":{"query":"x","limit":5}"#, "");
        let null_output = FINISHED.to_owned();
        for f in [STARTED, FINISHED, TOKEN, &no_input, &null_output] {
            let (quick, spans) = quick_parse(f).expect("taken quickly");
            let (env, input, output) = full_view(f).expect("parsed");
            assert_eq!(*quick, env, "{f}");
            assert_eq!(
                spans.input.map(|s| value_at(f, &s).expect("input")),
                input,
                "{f}"
            );
            assert_eq!(
                spans.output.map(|s| value_at(f, &s).expect("output")),
                output,
                "{f}"
            );
        }
        let (_, spans) = quick_parse(STARTED).expect("taken quickly");
        assert_eq!(
            &STARTED[spans.input.expect("input")],
            r#"{"query":"x","limit":5}"#
        );
        let (_, spans) = quick_parse(FINISHED).expect("taken quickly");
        assert_eq!(&FINISHED[spans.output.expect("output")], "null");
    }

    #[test]
    fn one_scan_refuses_what_the_depth_check_refuses_and_only_that() {
        let nested = |n: usize| {
            STARTED.replace(
                r#""extraKey":[1,2]"#,
                &format!(r#""extraKey":{}1{}"#, "[".repeat(n), "]".repeat(n)),
            )
        };
        // The envelope and the payload are two levels.
        for n in [97, 98, 99, 100, 101] {
            let f = nested(n);
            assert_eq!(
                quick_parse(&f).is_some(),
                graphmind_protocol::within_depth(&f),
                "{n} levels"
            );
        }
        // Brackets, digits and exponents in strings are text, escaped quotes included.
        let in_strings = STARTED.replace(
            r#""extraKey":[1,2]"#,
            &format!(
                r#""extraKey":"\"{}{}1e999""#,
                "[".repeat(150),
                "9".repeat(300)
            ),
        );
        assert!(graphmind_protocol::within_depth(&in_strings));
        assert!(quick_parse(&in_strings).is_some(), "{in_strings}");
    }

    #[test]
    fn frames_the_full_parse_must_decide_are_not_taken_quickly() {
        let cases = [
            // Bad payload field types.
            STARTED.replace(r#""kind":"tool""#, r#""kind":"toaster""#),
            STARTED.replace(r#""name":"search""#, r#""name":5"#),
            FINISHED.replace(r#""durationMs":1.25"#, r#""durationMs":"slow""#),
            FINISHED.replace(r#""heldMs":0"#, r#""heldMs":"0""#),
            TOKEN.replace(r#""t":"text""#, r#""t":"noise""#),
            // Envelope problems.
            STARTED.replace(r#""gm":1"#, r#""gm":2"#),
            STARTED.replace(r#""seq":7"#, r#""seq":9007199254740992"#),
            STARTED.replace(r#""seq":7"#, r#""seq":7.5"#),
            STARTED.replace(r#""ts":1700000000000"#, r#""ts":-1"#),
            STARTED.replace(r#""runId":"run_a""#, r#""runId":1"#),
            STARTED.replace(r#""seq":7"#, r#""seq":7,"seq":8"#),
            FINISHED.replace(r#""payload":{"#, r#""payload":[],"x":{"#),
            // What skipping would let through.
            STARTED.replace(r#""extraKey":[1,2]"#, r#""extraKey":"\ud800""#),
            STARTED.replace(r#""extraKey":[1,2]"#, r#""extraKey":1e999"#),
            STARTED.replace(
                r#""extraKey":[1,2]"#,
                &format!(r#""extraKey":{}"#, "9".repeat(400)),
            ),
            STARTED.replace(
                r#""extraKey":[1,2]"#,
                &format!(r#""extraKey":{}1{}"#, "[".repeat(101), "]".repeat(101)),
            ),
        ];
        for f in &cases {
            assert_eq!(quick_parse(f), None, "{f}");
        }
    }

    #[test]
    fn payload_before_type_is_read_in_the_same_pass() {
        let f = r#"{"payload":{"nodeId":"tool:search","kind":"tool","name":"search","instanceId":"call_1","input":[1]},"gm":1,"seq":7,"ts":1,"runId":"run_a","type":"node.started"}"#;
        let (quick, spans) = quick_parse(f).expect("taken quickly");
        let (env, input, _) = full_view(f).expect("parsed");
        assert_eq!(*quick, env);
        assert_eq!(spans.input.map(|s| value_at(f, &s).expect("input")), input);
    }

    #[test]
    fn fields_of_another_hot_type_with_odd_values_take_the_full_parse() {
        // Unknown fields for a `node.started`, kept by the full parse: the quick one gives up.
        let f = STARTED.replace(
            r#""extraKey":[1,2]"#,
            r#""status":"weird","durationMs":"x""#,
        );
        assert_eq!(quick_parse(&f), None);
        assert!(matches!(parse(&f), Parsed::Ok(_)), "{f}");
        // A field a type requires, missing or null.
        for f in [
            STARTED.replace(r#""instanceId":"call_1","#, ""),
            STARTED.replace(r#""instanceId":"call_1""#, r#""instanceId":null"#),
            FINISHED.replace(r#""status":"ok","#, ""),
            TOKEN.replace(r#""deltas":[{"t":"text","v":"hi"}]"#, r#""deltas":null"#),
        ] {
            assert_eq!(quick_parse(&f), None, "{f}");
        }
    }

    #[test]
    fn other_types_take_the_full_parse() {
        let f = r#"{"gm":1,"seq":1,"ts":1,"runId":"r","type":"run.started","payload":{"app":"a","sdk":{"name":"rust","version":"1"}}}"#;
        assert_eq!(quick_parse(f), None);
    }
}
