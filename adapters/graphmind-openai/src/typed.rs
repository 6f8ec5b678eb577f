//! What a step reads of async-openai's typed requests and responses before anything is
//! serialized: the invocation a request belongs to, the tools it offers, and a response's
//! finish reason, usage, model and id. The request and response themselves are captured
//! lazily (`graphmind::node::Node::start_step_lazy`, `finish_lazy`): serialized into the
//! frames only when a debugger reads them, so a detached step pays a clone and a length
//! count. Only fields async-openai has named the same from 0.40 to 0.43 are read here;
//! everything else is read from the JSON, when it is written.

use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use async_openai::types::responses::{CreateResponse, Response};
use graphmind::model::{Grouping, Usage};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::finish::{Api, Head};

/// A request type the adapter sends.
pub(crate) trait Request:
    Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
    /// The invocation its step belongs to: for chat, the conversation (its first message
    /// and length, as graphmind's automatic grouping reads them from the JSON); for
    /// Responses, the step that answered `previous_response_id`.
    fn grouping(&self) -> Grouping;
    /// The tools it offers, as JSON (for the first step's `graph.hint`).
    fn tools(&self) -> Vec<Value>;
}

fn to_values<T: Serialize>(items: Option<&Vec<T>>) -> Vec<Value> {
    items
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect()
}

impl Request for CreateChatCompletionRequest {
    fn grouping(&self) -> Grouping {
        let first = self
            .messages
            .first()
            .and_then(|m| serde_json::to_string(m).ok());
        Grouping::conversation(first.as_deref(), self.messages.len())
    }
    fn tools(&self) -> Vec<Value> {
        to_values(self.tools.as_ref())
    }
}

impl Request for CreateResponse {
    fn grouping(&self) -> Grouping {
        match &self.previous_response_id {
            Some(prev) => Grouping::after(prev),
            // No `messages` in a Responses request: a new invocation, as the JSON says.
            None => Grouping::Auto,
        }
    }
    fn tools(&self) -> Vec<Value> {
        to_values(self.tools.as_ref())
    }
}

/// A response type the adapter returns.
pub(crate) trait Reply:
    Serialize + DeserializeOwned + Clone + Send + Sync + 'static
{
    /// Its head read from the typed value, when the output can be captured lazily (`None`:
    /// read from the JSON at once — a Responses answer, whose built-in tool calls become
    /// nodes of their own).
    fn head(&self) -> Option<Head>;
}

impl Reply for CreateChatCompletionResponse {
    fn head(&self) -> Option<Head> {
        let raw_finish = self
            .choices
            .first()
            .and_then(|c| c.finish_reason.as_ref())
            .and_then(|r| match serde_json::to_value(r) {
                Ok(Value::String(s)) => Some(s),
                _ => None,
            });
        let usage = self.usage.as_ref().map(|u| {
            let mut usage = Usage::inclusive(u.prompt_tokens.into(), u.completion_tokens.into())
                .with_total(u.total_tokens.into());
            if let Some(n) = u
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
            {
                usage = usage.with_cache_read(n.into());
            }
            if let Some(n) = u
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
            {
                usage = usage.with_reasoning(n.into());
            }
            usage
        });
        Some(Head {
            raw_finish,
            usage,
            model: Some(self.model.clone()),
            response_id: Some(self.id.clone()),
        })
    }
}

impl Reply for Response {
    fn head(&self) -> Option<Head> {
        None
    }
}

/// A response captured lazily as the GraphMind 0.6 output (`{text, finishReason,
/// rawFinishReason, toolCalls, response}`), built from its JSON when it is written: the
/// same text the eager path records.
pub(crate) struct LazyOutput<R> {
    pub(crate) api: Api,
    pub(crate) response: R,
}

impl<R> LazyOutput<R> {
    /// A bound of the output's JSON length for a response of `len` bytes: the response
    /// itself, its text and tool calls again (no longer than in the response, where they
    /// are escaped once more or as long), and the few fields around them.
    pub(crate) fn bound(len: usize) -> usize {
        len.saturating_mul(2).saturating_add(256)
    }
}

impl<R: Serialize> Serialize for LazyOutput<R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let value = serde_json::to_value(&self.response).map_err(serde::ser::Error::custom)?;
        let out = self.api.read(&value);
        out.to_json(Some(value)).serialize(s)
    }
}
