//! [`Extras`]: the loose `node.finished` fields an adapter sets on a node it finishes by
//! hand, typed so that a misspelt key cannot reach the wire, and kept as fields (static
//! keys) until the event is written.

use graphmind_protocol::Extra;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

/// Loose fields for [`Node::finish_with`](crate::node::Node::finish_with) (pass
/// `extras.into()`) and [`Node::finish_lazy`](crate::node::Node::finish_lazy), built with
/// one setter per field the GraphMind viewers read:
///
/// ```
/// use graphmind::node::Extras;
///
/// // A web search the provider ran itself: observed, never gated.
/// let extras = Extras::new()
///     .api("responses")
///     .provider_executed()
///     .ungated()
///     .model("gpt-5-mini")
///     .response_id("resp_123");
/// let map: graphmind::protocol::Extra = extras.into();
/// assert_eq!(map["providerExecuted"], true);
/// assert_eq!(map["responseId"], "resp_123");
/// // Sent in one order, whatever the order they were set in.
/// let keys: Vec<&str> = map.keys().map(String::as_str).collect();
/// assert_eq!(keys, ["api", "model", "responseId", "providerExecuted", "ungated"]);
/// ```
///
/// Only the fields that were set are sent, in this order: `api`, `attempts`, `model`,
/// `responseId`, `injected`, `streamed`, `providerExecuted`, `ungated`, then the fields of a raw map it was made from (`Extras::from(map)`), in that map's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    pub(crate) api: Option<String>,
    pub(crate) attempts: Option<u32>,
    pub(crate) model: Option<String>,
    pub(crate) response_id: Option<String>,
    pub(crate) injected: bool,
    pub(crate) streamed: bool,
    pub(crate) provider_executed: bool,
    pub(crate) ungated: bool,
    /// Any other field, sent after the typed ones in its own order.
    pub(crate) rest: Extra,
}

/// One typed field's value, as it is written.
#[derive(Clone, Copy)]
pub(crate) enum Field<'a> {
    Str(&'a str),
    U32(u32),
    True,
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Str(v) => s.serialize_str(v),
            Self::U32(n) => s.serialize_u32(n),
            Self::True => s.serialize_bool(true),
        }
    }
}

impl Extras {
    /// No fields.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// `api`: which API of the SDK made the call (`chat.completions`, `responses`, …).
    #[must_use]
    pub fn api(self, api: impl Into<String>) -> Self {
        Self {
            api: Some(api.into()),
            ..self
        }
    }

    /// `attempts`: how many times the call ran in this node execution (sent when above 1,
    /// as a `#[tool]` or `#[model_step]` sends it).
    #[must_use]
    pub fn attempts(self, attempts: u32) -> Self {
        if attempts > 1 {
            Self {
                attempts: Some(attempts),
                ..self
            }
        } else {
            self
        }
    }

    /// `injected: true`: the output came from the debugger, not from the call.
    #[must_use]
    pub fn injected(self) -> Self {
        Self {
            injected: true,
            ..self
        }
    }

    /// `streamed: true`: the output was observed from a stream.
    #[must_use]
    pub fn streamed(self) -> Self {
        Self {
            streamed: true,
            ..self
        }
    }

    /// `providerExecuted: true`: the provider ran this tool itself (a built-in web search,
    /// code interpreter, …), not the application.
    #[must_use]
    pub fn provider_executed(self) -> Self {
        Self {
            provider_executed: true,
            ..self
        }
    }

    /// `ungated: true`: the node was observed only; the debugger could not hold it.
    #[must_use]
    pub fn ungated(self) -> Self {
        Self {
            ungated: true,
            ..self
        }
    }

    /// `model`: the model that answered, as the provider names it.
    #[must_use]
    pub fn model(self, model: impl Into<String>) -> Self {
        Self {
            model: Some(model.into()),
            ..self
        }
    }

    /// `responseId`: the provider's id of the response.
    #[must_use]
    pub fn response_id(self, id: impl Into<String>) -> Self {
        Self {
            response_id: Some(id.into()),
            ..self
        }
    }

    /// The typed fields that are set, in the order they are sent.
    pub(crate) fn typed(&self) -> impl Iterator<Item = (&'static str, Field<'_>)> {
        let flag = |on: bool| on.then_some(Field::True);
        [
            ("api", self.api.as_deref().map(Field::Str)),
            ("attempts", self.attempts.map(Field::U32)),
            ("model", self.model.as_deref().map(Field::Str)),
            ("responseId", self.response_id.as_deref().map(Field::Str)),
            ("injected", flag(self.injected)),
            ("streamed", flag(self.streamed)),
            ("providerExecuted", flag(self.provider_executed)),
            ("ungated", flag(self.ungated)),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
    }

    /// Whether no field is set.
    #[cfg_attr(not(feature = "enabled"), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.typed().next().is_none() && self.rest.is_empty()
    }

    /// The response id it carries (set, or in the map it was made from).
    #[cfg_attr(not(feature = "enabled"), allow(dead_code))]
    pub(crate) fn response_id_str(&self) -> Option<&str> {
        self.response_id
            .as_deref()
            .or_else(|| self.rest.get("responseId").and_then(Value::as_str))
    }

    /// The typed fields' JSON text at most, counting `per_byte` bytes for each byte of a
    /// string (6: every byte escaped) and `number` for a count.
    #[cfg_attr(not(feature = "enabled"), allow(dead_code))]
    pub(crate) fn typed_len(&self, per_byte: usize, number: usize) -> usize {
        self.typed().fold(0usize, |n, (k, v)| {
            let value = match v {
                Field::Str(s) => s.len().saturating_mul(per_byte) + 2,
                Field::U32(_) => number,
                Field::True => 5,
            };
            n.saturating_add(k.len() * per_byte + 4 + value)
        })
    }
}

/// Written as the map [`From<Extras> for Extra`](Extra) gives, without building it.
impl Serialize for Extras {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.typed() {
            map.serialize_entry(k, &v)?;
        }
        for (k, v) in &self.rest {
            // A typed field set wins over the same key of the map it was made from.
            if !self.typed().any(|(t, _)| t == k) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl From<Extras> for Extra {
    fn from(extras: Extras) -> Self {
        let mut map = Extra::new();
        for (k, v) in extras.typed() {
            let v = match v {
                Field::Str(s) => Value::from(s),
                Field::U32(n) => Value::from(n),
                Field::True => Value::Bool(true),
            };
            map.insert(k.to_owned(), v);
        }
        for (k, v) in extras.rest {
            // A typed field set wins over the same key of the map it was made from.
            map.entry(k).or_insert(v);
        }
        map
    }
}

/// A raw map's fields, sent as they are, in their order.
impl From<Extra> for Extras {
    fn from(rest: Extra) -> Self {
        Self {
            rest,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_fields_write_the_bytes_of_their_map() {
        let mut rest = Extra::new();
        rest.insert("edited".into(), serde_json::json!({"before": {"a": 1}}));
        rest.insert("recordedChunks".into(), serde_json::json!([1, "x"]));
        let cases = [
            Extras::new(),
            Extras::new().api("chat.completions").attempts(1),
            Extras::new()
                .api("responses")
                .attempts(3)
                .model("gpt-5-mini")
                .response_id("resp_\"1")
                .injected(),
            Extras::new()
                .ungated()
                .provider_executed()
                .streamed()
                .response_id("r")
                .api("a"),
            Extras {
                rest: rest.clone(),
                ..Extras::new().api("chat.completions").model("m")
            },
            Extras::from(rest),
            Extras {
                rest: [("api".to_owned(), Value::from("shadowed"))]
                    .into_iter()
                    .collect(),
                ..Extras::new().api("typed")
            },
        ];
        for extras in cases {
            let text = serde_json::to_string(&extras).unwrap();
            let map: Extra = extras.clone().into();
            assert_eq!(text, serde_json::to_string(&map).unwrap());
            assert_eq!(extras.is_empty(), map.is_empty());
        }
        let text = serde_json::to_string(
            &Extras::new()
                .injected()
                .response_id("r")
                .model("m")
                .attempts(2)
                .api("chat"),
        )
        .unwrap();
        assert_eq!(
            text,
            r#"{"api":"chat","attempts":2,"model":"m","responseId":"r","injected":true}"#
        );
    }

    #[test]
    fn a_response_id_is_read_from_the_field_or_the_map() {
        assert_eq!(Extras::new().response_id("r").response_id_str(), Some("r"));
        let mut rest = Extra::new();
        rest.insert("responseId".into(), "m".into());
        assert_eq!(Extras::from(rest).response_id_str(), Some("m"));
        assert_eq!(Extras::new().api("x").response_id_str(), None);
    }
}
