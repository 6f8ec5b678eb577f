//! `responses().create` and `responses().create_stream` through the wrapped client: built-in
//! tools as observe-only nodes, unknown event types passed through, function calls, and
//! invocation grouping by `previous_response_id`.

mod support;

use async_openai::error::OpenAIError;
use async_openai::types::responses::{CreateResponse, ResponseStream, ResponseStreamEvent};
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::Mock;
use support::{attached, deltas, events, finished, lines, runs_finished, sdk, started};

fn request(model: &str) -> CreateResponse {
    sdk(json!({
        "model": model,
        "input": "Weather in Lisbon today?",
        "tools": [{"type": "web_search_preview"}]
    }))
}

/// Every item of a Responses stream: the event's type, or `Err` with the SDK's message.
async fn drain(mut s: ResponseStream) -> Vec<Result<Value, String>> {
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        out.push(
            item.map(|e: ResponseStreamEvent| serde_json::to_value(e).expect("json"))
                .map_err(|e: OpenAIError| e.to_string()),
        );
    }
    out
}

#[tokio::test]
async fn a_web_search_is_an_observe_only_tool_node_named_by_its_item_id() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool"})]).await;
    let client = mock.client().graphmind();
    let resp = gm
        .run("a", async {
            client.responses().create(request("web-search")).await
        })
        .await
        .expect("not aborted")
        .expect("ok");
    assert_eq!(resp.id, "resp_websearch_1");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:a",
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "graph.hint tool:web_search",
            "node.started tool:web_search",
            "node.finished tool:web_search ok",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ]),
        "a tool breakpoint does not hold a tool the provider ran"
    );
    let hint = &hub.frames_of("graph.hint")[1];
    assert_eq!(hint.payload()["nodes"][0]["providerExecuted"], true);
    let ws = &finished(&hub, "tool:web_search")[0];
    assert_eq!(ws["instanceId"], "ws_0001");
    assert_eq!(ws["providerExecuted"], true);
    assert_eq!(ws["ungated"], true);
    assert_eq!(ws["output"]["action"]["query"], "Lisbon weather today");
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], "Lisbon is 21 °C and sunny today.");
    assert_eq!(fin["output"]["finishReason"], "stop");
    assert_eq!(fin["output"]["rawFinishReason"], "completed");
    assert_eq!(fin["api"], "responses");
    assert_eq!(fin["usage"]["cacheReadTokens"], 256);
    assert_eq!(fin["usage"]["reasoningTokens"], 12);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn an_unknown_event_type_passes_through_and_the_stream_goes_on() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let bare = drain(
        mock.client()
            .responses()
            .create_stream(request("web-search"))
            .await
            .expect("bare"),
    )
    .await;
    let client = mock.client().graphmind();
    let items = gm
        .run("a", async {
            let s = client
                .responses()
                .create_stream(request("web-search"))
                .await?;
            Ok::<_, OpenAIError>(drain(s).await)
        })
        .await
        .expect("not aborted")
        .expect("ok");
    assert_eq!(items, bare, "the caller reads exactly the SDK's items");
    assert_eq!(items.len(), 17);
    let unknown: Vec<usize> = (0..items.len()).filter(|&i| items[i].is_err()).collect();
    assert_eq!(unknown, vec![7], "the unknown event, as the SDK yields it");
    assert!(
        items[7]
            .as_ref()
            .expect_err("err")
            .contains("response.future_feature.delta")
    );
    assert_eq!(
        items
            .last()
            .and_then(|i| i.as_ref().ok())
            .map(|e| e["type"].clone()),
        Some(json!("response.completed")),
        "events after the unknown one still arrive"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:a",
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "graph.hint tool:web_search",
            "node.started tool:web_search",
            "node.finished tool:web_search ok",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["unknownEvents"], 1);
    assert_eq!(fin["chunks"], 17);
    assert_eq!(fin["streamed"], true);
    assert_eq!(fin["responseId"], "resp_websearch_s");
    assert_eq!(fin["output"]["text"], "Lisbon is 21 °C and sunny today.");
    assert_eq!(fin["usage"]["cacheReadTokens"], 256);
    let text: String = deltas(&hub, "llm:step")
        .iter()
        .filter(|d| d["t"] == "text")
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, "Lisbon is 21 °C and sunny today.");
    let ws = &started(&hub, "tool:web_search")[0];
    assert_eq!(ws["instanceId"], "ws_0001");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn function_calls_are_the_steps_tool_calls() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    gm.run("a", async {
        client.responses().create(request("tools")).await
    })
    .await
    .expect("not aborted")
    .expect("ok");
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["finishReason"], "tool-calls");
    assert_eq!(
        fin["output"]["toolCalls"],
        json!([
            {"id": "call_weather_1", "name": "get_weather", "input": {"city": "Lisbon"}},
            {"id": "call_convert_2", "name": "convert", "input": {"amount": 120, "to": "EUR"}}
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}

fn instance_ids(hub: &FakeDebugger) -> Vec<String> {
    started(hub, "llm:step")
        .iter()
        .map(|s| s["instanceId"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn invocation(id: &str) -> String {
    id.rsplit_once(':')
        .map(|(i, _)| i.to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn previous_response_id_continues_exactly_that_invocation() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    gm.run("a", async {
        let r = client.responses();
        let first = r.create(request("text")).await.expect("ok");
        let mut next = request("text");
        next.previous_response_id = Some(first.id.clone());
        let second = r.create(next).await.expect("ok");
        // Not chained: a new invocation, though the input is the same.
        r.create(request("text")).await.expect("ok");
        let mut third = request("text");
        third.previous_response_id = Some(second.id);
        r.create(third).await.expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let ids = instance_ids(&hub);
    assert_eq!(ids.len(), 4);
    assert!(
        ids[0].ends_with(":s1") && ids[1].ends_with(":s2"),
        "{ids:?}"
    );
    assert_eq!(invocation(&ids[0]), invocation(&ids[1]));
    assert!(ids[2].ends_with(":s1") && invocation(&ids[2]) != invocation(&ids[0]));
    assert_ne!(invocation(&ids[3]), invocation(&ids[2]));
    assert!(
        ids[3].ends_with(":s1") || invocation(&ids[3]) == invocation(&ids[0]),
        "the chain's third step never joins the unrelated invocation: {ids:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn two_concurrent_loops_in_their_own_runs_never_merge() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let one_loop = |name: &'static str| {
        let (gm, client) = (gm.clone(), client.clone());
        tokio::spawn(async move {
            gm.run(name, async {
                let mut prev: Option<String> = None;
                for _ in 0..3 {
                    let mut req = request("text");
                    req.previous_response_id = prev.take();
                    prev = Some(client.responses().create(req).await.expect("ok").id);
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("not aborted");
        })
    };
    let (a, b) = (one_loop("one"), one_loop("two"));
    a.await.expect("joined");
    b.await.expect("joined");
    runs_finished(&hub, 2).await;
    let by_run = |run_name: &str| -> Vec<String> {
        let agent = format!("agent:{run_name}");
        let run_id = hub
            .frames_of("node.started")
            .iter()
            .find(|f| f.payload()["nodeId"] == agent.as_str())
            .map(|f| f.run_id().to_owned())
            .expect("run started");
        hub.frames_of("node.started")
            .iter()
            .filter(|f| f.run_id() == run_id && f.payload()["nodeId"] == "llm:step")
            .map(|f| {
                f.payload()["instanceId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    let (one, two) = (by_run("one"), by_run("two"));
    assert_eq!(one.len(), 3);
    assert_eq!(two.len(), 3);
    for ids in [&one, &two] {
        assert!(
            ids.iter().all(|i| invocation(i) == invocation(&ids[0])),
            "one chain, one invocation: {ids:?}"
        );
        assert!(ids[2].ends_with(":s3"), "{ids:?}");
    }
    assert_ne!(invocation(&one[0]), invocation(&two[0]));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn before_edit_of_a_responses_stream_sends_the_edited_request() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("a", async {
                let s = client
                    .responses()
                    .create_stream(request("web-search"))
                    .await?;
                Ok::<_, OpenAIError>(drain(s).await)
            })
            .await
        }
    });
    let p = support::paused(&hub, 1).await;
    assert_eq!(
        p.payload()["editable"],
        true,
        "a stream's request is editable"
    );
    assert!(hub.send(&hub.control(
        "exec.resume",
        p.run_id(),
        json!({"pauseId": support::pause_id(&p), "action": "continue",
               "input": {"input": "Weather in Porto today?"}, "requestId": "e-4"}),
    )));
    let items = tokio::time::timeout(std::time::Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("ok");
    assert_eq!(items.len(), 17, "the stream reaches the caller");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["input"], "Weather in Porto today?",
        "the edited request is what left: {}",
        seen[0].body
    );
    assert_eq!(
        seen[0].body["model"], "web-search",
        "the keys not edited are kept"
    );
    assert_eq!(seen[0].body["stream"], true);
    runs_finished(&hub, 1).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["requestId"], "e-4");
    assert_eq!(
        resumed.payload()["edited"]["after"]["input"],
        "Weather in Porto today?"
    );
    gm.dispose().await;
}
