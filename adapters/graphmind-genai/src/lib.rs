//! graphmind for [genai](https://docs.rs/genai): every `exec_chat` and `exec_chat_stream`
//! becomes one execution of the model step `llm:step`, live in the debugger and held at its
//! gates, whichever provider genai talks to (OpenAI, Anthropic, Gemini, Ollama, …).
//!
//! ```no_run
//! use genai::chat::{ChatMessage, ChatRequest};
//! use graphmind_genai::Instrument;
//!
//! # async fn demo() -> genai::Result<()> {
//! let _gm = graphmind::init(graphmind::Config::new("my-agent"));
//! let client = genai::Client::new()?.graphmind();
//! let req = ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")]);
//! let res = client.exec_chat("gpt-4o-mini", req, None).await?; // genai's own ChatResponse
//! # let _ = res; Ok(())
//! # }
//! ```
//!
//! # Per call
//! - `node.started` (`llm:step`, the request and the model name as input) before genai
//!   resolves or sends anything; on an invocation's first step a `graph.hint` names the
//!   request's `tools`, besides every `#[graphmind::tool]`.
//! - The `before` gate holds before the request leaves: nothing is in flight while it is
//!   held. Inject there skips the request (a `ChatResponse`, or for a stream a JSON array
//!   of `ChatStreamEvent`s).
//! - The `error` gate holds when the request fails, before the error reaches the caller:
//!   retry re-issues it (one execution, `attempts` on `node.finished`), inject substitutes
//!   a response (refused, and the gate stays held, when it does not deserialize into
//!   genai's type), continue returns genai's error untouched, abort ends the run. For a
//!   stream it holds when preparing the request fails (no target, no API key) and when the
//!   stream fails (genai reports an HTTP error as the stream's first `Err`). Once the caller
//!   has read an event of the reply (the connection broke mid-way) the gate offers no
//!   retry, and an inject is the rest of the reply, streamed after what was read.
//! - The `after` gate holds a `ChatResponse` before the caller sees it (inject substitutes
//!   it). Streams have none: the caller reads each event as it arrives.
//! - Streams are teed: the caller reads genai's events as genai yields them, in the
//!   adapter's [`ChatStream`] (genai's own cannot be built outside genai; the item type is
//!   the same), while `Chunk` → text, `ReasoningChunk` → reasoning and `ToolCallChunk` →
//!   tool arguments (per call, with its id and name) go out batched as `node.token`.
//! - Usage: a stream captures usage for the debugger even when the call did not ask
//!   (`capture_usage`), and the caller's end event then has none, as it would have
//!   without the adapter (see [`Client::client_captures_usage`]).
//! - `node.finished.output` is GraphMind 0.6's `{text, finishReason, rawFinishReason,
//!   toolCalls}`, with usage (total, cached, cache-creation and reasoning tokens), `api`
//!   (`genai.chat`), `model`, `responseId`, `attempts`, `streamed` and `injected`.
//!
//! # Tools
//! genai has no agent loop: your code runs the tools the model asks for. Mark them
//! `#[graphmind::tool(call_id = …)]` with genai's `ToolCall::call_id`, so each execution
//! is gated and shown under the model call that asked for it (see the example).
//!
//! # Fail-open
//! A dead or hung debugger never breaks a call (gates continue at once when detached). The
//! adapter's own bookkeeping runs under `catch_unwind`: should it panic, the call goes on
//! uninstrumented and a warning is printed, once a minute at most. With graphmind disabled
//! (`GRAPHMIND_DISABLED=1`, production, or graphmind's `enabled` feature off) the wrapper
//! calls straight through after one cheap check, and a stream is genai's own inside.

mod client;
mod codec;
mod output;
mod step;
mod stream;
mod tool_chunks;

pub use client::{Client, Instrument};
pub use codec::Genai;
pub use stream::{ChatStream, ChatStreamResponse};

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Runs adapter bookkeeping fail-open ([`graphmind::node::fail_open`] under this crate's name):
/// `None` after a rate-limited warning when it panicked, and the call goes on uninstrumented.
fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    graphmind::node::fail_open(env!("CARGO_PKG_NAME"), what, f)
}
