//! What graphmind reads from model requests, responses and stream chunks. Implemented for
//! `String` / `&str`; implement them for any SDK's types (a few lines each).
//!
//! [`StepRequest`] is only needed for a request without a `messages` field: steps are
//! grouped into one invocation (one conversation) by the request's captured `messages`
//! array (at the top level or one level down), which OpenAI-, Anthropic- and Gemini-style
//! requests already have.

use std::borrow::Cow;

/// The delta kinds a [`StepChunk`] reports (answer text, reasoning, tool-call arguments).
pub use graphmind_protocol::DeltaKind;

/// Token counts of one model step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens, as the provider reports them.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Whether `input_tokens` already counts the prompt tokens served from the provider's
    /// cache (OpenAI's `prompt_tokens` and Gemini's `promptTokenCount` do; Anthropic's
    /// `input_tokens` does not). Sent as `usage.inclusive: true`, so a GraphMind 0.6 viewer
    /// does not add the cached tokens a second time.
    pub inclusive: bool,
}

impl Usage {
    /// Counts as a provider reports them, cached prompt tokens not included.
    #[must_use]
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            inclusive: false,
        }
    }

    /// Counts whose `input_tokens` include the cached prompt tokens (OpenAI-style).
    #[must_use]
    pub fn inclusive(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            inclusive: true,
            ..Self::new(input_tokens, output_tokens)
        }
    }
}

/// A non-streaming model response.
pub trait StepResponse {
    /// Token usage, if the response reports it.
    fn usage(&self) -> Option<Usage> {
        None
    }
    /// Why the model stopped (`stop`, `tool_calls`, …).
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        None
    }
}

impl StepResponse for String {}
impl StepResponse for &str {}
impl StepResponse for serde_json::Value {}

/// One item of a streamed model response.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamed model chunk graphmind can read",
    label = "the items of a `#[graphmind::model_step]` stream must implement `graphmind::model::StepChunk`",
    note = "implement `graphmind::model::StepChunk` for it: `deltas` reports the text, reasoning and tool-argument pieces (see `examples/src/lib.rs`)"
)]
pub trait StepChunk {
    /// Reports the chunk's deltas: answer text, reasoning, or tool-call arguments.
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str));
    /// Usage, usually on the last chunk.
    fn usage(&self) -> Option<Usage> {
        None
    }
    /// Finish reason, usually on the last chunk.
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        None
    }
    /// An error carried by the chunk (observed, not gated).
    fn error(&self) -> Option<String> {
        None
    }
}

impl StepChunk for String {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        emit(DeltaKind::Text, self);
    }
}

impl StepChunk for &str {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        emit(DeltaKind::Text, self);
    }
}

impl<T: StepChunk, E: std::fmt::Display> StepChunk for Result<T, E> {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        if let Ok(c) = self {
            c.deltas(emit);
        }
    }
    fn usage(&self) -> Option<Usage> {
        self.as_ref().ok().and_then(StepChunk::usage)
    }
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        self.as_ref().ok().and_then(StepChunk::finish_reason)
    }
    fn error(&self) -> Option<String> {
        match self {
            Ok(c) => c.error(),
            Err(e) => Some(e.to_string()),
        }
    }
}

/// A model request: how steps are grouped into invocations. A step continues the previous
/// invocation of its run when its request has the same first message and more messages.
pub trait StepRequest {
    /// The first message (usually the system prompt or the user's question), as text.
    fn first_message(&self) -> Option<Cow<'_, str>>;
    /// Number of messages in the request.
    fn message_count(&self) -> usize;
}

/// Which invocation a model step belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grouping {
    /// From the captured input: its `messages` array (top level or one level down), if any.
    Auto,
    /// From a [`StepRequest`]: (hash of the first message, message count).
    Messages(u64, usize),
    /// An explicit invocation key (`invocation = …` on the attribute).
    Explicit(String),
}

impl Grouping {
    /// Grouping from a request.
    pub fn of<R: StepRequest + ?Sized>(req: &R) -> Self {
        Self::Messages(
            hash_str(req.first_message().as_deref().unwrap_or("")),
            req.message_count(),
        )
    }

    /// An explicit key.
    pub fn explicit(key: impl std::fmt::Display) -> Self {
        Self::Explicit(key.to_string())
    }
}

pub(crate) fn hash_str(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}
