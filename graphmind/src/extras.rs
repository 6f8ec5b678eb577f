//! [`Extras`]: the loose `node.finished` fields an adapter sets on a node it finishes by
//! hand, typed so that a misspelt key cannot reach the wire.

use graphmind_protocol::Extra;
use serde_json::Value;

/// Loose fields for [`Node::finish_with`](crate::node::Node::finish_with) (pass
/// `extras.into()`), built with one setter per field the GraphMind viewers read:
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
/// ```
///
/// Only the fields that were set are sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras(Extra);

impl Extras {
    /// No fields.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// `api`: which API of the SDK made the call (`chat.completions`, `responses`, …).
    #[must_use]
    pub fn api(self, api: impl Into<String>) -> Self {
        self.set("api", api.into())
    }

    /// `attempts`: how many times the call ran in this node execution (sent when above 1,
    /// as a `#[tool]` or `#[model_step]` sends it).
    #[must_use]
    pub fn attempts(self, attempts: u32) -> Self {
        if attempts > 1 {
            self.set("attempts", attempts)
        } else {
            self
        }
    }

    /// `injected: true`: the output came from the debugger, not from the call.
    #[must_use]
    pub fn injected(self) -> Self {
        self.set("injected", true)
    }

    /// `streamed: true`: the output was observed from a stream.
    #[must_use]
    pub fn streamed(self) -> Self {
        self.set("streamed", true)
    }

    /// `providerExecuted: true`: the provider ran this tool itself (a built-in web search,
    /// code interpreter, …), not the application.
    #[must_use]
    pub fn provider_executed(self) -> Self {
        self.set("providerExecuted", true)
    }

    /// `ungated: true`: the node was observed only; the debugger could not hold it.
    #[must_use]
    pub fn ungated(self) -> Self {
        self.set("ungated", true)
    }

    /// `model`: the model that answered, as the provider names it.
    #[must_use]
    pub fn model(self, model: impl Into<String>) -> Self {
        self.set("model", model.into())
    }

    /// `responseId`: the provider's id of the response.
    #[must_use]
    pub fn response_id(self, id: impl Into<String>) -> Self {
        self.set("responseId", id.into())
    }
}

impl From<Extras> for Extra {
    fn from(extras: Extras) -> Self {
        extras.0
    }
}
