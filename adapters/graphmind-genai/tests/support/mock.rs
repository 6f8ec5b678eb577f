//! A local mock of two provider dialects genai speaks: real HTTP on 127.0.0.1, OpenAI's
//! `POST /v1/chat/completions` and Anthropic's `POST /v1/messages` (JSON answers and SSE
//! streams shaped like the real APIs'), picked by the request's `model`. genai reaches it
//! through a `ServiceTargetResolver` that points every target at the mock. Used by the
//! adapter's tests, its example and its benchmark.
//!
//! | model (`gpt-…` OpenAI, `claude-…` Anthropic) | answer |
//! |---|---|
//! | `…-text` (or any other) | a plain answer (stream: in three pieces), usage with cached tokens |
//! | `…-tools` | two parallel tool calls (stream: interleaved by index), once the last message is not a tool result; then `text` |
//! | `claude-think` | stream: a thinking block, then text |
//! | `…-fail-N` | the first N requests answer 500, then `text` |
//! | `…-always-500` | 500 |
//! | `…-unresolved-N` | (no request) the client's first N target resolutions fail |
//! | `…-broken` | stream: the first piece of the text, then the connection breaks |
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/v1/chat/completions` or `/v1/messages`.
    pub path: String,
    /// The JSON body.
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    seen: Vec<Seen>,
    per_model: HashMap<String, usize>,
}

type Shared = Arc<Mutex<Inner>>;

/// A running mock server (stops when dropped).
pub struct Mock {
    /// `http://127.0.0.1:<port>/v1/`, the endpoint genai's targets are pointed at.
    pub base: String,
    state: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Mock {
    /// Starts the mock on `127.0.0.1:0`.
    pub async fn start() -> Self {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the mock");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base: format!("http://127.0.0.1:{port}/v1/"),
            state,
            task,
        }
    }

    /// A genai client whose every target is this mock (the adapter kind still comes from
    /// the model name), with a dummy key.
    pub fn client(&self) -> genai::Client {
        let base = self.base.clone();
        let resolved = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let resolver = genai::resolver::ServiceTargetResolver::from_resolver_fn(
            move |t: genai::ServiceTarget| -> Result<genai::ServiceTarget, genai::resolver::Error> {
                // `…-unresolved-N`: the first N resolutions of this client fail.
                let name = t.model.model_name.to_string();
                if let Some(n) = name
                    .rsplit_once("-unresolved-")
                    .and_then(|(_, n)| n.parse::<usize>().ok())
                    && resolved.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < n
                {
                    return Err(genai::resolver::Error::Custom(
                        "no target for this model yet".into(),
                    ));
                }
                Ok(genai::ServiceTarget {
                    endpoint: genai::resolver::Endpoint::from_owned(base.clone()),
                    auth: genai::resolver::AuthData::from_single("sk-mock"),
                    model: t.model,
                })
            },
        );
        genai::Client::builder()
            .with_service_target_resolver(resolver)
            .build()
            .expect("a genai client")
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
        self.seen().len()
    }
}

fn record(state: &Shared, path: &str, body: &Value) -> (String, usize) {
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    s.seen.push(Seen {
        path: path.to_owned(),
        body: body.clone(),
    });
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let n = s.per_model.entry(model.clone()).or_default();
    *n += 1;
    (model, *n)
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

/// An SSE stream that sends `head`, then breaks (the body fails after a pause, so that
/// the head reaches the client first): genai reads the head's events, then an error.
fn broken(head: String) -> Response {
    let parts = futures_util::stream::unfold(Some(head), |state| async move {
        match state {
            Some(head) => Some((Ok(axum::body::Bytes::from(head)), None)),
            None => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                Some((Err(std::io::Error::other("the connection broke")), None))
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(parts))
        .expect("response")
}

/// The failure a model name asks for on its `nth` request, if any.
fn failure(model: &str, nth: usize) -> Option<Response> {
    let error = json!({"error": {"message": "The server had an error.", "type": "server_error"}});
    if model.ends_with("-always-500") {
        return Some(json_response(StatusCode::INTERNAL_SERVER_ERROR, &error));
    }
    let n: usize = model.rsplit_once("-fail-")?.1.parse().ok()?;
    (nth <= n).then(|| json_response(StatusCode::INTERNAL_SERVER_ERROR, &error))
}

/// The plain answer's text, and its three streamed pieces.
pub const TEXT: &str = "Sunny, 24 °C in Lisbon.";
const PIECES: [&str; 3] = ["Sunny, ", "24 °C ", "in Lisbon."];

fn last_is_tool_result(body: &Value, anthropic: bool) -> bool {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return false;
    };
    if anthropic {
        last["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|p| p["type"] == "tool_result"))
    } else {
        last["role"] == "tool"
    }
}

async fn openai(State(state): State<Shared>, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth) = record(&state, "/v1/chat/completions", &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    if model.ends_with("-broken") {
        let first = json!({"id": "chatcmpl-s1", "object": "chat.completion.chunk",
            "created": 1764547200, "model": format!("{model}-2026"),
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": PIECES[0]},
                "logprobs": null, "finish_reason": null}]});
        return broken(format!("data: {first}\n\n"));
    }
    let tools = model.ends_with("-tools") && !last_is_tool_result(&body, false);
    let usage = json!({"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 0}});
    if body["stream"].as_bool() == Some(true) {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1764547200,
                "model": format!("{model}-2026"),
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        };
        let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
            let mut c = json!({"index": index, "function": {"arguments": args}});
            if let Some(id) = id {
                c["id"] = id.into();
                c["type"] = "function".into();
            }
            if let Some(name) = name {
                c["function"]["name"] = name.into();
            }
            chunk(json!({"tool_calls": [c]}), Value::Null)
        };
        let mut items = if tools {
            vec![
                chunk(json!({"role": "assistant", "content": null}), Value::Null),
                call(0, Some("call_w"), Some("get_weather"), ""),
                call(1, Some("call_t"), Some("get_time"), ""),
                call(0, None, None, "{\"city\":"),
                call(1, None, None, "{\"tz\":"),
                call(0, None, None, "\"Lisbon\"}"),
                call(1, None, None, "\"WET\"}"),
                chunk(json!({}), json!("tool_calls")),
            ]
        } else {
            vec![
                chunk(
                    json!({"role": "assistant", "content": PIECES[0]}),
                    Value::Null,
                ),
                chunk(json!({"content": PIECES[1]}), Value::Null),
                chunk(json!({"content": PIECES[2]}), json!("stop")),
            ]
        };
        items.push(json!({"id": "chatcmpl-s1", "object": "chat.completion.chunk",
            "created": 1764547200, "model": format!("{model}-2026"), "choices": [], "usage": usage}));
        let mut out = String::new();
        for item in items {
            out.push_str(&format!("data: {item}\n\n"));
        }
        out.push_str("data: [DONE]\n\n");
        return sse(out);
    }
    let message = if tools {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lisbon\"}"}},
            {"id": "call_t", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"WET\"}"}}
        ]})
    } else {
        json!({"role": "assistant", "content": TEXT})
    };
    json_response(
        StatusCode::OK,
        &json!({"id": format!("chatcmpl-{nth}"), "object": "chat.completion", "created": 1764547200,
            "model": format!("{model}-2026"),
            "choices": [{"index": 0, "message": message, "logprobs": null,
                "finish_reason": if tools { "tool_calls" } else { "stop" }}],
            "usage": usage}),
    )
}

async fn anthropic(State(state): State<Shared>, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth) = record(&state, "/v1/messages", &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    if model.ends_with("-broken") {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_s1", "type": "message",
                "role": "assistant", "model": format!("{model}-2026"), "content": [],
                "stop_reason": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": PIECES[0]}}),
        ];
        let head: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
            .collect();
        return broken(head);
    }
    let tools = model.ends_with("-tools") && !last_is_tool_result(&body, true);
    let usage = json!({"input_tokens": 20, "output_tokens": 9,
        "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5});
    if body["stream"].as_bool() == Some(true) {
        let mut events: Vec<(&str, Value)> = vec![(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_s1", "type": "message",
                "role": "assistant", "model": format!("{model}-2026"), "content": [],
                "stop_reason": null, "usage": {"input_tokens": 20, "output_tokens": 1,
                "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}}}),
        )];
        let start = |i: u64, block: Value| {
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": block}),
            )
        };
        let delta = |i: u64, d: Value| {
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            )
        };
        let stop = |i: u64| {
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            )
        };
        let mut i = 0;
        if model.ends_with("-think") {
            events.push(start(0, json!({"type": "thinking", "thinking": ""})));
            events.push(delta(
                0,
                json!({"type": "thinking_delta", "thinking": "The user wants "}),
            ));
            events.push(delta(
                0,
                json!({"type": "thinking_delta", "thinking": "the weather."}),
            ));
            events.push(delta(
                0,
                json!({"type": "signature_delta", "signature": "sig-1"}),
            ));
            events.push(stop(0));
            i = 1;
        }
        let reason = if tools {
            for (k, (id, name, a, b)) in [
                ("toolu_w", "get_weather", "{\"city\":", "\"Lisbon\"}"),
                ("toolu_t", "get_time", "{\"tz\":", "\"WET\"}"),
            ]
            .into_iter()
            .enumerate()
            {
                let k = k as u64;
                events.push(start(
                    k,
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                ));
                events.push(delta(
                    k,
                    json!({"type": "input_json_delta", "partial_json": a}),
                ));
                events.push(delta(
                    k,
                    json!({"type": "input_json_delta", "partial_json": b}),
                ));
                events.push(stop(k));
            }
            "tool_use"
        } else {
            events.push(start(i, json!({"type": "text", "text": ""})));
            for p in PIECES {
                events.push(delta(i, json!({"type": "text_delta", "text": p})));
            }
            events.push(stop(i));
            "end_turn"
        };
        events.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": 9}}),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));
        let mut out = String::new();
        for (name, data) in events {
            out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        return sse(out);
    }
    let content = if tools {
        json!([
            {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Lisbon"}},
            {"type": "tool_use", "id": "toolu_t", "name": "get_time", "input": {"tz": "WET"}}
        ])
    } else {
        json!([{"type": "text", "text": TEXT}])
    };
    json_response(
        StatusCode::OK,
        &json!({"id": format!("msg_{nth}"), "type": "message", "role": "assistant",
            "model": format!("{model}-2026"), "content": content,
            "stop_reason": if tools { "tool_use" } else { "end_turn" }, "stop_sequence": null,
            "usage": usage}),
    )
}
