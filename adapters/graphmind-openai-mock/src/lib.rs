//! A local mock of the OpenAI API for graphmind's tests, examples and `graphmind demo`: real
//! HTTP on 127.0.0.1, SSE streams, answers from JSON fixtures shaped like the real API's
//! (embedded in the library, so an installed binary serves them too), picked by the
//! request's `model`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let mock = graphmind_openai_mock::Mock::try_start().await?;
//! // point any OpenAI client at `mock.base` (`http://127.0.0.1:<port>/v1`), any API key
//! println!("{}", mock.base);
//! # Ok(()) }
//! ```
//!
//! | model | `POST /v1/chat/completions` | `POST /v1/responses` |
//! |---|---|---|
//! | `tools` | two parallel tool calls (stream: by index, interleaved), cached + reasoning usage; once the last message is a tool result, `text` | two function calls (stream: their argument deltas interleaved); once the input has a `function_call_output`, `text` |
//! | `text` (or any other) | a plain answer | a plain answer (`id` = `resp_<n>`) |
//! | `refusal` | a refusal | — |
//! | `reasoning` | stream with `reasoning_content` deltas | — |
//! | `web-search` | — | a `web_search_call` and an answer (every stream but `tools`: plus an unknown event type) |
//! | `file-search`, `code-interpreter`, `image-generation`, `mcp` | — | that built-in tool's call and an answer |
//! | `fail-N` | the first N requests answer 500, then `text` | same |
//! | `always-500` | 500 | 500 |
//! | `quota` | 429 `insufficient_quota` (the SDK does not retry it) | same |
//! | `rate-limit` | 429 `rate_limit_exceeded` | same |
//! | `bad-body` | 200 with a body that is not a completion | same |
//! | `broken-sse` | stream with a broken `data:` line between two good ones | — |

mod fixtures;
mod routes;

use std::sync::{Arc, PoisonError};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::Value;

pub use fixtures::{FIXTURES, fixture, fixture_json};

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/v1/chat/completions` or `/v1/responses`.
    pub path: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The JSON body (`Null` when the body was not JSON).
    pub body: Value,
}

/// A running mock server (stops when dropped).
pub struct Mock {
    /// `http://127.0.0.1:<port>/v1`, the API base for an OpenAI client's config.
    pub base: String,
    state: routes::Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for Mock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mock").field("base", &self.base).finish()
    }
}

impl Mock {
    /// Starts the mock on `127.0.0.1:0` (a free port), on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// When no port on 127.0.0.1 can be bound (a test helper; see [`Mock::try_start`]).
    pub async fn start() -> Self {
        Self::try_start().await.expect("bind the mock on 127.0.0.1")
    }

    /// Starts the mock on `127.0.0.1:0` (a free port), on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When no port on 127.0.0.1 can be bound.
    pub async fn try_start() -> std::io::Result<Self> {
        let state = routes::Shared::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(routes::chat))
            .route("/v1/responses", post(routes::responses))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base: format!("http://127.0.0.1:{port}/v1"),
            state,
            task,
        })
    }

    /// An async-openai client for this mock (plain HTTP, a dummy key).
    #[cfg(feature = "client")]
    pub fn client(&self) -> async_openai::Client<async_openai::config::OpenAIConfig> {
        async_openai::Client::with_config(
            async_openai::config::OpenAIConfig::new()
                .with_api_base(&self.base)
                .with_api_key("sk-mock"),
        )
    }

    /// Every request received so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    /// How many requests were received.
    pub fn count(&self) -> usize {
        self.lock().seen.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, routes::Inner> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
