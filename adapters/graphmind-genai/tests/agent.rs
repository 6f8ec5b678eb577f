//! An agent loop of the user's own over the wrapped client, with tools marked
//! `#[graphmind::tool(call_id = …)]` with genai's `call_id`: each tool execution is a node
//! whose instanceId is the model's tool-call id, gated on its own, and the two model
//! turns group into one invocation.

mod support;

use genai::chat::{ChatMessage, ChatRequest, Tool, ToolCall, ToolResponse};
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::{Mock, TEXT};
use support::{attached, events, finished, lines, pause_id, paused, runs_finished, started};

#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    json!({"city": city, "celsius": 24})
}

#[graphmind::tool(call_id = call_id)]
async fn get_time(call_id: String, tz: String) -> Value {
    let _ = call_id;
    json!({"tz": tz, "time": "14:05"})
}

async fn dispatch(call: ToolCall) -> ToolResponse {
    let a = &call.fn_arguments;
    let out = match call.fn_name.as_str() {
        "get_weather" => {
            get_weather(
                call.call_id.clone(),
                a["city"].as_str().unwrap_or("?").into(),
            )
            .await
        }
        _ => get_time(call.call_id.clone(), a["tz"].as_str().unwrap_or("?").into()).await,
    };
    ToolResponse::new(call.call_id, out.to_string())
}

async fn agent(client: &graphmind_genai::Client, model: &str) -> genai::Result<String> {
    let mut req = ChatRequest::new(vec![ChatMessage::user("Weather and time in Lisbon?")])
        .with_tools(vec![Tool::new("get_weather"), Tool::new("get_time")]);
    for _ in 0..4 {
        let res = client.exec_chat(model, req.clone(), None).await?;
        let calls: Vec<ToolCall> = res.tool_calls().into_iter().cloned().collect();
        if calls.is_empty() {
            return Ok(res.first_text().unwrap_or_default().to_owned());
        }
        req = req.append_message(ChatMessage::from(calls.clone()));
        for r in futures_util::future::join_all(calls.into_iter().map(dispatch)).await {
            req = req.append_message(ChatMessage::from(r));
        }
    }
    Ok(String::new())
}

#[tokio::test]
async fn tools_are_nodes_named_by_genais_call_id_and_the_turns_are_one_invocation() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("a", agent(&client, "claude-tools")).await }
    });
    // The two tool calls run in parallel, each held at its own gate.
    let p1 = paused(&hub, 1).await;
    let p2 = paused(&hub, 2).await;
    let mut held: Vec<String> = [&p1, &p2]
        .iter()
        .map(|p| {
            p.payload()["nodeId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    held.sort();
    assert_eq!(held, ["tool:get_time", "tool:get_weather"]);
    for p in [&p1, &p2] {
        assert!(hub.resume(p.run_id(), &pause_id(p), "continue"));
    }
    let answer = task
        .await
        .expect("joined")
        .expect("not aborted")
        .expect("ok");
    assert_eq!(answer, TEXT);
    runs_finished(&hub, 1).await;
    let evs = events(&hub);
    assert_eq!(
        evs[..5],
        lines(&[
            "run.started",
            "node.started agent:a",
            // The step's roster is the request's tools (issue 35 item 10), not the
            // binary's `#[graphmind::tool]`s in the first hint.
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "graph.hint tool:get_weather,tool:get_time",
        ])[..],
        "{evs:?}"
    );
    assert_eq!(
        evs[evs.len() - 4..],
        lines(&[
            "node.started llm:step",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])[..],
        "{evs:?}"
    );
    for (node, id) in [
        ("tool:get_weather", "toolu_w"),
        ("tool:get_time", "toolu_t"),
    ] {
        let s = &started(&hub, node)[0];
        assert_eq!(s["instanceId"], id, "{s}");
        assert_eq!(finished(&hub, node)[0]["status"], "ok");
    }
    let steps = started(&hub, "llm:step");
    assert_eq!(steps.len(), 2);
    assert!(
        steps[0]["instanceId"]
            .as_str()
            .is_some_and(|i| i.ends_with(":s1"))
    );
    assert!(
        steps[1]["instanceId"]
            .as_str()
            .is_some_and(|i| i.ends_with(":s2")),
        "the second turn continues the invocation: {}",
        steps[1]
    );
    assert_eq!(
        finished(&hub, "llm:step")[0]["output"]["finishReason"],
        "tool-calls"
    );
    hub.assert_valid();
    gm.dispose().await;
}
