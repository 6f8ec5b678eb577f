//! A two-tool travel agent over async-openai, instrumented with graphmind-openai, against
//! the local mock OpenAI server (started by the example itself; no API key, no network).
//!
//! `cargo run -p graphmind-openai --example openai_agent`
//!
//! Detached (no debugger listening) it runs as an ordinary program. With `graphmind serve`
//! running (or `GRAPHMIND_URL` set) it attaches first, so breakpoints hold from the first
//! gate: the model step `llm:step` before each request, and the two tools, dispatched in
//! parallel, each gated on its own and correlated with the model's tool-call id through
//! `#[graphmind::tool(call_id = …)]`.

#[path = "../tests/support/mock.rs"]
mod mock;

use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use graphmind_openai::Instrument;
use serde_json::{Value, json};

/// The weather in a city (a stand-in for a real API).
#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    json!({"city": city, "celsius": 21, "sky": "sunny"})
}

/// Converts an amount of USD (a stand-in for a real rate).
#[graphmind::tool(call_id = call_id)]
async fn convert(call_id: String, amount: f64, to: String) -> Value {
    let _ = call_id;
    json!({"amount": (amount * 0.86).round(), "currency": to})
}

/// Runs one tool call the model asked for; the result is the tool message's content.
async fn dispatch(id: String, name: String, args: Value) -> (String, Value) {
    let out = match name.as_str() {
        "get_weather" => get_weather(id.clone(), args["city"].as_str().unwrap_or("?").into()).await,
        "convert" => {
            let amount = args["amount"].as_f64().unwrap_or(0.0);
            convert(
                id.clone(),
                amount,
                args["to"].as_str().unwrap_or("EUR").into(),
            )
            .await
        }
        other => json!({"error": format!("no tool {other}")}),
    };
    (id, out)
}

fn first_request() -> Result<CreateChatCompletionRequest, serde_json::Error> {
    serde_json::from_value(json!({
        "model": "tools",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon, and 120 USD in EUR?"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "convert", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "to": {"type": "string"}}}}}
        ]
    }))
}

/// The agent loop: ask the model, run the tools it calls (in parallel), until it answers.
async fn agent(
    client: &graphmind_openai::Client<async_openai::config::OpenAIConfig>,
) -> Result<String, OpenAIError> {
    let mut request = first_request().map_err(|e| OpenAIError::InvalidArgument(e.to_string()))?;
    for _ in 0..5 {
        let response: CreateChatCompletionResponse = client.chat().create(request.clone()).await?;
        let message = serde_json::to_value(&response.choices[0].message)
            .map_err(|e| OpenAIError::InvalidArgument(e.to_string()))?;
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Ok(message["content"].as_str().unwrap_or_default().to_owned());
        }
        let results = futures_util::future::join_all(calls.iter().map(|c| {
            let args = serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}"))
                .unwrap_or(Value::Null);
            dispatch(
                c["id"].as_str().unwrap_or_default().to_owned(),
                c["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                args,
            )
        }))
        .await;
        let mut v = serde_json::to_value(&request)
            .map_err(|e| OpenAIError::InvalidArgument(e.to_string()))?;
        if let Some(messages) = v["messages"].as_array_mut() {
            messages.push(json!({"role": "assistant", "tool_calls": calls}));
            for (id, out) in results {
                messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": out.to_string()}));
            }
        }
        request =
            serde_json::from_value(v).map_err(|e| OpenAIError::InvalidArgument(e.to_string()))?;
    }
    Err(OpenAIError::InvalidArgument(
        "no answer after 5 steps".into(),
    ))
}

#[tokio::main]
async fn main() {
    let gm = graphmind::init(graphmind::Config::new("openai-agent"));
    if gm.ready(Duration::from_millis(500)).await {
        eprintln!("graphmind: attached to {}", gm.url());
    } else {
        eprintln!("graphmind: detached (no debugger at {})", gm.url());
    }
    let mock = mock::Mock::start().await;
    let client = mock.client().graphmind();
    match graphmind::run!("trip-agent", agent(&client)).await {
        Ok(Ok(answer)) => println!("agent: {answer}"),
        Ok(Err(err)) => println!("agent failed: {err}"),
        Err(aborted) => println!("{aborted}"),
    }
    gm.dispose().await;
}
