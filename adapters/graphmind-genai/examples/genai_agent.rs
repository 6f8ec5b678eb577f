//! A two-tool travel agent over genai, instrumented with graphmind-genai, against a local
//! mock provider (started by the example itself; no API key, no network). genai has no
//! agent loop, so the loop is the example's own: ask the model (streamed), run the tools it
//! calls in parallel, send their results back, until it answers.
//!
//! `cargo run -p graphmind-genai --example genai_agent` (`-- anthropic` for the Anthropic
//! dialect instead of OpenAI's)
//!
//! Detached (no debugger listening) it runs as an ordinary program. With `graphmind serve`
//! running (or `GRAPHMIND_URL` set) it attaches first, so breakpoints hold from the first
//! gate: the model step `llm:step` before each request, and the two tools, each gated on
//! its own and correlated with the model's tool call through
//! `#[graphmind::tool(call_id = …)]` with genai's `ToolCall::call_id`.

#[path = "../tests/support/mock.rs"]
mod mock;

use std::time::Duration;

use futures_util::StreamExt;
use genai::chat::{ChatMessage, ChatRequest, ChatStreamEvent, Tool, ToolCall, ToolResponse};
use graphmind_genai::Instrument;
use serde_json::{Value, json};

/// The weather in a city (a stand-in for a real API).
#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    json!({"city": city, "celsius": 24, "sky": "sunny"})
}

/// The local time in a time zone (a stand-in for a real clock).
#[graphmind::tool(call_id = call_id)]
async fn get_time(call_id: String, tz: String) -> Value {
    let _ = call_id;
    json!({"tz": tz, "time": "14:05"})
}

/// Runs one tool call the model asked for; the result is the tool response's content.
async fn dispatch(call: ToolCall) -> ToolResponse {
    let args = &call.fn_arguments;
    let out = match call.fn_name.as_str() {
        "get_weather" => {
            get_weather(
                call.call_id.clone(),
                args["city"].as_str().unwrap_or("?").into(),
            )
            .await
        }
        "get_time" => {
            get_time(
                call.call_id.clone(),
                args["tz"].as_str().unwrap_or("UTC").into(),
            )
            .await
        }
        other => json!({"error": format!("no tool {other}")}),
    };
    ToolResponse::new(call.call_id, out.to_string())
}

fn first_request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Weather and time in Lisbon?")])
        .with_system("You are a travel assistant.")
        .with_tools(vec![
            Tool::new("get_weather")
                .with_schema(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
            Tool::new("get_time")
                .with_schema(json!({"type": "object", "properties": {"tz": {"type": "string"}}})),
        ])
}

/// The agent loop: stream the model's turn, run the tools it calls (in parallel), until it
/// answers.
async fn agent(client: &graphmind_genai::Client, model: &str) -> genai::Result<String> {
    let mut request = first_request();
    let options = genai::chat::ChatOptions::default().with_capture_tool_calls(true);
    for _ in 0..5 {
        let mut stream = client
            .exec_chat_stream(model, request.clone(), Some(&options))
            .await?
            .stream;
        let mut text = String::new();
        let mut calls = Vec::new();
        while let Some(event) = stream.next().await {
            match event? {
                ChatStreamEvent::Chunk(c) => text.push_str(&c.content),
                ChatStreamEvent::End(end) => {
                    calls = end.captured_into_tool_calls().unwrap_or_default()
                }
                _ => {}
            }
        }
        if calls.is_empty() {
            return Ok(text);
        }
        // Streamed arguments arrive as a JSON string; the tools want the object.
        for c in &mut calls {
            if let Some(s) = c.fn_arguments.as_str() {
                c.fn_arguments = serde_json::from_str(s).unwrap_or(Value::Null);
            }
        }
        request = request.append_message(ChatMessage::from(calls.clone()));
        for response in futures_util::future::join_all(calls.into_iter().map(dispatch)).await {
            request = request.append_message(ChatMessage::from(response));
        }
    }
    Err(genai::Error::Internal("no answer after 5 steps".into()))
}

#[tokio::main]
async fn main() {
    let model = match std::env::args().nth(1).as_deref() {
        Some("anthropic") => "claude-tools",
        _ => "gpt-tools",
    };
    let gm = graphmind::init(graphmind::Config::new("genai-agent"));
    if gm.ready(Duration::from_millis(500)).await {
        eprintln!("graphmind: attached to {}", gm.url());
    } else {
        eprintln!("graphmind: detached (no debugger at {})", gm.url());
    }
    let mock = mock::Mock::start().await;
    let client = mock.client().graphmind();
    match graphmind::run!("trip-agent", agent(&client, model)).await {
        Ok(Ok(answer)) => println!("agent: {answer}"),
        Ok(Err(err)) => println!("agent failed: {err}"),
        Err(aborted) => println!("{aborted}"),
    }
    gm.dispose().await;
}
