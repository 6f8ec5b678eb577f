//! One NDJSON line of a recording, read for the fields [`Recording::parse`] uses and nothing
//! else: the envelope's `type` and `runId` and a node event's payload fields. Other fields
//! are skipped without being built (a `serde_json::Value` of every envelope and payload made
//! reading a recording several times slower), and a field of an unexpected type reads as
//! absent, as `Value::as_str` / `Value::as_bool` on the whole line would have it.
//!
//! [`Recording::parse`]: super::Recording::parse

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The envelope fields a recording is read from.
#[derive(Debug, Default)]
pub(super) struct Line {
    /// `type`, when a string.
    pub(super) kind: Option<String>,
    /// `runId`, when a string.
    pub(super) run_id: Option<String>,
    /// `payload` (empty when absent or not an object).
    pub(super) payload: Payload,
}

/// The payload fields of `node.started`, `node.finished` and `node.error`: strings and
/// booleans when they are of that type, values as they are (present — even `null` — or not).
#[derive(Debug, Default)]
pub(super) struct Payload {
    pub(super) node_id: Option<String>,
    pub(super) kind: Option<String>,
    pub(super) name: Option<String>,
    pub(super) instance_id: Option<String>,
    pub(super) status: Option<String>,
    pub(super) input: Option<Value>,
    pub(super) output: Option<Value>,
    pub(super) chunks: Option<Value>,
    pub(super) error: Option<Value>,
    pub(super) streaming: Option<bool>,
}

/// Any JSON value, kept only when it is a string or a boolean.
enum Scalar {
    Str(String),
    Bool(bool),
    Other,
}

impl Scalar {
    fn text(self) -> Option<String> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }
    fn visit_string<E: Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_bool<E: Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: Error>(self, _: i64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_u64<E: Error>(self, _: u64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_unit<E: Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A map key, read without allocating: the index of the name in `names`, or `None`.
struct Key<const N: usize>(Option<usize>);

struct KeyVisitor<const N: usize>(&'static [&'static str; N]);

impl<'de, const N: usize> Visitor<'de> for KeyVisitor<N> {
    type Value = Key<N>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Key<N>, E> {
        Ok(Key(self.0.iter().position(|n| *n == v)))
    }
}

/// Reads the next key of `a` among `names`.
fn next_key<'de, A: MapAccess<'de>, const N: usize>(
    a: &mut A,
    names: &'static [&'static str; N],
) -> Result<Option<Option<usize>>, A::Error> {
    struct Seed<const N: usize>(&'static [&'static str; N]);
    impl<'de, const N: usize> serde::de::DeserializeSeed<'de> for Seed<N> {
        type Value = Key<N>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<N>, D::Error> {
            d.deserialize_str(KeyVisitor(self.0))
        }
    }
    Ok(a.next_key_seed(Seed(names))?.map(|k| k.0))
}

const PAYLOAD_KEYS: [&str; 10] = [
    "nodeId",
    "kind",
    "name",
    "instanceId",
    "status",
    "input",
    "output",
    super::CHUNKS_KEY,
    "error",
    "streaming",
];

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Payload, A::Error> {
        let mut p = Payload::default();
        while let Some(key) = next_key(&mut a, &PAYLOAD_KEYS)? {
            match key {
                Some(0) => p.node_id = a.next_value::<Scalar>()?.text(),
                Some(1) => p.kind = a.next_value::<Scalar>()?.text(),
                Some(2) => p.name = a.next_value::<Scalar>()?.text(),
                Some(3) => p.instance_id = a.next_value::<Scalar>()?.text(),
                Some(4) => p.status = a.next_value::<Scalar>()?.text(),
                Some(5) => p.input = Some(a.next_value()?),
                Some(6) => p.output = Some(a.next_value()?),
                Some(7) => p.chunks = Some(a.next_value()?),
                Some(8) => p.error = Some(a.next_value()?),
                Some(9) => {
                    p.streaming = match a.next_value::<Scalar>()? {
                        Scalar::Bool(b) => Some(b),
                        _ => None,
                    };
                }
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(p)
    }
    // Not an object: no payload fields.
    fn visit_str<E: Error>(self, _: &str) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_bool<E: Error>(self, _: bool) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_i64<E: Error>(self, _: i64) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_u64<E: Error>(self, _: u64) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_unit<E: Error>(self) -> Result<Payload, E> {
        Ok(Payload::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Payload, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Payload::default())
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PayloadVisitor)
    }
}

const LINE_KEYS: [&str; 3] = ["type", "runId", "payload"];

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an envelope")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Line, A::Error> {
        let mut line = Line::default();
        while let Some(key) = next_key(&mut a, &LINE_KEYS)? {
            match key {
                Some(0) => line.kind = a.next_value::<Scalar>()?.text(),
                Some(1) => line.run_id = a.next_value::<Scalar>()?.text(),
                Some(2) => line.payload = a.next_value()?,
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(line)
    }
    // Not an object: nothing of interest (skipped as a line with no `type`).
    fn visit_str<E: Error>(self, _: &str) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_bool<E: Error>(self, _: bool) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_i64<E: Error>(self, _: i64) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_u64<E: Error>(self, _: u64) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_unit<E: Error>(self) -> Result<Line, E> {
        Ok(Line::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Line, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Line::default())
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LineVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_another_type_read_as_absent_and_values_keep_null() {
        let l: Line = serde_json::from_str(
            r#"{"gm":1,"type":"node.finished","runId":7,"extra":{"a":[1,{"b":2}]},
               "payload":{"nodeId":["x"],"status":"ok","output":null,"streaming":"yes",
                          "recordedChunks":[1],"name":{"n":1},"durationMs":3.5}}"#,
        )
        .expect("reads");
        assert_eq!(l.kind.as_deref(), Some("node.finished"));
        assert_eq!(l.run_id, None);
        let p = l.payload;
        assert_eq!((p.node_id, p.name), (None, None));
        assert_eq!(p.status.as_deref(), Some("ok"));
        assert_eq!(p.output, Some(Value::Null));
        assert_eq!(p.input, None);
        assert_eq!(p.streaming, None);
        assert_eq!(p.chunks, Some(serde_json::json!([1])));
        let l: Line = serde_json::from_str(r#"{"type":"x","payload":"text"}"#).expect("reads");
        assert_eq!(l.payload.status, None);
        let l: Line = serde_json::from_str("[1, 2]").expect("reads");
        assert_eq!(l.kind, None);
        // Duplicate keys: the last one wins, as in a `Value`.
        let l: Line = serde_json::from_str(r#"{"type":"a","type":"b"}"#).expect("reads");
        assert_eq!(l.kind.as_deref(), Some("b"));
        assert!(serde_json::from_str::<Line>(r#"{"type":"a""#).is_err());
        assert!(serde_json::from_str::<Line>(r#"{"type":"a"} x"#).is_err());
    }
}
