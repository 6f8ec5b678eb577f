//! Runnable instrumented agents. [`support_agent`] is a customer-support agent driven by a
//! scripted model (no network, no key): it plans tool calls, misreads an order id once (the
//! lookup fails, so the debugger's default error breakpoint holds there), corrects itself,
//! checks the shipment and issues a refund, streaming every model reply.
//!
//! The example binary `support_agent` is a thin `main` around it; `graphmind demo` can embed
//! the same agent.
//!
//! With feature `openai`, `trip_agent` is a two-tool agent over async-openai (through
//! graphmind-openai) against the local mock OpenAI server; the example binary `openai_agent`
//! and `graphmind demo --agent openai` run it.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use graphmind::protocol::DeltaKind;
use serde::{Deserialize, Serialize};

#[cfg(feature = "openai")]
pub mod trip_agent;

/// How many times each body really ran (a replay answers calls without running them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    /// The scripted model.
    pub model: usize,
    /// `lookup_order`.
    pub lookup_order: usize,
    /// `shipping_status`.
    pub shipping_status: usize,
    /// `issue_refund`.
    pub issue_refund: usize,
}

static MODEL_CALLS: AtomicUsize = AtomicUsize::new(0);
static LOOKUP_CALLS: AtomicUsize = AtomicUsize::new(0);
static SHIPPING_CALLS: AtomicUsize = AtomicUsize::new(0);
static REFUND_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The bodies run so far in this process.
#[must_use]
pub fn calls() -> Calls {
    Calls {
        model: MODEL_CALLS.load(Ordering::SeqCst),
        lookup_order: LOOKUP_CALLS.load(Ordering::SeqCst),
        shipping_status: SHIPPING_CALLS.load(Ordering::SeqCst),
        issue_refund: REFUND_CALLS.load(Ordering::SeqCst),
    }
}

impl Calls {
    /// The calls made since `before`.
    #[must_use]
    pub fn since(self, before: Calls) -> Calls {
        Calls {
            model: self.model - before.model,
            lookup_order: self.lookup_order - before.lookup_order,
            shipping_status: self.shipping_status - before.shipping_status,
            issue_refund: self.issue_refund - before.issue_refund,
        }
    }

    /// All calls.
    #[must_use]
    pub fn total(self) -> usize {
        self.model + self.lookup_order + self.shipping_status + self.issue_refund
    }
}

/// The system prompt of [`support_agent`].
pub const SYSTEM_PROMPT: &str = "You are a support agent. Use the tools; be brief.";

/// The ticket the example answers.
pub const TICKET: &str = "Hi, my order ORD-1042 never arrived. Can I get my money back?";

/// One chat message.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text content (for `tool`: the tool's JSON result or error).
    pub content: String,
    /// For `tool` messages: the id of the tool call this answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_owned(),
            content: content.into(),
            tool_call_id: None,
        }
    }
}

/// A request to the model: the conversation so far.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ChatRequest {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
}

/// One streamed piece of a model reply.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Chunk {
    /// A piece of the reply's text.
    Text(String),
    /// A piece of a tool call's JSON arguments; the first piece names the call.
    ToolCall {
        /// The tool-call id.
        id: String,
        /// The tool's name.
        name: String,
        /// A piece of the JSON arguments.
        arguments: String,
    },
    /// The end of the reply.
    Done {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
        /// `stop` or `tool_calls`.
        finish_reason: String,
    },
}

/// What graphmind reads from a chunk: text and tool-argument deltas, usage, finish reason.
impl graphmind::model::StepChunk for Chunk {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        match self {
            Chunk::Text(text) => emit(DeltaKind::Text, text),
            Chunk::ToolCall { arguments, .. } => emit(DeltaKind::ToolArgs, arguments),
            Chunk::Done { .. } => {}
        }
    }

    /// Names each argument piece's call (its id and tool), so the recorded `toolCalls` and
    /// the streamed arguments carry them; `deltas` alone would name no call.
    fn call_deltas(&self, emit: &mut dyn FnMut(graphmind::model::Delta<'_>)) {
        match self {
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => emit(
                graphmind::model::Delta::new(DeltaKind::ToolArgs, arguments)
                    .with_call_id(id)
                    .with_tool_name(name),
            ),
            other => other.deltas(&mut |kind, text| emit(graphmind::model::Delta::new(kind, text))),
        }
    }

    fn usage(&self) -> Option<graphmind::model::Usage> {
        match self {
            Chunk::Done {
                input_tokens,
                output_tokens,
                ..
            } => Some(
                // Optional counts go on with `with_…` setters (`with_cache_read`, …).
                graphmind::model::Usage::inclusive(*input_tokens, *output_tokens)
                    .with_total(input_tokens + output_tokens),
            ),
            _ => None,
        }
    }

    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        match self {
            Chunk::Done { finish_reason, .. } => Some(Cow::Borrowed(finish_reason)),
            _ => None,
        }
    }

    // Recorded, so that a replay streams the same chunks back (`graphmind replay`,
    // `graphmind::testing`).
    fn to_recorded(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }

    fn from_recorded(value: serde_json::Value) -> Option<Self> {
        serde_json::from_value(value).ok()
    }
}

/// How graphmind groups model steps into invocations: same first message, growing history.
impl graphmind::model::StepRequest for ChatRequest {
    fn first_message(&self) -> Option<Cow<'_, str>> {
        self.messages
            .first()
            .map(|m| Cow::Borrowed(m.content.as_str()))
    }

    fn message_count(&self) -> usize {
        self.messages.len()
    }
}

/// A tool call the model asked for, assembled from its chunks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCall {
    /// The tool-call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The JSON arguments.
    pub arguments: String,
}

/// A model reply, assembled from its chunks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    /// The reply's text.
    pub text: String,
    /// The tool calls it asks for.
    pub tool_calls: Vec<ToolCall>,
}

impl Reply {
    /// Assembles a streamed reply.
    pub async fn collect(chunks: impl Stream<Item = Chunk>) -> Self {
        let mut reply = Reply::default();
        let mut chunks = std::pin::pin!(chunks);
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Chunk::Text(text) => reply.text.push_str(&text),
                Chunk::ToolCall {
                    id,
                    name,
                    arguments,
                } => match reply.tool_calls.iter_mut().find(|call| call.id == id) {
                    Some(call) => call.arguments.push_str(&arguments),
                    None => reply.tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    }),
                },
                Chunk::Done { .. } => {}
            }
        }
        reply
    }
}

/// An order as the shop's database knows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Order {
    /// Order id, `ORD-` and four digits.
    pub order_id: String,
    /// Amount paid, in cents.
    pub amount_cents: u64,
    /// The parcel's tracking number.
    pub tracking: String,
}

/// Where a parcel is.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Shipment {
    /// Tracking number.
    pub tracking: String,
    /// `in_transit`, `delivered` or `lost`.
    pub status: String,
}

/// A refund that was issued.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Refund {
    /// Refunded order.
    pub order_id: String,
    /// Refunded amount, in cents.
    pub amount_cents: u64,
    /// Refund reference.
    pub reference: String,
}

/// A tool failed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolError(pub String);

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

/// A replay hands a tool's recorded error back as this error (the tools opt in with
/// `replay_errors`), so the misread order id fails in a replay as it did when recorded.
impl From<graphmind::RecordedError> for ToolError {
    fn from(e: graphmind::RecordedError) -> Self {
        ToolError(e.message)
    }
}

/// A call rejected from the debugger fails with the person's reason, which the model reads.
impl From<graphmind::Rejection> for ToolError {
    fn from(r: graphmind::Rejection) -> Self {
        ToolError(format!("{REJECTED}: {}", r.reason))
    }
}

/// How a rejected call's error begins (the scripted model answers it instead of retrying).
pub const REJECTED: &str = "rejected by a person";

/// The model failed (the scripted one never does, but the signature is a real model's).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// Why the agent stopped without an answer.
#[derive(Debug, PartialEq)]
pub enum AgentError {
    /// The model failed.
    Model(ModelError),
    /// The model kept calling tools past the step budget.
    TooManySteps,
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Model(err) => write!(f, "model failed: {err}"),
            AgentError::TooManySteps => f.write_str("the model kept calling tools"),
        }
    }
}

impl std::error::Error for AgentError {}

/// Looks an order up. Fails on an id that is not `ORD-` and four digits (the scripted model
/// misreads `ORD-1042` as `ORD-1O42` once).
#[graphmind::tool(call_id = call_id, replay_errors)]
pub async fn lookup_order(call_id: String, order_id: String) -> Result<Order, ToolError> {
    let _ = call_id;
    LOOKUP_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let digits = order_id.strip_prefix("ORD-").unwrap_or("");
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError(format!(
            "no order {order_id}: ids are ORD- and four digits"
        )));
    }
    Ok(Order {
        amount_cents: 4_999,
        tracking: format!("TRK-{digits}-NL"),
        order_id,
    })
}

/// Asks the carrier where a parcel is.
#[graphmind::tool(call_id = call_id, replay_errors)]
pub async fn shipping_status(call_id: String, tracking: String) -> Result<Shipment, ToolError> {
    let _ = call_id;
    SHIPPING_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(Shipment {
        tracking,
        status: "lost".to_owned(),
    })
}

/// Refunds an order. A person at its `before` gate may reject it (`reject`): the refund is
/// not issued and the model is told why.
#[graphmind::tool(call_id = call_id, replay_errors, reject)]
pub async fn issue_refund(
    call_id: String,
    order_id: String,
    amount_cents: u64,
) -> Result<Refund, ToolError> {
    let _ = call_id;
    REFUND_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let reference = format!("RF-{}", order_id.trim_start_matches("ORD-"));
    Ok(Refund {
        order_id,
        amount_cents,
        reference,
    })
}

/// Calls the (scripted) model; its reply streams back chunk by chunk.
#[graphmind::model_step(tools = [lookup_order, shipping_status, issue_refund])]
pub async fn call_model(
    request: ChatRequest,
) -> Result<impl Stream<Item = Chunk> + Send + 'static, ModelError> {
    MODEL_CALLS.fetch_add(1, Ordering::SeqCst);
    let chunks = scripted_reply(&request);
    Ok(stream::iter(chunks).then(|chunk| async move {
        tokio::time::sleep(Duration::from_millis(8)).await;
        chunk
    }))
}

/// What the scripted model answers to a conversation: it reads the last tool result.
pub fn scripted_reply(request: &ChatRequest) -> Vec<Chunk> {
    let step = request
        .messages
        .iter()
        .filter(|m| m.role == "assistant")
        .count();
    let last_tool = request.messages.iter().rev().find(|m| m.role == "tool");
    let last: Option<serde_json::Value> =
        last_tool.and_then(|m| serde_json::from_str(&m.content).ok());
    let field = |name: &str| {
        last.as_ref()
            .and_then(|v| v.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let (thought, call): (&str, Option<(&str, serde_json::Value)>) = match last_tool {
        // Planted misreading: a letter O where the ticket has a zero.
        None => (
            "Let me look that order up.",
            Some(("lookup_order", serde_json::json!({"order_id": "ORD-1O42"}))),
        ),
        Some(m) if m.content.contains(REJECTED) => {
            let why = serde_json::from_str::<serde_json::Value>(&m.content)
                .ok()
                .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
                .unwrap_or_default();
            let answer = format!(
                "I could not issue the refund for ORD-1042 ({why}). A colleague will follow up with you."
            );
            return text_chunks(&answer, "stop", step);
        }
        Some(m) if m.content.contains("\"error\"") => (
            "That id did not match; the ticket says ORD-1042, with a zero.",
            Some(("lookup_order", serde_json::json!({"order_id": "ORD-1042"}))),
        ),
        Some(_) if field("tracking").is_some() && field("status").is_none() => (
            "Found the order. Checking the parcel.",
            Some((
                "shipping_status",
                serde_json::json!({"tracking": field("tracking")}),
            )),
        ),
        Some(_) if field("status").as_deref() == Some("lost") => (
            "The carrier lost it. Refunding.",
            Some((
                "issue_refund",
                serde_json::json!({"order_id": "ORD-1042", "amount_cents": 4_999}),
            )),
        ),
        Some(_) => {
            let reference = field("reference").unwrap_or_else(|| "your refund".to_owned());
            let answer = format!(
                "I'm sorry your parcel went missing. I have refunded order ORD-1042 in full (reference {reference}); the money is back on your card within 3 working days."
            );
            return text_chunks(&answer, "stop", step);
        }
    };
    let mut chunks = text_chunks(thought, "tool_calls", step);
    let done = chunks.pop();
    if let Some((name, args)) = call {
        let id = format!("call_{}", step + 1);
        let args = args.to_string();
        let (head, tail) = args.split_at(args.len() / 2);
        for piece in [head, tail] {
            chunks.push(Chunk::ToolCall {
                id: id.clone(),
                name: name.to_owned(),
                arguments: piece.to_owned(),
            });
        }
    }
    chunks.extend(done);
    chunks
}

fn text_chunks(text: &str, finish_reason: &str, step: usize) -> Vec<Chunk> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let mut chunks: Vec<Chunk> = words.iter().map(|w| Chunk::Text((*w).to_owned())).collect();
    chunks.push(Chunk::Done {
        input_tokens: 120 + 40 * step as u64,
        output_tokens: words.len() as u64 + 12,
        finish_reason: finish_reason.to_owned(),
    });
    chunks
}

/// Runs one tool call and renders its result (or error) as the tool message's content.
async fn dispatch(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |name: &str| {
        args.get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let id = call.id.clone();
    let result = match call.name.as_str() {
        "lookup_order" => lookup_order(id, text("order_id"))
            .await
            .map(|v| serde_json::json!(v)),
        "shipping_status" => shipping_status(id, text("tracking"))
            .await
            .map(|v| serde_json::json!(v)),
        "issue_refund" => {
            let amount = args
                .get("amount_cents")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            issue_refund(id, text("order_id"), amount)
                .await
                .map(|v| serde_json::json!(v))
        }
        other => Err(ToolError(format!("unknown tool {other}"))),
    };
    match result {
        Ok(value) => value.to_string(),
        Err(err) => serde_json::json!({ "error": err.0 }).to_string(),
    }
}

/// [`support_agent`] as one graphmind run named `handle-ticket` (on the default session):
/// `Err(Aborted)` when the debugger aborts it.
///
/// # Errors
/// [`graphmind::Aborted`] when the debugger aborted the run at one of its gates.
pub async fn handle_ticket(ticket: &str) -> Result<Result<String, AgentError>, graphmind::Aborted> {
    graphmind::run!("handle-ticket", async { support_agent(ticket).await }).await
}

/// The agent loop: ask the model, run the tools it asks for, until it answers.
///
/// # Errors
/// When the model fails or keeps calling tools past the step budget.
pub async fn support_agent(ticket: &str) -> Result<String, AgentError> {
    support_agent_with(SYSTEM_PROMPT, ticket).await
}

/// [`support_agent`] with another system prompt.
///
/// # Errors
/// When the model fails or keeps calling tools past the step budget.
pub async fn support_agent_with(system: &str, ticket: &str) -> Result<String, AgentError> {
    let mut request = ChatRequest {
        messages: vec![Message::new("system", system), Message::new("user", ticket)],
    };
    for _ in 0..8 {
        let chunks = call_model(request.clone())
            .await
            .map_err(AgentError::Model)?;
        let reply = Reply::collect(chunks).await;
        request
            .messages
            .push(Message::new("assistant", reply.text.clone()));
        if reply.tool_calls.is_empty() {
            return Ok(reply.text);
        }
        for call in &reply.tool_calls {
            let content = dispatch(call).await;
            request.messages.push(Message {
                tool_call_id: Some(call.id.clone()),
                ..Message::new("tool", content)
            });
        }
    }
    Err(AgentError::TooManySteps)
}
