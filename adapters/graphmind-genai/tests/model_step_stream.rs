//! A streaming `#[graphmind::model_step(codec = graphmind_genai::Genai, stream = true)]` of
//! the user's own over genai's client: the step returns the adapter's `ChatStream` (genai's
//! own stream, `.into()`), is teed and handed back in that type, and its `ToolCallChunk`s
//! come out as tool-argument deltas per call (index, call id, tool name), as the wrapped
//! client's do, for both dialects.

mod support;

use genai::chat::{ChatOptions, ChatRequest};
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::{Mock, TEXT};
use support::{attached, drain, finished, request, runs_finished, with_tools};

/// The user's streaming step: genai's own client inside, the adapter's stream type out.
#[graphmind::model_step(codec = graphmind_genai::Genai, skip(client), stream = true)]
async fn step(
    client: &genai::Client,
    model: &str,
    req: ChatRequest,
) -> genai::Result<graphmind_genai::ChatStream> {
    Ok(client
        .exec_chat_stream(model, req, Some(&usage()))
        .await?
        .stream
        .into())
}

/// The options of the user's step: usage captured.
fn usage() -> ChatOptions {
    ChatOptions::default().with_capture_usage(true)
}

fn tools_request() -> ChatRequest {
    with_tools(request())
}

/// Every delta of `llm:step` in the run `run_id`, in order.
fn run_deltas(hub: &FakeDebugger, run_id: &str) -> Vec<Value> {
    hub.frames_of("node.token")
        .iter()
        .filter(|f| f.run_id() == run_id && f.payload()["nodeId"] == "llm:step")
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// Per tool call (by id, in first-seen order): its index, tool name and whole arguments.
fn per_call(deltas: &[Value]) -> Vec<(String, Value, Value, String)> {
    let mut calls: Vec<(String, Value, Value, String)> = Vec::new();
    for d in deltas.iter().filter(|d| d["t"] == "tool-args") {
        let id = d["toolCallId"].as_str().unwrap_or("-").to_owned();
        let v = d["v"].as_str().unwrap_or_default();
        match calls.iter_mut().find(|c| c.0 == id) {
            Some(c) => c.3.push_str(v),
            None => calls.push((id, d["index"].clone(), d["toolName"].clone(), v.to_owned())),
        }
    }
    calls
}

#[tokio::test]
async fn a_user_stream_step_returns_the_adapters_chat_stream_teed() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client();
    let bare = client
        .exec_chat_stream("gpt-text", request(), Some(&usage()))
        .await
        .expect("bare");
    let bare = drain(bare.stream).await;
    let got = gm
        .run("a", async {
            let s: graphmind_genai::ChatStream =
                step(&client, "gpt-text", request()).await.expect("opened");
            drain(s).await
        })
        .await
        .expect("not aborted");
    assert_eq!(got, bare, "the caller reads genai's events");
    assert_eq!(
        got,
        [
            "start",
            "chunk Sunny, ",
            "chunk 24 °C ",
            "chunk in Lisbon.",
            "end usage=true"
        ]
    );
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["output"]["text"], TEXT);
    assert_eq!(fin["output"]["finishReason"], "stop");
    assert_eq!(fin["usage"]["inputTokens"], 120);
    assert_eq!(fin["streaming"], true);
    hub.assert_valid();
    gm.dispose().await;
}

/// One dialect: the codec step's tool-argument deltas, per call, equal the wrapped client's
/// for the same stream, and name each call's index, id and tool.
async fn codec_step_tees_tool_arguments_per_call(model: &'static str, ids: [&str; 2]) {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client();
    let wrapped = client.clone().graphmind();
    let via_codec = gm
        .run("codec", async {
            drain(step(&client, model, tools_request()).await.expect("opened")).await
        })
        .await
        .expect("not aborted");
    let via_wrapper = gm
        .run("wrapped", async {
            let r = wrapped
                .exec_chat_stream(model, tools_request(), Some(&usage()))
                .await
                .expect("opened");
            drain(r.stream).await
        })
        .await
        .expect("not aborted");
    assert_eq!(via_codec, via_wrapper, "the caller reads the same events");
    runs_finished(&hub, 2).await;
    let runs: Vec<String> = hub
        .frames_of("run.started")
        .iter()
        .map(|f| f.run_id().to_owned())
        .collect();
    let (codec, wrapper) = (
        per_call(&run_deltas(&hub, &runs[0])),
        per_call(&run_deltas(&hub, &runs[1])),
    );
    assert_eq!(
        codec,
        [
            (
                ids[0].to_owned(),
                json!(0),
                json!("get_weather"),
                "{\"city\":\"Lisbon\"}".to_owned()
            ),
            (
                ids[1].to_owned(),
                json!(1),
                json!("get_time"),
                "{\"tz\":\"WET\"}".to_owned()
            ),
        ]
    );
    assert_eq!(codec, wrapper, "the codec path tees what the wrapper tees");
    assert!(
        run_deltas(&hub, &runs[0])
            .iter()
            .all(|d| d["t"] == "tool-args" && d["toolCallId"].is_string()),
        "every piece names its call"
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"]["toolCalls"][0]["id"], ids[0]);
    assert_eq!(fin["output"]["toolCalls"][0]["name"], "get_weather");
    assert_eq!(fin["output"]["toolCalls"][1]["id"], ids[1]);
    assert_eq!(fin["output"]["toolCalls"][1]["input"], json!({"tz": "WET"}));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn openai_codec_stream_step_tees_tool_arguments_per_call() {
    codec_step_tees_tool_arguments_per_call("gpt-tools", ["call_w", "call_t"]).await;
}

#[tokio::test]
async fn anthropic_codec_stream_step_tees_tool_arguments_per_call() {
    codec_step_tees_tool_arguments_per_call("claude-tools", ["toolu_w", "toolu_t"]).await;
}
