//! A local mock of the OpenAI API: real HTTP on 127.0.0.1, answers and SSE streams from the
//! JSON fixtures in `tests/fixtures` (shaped like the real API's), picked by the request's
//! `model`. Used by the adapter's tests, its example and its benchmark.
//!
//! | model | `POST /v1/chat/completions` | `POST /v1/responses` |
//! |---|---|---|
//! | `tools` | two parallel tool calls (stream: by index, interleaved), cached + reasoning usage; once the last message is a tool result, `text` | two function calls; once the input has a `function_call_output`, `text` |
//! | `text` (or any other) | a plain answer | a plain answer (`id` = `resp_<n>`) |
//! | `refusal` | a refusal | — |
//! | `reasoning` | stream with `reasoning_content` deltas | — |
//! | `web-search` | — | a `web_search_call` and an answer (stream: plus an unknown event type) |
//! | `fail-N` | the first N requests answer 500, then `text` | same |
//! | `always-500` | 500 | 500 |
//! | `quota` | 429 `insufficient_quota` (the SDK does not retry it) | same |
//! | `rate-limit` | 429 `rate_limit_exceeded` | same |
//! | `bad-body` | 200 with a body that is not a completion | same |
//! | `broken-sse` | stream with a broken `data:` line between two good ones | — |
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/v1/chat/completions` or `/v1/responses`.
    pub path: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    seen: Vec<Seen>,
    per_model: HashMap<String, usize>,
    responses: u64,
}

type Shared = Arc<Mutex<Inner>>;

/// A running mock server (stops when dropped).
pub struct Mock {
    /// `http://127.0.0.1:<port>/v1`, the API base for the SDK's config.
    pub base: String,
    state: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fixture file's text.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}"))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A fixture file's JSON.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

impl Mock {
    /// Starts the mock on `127.0.0.1:0`.
    pub async fn start() -> Self {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/responses", post(responses))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the mock");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base: format!("http://127.0.0.1:{port}/v1"),
            state,
            task,
        }
    }

    /// An SDK client for this mock (plain HTTP, a dummy key).
    pub fn client(&self) -> async_openai::Client<async_openai::config::OpenAIConfig> {
        async_openai::Client::with_config(
            async_openai::config::OpenAIConfig::new()
                .with_api_base(&self.base)
                .with_api_key("sk-mock"),
        )
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seen
            .clone()
    }

    /// How many requests were received.
    pub fn count(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seen
            .len()
    }
}

fn record(state: &Shared, path: &str, headers: HeaderMap, body: &Value) -> (String, usize, u64) {
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    s.seen.push(Seen {
        path: path.to_owned(),
        headers,
        body: body.clone(),
    });
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let n = s.per_model.entry(model.clone()).or_default();
    *n += 1;
    let nth = *n;
    s.responses += 1;
    (model, nth, s.responses)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("response")
}

fn sse(body: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(body))
        .expect("response")
}

/// `data: <chunk>` per chunk, then `data: [DONE]` (chat), or `event: <type>` + `data:`
/// per event (responses, which sends no `[DONE]`).
fn sse_of(items: &Value, done: bool) -> String {
    let mut out = String::new();
    for item in items.as_array().into_iter().flatten() {
        if let Some(t) = item["type"].as_str()
            && !done
        {
            out.push_str(&format!("event: {t}\n"));
        }
        out.push_str(&format!("data: {item}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

/// The failure a model name asks for on its `nth` request, if any.
fn failure(model: &str, nth: usize) -> Option<Response> {
    let fail = |status: StatusCode, file: &str| Some(json_response(status, &fixture_json(file)));
    match model {
        "always-500" => fail(StatusCode::INTERNAL_SERVER_ERROR, "error_500.json"),
        "quota" => fail(StatusCode::TOO_MANY_REQUESTS, "error_429_quota.json"),
        "rate-limit" => fail(StatusCode::TOO_MANY_REQUESTS, "error_429_rate.json"),
        "bad-body" => Some(json_response(
            StatusCode::OK,
            &json!({"object": "surprise", "choices": "none"}),
        )),
        m => {
            let n: usize = m.strip_prefix("fail-")?.parse().ok()?;
            (nth <= n).then(|| {
                json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &fixture_json("error_500.json"),
                )
            })
        }
    }
}

async fn chat(State(state): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth, _) = record(&state, "/v1/chat/completions", headers, &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    let stream = body["stream"].as_bool() == Some(true);
    if stream {
        return match model.as_str() {
            "tools" => sse(sse_of(&fixture_json("chat_tools.sse.json"), true)),
            "refusal" => sse(sse_of(&fixture_json("chat_refusal.sse.json"), true)),
            "reasoning" => sse(sse_of(&fixture_json("chat_reasoning.sse.json"), true)),
            "broken-sse" => sse(fixture("chat_broken.sse")),
            _ => {
                // The plain answer, streamed in three pieces.
                let text = fixture_json("chat_text.json");
                let content = text["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let (a, rest) = content.split_at(content.len() / 3);
                let (b, c) = rest.split_at(rest.len() / 2);
                let chunk = |delta: Value, finish: Value| {
                    json!({"id": "chatcmpl-text-s", "object": "chat.completion.chunk",
                        "created": 1764547200, "model": text["model"],
                        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
                };
                let items = json!([
                    chunk(json!({"role": "assistant", "content": a}), Value::Null),
                    chunk(json!({"content": b}), Value::Null),
                    chunk(json!({"content": c}), json!("stop")),
                ]);
                sse(sse_of(&items, true))
            }
        };
    }
    let answered = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let file = match model.as_str() {
        // Once the tools' results are in, the model answers.
        "tools" if answered => "chat_text.json",
        "tools" => "chat_tools.json",
        "refusal" => "chat_refusal.json",
        _ => "chat_text.json",
    };
    json_response(StatusCode::OK, &fixture_json(file))
}

async fn responses(State(state): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth, count) = record(&state, "/v1/responses", headers, &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    if body["stream"].as_bool() == Some(true) {
        return sse(sse_of(
            &fixture_json("responses_web_search.sse.json"),
            false,
        ));
    }
    match model.as_str() {
        "web-search" => json_response(StatusCode::OK, &fixture_json("responses_web_search.json")),
        "tools"
            if !body["input"]
                .as_array()
                .is_some_and(|i| i.iter().any(|m| m["type"] == "function_call_output")) =>
        {
            json_response(StatusCode::OK, &fixture_json("responses_tools.json"))
        }
        _ => {
            let mut r = fixture_json("responses_text.json");
            r["id"] = json!(format!("resp_{count}"));
            if let Some(prev) = body["previous_response_id"].as_str() {
                r["previous_response_id"] = json!(prev);
            }
            json_response(StatusCode::OK, &r)
        }
    }
}
