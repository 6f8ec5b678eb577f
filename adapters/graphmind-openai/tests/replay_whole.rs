//! A two-tool chat agent and a Responses call (plain and streamed, the stream with a web
//! search the provider runs) recorded against the local mock and replayed with `graphmind::testing`: the mock gets no request, the tools do not
//! run, every model step and tool says `replayed: true` (not `injected`), and the app's output
//! is the original's. A recording whose answers were changed is answered with the changed
//! answers: nothing went to the mock.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};

use async_openai::types::chat::CreateChatCompletionRequest;
use async_openai::types::responses::CreateResponse;
use futures_util::StreamExt;
use graphmind::testing::Replay;
use graphmind_openai::Instrument;
use serde_json::{Value, json};
use support::mock::Mock;
use support::sdk;

/// How often the tool bodies ran.
static TOOL_RUNS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    TOOL_RUNS.fetch_add(1, Ordering::SeqCst);
    json!({"city": city, "celsius": 21})
}

#[graphmind::tool(call_id = call_id)]
async fn convert(call_id: String, amount: f64, to: String) -> Value {
    let _ = call_id;
    TOOL_RUNS.fetch_add(1, Ordering::SeqCst);
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

type Client = graphmind_openai::Client<async_openai::config::OpenAIConfig>;

/// The chat agent's answer (a tool turn, the tools, a text turn), then a Responses answer and
/// a streamed Responses answer's events.
async fn app(client: Client) -> (String, Value, Vec<Value>) {
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
    let mut answer = String::new();
    for _ in 0..3 {
        let request: CreateChatCompletionRequest = sdk(req.clone());
        let resp = client.chat().create(request).await.expect("chat");
        let message = serde_json::to_value(&resp.choices[0].message).expect("json");
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            answer = message["content"].as_str().unwrap_or_default().to_owned();
            break;
        }
        let results = futures_util::future::join_all(calls.iter().map(dispatch)).await;
        let messages = req["messages"].as_array_mut().expect("messages");
        messages.push(json!({"role": "assistant", "tool_calls": calls}));
        for (id, out) in results {
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": out.to_string()}));
        }
    }
    let ask: CreateResponse = sdk(json!({"model": "text", "input": "Weather in Lisbon today?"}));
    let resp = client.responses().create(ask).await.expect("responses");
    let ask: CreateResponse =
        sdk(json!({"model": "text", "input": "And in Porto?", "stream": true}));
    let mut stream = client
        .responses()
        .create_stream(ask)
        .await
        .expect("responses stream");
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        // The mock adds an event type the SDK does not know: the SDK yields it as an error
        // (passed through, not recorded); the events it knows are kept.
        if let Ok(event) = item {
            events.push(serde_json::to_value(event).expect("json"));
        }
    }
    (answer, serde_json::to_value(resp).expect("json"), events)
}

fn recording(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "graphmind-openai-replay-whole-{name}-{}.ndjson",
        std::process::id()
    ))
}

fn finished(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] != "agent:agent")
        .map(|e| &e["payload"])
        .collect()
}

#[tokio::test]
async fn a_recorded_agent_with_tools_and_responses_replays_with_no_request_and_no_tool_run() {
    let mock = Mock::start().await;
    let file = recording("same");
    let recorded = Replay::new(&file)
        .record(true)
        .run("agent", app(mock.client().graphmind()))
        .await;
    let original = recorded.into_output().expect("recorded run finished");
    let requests = mock.count();
    assert_eq!(requests, 4, "two chat turns, two Responses calls");
    assert!(!original.0.is_empty());
    assert!(original.2.len() > 2, "{:?}", original.2);

    let ran = TOOL_RUNS.load(Ordering::SeqCst);
    let replayed = Replay::new(&file)
        .run("agent", app(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(mock.count(), requests, "the replay sent no request");
    assert_eq!(TOOL_RUNS.load(Ordering::SeqCst), ran, "no tool ran");
    // Two chat steps, two tools, two Responses steps, and the web search the mock's stream
    // ran (a node of the provider's, answered from the recorded stream too).
    assert_eq!(replayed.served(), 7, "{:?}", replayed.outcomes());
    assert_eq!(replayed.went_live(), 0);
    let nodes = finished(replayed.events());
    let kinds: Vec<&str> = nodes
        .iter()
        .map(|p| p["nodeId"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "llm:step").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| k.starts_with("tool:")).count(),
        3,
        "{kinds:?}"
    );
    for node in &nodes {
        assert_eq!(node["status"], "ok", "{node}");
        assert_eq!(node["replayed"], true, "{node}");
        assert!(node["replayStep"].is_u64(), "{node}");
        assert!(node.get("injected").is_none(), "{node}");
    }
    let again = replayed.into_output().expect("replayed run finished");
    assert_eq!(again, original);
}

#[tokio::test]
async fn a_replay_answers_from_the_recording_even_where_the_mock_would_answer_otherwise() {
    let mock = Mock::start().await;
    let file = recording("changed");
    let recorded = Replay::new(&file)
        .record(true)
        .run("agent", app(mock.client().graphmind()))
        .await;
    let (answer, _, _) = recorded.into_output().expect("recorded run finished");
    let requests = mock.count();
    // The recorded answers, changed: the mock still answers "sunny".
    let word = "sunny";
    assert!(answer.contains(word), "{answer}");
    let text = std::fs::read_to_string(&file).expect("recorded");
    std::fs::write(&file, text.replace(word, "foggy")).expect("written");

    let replayed = Replay::new(&file)
        .run("agent", app(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(mock.count(), requests, "nothing went to the mock");
    let (again, _, _) = replayed.into_output().expect("replayed run finished");
    assert_eq!(again, answer.replace(word, "foggy"));
}
