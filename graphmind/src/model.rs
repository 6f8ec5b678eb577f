//! What graphmind reads from model requests, responses and stream chunks.
//!
//! Two ways to teach graphmind a type:
//! - **Your own types**: implement [`StepResponse`], [`StepChunk`] and (rarely)
//!   [`StepRequest`] for them; they are read through the default codec, [`Native`].
//! - **Another crate's types** (an SDK's `CreateChatCompletionResponse`, …): the orphan rule
//!   forbids implementing graphmind's traits for them outside that crate, so a *codec* — a
//!   type you own — reads them instead: implement [`ResponseCodec<TheirResponse>`],
//!   [`ChunkCodec<TheirChunk>`] and [`RequestCodec<TheirRequest>`] for it and name it on the
//!   attribute, `#[graphmind::model_step(codec = MyCodec)]`. An adapter crate ships such a
//!   codec for its SDK.
//!
//! A request is read for grouping: without a [`RequestCodec`] steps are grouped into one
//! invocation (one conversation) by the request's captured `messages` array (at the top
//! level or one level down), which OpenAI-, Anthropic- and Gemini-style requests already have.
//! A [`RequestCodec`] may also name the request's API ([`RequestCodec::api`]) and have the
//! request recorded as the step's whole input ([`RequestCodec::bare_input`]), so that a step
//! over an SDK's request records what the SDK adapter's wrapped client records.

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

/// A non-streaming model response of your own crate (for another crate's type, see
/// [`ResponseCodec`]). Every method has a default reporting nothing.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the response of a #[graphmind::model_step]",
    label = "it must implement `graphmind::model::StepResponse`, or be read through a codec",
    note = "implement `graphmind::model::StepResponse` for it if it is your own type (every method has a default)",
    note = "a type of another crate (an SDK's response) cannot implement it: read it through a codec, `#[graphmind::model_step(codec = MyCodec)]` with `impl graphmind::model::ResponseCodec<TheirResponse> for MyCodec`",
    note = "if it is a stream under another name (a type alias such as an SDK's `ChatCompletionResponseStream`), write `stream = true` on the attribute: `#[graphmind::model_step(stream = true)]`"
)]
pub trait StepResponse {
    /// Token usage, if the response reports it.
    fn usage(&self) -> Option<Usage> {
        None
    }
    /// Why the model stopped, in the provider's spelling (`stop`, `tool_calls`, …).
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        None
    }
    /// The answer's text (see [`ResponseCodec::text`]).
    fn text(&self) -> Option<Cow<'_, str>> {
        None
    }
    /// The tool calls the model asked for, in order.
    fn tool_calls(&self) -> Vec<ToolCall<'_>> {
        Vec::new()
    }
    /// The model that answered.
    fn model(&self) -> Option<Cow<'_, str>> {
        None
    }
    /// The provider's response id.
    fn response_id(&self) -> Option<Cow<'_, str>> {
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

/// One item of a streamed model response of your own crate (for another crate's type, see
/// [`ChunkCodec`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamed model chunk graphmind can read",
    label = "the items of a `#[graphmind::model_step]` stream must implement `graphmind::model::StepChunk`",
    note = "implement `graphmind::model::StepChunk` for it if it is your own type: `deltas` reports the text, reasoning and tool-argument pieces (see `examples/src/lib.rs`)",
    note = "a type of another crate (an SDK's chunk) cannot implement it: read it through a codec, `#[graphmind::model_step(codec = MyCodec)]` with `impl graphmind::model::ChunkCodec<TheirChunk> for MyCodec`"
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
    /// The chunk as JSON for replay (see [`ChunkCodec::to_recorded`]); `None` by default.
    /// A serde type writes `serde_json::to_value(self).ok()`.
    fn to_recorded(&self) -> Option<serde_json::Value> {
        None
    }
    /// A chunk rebuilt for replay (see [`ChunkCodec::from_recorded`]); `None` by default.
    /// A serde type writes `serde_json::from_value(value).ok()`.
    fn from_recorded(value: serde_json::Value) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = value;
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

/// A model request of your own crate: how steps are grouped into invocations (for another
/// crate's type, see [`RequestCodec`]). A step continues the previous invocation of its run
/// when its request has the same first message and more messages.
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
    /// Continues the invocation whose latest step answered with this response id (OpenAI
    /// Responses' `previous_response_id`); a new invocation when no step of the run did.
    After(String),
}

impl Grouping {
    /// Grouping from a request.
    pub fn of<R: StepRequest + ?Sized>(req: &R) -> Self {
        Self::Messages(
            hash_str(req.first_message().as_deref().unwrap_or("")),
            req.message_count(),
        )
    }

    /// A conversation's grouping: the first message's JSON text (`None` when the request
    /// has no messages) and how many messages it holds. The same grouping as
    /// [`Grouping::of`] a [`StepRequest`] reporting that first message and count, for
    /// adapters that read a typed request's messages without an impl of their own.
    ///
    /// ```
    /// use graphmind::model::Grouping;
    ///
    /// let first = r#"{"role":"system","content":"You are terse."}"#;
    /// let one = Grouping::conversation(Some(first), 1);
    /// let three = Grouping::conversation(Some(first), 3);
    /// // The same first message: one invocation, whose later steps hold more messages.
    /// match (one, three) {
    ///     (Grouping::Messages(a, 1), Grouping::Messages(b, 3)) => assert_eq!(a, b),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn conversation(first_message_json: Option<&str>, count: usize) -> Self {
        Self::Messages(hash_str(first_message_json.unwrap_or("")), count)
    }

    /// An explicit key.
    pub fn explicit(key: impl std::fmt::Display) -> Self {
        Self::Explicit(key.to_string())
    }

    /// Continues the invocation whose latest step answered with `response_id`.
    pub fn after(response_id: impl std::fmt::Display) -> Self {
        Self::After(response_id.to_string())
    }
}

/// One tool call of a model response, as [`ResponseCodec::tool_calls`] reports it: on
/// `node.finished.output.toolCalls` in GraphMind 0.6's shape `{id, name, input, inputText?}`
/// (see [`Reply::tool_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The call's id (`call_…`), if the provider gives one.
    pub id: Option<Cow<'a, str>>,
    /// The called tool's name.
    pub name: Cow<'a, str>,
    /// The arguments as the model wrote them (usually a JSON object as text).
    pub arguments: Cow<'a, str>,
}

impl<'a> ToolCall<'a> {
    /// A call of tool `name` with `arguments` (as text).
    #[must_use]
    pub fn new(name: impl Into<Cow<'a, str>>, arguments: impl Into<Cow<'a, str>>) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// Names the call's id.
    #[must_use]
    pub fn with_id(self, id: impl Into<Cow<'a, str>>) -> Self {
        Self {
            id: Some(id.into()),
            ..self
        }
    }
}

/// Reads a model response of type `R` for graphmind: a *codec* is a type of your own (or an
/// adapter crate's) that knows another crate's response type. A trait of graphmind's cannot
/// be implemented for a type of another crate from a third crate (the orphan rule), but
/// `impl ResponseCodec<TheirType> for MyCodec` can, because `MyCodec` is yours. Name the
/// codec on the attribute — `#[graphmind::model_step(codec = MyCodec)]` — or use it with
/// [`Node`](crate::node::Node) directly. Every method has a default reporting nothing.
///
/// ```
/// use std::borrow::Cow;
/// use graphmind::model::{ResponseCodec, ToolCall, Usage};
///
/// // A type from another crate (here `serde_json::Value`, shaped like an OpenAI reply).
/// struct Chat;
///
/// impl ResponseCodec<serde_json::Value> for Chat {
///     fn usage(r: &serde_json::Value) -> Option<Usage> {
///         let u = r.get("usage")?;
///         Some(Usage::inclusive(u["prompt_tokens"].as_u64()?, u["completion_tokens"].as_u64()?))
///     }
///     fn finish_reason(r: &serde_json::Value) -> Option<Cow<'_, str>> {
///         r.pointer("/choices/0/finish_reason")?.as_str().map(Cow::Borrowed)
///     }
///     fn text(r: &serde_json::Value) -> Option<Cow<'_, str>> {
///         r.pointer("/choices/0/message/content")?.as_str().map(Cow::Borrowed)
///     }
///     fn tool_calls(r: &serde_json::Value) -> Vec<ToolCall<'_>> {
///         let calls = r.pointer("/choices/0/message/tool_calls").and_then(|c| c.as_array());
///         calls.into_iter().flatten().filter_map(|c| {
///             let f = c.get("function")?;
///             let call = ToolCall::new(f["name"].as_str()?, f["arguments"].as_str()?);
///             Some(match c["id"].as_str() { Some(id) => call.with_id(id), None => call })
///         }).collect()
///     }
/// }
///
/// let reply = serde_json::json!({
///     "choices": [{"message": {"content": "Lisbon"}, "finish_reason": "stop"}],
///     "usage": {"prompt_tokens": 12, "completion_tokens": 3},
/// });
/// assert_eq!(Chat::text(&reply).as_deref(), Some("Lisbon"));
/// assert_eq!(Chat::usage(&reply), Some(Usage::inclusive(12, 3)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a codec for the response of this #[graphmind::model_step]",
    label = "`{Self}` must implement `graphmind::model::ResponseCodec<{R}>`, for the response type `{R}` returned here",
    note = "write `impl graphmind::model::ResponseCodec<{R}> for {Self}` (it reads usage, finish reason, text and tool calls), or leave `codec = …` out to read a response of your own crate that implements `graphmind::model::StepResponse`",
    note = "if it is a stream under another name (a type alias such as an SDK's `ChatCompletionResponseStream`), write `stream = true` on the attribute: `#[graphmind::model_step(codec = …, stream = true)]`"
)]
pub trait ResponseCodec<R: ?Sized> {
    /// Token usage, if the response reports it.
    fn usage(response: &R) -> Option<Usage> {
        let _ = response;
        None
    }
    /// Why the model stopped, in the provider's spelling (`stop`, `tool_calls`, `end_turn`,
    /// …); graphmind normalizes it with [`FinishReason::from_raw`].
    fn finish_reason(response: &R) -> Option<Cow<'_, str>> {
        let _ = response;
        None
    }
    /// The answer's text. A codec that reads it makes `node.finished.output` GraphMind 0.6's
    /// `{text, finishReason, rawFinishReason, toolCalls}` (the full response kept under
    /// `response`); return `Some("")` for a reply that has tool calls but no text, `None`
    /// only when the response is not a reply at all (it is then recorded as it serializes).
    fn text(response: &R) -> Option<Cow<'_, str>> {
        let _ = response;
        None
    }
    /// The tool calls the model asked for, in order.
    fn tool_calls(response: &R) -> Vec<ToolCall<'_>> {
        let _ = response;
        Vec::new()
    }
    /// The model that answered (`node.finished.model`).
    fn model(response: &R) -> Option<Cow<'_, str>> {
        let _ = response;
        None
    }
    /// The provider's response id (`node.finished.responseId`); a later request naming it as
    /// its previous response continues the invocation (see [`RequestCodec`]).
    fn response_id(response: &R) -> Option<Cow<'_, str>> {
        let _ = response;
        None
    }
}

/// What a [`ChunkCodec`] keeps between the chunks of one stream (see
/// [`ChunkCodec::stream_deltas`]): one value of the codec's choosing, created on first use.
/// Empty (and free) for a codec that keeps nothing.
#[derive(Default)]
pub struct ChunkState {
    slot: Option<Box<dyn std::any::Any + Send>>,
}

impl std::fmt::Debug for ChunkState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkState")
            .field("used", &self.slot.is_some())
            .finish()
    }
}

impl ChunkState {
    /// The state of type `T`, created with `T::default()` on first use (or when a value of
    /// another type was kept: one stream is read by one codec, which keeps one type).
    pub fn get_or_default<T: Default + Send + 'static>(&mut self) -> &mut T {
        if !self.slot.as_ref().is_some_and(|s| s.is::<T>()) {
            self.slot = Some(Box::new(T::default()));
        }
        match self.slot.as_mut().and_then(|s| s.downcast_mut::<T>()) {
            Some(t) => t,
            None => unreachable!("the slot was just filled with a T"),
        }
    }
}

/// Reads one item of a streamed model response of type `C` (see [`ResponseCodec`] for why a
/// codec). A stream of `Result<Chunk, Error>` items needs the impl for that `Result` type:
/// report the `Ok` chunk's deltas and the error's text from [`error`](ChunkCodec::error).
///
/// ```
/// use graphmind::model::{ChunkCodec, Delta, DeltaKind};
///
/// struct Chat;
///
/// impl ChunkCodec<serde_json::Value> for Chat {
///     fn call_deltas(chunk: &serde_json::Value, emit: &mut dyn FnMut(Delta<'_>)) {
///         if let Some(text) = chunk.pointer("/choices/0/delta/content").and_then(|t| t.as_str()) {
///             emit(Delta::new(DeltaKind::Text, text));
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a codec for the chunks streamed by this #[graphmind::model_step]",
    label = "`{Self}` must implement `graphmind::model::ChunkCodec<C>`, where `C` is the item type of the stream returned here",
    note = "write `impl graphmind::model::ChunkCodec<C> for {Self}`, `C` being the stream's item type (it reads each chunk's deltas, usage, finish reason and error), or leave `codec = …` out to read chunks of your own crate that implement `graphmind::model::StepChunk`"
)]
pub trait ChunkCodec<C: ?Sized> {
    /// Reports the chunk's deltas (text, reasoning, tool-call arguments naming their call).
    fn call_deltas(chunk: &C, emit: &mut dyn FnMut(Delta<'_>));
    /// [`call_deltas`](ChunkCodec::call_deltas) with state kept across the chunks of one
    /// stream, for chunks that cannot be read one at a time: a tool call named by its id on
    /// its first piece only, or a provider that sends the arguments so far instead of each
    /// piece. Every chunk of one stream gets the same [`ChunkState`], empty at the start.
    /// The default ignores it and calls `call_deltas`.
    ///
    /// ```
    /// use graphmind::model::{ChunkCodec, ChunkState, Delta};
    ///
    /// /// Chunks carrying a call's arguments so far; the debugger wants each new piece.
    /// struct SoFar;
    ///
    /// impl ChunkCodec<String> for SoFar {
    ///     fn call_deltas(_: &String, _: &mut dyn FnMut(Delta<'_>)) {}
    ///     fn stream_deltas(chunk: &String, state: &mut ChunkState, emit: &mut dyn FnMut(Delta<'_>)) {
    ///         let seen: &mut String = state.get_or_default();
    ///         if let Some(new) = chunk.strip_prefix(seen.as_str()).filter(|n| !n.is_empty()) {
    ///             emit(Delta::tool_args(0, new));
    ///         }
    ///         seen.clone_from(chunk);
    ///     }
    /// }
    ///
    /// let mut state = ChunkState::default();
    /// let mut pieces = Vec::new();
    /// for chunk in ["{\"ci", "{\"city\"", "{\"city\": 1}"] {
    ///     SoFar::stream_deltas(&chunk.to_owned(), &mut state, &mut |d| pieces.push(d.text.to_owned()));
    /// }
    /// assert_eq!(pieces, ["{\"ci", "ty\"", ": 1}"]);
    /// ```
    fn stream_deltas(chunk: &C, state: &mut ChunkState, emit: &mut dyn FnMut(Delta<'_>)) {
        let _ = state;
        Self::call_deltas(chunk, emit);
    }
    /// Usage, usually on the last chunk.
    fn usage(chunk: &C) -> Option<Usage> {
        let _ = chunk;
        None
    }
    /// Finish reason in the provider's spelling, usually on the last chunk.
    fn finish_reason(chunk: &C) -> Option<Cow<'_, str>> {
        let _ = chunk;
        None
    }
    /// An error carried by the chunk (observed, not gated).
    fn error(chunk: &C) -> Option<String> {
        let _ = chunk;
        None
    }
    /// The chunk as JSON, kept in the step's `node.finished` (`recordedChunks`) so that a
    /// replay of the run can hand the caller the same chunks as a stream. The default
    /// records nothing, and a replay runs such a step live. A codec of serde chunk types
    /// writes `serde_json::to_value(chunk).ok()`.
    fn to_recorded(chunk: &C) -> Option<serde_json::Value> {
        let _ = chunk;
        None
    }
    /// A chunk rebuilt from what [`to_recorded`](ChunkCodec::to_recorded) kept
    /// (`serde_json::from_value(value).ok()`); `None` by default.
    fn from_recorded(value: serde_json::Value) -> Option<C>
    where
        C: Sized,
    {
        let _ = value;
        None
    }
}

/// Reads a model request of type `Q` to group steps into invocations (see [`Grouping`]; see
/// [`ResponseCodec`] for why a codec). Without a `RequestCodec` (or a [`StepRequest`] impl)
/// steps are grouped by the captured input's `messages` array.
///
/// ```
/// use std::borrow::Cow;
/// use graphmind::model::{Grouping, RequestCodec};
///
/// struct Responses;
///
/// impl RequestCodec<serde_json::Value> for Responses {
///     fn previous_response_id(q: &serde_json::Value) -> Option<Cow<'_, str>> {
///         q.get("previous_response_id")?.as_str().map(Cow::Borrowed)
///     }
/// }
///
/// let next = serde_json::json!({"previous_response_id": "resp_1", "input": "and then?"});
/// assert_eq!(Responses::grouping(&next), Grouping::after("resp_1"));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a codec for model requests of type `{Q}`",
    label = "`graphmind::model::RequestCodec<{Q}>` is not implemented for the codec",
    note = "implement `graphmind::model::RequestCodec<{Q}>` for the codec to group steps into invocations"
)]
pub trait RequestCodec<Q: ?Sized> {
    /// The first message (usually the system prompt or the user's question), as text.
    fn first_message(request: &Q) -> Option<Cow<'_, str>> {
        let _ = request;
        None
    }
    /// Number of messages in the request.
    fn message_count(request: &Q) -> usize {
        let _ = request;
        0
    }
    /// The response this request continues (OpenAI Responses' `previous_response_id`).
    fn previous_response_id(request: &Q) -> Option<Cow<'_, str>> {
        let _ = request;
        None
    }
    /// The API the request is made to, recorded as the step's `api` on `node.finished`
    /// (`chat.completions`, `responses`, …), as an adapter's wrapped client records it, so
    /// that a `#[graphmind::model_step(codec = …)]` over the same request records the same
    /// frames. `None` by default: no `api`.
    fn api() -> Option<&'static str> {
        None
    }
    /// Whether the step records the request itself as its input, as a wrapped client does,
    /// rather than the step's arguments (`{req: request}`). It applies when the request is
    /// the one argument the input records (`skip(…)` the others: a client, a key); an edit
    /// at the step's `before` gate then names the request's fields. `false` by default.
    fn bare_input() -> bool {
        false
    }
    /// The step's invocation: [`Grouping::After`] the previous response when there is one,
    /// else [`Grouping::Messages`] when the first message is known, else [`Grouping::Auto`].
    fn grouping(request: &Q) -> Grouping {
        if let Some(prev) = Self::previous_response_id(request) {
            return Grouping::after(prev);
        }
        match Self::first_message(request) {
            Some(first) => Grouping::Messages(hash_str(&first), Self::message_count(request)),
            None => Grouping::Auto,
        }
    }
}

/// The codec used when `codec = …` is not given: it reads responses, chunks and requests
/// through their own [`StepResponse`], [`StepChunk`] and [`StepRequest`] impls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Native;

impl<R: StepResponse + ?Sized> ResponseCodec<R> for Native {
    fn usage(response: &R) -> Option<Usage> {
        response.usage()
    }
    fn finish_reason(response: &R) -> Option<Cow<'_, str>> {
        response.finish_reason()
    }
    fn text(response: &R) -> Option<Cow<'_, str>> {
        response.text()
    }
    fn tool_calls(response: &R) -> Vec<ToolCall<'_>> {
        response.tool_calls()
    }
    fn model(response: &R) -> Option<Cow<'_, str>> {
        response.model()
    }
    fn response_id(response: &R) -> Option<Cow<'_, str>> {
        response.response_id()
    }
}

impl<C: StepChunk + ?Sized> ChunkCodec<C> for Native {
    fn call_deltas(chunk: &C, emit: &mut dyn FnMut(Delta<'_>)) {
        chunk.call_deltas(emit);
    }
    fn usage(chunk: &C) -> Option<Usage> {
        chunk.usage()
    }
    fn finish_reason(chunk: &C) -> Option<Cow<'_, str>> {
        chunk.finish_reason()
    }
    fn error(chunk: &C) -> Option<String> {
        chunk.error()
    }
    fn to_recorded(chunk: &C) -> Option<serde_json::Value> {
        chunk.to_recorded()
    }
    fn from_recorded(value: serde_json::Value) -> Option<C>
    where
        C: Sized,
    {
        C::from_recorded(value)
    }
}

impl<Q: StepRequest + ?Sized> RequestCodec<Q> for Native {
    fn first_message(request: &Q) -> Option<Cow<'_, str>> {
        request.first_message()
    }
    fn message_count(request: &Q) -> usize {
        request.message_count()
    }
}

/// Why a model stopped, normalized as GraphMind 0.6 names it (`node.finished.output
/// .finishReason`); the provider's own spelling goes beside it as `rawFinishReason`.
///
/// ```
/// use graphmind::model::FinishReason;
///
/// assert_eq!(FinishReason::from_raw("tool_calls"), FinishReason::ToolCalls);
/// assert_eq!(FinishReason::from_raw("end_turn").as_str(), "stop");
/// assert_eq!(FinishReason::from_raw("MAX_TOKENS"), FinishReason::Length);
/// assert_eq!(FinishReason::from_raw("something new"), FinishReason::Other);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinishReason {
    /// The model ended its answer (`stop`, `end_turn`, `stop_sequence`, `STOP`, `completed`).
    Stop,
    /// A token limit cut it (`length`, `max_tokens`, `MAX_TOKENS`, `max_output_tokens`,
    /// `incomplete`).
    Length,
    /// The model asked for tools (`tool_calls`, `function_call`, `tool_use`).
    ToolCalls,
    /// A safety filter stopped it (`content_filter`, `refusal`, `SAFETY`, `RECITATION`,
    /// `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`).
    ContentFilter,
    /// The provider reported an error (`error`, `failed`).
    Error,
    /// Any other reason (kept as `rawFinishReason`).
    Other,
}

impl FinishReason {
    /// Normalizes a provider's finish reason (OpenAI Chat and Responses, Anthropic, Gemini,
    /// and the normalized names themselves); case and `-`/`_` do not matter.
    #[must_use]
    pub fn from_raw(raw: &str) -> Self {
        let key = raw.trim().to_ascii_lowercase().replace('-', "_");
        match key.as_str() {
            "stop" | "end_turn" | "stop_sequence" | "completed" | "finish_reason_stop" | "end"
            | "eos" => Self::Stop,
            "length"
            | "max_tokens"
            | "max_output_tokens"
            | "incomplete"
            | "model_context_window_exceeded" => Self::Length,
            "tool_calls" | "function_call" | "tool_use" | "tool_call" => Self::ToolCalls,
            "content_filter" | "refusal" | "safety" | "recitation" | "blocklist"
            | "prohibited_content" | "spii" | "image_safety" => Self::ContentFilter,
            "error" | "failed" | "malformed_function_call" => Self::Error,
            _ => Self::Other,
        }
    }

    /// The normalized name: `stop`, `length`, `tool-calls`, `content-filter`, `error` or
    /// `other`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool-calls",
            Self::ContentFilter => "content-filter",
            Self::Error => "error",
            Self::Other => "other",
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model step's `node.finished.output` in GraphMind 0.6's shape:
/// `{text, finishReason, rawFinishReason, toolCalls}`, with the full response kept under
/// `response` when given. `finishReason` is normalized ([`FinishReason`]); the provider's
/// spelling is `rawFinishReason`; each tool call is `{id, name, input, inputText?}`
/// ([`Reply::tool_call`]). An answer that ended normally (`stop`, `end_turn`,
/// `completed`, …) with tool calls in it stopped for them: its `finishReason` is
/// `tool-calls` (providers such as the Responses API report `completed` then). A
/// `#[graphmind::model_step]` whose codec reads the text records exactly this; an adapter
/// that finishes its node by hand builds it the same way.
///
/// ```
/// use graphmind::model::{Reply, ToolCall};
///
/// let out = Reply::new("")
///     .finish_reason("tool_calls")
///     .tool_call(ToolCall::new("lookup_order", r#"{"id":"A1"}"#).with_id("call_1"))
///     .into_value();
/// assert_eq!(out["finishReason"], "tool-calls");
/// assert_eq!(out["rawFinishReason"], "tool_calls");
/// assert_eq!(out["toolCalls"][0]["input"]["id"], "A1");
/// assert_eq!(out["toolCalls"][0]["id"], "call_1");
///
/// let ended = Reply::new("")
///     .finish_reason("completed")
///     .tool_call(ToolCall::new("lookup_order", "{}"))
///     .into_value();
/// assert_eq!(ended["finishReason"], "tool-calls");
/// assert_eq!(ended["rawFinishReason"], "completed");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    text: String,
    raw_finish: Option<String>,
    tool_calls: Vec<serde_json::Value>,
    response: Option<serde_json::Value>,
}

impl Reply {
    /// A reply with this text, no finish reason and no tool calls.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            raw_finish: None,
            tool_calls: Vec::new(),
            response: None,
        }
    }

    /// Reads a response through a codec: `None` when the codec does not read its text (the
    /// response is then recorded as it serializes). The response itself goes under `response`.
    pub fn read<K, R>(response: &R) -> Option<Self>
    where
        K: ResponseCodec<R>,
        R: serde::Serialize + ?Sized,
    {
        let reply = Self::parts::<K, R>(response)?;
        Some(reply.response(serde_json::to_value(response).unwrap_or_default()))
    }

    /// [`Reply::read`] without the response.
    pub(crate) fn parts<K: ResponseCodec<R>, R: ?Sized>(response: &R) -> Option<Self> {
        let text = K::text(response)?;
        let mut reply = Self::new(text.into_owned());
        if let Some(raw) = K::finish_reason(response) {
            reply = reply.finish_reason(&raw);
        }
        for call in K::tool_calls(response) {
            reply = reply.tool_call(call);
        }
        Some(reply)
    }

    /// With the provider's finish reason (normalized into `finishReason`, kept as
    /// `rawFinishReason`).
    #[must_use]
    pub fn finish_reason(self, raw: &str) -> Self {
        Self {
            raw_finish: Some(raw.to_owned()),
            ..self
        }
    }

    /// With one more tool call, recorded as the GraphMind 0.6 clients record one:
    /// `{id, name, input, inputText?}`. `id` only when the provider gave a non-empty one;
    /// `input` the arguments parsed as JSON (`{}` for empty or blank arguments); arguments
    /// that are not JSON (cut off by a token limit) give `input: null` and the text as
    /// `inputText`. A call whose name never arrived keeps `name: ""` (a viewer then names it
    /// by its id) rather than vanishing.
    #[must_use]
    pub fn tool_call(mut self, call: ToolCall<'_>) -> Self {
        let mut entry = serde_json::Map::new();
        if let Some(id) = call.id.filter(|id| !id.is_empty()) {
            entry.insert("id".into(), id.into_owned().into());
        }
        entry.insert("name".into(), call.name.into_owned().into());
        if call.arguments.trim().is_empty() {
            entry.insert(
                "input".into(),
                serde_json::Value::Object(Default::default()),
            );
        } else if let Ok(input) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
            entry.insert("input".into(), input);
        } else {
            entry.insert("input".into(), serde_json::Value::Null);
            entry.insert("inputText".into(), call.arguments.into_owned().into());
        }
        self.tool_calls.push(entry.into());
        self
    }

    /// With the full response, recorded under `response`.
    #[must_use]
    pub fn response(self, response: serde_json::Value) -> Self {
        Self {
            response: Some(response),
            ..self
        }
    }

    /// The wire form.
    #[must_use]
    pub fn into_value(self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("text".into(), self.text.into());
        if let Some(raw) = self.raw_finish {
            let reason = match FinishReason::from_raw(&raw) {
                FinishReason::Stop if !self.tool_calls.is_empty() => FinishReason::ToolCalls,
                reason => reason,
            };
            out.insert("finishReason".into(), reason.as_str().into());
            out.insert("rawFinishReason".into(), raw.into());
        }
        out.insert("toolCalls".into(), self.tool_calls.into());
        if let Some(response) = self.response {
            out.insert("response".into(), response);
        }
        out.into()
    }
}

impl From<Reply> for serde_json::Value {
    fn from(reply: Reply) -> Self {
        reply.into_value()
    }
}

/// A streamed model answer as it accumulates: the text deltas and each tool call's argument
/// pieces (by index, else by id), recorded at the stream's end as a [`Reply`].
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub(crate) struct StreamedReply {
    text: String,
    /// The tool calls in the order they first appeared.
    calls: Vec<StreamedCall>,
    /// Set once the text and arguments reach [`StreamedReply::CAP`]: the rest is not kept.
    truncated: bool,
}

/// One streamed tool call: its index, id and name as first named, and its argument pieces.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
struct StreamedCall {
    index: Option<u64>,
    id: Option<String>,
    name: Option<String>,
    args: String,
}

#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
impl StreamedReply {
    /// Bytes of text and arguments kept (the node's payload budget cuts the output further).
    const CAP: usize = 1 << 20;

    /// Adds one text or tool-argument delta; other kinds (reasoning) are not part of it.
    pub(crate) fn push(&mut self, delta: &Delta<'_>) {
        let kept = self.text.len() + self.calls.iter().map(|c| c.args.len()).sum::<usize>();
        let room = Self::CAP.saturating_sub(kept);
        let piece = match delta.text.len() <= room {
            true => delta.text,
            false => {
                self.truncated = true;
                let mut end = room;
                while !delta.text.is_char_boundary(end) {
                    end -= 1;
                }
                &delta.text[..end]
            }
        };
        match delta.kind {
            DeltaKind::Text => self.text.push_str(piece),
            DeltaKind::ToolArgs => self.push_args(delta, piece),
            _ => {}
        }
    }

    fn push_args(&mut self, delta: &Delta<'_>, piece: &str) {
        let found = self
            .calls
            .iter()
            .position(|c| match (delta.index, delta.call_id) {
                (Some(i), _) => c.index == Some(i),
                (None, Some(id)) => c.id.as_deref() == Some(id),
                (None, None) => true,
            });
        let at = found.unwrap_or_else(|| {
            self.calls.push(StreamedCall {
                index: delta.index,
                ..StreamedCall::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[at];
        if let (None, Some(id)) = (&call.id, delta.call_id) {
            call.id = Some(id.to_owned());
        }
        if let (None, Some(name)) = (&call.name, delta.tool_name) {
            call.name = Some(name.to_owned());
        }
        call.args.push_str(piece);
    }

    /// The output: `{text, finishReason, rawFinishReason, toolCalls}` (and `truncated: true`
    /// when the cap cut it).
    pub(crate) fn into_value(self, finish_reason: Option<&str>) -> serde_json::Value {
        let mut reply = Reply::new(self.text);
        if let Some(raw) = finish_reason {
            reply = reply.finish_reason(raw);
        }
        for StreamedCall { id, name, args, .. } in self.calls {
            let call = ToolCall::new(name.unwrap_or_default(), args);
            reply = reply.tool_call(match id {
                Some(id) => call.with_id(id),
                None => call,
            });
        }
        let mut value = reply.into_value();
        if self.truncated
            && let Some(map) = value.as_object_mut()
        {
            map.insert("truncated".into(), true.into());
        }
        value
    }
}

pub(crate) fn hash_str(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adapters' former prompt-prefix shim: a first message's JSON and a count.
    struct Shim(Option<String>, usize);

    impl StepRequest for Shim {
        fn first_message(&self) -> Option<Cow<'_, str>> {
            self.0.as_deref().map(Cow::Borrowed)
        }
        fn message_count(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn a_conversation_groups_as_a_step_request_with_its_first_message_and_count() {
        let cases = [
            (Some(r#"{"role":"system","content":"be brief"}"#), 1),
            (Some(r#"{"role":"user","content":"hi \"there\""}"#), 7),
            (Some(""), 0),
            (None, 0),
            (None, 3),
        ];
        for (first, count) in cases {
            let shim = Grouping::of(&Shim(first.map(str::to_owned), count));
            assert_eq!(
                Grouping::conversation(first, count),
                shim,
                "{first:?} {count}"
            );
        }
        // The hash is the first message's text: a different message, a different invocation.
        assert_ne!(
            Grouping::conversation(Some("a"), 2),
            Grouping::conversation(Some("b"), 2)
        );
        assert_eq!(
            Grouping::conversation(Some("a"), 2),
            Grouping::Messages(hash_str("a"), 2)
        );
    }

    #[test]
    fn a_streamed_reply_keeps_at_most_its_cap_and_says_so() {
        let mut reply = StreamedReply::default();
        let big = "é".repeat(StreamedReply::CAP / 2 + 10);
        reply.push(&Delta::new(DeltaKind::Text, &big));
        reply.push(&Delta::tool_args(0, "{}"));
        reply.push(&Delta::new(DeltaKind::Reasoning, "not kept"));
        let out = reply.into_value(None);
        assert!(
            out["text"]
                .as_str()
                .is_some_and(|t| t.len() <= StreamedReply::CAP)
        );
        assert_eq!(out["truncated"], true);
        assert!(out.get("finishReason").is_none(), "{}", out["finishReason"]);
    }

    #[test]
    fn tool_argument_pieces_without_an_index_join_by_call_id() {
        let mut reply = StreamedReply::default();
        reply.push(&Delta::new(DeltaKind::ToolArgs, "{\"a\":").with_call_id("c1"));
        reply.push(&Delta::new(DeltaKind::ToolArgs, "{\"b\":").with_call_id("c2"));
        reply.push(&Delta::new(DeltaKind::ToolArgs, "1}").with_call_id("c1"));
        reply.push(&Delta::new(DeltaKind::ToolArgs, "2}").with_call_id("c2"));
        let out = reply.into_value(Some("tool_use"));
        assert_eq!(
            out["toolCalls"],
            serde_json::json!([{"id": "c1", "name": "", "input": {"a": 1}},
                               {"id": "c2", "name": "", "input": {"b": 2}}])
        );
        assert_eq!(out["finishReason"], "tool-calls");
    }

    /// The GraphMind 0.6 client fixtures' `toolCalls` cases (`{id, name, args}` in, the
    /// recorded entry out), for the ones a Rust codec can produce (arguments as text).
    #[test]
    fn tool_calls_take_the_reference_shape_id_name_input_input_text() {
        let cases = [
            (
                Some("call_1"),
                "search",
                r#"{"q":"x"}"#,
                serde_json::json!({"id": "call_1", "name": "search", "input": {"q": "x"}}),
            ),
            (
                Some("call_2"),
                "write",
                r#"{"path":"a.txt","content":"hel"#,
                serde_json::json!({"id": "call_2", "name": "write", "input": null, "inputText": r#"{"path":"a.txt","content":"hel"#}),
            ),
            (
                None,
                "now",
                "",
                serde_json::json!({"name": "now", "input": {}}),
            ),
            (
                None,
                "now",
                "  ",
                serde_json::json!({"name": "now", "input": {}}),
            ),
            (
                None,
                "many",
                "[1,2]",
                serde_json::json!({"name": "many", "input": [1, 2]}),
            ),
            (
                Some(""),
                "x",
                "{}",
                serde_json::json!({"name": "x", "input": {}}),
            ),
            (
                None,
                "x",
                "null",
                serde_json::json!({"name": "x", "input": null}),
            ),
        ];
        for (id, name, args, want) in cases {
            let call = ToolCall::new(name, args);
            let call = match id {
                Some(id) => call.with_id(id),
                None => call,
            };
            let out = Reply::new("").tool_call(call).into_value();
            assert_eq!(out["toolCalls"][0], want, "{id:?} {name} {args}");
        }
    }
}

thread_local! {
    /// The provider-minted paths of the model step being started on this thread
    /// ([`provider_minted`]).
    static MINTED: std::cell::Cell<&'static [&'static str]> = const { std::cell::Cell::new(&[]) };
}

/// Starts a model step (`start` calls one of [`Node`](crate::node::Node)'s `start_step*`)
/// whose request holds fields the *provider* minted, not the program: a replay does not
/// compare them with the recording. An adapter names them once per SDK, as JSON paths into
/// the recorded request: `$.key`, `$.key.inner`, `[*]` for every element of an array and `*`
/// for every key of an object (`$.chat_history[*].origin`: each history message's origin).
/// A replay answers a step with the recorded answer, but an SDK may rebuild the next request
/// from it with ids and timestamps of its own (rig's `origin` bookkeeping); without this,
/// every such replay would diverge on an id no program controls.
///
/// ```
/// use graphmind::model::{Grouping, provider_minted};
/// use graphmind::node::Node;
///
/// const MINTED: &[&str] = &["$.history[*].response_id"];
/// let request = serde_json::json!({"history": [{"text": "hi", "response_id": "resp_1"}]});
/// let node = provider_minted(MINTED, || Node::start_step(request, Grouping::Auto));
/// # drop(node);
/// ```
pub fn provider_minted<R>(paths: &'static [&'static str], start: impl FnOnce() -> R) -> R {
    struct Reset(&'static [&'static str]);
    impl Drop for Reset {
        fn drop(&mut self) {
            MINTED.with(|m| m.set(self.0));
        }
    }
    let _reset = Reset(MINTED.with(|m| m.replace(paths)));
    start()
}

/// The provider-minted paths of the step being started on this thread.
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub(crate) fn minted_now() -> &'static [&'static str] {
    MINTED.with(std::cell::Cell::get)
}

/// `value` without the fields at `paths` (see [`provider_minted`]); `None` when it has none
/// of them (compare `value` itself then).
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub(crate) fn without_minted(
    value: &serde_json::Value,
    paths: &[&str],
) -> Option<serde_json::Value> {
    let mut out: Option<serde_json::Value> = None;
    for p in paths {
        let steps = path_steps(p);
        if steps.is_empty() || !has_path(value, &steps) {
            continue;
        }
        remove_path(out.get_or_insert_with(|| value.clone()), &steps);
    }
    out
}

/// One step of a provider-minted path.
#[derive(Debug, PartialEq)]
enum PathStep<'a> {
    Key(&'a str),
    /// `*`: every key of an object.
    AnyKey,
    /// `[*]`: every element of an array.
    Each,
}

fn path_steps(path: &str) -> Vec<PathStep<'_>> {
    let rest = path.strip_prefix('$').unwrap_or(path);
    let mut steps = Vec::new();
    for seg in rest.split('.').filter(|s| !s.is_empty()) {
        let mut seg = seg;
        let mut each = 0;
        while let Some(s) = seg.strip_suffix("[*]") {
            seg = s;
            each += 1;
        }
        match seg {
            "" => {}
            "*" => steps.push(PathStep::AnyKey),
            k => steps.push(PathStep::Key(k)),
        }
        steps.extend(std::iter::repeat_with(|| PathStep::Each).take(each));
    }
    steps
}

fn has_path(v: &serde_json::Value, steps: &[PathStep<'_>]) -> bool {
    use serde_json::Value;
    let Some((first, rest)) = steps.split_first() else {
        return true;
    };
    match (first, v) {
        (PathStep::Key(k), Value::Object(m)) => m.get(*k).is_some_and(|v| has_path(v, rest)),
        (PathStep::AnyKey, Value::Object(m)) => m.values().any(|v| has_path(v, rest)),
        (PathStep::Each, Value::Array(a)) => a.iter().any(|v| has_path(v, rest)),
        _ => false,
    }
}

fn remove_path(v: &mut serde_json::Value, steps: &[PathStep<'_>]) {
    use serde_json::Value;
    let Some((first, rest)) = steps.split_first() else {
        return;
    };
    match (first, v) {
        (PathStep::Key(k), Value::Object(m)) if rest.is_empty() => {
            m.shift_remove(*k);
        }
        (PathStep::Key(k), Value::Object(m)) => {
            if let Some(v) = m.get_mut(*k) {
                remove_path(v, rest);
            }
        }
        (PathStep::AnyKey, Value::Object(m)) if rest.is_empty() => m.clear(),
        (PathStep::AnyKey, Value::Object(m)) => {
            for v in m.values_mut() {
                remove_path(v, rest);
            }
        }
        (PathStep::Each, Value::Array(a)) if rest.is_empty() => a.clear(),
        (PathStep::Each, Value::Array(a)) => {
            for v in a {
                remove_path(v, rest);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod minted_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn provider_minted_fields_are_left_out_of_the_compared_input() {
        let v = json!({
            "model": "m",
            "chat_history": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "yo", "origin": {"response_id": "chatcmpl-69"}}
            ],
            "meta": {"a": {"ts": 1}, "b": {"ts": 2, "keep": true}}
        });
        let out = without_minted(&v, &["$.chat_history[*].origin", "$.meta.*.ts"])
            .expect("has minted fields");
        assert_eq!(
            out,
            json!({
                "model": "m",
                "chat_history": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "yo"}
                ],
                "meta": {"a": {}, "b": {"keep": true}}
            })
        );
        assert_eq!(without_minted(&v, &["$.absent", "$.model.deeper"]), None);
        assert_eq!(minted_now(), &[] as &[&str]);
        let seen = provider_minted(&["$.x"], minted_now);
        assert_eq!(seen, &["$.x"]);
        assert_eq!(minted_now(), &[] as &[&str], "reset after the start");
    }
}
