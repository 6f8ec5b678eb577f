//! `chat().create` and `chat().create_stream` through the wrapped client, against the mock
//! OpenAI server and the fake debugger: exact event sequences, the GraphMind 0.6 output,
//! usage with cached and reasoning tokens, tool-call deltas by index, and the caller's items
//! identical to the bare client's.

mod support;

use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::chat::{CreateChatCompletionRequest, CreateChatCompletionStreamResponse};
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::Mock;
use support::{attached, deltas, events, finished, runs_finished, sdk, started};

fn request(model: &str) -> CreateChatCompletionRequest {
    sdk(json!({
        "model": model,
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

fn stream_request(model: &str) -> CreateChatCompletionRequest {
    let mut r = request(model);
    r.stream = Some(true);
    r
}

/// Every item of a chat stream, as JSON (`Err` items as their message).
async fn drain(
    mut s: async_openai::types::chat::ChatCompletionResponseStream,
) -> Vec<Result<Value, String>> {
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        out.push(
            item.map(|c: CreateChatCompletionStreamResponse| {
                serde_json::to_value(c).expect("serializes")
            })
            .map_err(|e| e.to_string()),
        );
    }
    out
}

const HEAD: [&str; 5] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "graph.hint tool:get_weather,tool:convert",
];

fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn create_is_one_step_with_the_06_output_usage_and_request_tools_hinted() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let bare = mock
        .client()
        .chat()
        .create(request("tools"))
        .await
        .expect("bare");
    let client = mock.client().graphmind();
    let resp = gm
        .run("a", async { client.chat().create(request("tools")).await })
        .await
        .expect("not aborted")
        .expect("ok");
    assert_eq!(
        serde_json::to_value(&resp).expect("json"),
        serde_json::to_value(&bare).expect("json"),
        "the caller gets the SDK's response, unchanged"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    let mut output = fin["output"].clone();
    assert_eq!(
        output.as_object_mut().and_then(|o| o.remove("response")),
        Some(serde_json::to_value(&bare).expect("json")),
        "the whole response is kept under `response`"
    );
    assert_eq!(
        output,
        json!({
            "text": "",
            "finishReason": "tool-calls",
            "rawFinishReason": "tool_calls",
            "toolCalls": [
                {"id": "call_weather_1", "name": "get_weather", "input": {"city": "Lisbon"}},
                {"id": "call_convert_2", "name": "convert", "input": {"amount": 120, "to": "EUR"}}
            ]
        })
    );
    assert_eq!(fin["usage"]["inputTokens"], 1200);
    assert_eq!(fin["usage"]["outputTokens"], 80);
    assert_eq!(fin["usage"]["totalTokens"], 1280);
    assert_eq!(fin["usage"]["cacheReadTokens"], 1000);
    assert_eq!(fin["usage"]["reasoningTokens"], 30);
    assert_eq!(fin["usage"]["inclusive"], true);
    assert_eq!(fin["api"], "chat.completions");
    assert_eq!(fin["model"], "gpt-4o-mini-2024-07-18");
    assert_eq!(fin["responseId"], "chatcmpl-tools-1");
    assert!(fin.get("attempts").is_none(), "one attempt is not sent");
    let st = &started(&hub, "llm:step")[0];
    assert_eq!(st["input"]["model"], "tools");
    assert_eq!(st["parentId"], "agent:a");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_tees_parallel_tool_calls_apart_and_yields_the_sdks_chunks() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let bare = drain(
        mock.client()
            .chat()
            .create_stream(stream_request("tools"))
            .await
            .expect("bare"),
    )
    .await;
    let client = mock.client().graphmind();
    let teed = gm
        .run("a", async {
            let s = client.chat().create_stream(stream_request("tools")).await?;
            Ok::<_, OpenAIError>(drain(s).await)
        })
        .await
        .expect("not aborted")
        .expect("ok");
    assert_eq!(teed, bare, "the caller reads exactly the SDK's chunks");
    assert_eq!(teed.len(), 8);
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let ds = deltas(&hub, "llm:step");
    let args = |index: u64| -> String {
        ds.iter()
            .filter(|d| d["t"] == "tool-args" && d["index"] == index)
            .map(|d| d["v"].as_str().unwrap_or_default())
            .collect()
    };
    assert_eq!(args(0), r#"{"city":"Lisbon"}"#);
    assert_eq!(args(1), r#"{"amount":120,"to":"EUR"}"#);
    for d in &ds {
        let (id, name) = if d["index"] == 0 {
            ("call_weather_1", "get_weather")
        } else {
            ("call_convert_2", "convert")
        };
        assert_eq!(d["toolCallId"], id, "{d}");
        assert_eq!(d["toolName"], name, "{d}");
    }
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["finishReason"], "tool-calls");
    assert_eq!(
        fin["output"]["toolCalls"][1]["input"],
        json!({"amount": 120, "to": "EUR"})
    );
    assert_eq!(fin["streamed"], true);
    assert_eq!(fin["chunks"], 8);
    assert_eq!(fin["usage"]["cacheReadTokens"], 1000);
    assert_eq!(fin["usage"]["reasoningTokens"], 30);
    assert_eq!(fin["responseId"], "chatcmpl-tools-s");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_refusal_is_the_steps_text_streamed_or_not() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    gm.run("a", async {
        client.chat().create(request("refusal")).await.expect("ok");
        let s = client
            .chat()
            .create_stream(stream_request("refusal"))
            .await
            .expect("ok");
        drain(s).await;
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 2);
    for fin in &fins {
        assert_eq!(fin["output"]["text"], "I can't help with that.", "{fin}");
        assert_eq!(fin["output"]["finishReason"], "stop");
    }
    let text: String = deltas(&hub, "llm:step")
        .iter()
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, "I can't help with that.");
    hub.assert_valid();
    gm.dispose().await;
}

/// async-openai's chunk type has no `reasoning_content` field, so the typed stream drops it
/// before the adapter sees it: the answer streams, the reasoning token count is kept.
#[tokio::test]
async fn a_reasoning_content_stream_keeps_answer_and_reasoning_count() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let items = gm
        .run("a", async {
            let s = client
                .chat()
                .create_stream(stream_request("reasoning"))
                .await
                .expect("ok");
            drain(s).await
        })
        .await
        .expect("not aborted");
    assert_eq!(items.len(), 4);
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], "Hello there!");
    assert_eq!(fin["usage"]["reasoningTokens"], 14);
    assert_eq!(fin["model"], "deepseek-reasoner");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_broken_sse_line_is_a_stream_error_and_the_stream_goes_on() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let items = gm
        .run("a", async {
            let s = client
                .chat()
                .create_stream(stream_request("broken-sse"))
                .await
                .expect("ok");
            drain(s).await
        })
        .await
        .expect("not aborted");
    assert_eq!(items.len(), 3);
    assert!(
        items[0].is_ok() && items[1].is_err() && items[2].is_ok(),
        "{items:?}"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step StreamError",
            "node.finished llm:step error",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], "Par answer");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn request_options_apply_wrapping_is_idempotent_and_the_original_stays_bare() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let sdk_client = mock.client();
    let client = sdk_client.clone().graphmind().graphmind();
    gm.run("a", async {
        client
            .chat()
            .header("x-request-tag", "tagged")
            .expect("header")
            .create(request("text"))
            .await
            .expect("ok");
        // The original client: the SDK's own path, not a model step.
        sdk_client.chat().create(request("text")).await.expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0]
            .headers
            .get("x-request-tag")
            .map(|v| v.to_str().unwrap_or("")),
        Some("tagged")
    );
    assert_eq!(
        finished(&hub, "llm:step").len(),
        1,
        "one step: wrapped twice is wrapped once, and the original is not instrumented"
    );
    assert_eq!(started(&hub, "llm:step").len(), 1);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn consecutive_steps_of_one_conversation_share_an_invocation() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    gm.run("a", async {
        let first = request("tools");
        client.chat().create(first.clone()).await.expect("ok");
        let mut second = first;
        let mut v = serde_json::to_value(&second).expect("json");
        v["messages"]
            .as_array_mut()
            .expect("messages")
            .push(json!({"role": "tool", "tool_call_id": "call_weather_1", "content": "21 C"}));
        second = sdk(v);
        client.chat().create(second).await.expect("ok");
        // A new conversation: another first message.
        let mut other = serde_json::to_value(request("text")).expect("json");
        other["messages"][0]["content"] = json!("You are a poet.");
        client.chat().create(sdk(other)).await.expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let ids: Vec<String> = started(&hub, "llm:step")
        .iter()
        .map(|s| s["instanceId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids.len(), 3);
    let inv = |id: &str| {
        id.rsplit_once(':')
            .map(|(i, _)| i.to_owned())
            .unwrap_or_default()
    };
    assert!(
        ids[0].ends_with(":s1") && ids[1].ends_with(":s2"),
        "{ids:?}"
    );
    assert_eq!(inv(&ids[0]), inv(&ids[1]));
    assert!(
        ids[2].ends_with(":s1") && inv(&ids[2]) != inv(&ids[0]),
        "{ids:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}
