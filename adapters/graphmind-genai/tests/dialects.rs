//! Both provider dialects (OpenAI-style and Anthropic-style) through the wrapped client, with
//! no breakpoint: exact event sequences, the output and usage on `node.finished`, the
//! stream tee per call, and what the caller gets compared with bare genai.

mod support;

use genai::chat::{ChatMessage, ChatOptions, ChatRequest};
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::{Mock, TEXT};
use support::{attached, deltas, drain, events, finished, lines, runs_finished};

fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")])
        .with_system("You are a travel assistant.")
}

fn tools_request() -> ChatRequest {
    support::with_tools(request())
}

const PLAIN: [&str; 7] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "node.finished llm:step ok",
    "node.finished agent:a ok",
    "run.finished ok",
];

async fn exec_chat_records(model: &str, raw_finish: &str, usage: Value) {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let bare = mock
        .client()
        .exec_chat(model, request(), None)
        .await
        .expect("bare");
    let res = gm
        .run("a", async {
            client.exec_chat(model, request(), None).await
        })
        .await
        .expect("not aborted")
        .expect("ok");
    assert_eq!(res.first_text(), Some(TEXT));
    assert_eq!(
        serde_json::to_value(&res).expect("json")["usage"],
        serde_json::to_value(&bare).expect("json")["usage"],
        "the caller gets what bare genai returns"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(events(&hub), lines(&PLAIN));
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], TEXT);
    assert_eq!(fin["output"]["finishReason"], "stop");
    assert_eq!(fin["output"]["rawFinishReason"], raw_finish);
    assert_eq!(fin["usage"], usage);
    assert_eq!(fin["api"], "genai.chat");
    assert_eq!(fin["attempts"], Value::Null, "one attempt is not recorded");
    assert_eq!(fin["model"], format!("{model}-2026"));
    let started = &support::started(&hub, "llm:step")[0];
    assert_eq!(started["input"]["model"], model);
    assert_eq!(started["input"]["system"], "You are a travel assistant.");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn openai_exec_chat_is_one_step_with_output_and_usage() {
    exec_chat_records(
        "gpt-text",
        "stop",
        json!({"inputTokens": 120, "outputTokens": 9, "inclusive": true, "totalTokens": 129, "cacheReadTokens": 100}),
    )
    .await;
}

#[tokio::test]
async fn anthropic_exec_chat_is_one_step_with_output_and_usage() {
    // genai folds Anthropic's cache reads and writes into prompt_tokens (20 + 100 + 5).
    exec_chat_records(
        "claude-text",
        "end_turn",
        json!({"inputTokens": 125, "outputTokens": 9, "inclusive": true, "totalTokens": 134, "cacheReadTokens": 100, "cacheWriteTokens": 5}),
    )
    .await;
}

/// The stream tee for one dialect: the caller's events equal bare genai's, and the
/// debugger gets each tool call's arguments apart, by call, in pieces.
async fn stream_tees_tool_calls_per_call(model: &str, ids: [&str; 2]) {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let bare = mock
        .client()
        .exec_chat_stream(model, tools_request(), None)
        .await
        .expect("bare");
    let bare = drain(bare.stream).await;
    let got = gm
        .run("a", async {
            let r = client
                .exec_chat_stream(model, tools_request(), None)
                .await
                .expect("opened");
            drain(r.stream).await
        })
        .await
        .expect("not aborted");
    assert_eq!(got, bare, "the caller reads exactly genai's events");
    assert!(
        got.last().is_some_and(|l| l == "end usage=false"),
        "{got:?}"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        lines(&[
            "run.started",
            "node.started agent:a",
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "graph.hint tool:get_weather,tool:get_time",
            "node.finished llm:step ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let ds = deltas(&hub, "llm:step");
    let per_call = |id: &str| -> String {
        ds.iter()
            .filter(|d| d["toolCallId"] == id)
            .map(|d| d["v"].as_str().unwrap_or_default())
            .collect()
    };
    assert_eq!(per_call(ids[0]), "{\"city\":\"Lisbon\"}");
    assert_eq!(per_call(ids[1]), "{\"tz\":\"WET\"}");
    let index_of = |id: &str| {
        ds.iter()
            .find(|d| d["toolCallId"] == id)
            .map(|d| d["index"].clone())
    };
    assert_eq!(index_of(ids[0]), Some(json!(0)));
    assert_eq!(index_of(ids[1]), Some(json!(1)));
    assert!(
        ds.iter().all(|d| d["t"] == "tool-args"),
        "only tool arguments: {ds:?}"
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["finishReason"], "tool-calls");
    assert_eq!(fin["output"]["toolCalls"][0]["id"], ids[0]);
    assert_eq!(fin["output"]["toolCalls"][0]["name"], "get_weather");
    assert_eq!(
        fin["output"]["toolCalls"][0]["input"],
        json!({"city": "Lisbon"})
    );
    assert_eq!(fin["output"]["toolCalls"][1]["input"], json!({"tz": "WET"}));
    assert_eq!(fin["streamed"], true);
    assert!(
        fin["usage"]["inputTokens"].as_u64().is_some(),
        "usage captured although the call did not ask: {fin}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn openai_stream_tees_tool_arguments_per_call() {
    stream_tees_tool_calls_per_call("gpt-tools", ["call_w", "call_t"]).await;
}

#[tokio::test]
async fn anthropic_stream_tees_tool_arguments_per_call() {
    stream_tees_tool_calls_per_call("claude-tools", ["toolu_w", "toolu_t"]).await;
}

#[tokio::test]
async fn anthropic_stream_tees_reasoning_and_text() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let got = gm
        .run("a", async {
            let r = client
                .exec_chat_stream("claude-think", request(), None)
                .await
                .expect("opened");
            drain(r.stream).await
        })
        .await
        .expect("not aborted");
    assert!(
        got.contains(&"reasoning The user wants ".to_owned()),
        "{got:?}"
    );
    runs_finished(&hub, 1).await;
    assert_eq!(events(&hub), lines(&PLAIN));
    let ds = deltas(&hub, "llm:step");
    let of = |kind: &str| -> String {
        ds.iter()
            .filter(|d| d["t"] == kind)
            .map(|d| d["v"].as_str().unwrap_or_default())
            .collect()
    };
    assert_eq!(of("reasoning"), "The user wants the weather.", "{ds:?}");
    assert_eq!(of("text"), TEXT);
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["text"], TEXT);
    assert_eq!(fin["output"]["rawFinishReason"], "end_turn");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_caller_that_asks_for_usage_keeps_it_on_the_end_event() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let options = ChatOptions::default().with_capture_usage(true);
    let got = gm
        .run("a", async {
            let r = client
                .exec_chat_stream("gpt-text", request(), Some(&options))
                .await
                .expect("opened");
            drain(r.stream).await
        })
        .await
        .expect("not aborted");
    assert_eq!(
        got,
        vec![
            "start".to_owned(),
            "chunk Sunny, ".to_owned(),
            "chunk 24 °C ".to_owned(),
            "chunk in Lisbon.".to_owned(),
            "end usage=true".to_owned(),
        ]
    );
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["usage"]["inputTokens"], 120);
    assert_eq!(fin["output"]["text"], TEXT);
    // The adapter asked the provider for usage although the caller did not: the request
    // genai sent says so.
    assert_eq!(mock.seen()[0].body["stream_options"]["include_usage"], true);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_caller_that_did_not_ask_for_usage_gets_none_but_the_debugger_does() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client().graphmind();
    let got = gm
        .run("a", async {
            let r = client
                .exec_chat_stream("claude-text", request(), None)
                .await
                .expect("opened");
            drain(r.stream).await
        })
        .await
        .expect("not aborted");
    assert_eq!(got.last().map(String::as_str), Some("end usage=false"));
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["usage"]["outputTokens"], 9);
    assert_eq!(fin["chunks"], 5);
    hub.assert_valid();
    gm.dispose().await;
}
