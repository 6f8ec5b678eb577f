//! graphmind for [async-openai](https://docs.rs/async-openai): every `chat().create`,
//! `chat().create_stream`, `responses().create` and `responses().create_stream` becomes one
//! execution of the model step `llm:step`, live in the debugger and held at its gates.
//!
//! ```no_run
//! use async_openai::types::chat::CreateChatCompletionRequest;
//! use graphmind_openai::Instrument;
//!
//! # async fn demo(request: CreateChatCompletionRequest) -> Result<(), async_openai::error::OpenAIError> {
//! let _gm = graphmind::init(graphmind::Config::new("my-agent"));
//! let client = async_openai::Client::new().graphmind();
//! let response = client.chat().create(request).await?; // the SDK's own type
//! # let _ = response; Ok(())
//! # }
//! ```
//!
//! # Per request
//! - `node.started` (`llm:step`, the request as input) before anything is dispatched; on an
//!   invocation's first step a `graph.hint` names the request's `tools` (built-in tools of
//!   the Responses API marked `providerExecuted`), besides every `#[graphmind::tool]`.
//! - The `before` gate holds before the HTTP request leaves: nothing is in flight while it
//!   is held. Inject there skips the request (a response, or for a stream a JSON array of
//!   chunks / events). For `create` (not streams) the request is editable there (GraphMind
//!   0.6 `edit-input`, from a hub that announces it): the edit, merged over the request's
//!   top-level fields and checked against the SDK's request type, is what is sent.
//! - The `error` gate holds when the request fails (an HTTP error status, a connection
//!   error, a body that does not deserialize) before the error reaches the caller: retry
//!   re-issues it (one execution, `attempts` on `node.finished`), inject substitutes a
//!   response built from the JSON (refused, and the gate stays held, when it does not
//!   deserialize into the SDK's type), continue returns the SDK's error untouched, abort
//!   ends the run.
//! - The `after` gate holds a non-streaming response before the caller sees it (inject
//!   substitutes the whole response). Streams have none: the caller reads each chunk as it
//!   arrives, so when the stream ends there is nothing left to hold or replace.
//! - Streams are teed: the caller reads exactly the SDK's items, when the SDK yields them,
//!   while text, refusal, reasoning and tool-argument deltas (by tool-call index, with id
//!   and name) go out batched as `node.token`.
//! - `node.finished.output` is GraphMind 0.6's `{text, finishReason, rawFinishReason,
//!   toolCalls}` (`finishReason` normalized to stop | length | tool-calls | content-filter |
//!   error | other), with usage (total, cached and reasoning tokens), `api`, `model`,
//!   `responseId`, `attempts`, `streamed` and `injected`.
//! - Built-in tools of the Responses API (web search, file search, code interpreter, image
//!   generation, MCP calls) become observe-only nodes `tool:<name>`, instanceId = the output
//!   item's id, `providerExecuted: true, ungated: true`.
//! - Grouping: a Responses request whose `previous_response_id` is a response this client
//!   returned continues exactly that invocation; chat requests continue the run's
//!   invocation while their `messages` keep the first message and grow.
//!
//! # The SDK's own retries
//! async-openai's default HTTP path retries 429, 5xx and connection errors up to three
//! times with backoff (100 ms, 200 ms, 400 ms) inside `create`, below the adapter. The
//! debugger sees one attempt per adapter dispatch: the error gate holds once those retries
//! are exhausted, and `attempts` counts the dispatches (a gate retry is one more), not the
//! HTTP requests the server saw. A client built with
//! `Client::with_http_service(…)` (async-openai's `middleware` feature) without the
//! `OpenAIRetryLayer` has no hidden retries: then every HTTP attempt is a dispatch the
//! error gate sees. The adapter itself does not enable `middleware` (it adds a variant to
//! `OpenAIError`, which would break an application's exhaustive `match`).
//!
//! # Timeouts
//! The SDK's HTTP timeout (the `reqwest::Client`'s) starts when the request is sent, after
//! the `before` gate releases, so a held gate never times a request out. A timeout of your
//! own around a call should be [`graphmind::time::timeout`], whose clock stops while a gate
//! inside it is held; `tokio::time::timeout` would fire during a breakpoint.
//!
//! # Fail-open
//! A dead or hung debugger never breaks a request (gates continue at once when detached).
//! The adapter's own bookkeeping runs under `catch_unwind`: should it panic, the call goes on
//! uninstrumented (a stream stays the SDK's stream) and a warning is printed, once a minute
//! at most. With graphmind disabled (`GRAPHMIND_DISABLED=1`, production, or graphmind's
//! `enabled` feature off) the wrapper calls straight through after one cheap check.

mod chat;
mod client;
pub mod codec;
mod finish;
mod output;
mod responses;
mod step;
mod stream;
mod typed;

pub use chat::Chat;
pub use client::{Client, Instrument};
pub use responses::Responses;

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Runs adapter bookkeeping fail-open ([`graphmind::node::fail_open`] under this crate's name):
/// `None` after a rate-limited warning when it panicked, and the call goes on uninstrumented.
fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    graphmind::node::fail_open(env!("CARGO_PKG_NAME"), what, f)
}

#[cfg(test)]
mod readme_tests {
    /// The text of the first code block opening with `fence` after `from` in `text`.
    fn block<'a>(text: &'a str, from: &str, fence: &str) -> &'a str {
        let at = text.find(from).expect("the section");
        let start = text[at..].find(fence).expect("the block") + at + fence.len();
        let len = text[start..].find("```").expect("the block's end");
        &text[start..start + len]
    }

    #[test]
    fn the_root_readme_shows_the_program_this_readme_compiles() {
        let root = include_str!("../../../README.md");
        let ours = include_str!("../README.md");
        assert_eq!(
            block(root, "## async-openai", "```rust,ignore\n"),
            block(ours, "", "```rust,no_run\n"),
            "README.md's async-openai example is a copy of adapters/graphmind-openai/README.md's first"
        );
    }
}
