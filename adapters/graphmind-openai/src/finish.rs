//! How a step ends on the wire: `node.finished` of `llm:step` with the GraphMind 0.6
//! output, usage and extras, and the observe-only nodes of the Responses API's built-in
//! tools.

use std::pin::Pin;
use std::sync::Arc;

use async_openai::error::OpenAIError;
use futures_core::Stream;
use graphmind::model::Usage;
use graphmind::node::{Extras, Node};
use graphmind::protocol::{Extra, NodeKind, Status};
use serde::Serialize;
use serde_json::Value;

use crate::output::{StepOut, builtin_name};

/// The SDK's stream type (`ChatCompletionResponseStream`, `ResponseStream`).
pub(crate) type SdkStream<T> = Pin<Box<dyn Stream<Item = Result<T, OpenAIError>> + Send>>;

/// What `node.finished` says beside the output.
#[derive(Debug, Default)]
pub(crate) struct Head {
    pub(crate) raw_finish: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) model: Option<String>,
    pub(crate) response_id: Option<String>,
}

/// Which API of the SDK made the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `chat().create` / `create_stream`.
    Chat,
    /// `responses().create` / `create_stream`.
    Responses,
}

impl Api {
    /// The `api` extra.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat.completions",
            Api::Responses => "responses",
        }
    }

    /// Reads a whole response.
    pub(crate) fn read(self, resp: &Value) -> StepOut {
        match self {
            Api::Chat => crate::output::from_chat(resp),
            Api::Responses => crate::output::from_response(resp),
        }
    }
}

/// The status and extras of `node.finished`: the adapter's extras, model and response id and
/// `injected`, as a `#[graphmind::model_step]` records them (the finish reason is in the
/// output only, normalized and as the provider spells it).
fn head_extra(
    model: Option<&str>,
    response_id: Option<&str>,
    raw_finish: Option<&str>,
    mut extras: Extras,
    injected: bool,
) -> (Status, Extras) {
    if let Some(m) = model {
        extras = extras.model(m.to_owned());
    }
    if let Some(id) = response_id {
        extras = extras.response_id(id.to_owned());
    }
    if injected {
        extras = extras.injected();
    }
    let status = if raw_finish == Some("failed") {
        Status::Error
    } else {
        Status::Ok
    };
    (status, extras)
}

/// Finishes `llm:step` with `out` (output, the whole `response` when there is one, usage,
/// model, response id; graphmind remembers the response id, so that a request naming it
/// as its `previous_response_id` continues the invocation).
pub(crate) fn finish_out(
    node: Node,
    out: &StepOut,
    response: Option<Value>,
    extras: Extras,
    injected: bool,
    more: Extra,
) {
    let (status, extras) = head_extra(
        out.model.as_deref(),
        out.response_id.as_deref(),
        out.raw_finish.as_deref(),
        extras,
        injected,
    );
    let mut extra: Extra = extras.into();
    let streamed = !more.is_empty();
    extra.extend(more);
    if streamed {
        // With its recorded chunks: a message shrunk to the payload budget, as JSON.
        node.finish_with(status, Some(out.to_json(response)), out.usage, extra);
    } else {
        // Recorded as its JSON text: sized by its length, dropped with one free.
        node.finish_serialized(status, &out.to_json(response), out.usage, extra);
    }
}

/// Finishes `llm:step` of a whole (non-streamed) response with `output` captured lazily
/// (its JSON text at most `max_len` bytes): what [`finish_out`] records for it, serialized
/// only when a debugger reads it.
pub(crate) fn finish_lazy<T: Serialize + Send + Sync + 'static>(
    node: Node,
    head: &Head,
    output: Arc<T>,
    max_len: usize,
    extras: Extras,
    injected: bool,
) {
    let (status, extras) = head_extra(
        head.model.as_deref(),
        head.response_id.as_deref(),
        head.raw_finish.as_deref(),
        extras,
        injected,
    );
    node.finish_lazy_within(status, output, max_len, head.usage, extras);
}

/// Observe-only nodes `tool:<name>` for the built-in tools a response ran (web search,
/// file search, code interpreter, image generation, MCP calls): instanceId = the output
/// item's id, `providerExecuted: true, ungated: true`.
/// `injected`: the response did not come from the provider (a debugger's inject, a replay's
/// recorded answer), and neither did its tools' items.
pub(crate) fn builtin_nodes(resp: &Value, injected: bool) {
    for item in resp
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(node) = start_builtin(item) {
            finish_builtin(node, item, injected);
        }
    }
}

/// Starts the observe-only node of a built-in tool's output item (`None` if it is not one).
pub(crate) fn start_builtin(item: &Value) -> Option<Node> {
    let name = builtin_name(item)?;
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    Node::start_with(
        NodeKind::Tool,
        name,
        &format!("tool:{name}"),
        id,
        Some(item.clone()),
    )
}

/// Finishes a built-in tool's node with its (final) output item; `injected`: the item came
/// with an injected (or replayed) response, not from the provider.
pub(crate) fn finish_builtin(node: Node, item: &Value, injected: bool) {
    let failed = item.get("status").and_then(Value::as_str) == Some("failed");
    let mut extras = Extras::new().api("responses").provider_executed().ungated();
    if injected {
        extras = extras.injected();
    }
    node.finish_with(
        if failed { Status::Error } else { Status::Ok },
        Some(item.clone()),
        None,
        extras.into(),
    );
}
