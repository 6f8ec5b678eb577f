//! A two-tool travel agent over async-openai, instrumented with graphmind-openai (feature
//! `openai`), driven by the local mock OpenAI server (no network, no key). The model asks for
//! two tools at once; they run in parallel, each gated on its own and correlated with the
//! model's tool-call id through `#[graphmind::tool(call_id = …)]`; then the model answers.
//!
//! The example binary `openai_agent` is a thin `main` around it; `graphmind demo --agent
//! openai` (feature `demo-openai` of the CLI) runs the same agent.

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse};
use graphmind_openai::Instrument;
use serde_json::{Value, json};

/// The agent's app name, as its runs show in the viewer.
pub const APP: &str = "openai-agent";
/// The agent's run name.
pub const RUN: &str = "trip-agent";
/// What the user asks.
pub const QUESTION: &str = "Weather in Lisbon, and 120 USD in EUR?";

/// The weather in a city (a stand-in for a real API).
#[graphmind::tool(call_id = call_id)]
pub async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    json!({"city": city, "celsius": 21, "sky": "sunny"})
}

/// Converts an amount of USD (a stand-in for a real rate).
#[graphmind::tool(call_id = call_id)]
pub async fn convert(call_id: String, amount: f64, to: String) -> Value {
    let _ = call_id;
    json!({"amount": (amount * 0.86).round(), "currency": to})
}

/// Runs one tool call the model asked for; (the call's id, the tool message's content).
async fn dispatch(id: String, name: String, args: Value) -> (String, Value) {
    let out = match name.as_str() {
        "get_weather" => get_weather(id.clone(), args["city"].as_str().unwrap_or("?").into()).await,
        "convert" => {
            let amount = args["amount"].as_f64().unwrap_or(0.0);
            let to = args["to"].as_str().unwrap_or("EUR").into();
            convert(id.clone(), amount, to).await
        }
        other => json!({"error": format!("no tool {other}")}),
    };
    (id, out)
}

fn invalid(e: serde_json::Error) -> OpenAIError {
    OpenAIError::InvalidArgument(e.to_string())
}

/// The first request: the question, and the two tools. `model` picks the mock's script
/// (`tools`: two parallel tool calls, then an answer).
///
/// # Errors
///
/// Never for the built-in request (it is the SDK's type, built from JSON).
pub fn first_request(model: &str) -> Result<CreateChatCompletionRequest, OpenAIError> {
    serde_json::from_value(json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": QUESTION}
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "convert", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "to": {"type": "string"}}}}}
        ]
    }))
    .map_err(invalid)
}

/// The agent loop: ask the model, run the tools it calls (in parallel), until it answers
/// (at most five model steps).
///
/// # Errors
///
/// The SDK's error of a failed request, or `InvalidArgument` after five steps.
pub async fn trip_agent(
    client: &graphmind_openai::Client<OpenAIConfig>,
    model: &str,
) -> Result<String, OpenAIError> {
    let mut request = first_request(model)?;
    for _ in 0..5 {
        let response: CreateChatCompletionResponse = client.chat().create(request.clone()).await?;
        let Some(choice) = response.choices.first() else {
            return Err(OpenAIError::InvalidArgument("no choice".into()));
        };
        let message = serde_json::to_value(&choice.message).map_err(invalid)?;
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
            let id = c["id"].as_str().unwrap_or_default().to_owned();
            let name = c["function"]["name"].as_str().unwrap_or_default();
            dispatch(id, name.to_owned(), args)
        }))
        .await;
        let mut v = serde_json::to_value(&request).map_err(invalid)?;
        if let Some(messages) = v["messages"].as_array_mut() {
            messages.push(json!({"role": "assistant", "tool_calls": calls}));
            for (id, out) in results {
                messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": out.to_string()}));
            }
        }
        request = serde_json::from_value(v).map_err(invalid)?;
    }
    Err(OpenAIError::InvalidArgument(
        "no answer after 5 steps".into(),
    ))
}

/// The mock server and the wrapped client pointed at it.
pub struct Mocked {
    /// The mock OpenAI server (stops when dropped).
    pub mock: graphmind_openai_mock::Mock,
    /// The SDK's client for it, wrapped by graphmind-openai.
    pub client: graphmind_openai::Client<OpenAIConfig>,
}

/// Starts the mock OpenAI server on 127.0.0.1 and wraps a client for it.
///
/// # Errors
///
/// When no port on 127.0.0.1 can be bound.
pub async fn mocked() -> std::io::Result<Mocked> {
    let mock = graphmind_openai_mock::Mock::try_start().await?;
    let client = mock.client().graphmind();
    Ok(Mocked { mock, client })
}
