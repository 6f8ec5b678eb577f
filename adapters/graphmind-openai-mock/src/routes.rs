//! The two endpoints: which fixture (or failure) a request's `model` asks for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::Seen;
use crate::fixtures::{fixture, fixture_json};

/// What the handlers share: the requests seen, and per-model counts.
#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) seen: Vec<Seen>,
    per_model: HashMap<String, usize>,
    responses: u64,
}

pub(crate) type Shared = Arc<Mutex<Inner>>;

/// Records a request; (its model, the how-manieth request for that model, the how-manieth
/// request of all).
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

fn with_type(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    with_type(status, "application/json", body.to_string())
}

fn sse(body: String) -> Response {
    let mut r = with_type(StatusCode::OK, "text/event-stream", body);
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
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

/// The plain chat answer, streamed in three pieces.
fn chat_text_stream() -> Value {
    let text = fixture_json("chat_text.json");
    let content = text["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut cut = content.len() / 3;
    while !content.is_char_boundary(cut) {
        cut += 1;
    }
    let (a, rest) = content.split_at(cut);
    let mut cut = rest.len() / 2;
    while !rest.is_char_boundary(cut) {
        cut += 1;
    }
    let (b, c) = rest.split_at(cut);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-text-s", "object": "chat.completion.chunk",
            "created": 1764547200, "model": text["model"],
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    };
    json!([
        chunk(json!({"role": "assistant", "content": a}), Value::Null),
        chunk(json!({"content": b}), Value::Null),
        chunk(json!({"content": c}), json!("stop")),
    ])
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth, _) = record(&state, "/v1/chat/completions", headers, &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    if body["stream"].as_bool() == Some(true) {
        return match model.as_str() {
            "tools" => sse(sse_of(&fixture_json("chat_tools.sse.json"), true)),
            "refusal" => sse(sse_of(&fixture_json("chat_refusal.sse.json"), true)),
            "reasoning" => sse(sse_of(&fixture_json("chat_reasoning.sse.json"), true)),
            "broken-sse" => sse(fixture("chat_broken.sse").to_owned()),
            _ => sse(sse_of(&chat_text_stream(), true)),
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

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (model, nth, count) = record(&state, "/v1/responses", headers, &body);
    if let Some(r) = failure(&model, nth) {
        return r;
    }
    let answered = body["input"]
        .as_array()
        .is_some_and(|i| i.iter().any(|m| m["type"] == "function_call_output"));
    if body["stream"].as_bool() == Some(true) {
        let file = match model.as_str() {
            "tools" if !answered => "responses_tools.sse.json",
            _ => "responses_web_search.sse.json",
        };
        return sse(sse_of(&fixture_json(file), false));
    }
    let file = match model.as_str() {
        "web-search" => "responses_web_search.json",
        "file-search" => "responses_file_search.json",
        "code-interpreter" => "responses_code_interpreter.json",
        "image-generation" => "responses_image_generation.json",
        "mcp" => "responses_mcp.json",
        "tools" if !answered => "responses_tools.json",
        _ => {
            let mut r = fixture_json("responses_text.json");
            r["id"] = json!(format!("resp_{count}"));
            if let Some(prev) = body["previous_response_id"].as_str() {
                r["previous_response_id"] = json!(prev);
            }
            return json_response(StatusCode::OK, &r);
        }
    };
    json_response(StatusCode::OK, &fixture_json(file))
}
