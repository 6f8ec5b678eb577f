//! A two-tool agent loop over the wrapped client: `#[graphmind::tool(call_id = …)]` makes
//! each tool execution's instanceId the model's tool-call id, and parallel tool calls are
//! gated independently.

mod support;

use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::types::chat::CreateChatCompletionRequest;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::Mock;
use support::{attached, finished, pause_id, paused, runs_finished, sdk, started};

#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    json!({"city": city, "celsius": 21})
}

#[graphmind::tool(call_id = call_id)]
async fn convert(call_id: String, amount: f64, to: String) -> Value {
    let _ = call_id;
    json!({"amount": (amount * 0.86).round(), "currency": to})
}

async fn dispatch(call: &Value) -> (String, Value) {
    let id = call["id"].as_str().unwrap_or_default().to_owned();
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
        .unwrap_or(Value::Null);
    let out = match call["function"]["name"].as_str() {
        Some("get_weather") => {
            get_weather(id.clone(), args["city"].as_str().unwrap_or("?").into()).await
        }
        Some("convert") => {
            convert(
                id.clone(),
                args["amount"].as_f64().unwrap_or(0.0),
                args["to"].as_str().unwrap_or("EUR").into(),
            )
            .await
        }
        _ => Value::Null,
    };
    (id, out)
}

async fn agent(
    client: graphmind_openai::Client<async_openai::config::OpenAIConfig>,
) -> Result<String, OpenAIError> {
    let mut req: Value = json!({
        "model": "tools",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon, and 120 USD in EUR?"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "convert", "parameters": {"type": "object"}}}
        ]
    });
    for _ in 0..3 {
        let request: CreateChatCompletionRequest = sdk(req.clone());
        let resp = client.chat().create(request).await?;
        let message = serde_json::to_value(&resp.choices[0].message).expect("json");
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Ok(message["content"].as_str().unwrap_or_default().to_owned());
        }
        let results = futures_util::future::join_all(calls.iter().map(dispatch)).await;
        let messages = req["messages"].as_array_mut().expect("messages");
        messages.push(json!({"role": "assistant", "tool_calls": calls}));
        for (id, out) in results {
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": out.to_string()}));
        }
    }
    Err(OpenAIError::InvalidArgument("no answer".into()))
}

#[tokio::test]
async fn tool_executions_carry_the_models_call_ids_and_gate_independently() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("a", agent(client)).await }
    });
    let first = paused(&hub, 1).await;
    let second = paused(&hub, 2).await;
    let mut held: Vec<String> = [&first, &second]
        .iter()
        .map(|p| {
            p.payload()["nodeId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    held.sort();
    assert_eq!(
        held,
        ["tool:convert", "tool:get_weather"],
        "both held at once"
    );
    let (weather, conv) = if first.payload()["nodeId"] == "tool:get_weather" {
        (first, second)
    } else {
        (second, first)
    };
    assert!(hub.inject(
        conv.run_id(),
        &pause_id(&conv),
        json!({"amount": 99, "currency": "EUR"})
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !task.is_finished(),
        "releasing one call leaves the other held"
    );
    assert_eq!(
        finished(&hub, "tool:convert").len(),
        1,
        "the released call finished while the other is held"
    );
    assert!(finished(&hub, "tool:get_weather").is_empty());
    assert!(hub.resume(weather.run_id(), &pause_id(&weather), "continue"));
    let answer = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("ended")
        .expect("joined")
        .expect("not aborted")
        .expect("ok");
    assert_eq!(
        answer,
        "It is 21 °C and sunny in Lisbon; 120 USD is 103 EUR."
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        started(&hub, "tool:get_weather")[0]["instanceId"],
        "call_weather_1"
    );
    assert_eq!(
        started(&hub, "tool:convert")[0]["instanceId"],
        "call_convert_2"
    );
    assert_eq!(finished(&hub, "tool:convert")[0]["output"]["amount"], 99);
    let steps = finished(&hub, "llm:step");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["output"]["toolCalls"][0]["id"], "call_weather_1");
    assert_eq!(steps[1]["output"]["finishReason"], "stop");
    let ids: Vec<String> = started(&hub, "llm:step")
        .iter()
        .map(|s| s["instanceId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        ids[0].ends_with(":s1") && ids[1].ends_with(":s2"),
        "one invocation: {ids:?}"
    );
    // The first step's hint names both tools from the request and the roster.
    let hinted: Vec<String> = hub
        .frames_of("graph.hint")
        .iter()
        .flat_map(|f| f.payload()["nodes"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n["nodeId"].as_str().map(str::to_owned))
        .collect();
    assert!(
        hinted.contains(&"tool:get_weather".to_owned()),
        "{hinted:?}"
    );
    assert!(hinted.contains(&"tool:convert".to_owned()), "{hinted:?}");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_debugger_that_dies_at_a_held_gate_lets_the_request_go() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("a", async {
                client
                    .chat()
                    .create(sdk(
                        json!({"model": "text", "messages": [{"role": "user", "content": "hi"}]}),
                    ))
                    .await
            })
            .await
        }
    });
    paused(&hub, 1).await;
    assert_eq!(mock.count(), 0);
    hub.kill();
    let resp = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the request went on")
        .expect("joined")
        .expect("not aborted")
        .expect("ok");
    assert_eq!(resp.id, "chatcmpl-text-1");
    assert_eq!(mock.count(), 1);
    gm.dispose().await;
}
