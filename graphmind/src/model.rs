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

/// Token counts of one model step, as a provider reports them.
///
/// Built with [`Usage::new`] or [`Usage::inclusive`] and the `with_…` setters, so that a
/// count added later breaks no caller:
///
/// ```
/// use graphmind::model::Usage;
///
/// // An OpenAI-style response: 1200 prompt tokens, 1000 of them from the cache.
/// let usage = Usage::inclusive(1200, 80)
///     .with_total(1280)
///     .with_cache_read(1000)
///     .with_reasoning(30);
/// assert_eq!(usage.cache_read_tokens, Some(1000));
/// assert_eq!(usage.cache_write_tokens, None);
/// ```
///
/// On the wire (`node.finished.usage`) the optional counts are GraphMind 0.6's loose fields
/// `totalTokens`, `cacheReadTokens`, `cacheWriteTokens` and `reasoningTokens`, each sent
/// only when set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens, as the provider reports them.
    pub input_tokens: u64,
    /// Completion tokens (reasoning tokens included).
    pub output_tokens: u64,
    /// Whether `input_tokens` already counts the prompt tokens served from or written to
    /// the provider's cache (OpenAI's `prompt_tokens` and Gemini's `promptTokenCount` do;
    /// Anthropic's `input_tokens` does not). Sent as `usage.inclusive: true`, so a
    /// GraphMind 0.6 viewer does not add the cached tokens a second time.
    pub inclusive: bool,
    /// All tokens of the call, as the provider reports them (`totalTokens`); it may differ
    /// from input plus output.
    pub total_tokens: Option<u64>,
    /// Prompt tokens served from the provider's cache (`cacheReadTokens`): OpenAI's
    /// `cached_tokens`, Anthropic's `cache_read_input_tokens`.
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache (`cacheWriteTokens`): Anthropic's
    /// `cache_creation_input_tokens`.
    pub cache_write_tokens: Option<u64>,
    /// Output tokens spent on reasoning (`reasoningTokens`), counted in `output_tokens` too.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Counts as a provider reports them, cached prompt tokens not included.
    #[must_use]
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
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

    /// With the provider's total token count.
    #[must_use]
    pub fn with_total(self, tokens: u64) -> Self {
        Self {
            total_tokens: Some(tokens),
            ..self
        }
    }

    /// With the prompt tokens read from the provider's cache.
    #[must_use]
    pub fn with_cache_read(self, tokens: u64) -> Self {
        Self {
            cache_read_tokens: Some(tokens),
            ..self
        }
    }

    /// With the prompt tokens written to the provider's cache.
    #[must_use]
    pub fn with_cache_write(self, tokens: u64) -> Self {
        Self {
            cache_write_tokens: Some(tokens),
            ..self
        }
    }

    /// With the output tokens spent on reasoning.
    #[must_use]
    pub fn with_reasoning(self, tokens: u64) -> Self {
        Self {
            reasoning_tokens: Some(tokens),
            ..self
        }
    }

    /// The wire form: the required counts, then each loose field that is set. One function
    /// for every path (model steps, streams, hand-made nodes), so none drops a field.
    #[cfg_attr(not(feature = "enabled"), allow(dead_code))]
    pub(crate) fn to_wire(self) -> graphmind_protocol::TokenUsage {
        let mut extra = graphmind_protocol::Extra::new();
        if self.inclusive {
            extra.insert("inclusive".into(), true.into());
        }
        let loose = [
            ("totalTokens", self.total_tokens),
            ("cacheReadTokens", self.cache_read_tokens),
            ("cacheWriteTokens", self.cache_write_tokens),
            ("reasoningTokens", self.reasoning_tokens),
        ];
        for (key, count) in loose {
            if let Some(n) = count {
                extra.insert(key.into(), n.into());
            }
        }
        graphmind_protocol::TokenUsage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            extra,
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

/// One streamed piece of a model response, as [`StepChunk::call_deltas`] reports it. A
/// tool-argument piece may name its call: `index` (its position in the reply; OpenAI and
/// Anthropic often send the id and name on a call's first piece only, then just the index),
/// the call id and the tool name. They go onto the wire's delta as the loose fields `index`,
/// `toolCallId` and `toolName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delta<'a> {
    /// What the text is.
    pub kind: DeltaKind,
    /// The piece of text.
    pub text: &'a str,
    /// The tool call's position in the reply.
    pub index: Option<u64>,
    /// The tool call's id.
    pub call_id: Option<&'a str>,
    /// The called tool's name.
    pub tool_name: Option<&'a str>,
}

impl<'a> Delta<'a> {
    /// A piece naming no tool call.
    #[must_use]
    pub fn new(kind: DeltaKind, text: &'a str) -> Self {
        Self {
            kind,
            text,
            index: None,
            call_id: None,
            tool_name: None,
        }
    }

    /// A piece of the arguments of the tool call at `index` in the reply.
    #[must_use]
    pub fn tool_args(index: u64, text: &'a str) -> Self {
        Self {
            index: Some(index),
            ..Self::new(DeltaKind::ToolArgs, text)
        }
    }

    /// Names the tool call's id.
    #[must_use]
    pub fn with_call_id(self, id: &'a str) -> Self {
        Self {
            call_id: Some(id),
            ..self
        }
    }

    /// Names the called tool.
    #[must_use]
    pub fn with_tool_name(self, name: &'a str) -> Self {
        Self {
            tool_name: Some(name),
            ..self
        }
    }
}

/// One item of a streamed model response.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamed model chunk graphmind can read",
    label = "the items of a `#[graphmind::model_step]` stream must implement `graphmind::model::StepChunk`",
    note = "implement `graphmind::model::StepChunk` for it: `deltas` reports the text, reasoning and tool-argument pieces (see `examples/src/lib.rs`)"
)]
pub trait StepChunk {
    /// Reports the chunk's deltas: answer text, reasoning, or tool-call arguments.
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str));
    /// Reports the chunk's deltas with the tool call each tool-argument piece belongs to (its
    /// index in the reply and, when the chunk carries them, the call id and tool name), so
    /// that parallel tool calls stream apart in the debugger. graphmind reads a chunk through
    /// this method only; the default reports [`deltas`](StepChunk::deltas) naming no call.
    /// An SDK whose chunks stream several calls by index overrides it:
    ///
    /// ```ignore
    /// fn call_deltas(&self, emit: &mut dyn FnMut(Delta<'_>)) {
    ///     for call in &self.tool_calls {
    ///         let mut d = Delta::tool_args(call.index, &call.arguments);
    ///         if let Some(id) = &call.id { d = d.with_call_id(id); }
    ///         if let Some(name) = &call.name { d = d.with_tool_name(name); }
    ///         emit(d);
    ///     }
    /// }
    /// ```
    fn call_deltas(&self, emit: &mut dyn FnMut(Delta<'_>)) {
        self.deltas(&mut |kind, text| emit(Delta::new(kind, text)));
    }
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
    fn call_deltas(&self, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Ok(c) = self {
            c.call_deltas(emit);
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
