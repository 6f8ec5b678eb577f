//! Shared by the adapter's integration tests: the mock provider server (OpenAI and Anthropic
//! dialects), a session attached to the fake debugger, the requests and the stream reading
//! most tests use (the rest is `graphmind_tests::adapter`).
#![allow(dead_code, unused_imports)]

pub mod mock;

use futures_util::{Stream, StreamExt};
use genai::chat::{ChatMessage, ChatRequest, ChatStreamEvent, Tool};
use graphmind_tests::FakeDebugger;
pub use graphmind_tests::adapter::*;
use serde_json::{Value, json};

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "genai-tests", breakpoints).await
}

/// The request most tests send: one user message.
pub fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")])
}

/// `request` offering the two tools the mock's `…-tools` models call.
pub fn with_tools(request: ChatRequest) -> ChatRequest {
    request.with_tools(vec![
        Tool::new("get_weather").with_schema(json!({"type": "object"})),
        Tool::new("get_time").with_schema(json!({"type": "object"})),
    ])
}

/// One stream item as a short line: `start`, `chunk <text>`, `reasoning <text>`,
/// `tool <call id> <arguments>`, `end usage=<captured usage or not>`, `err <error's first
/// word>`, ….
pub fn event_line(item: &genai::Result<ChatStreamEvent>) -> String {
    match item {
        Ok(ChatStreamEvent::Start) => "start".to_owned(),
        Ok(ChatStreamEvent::Chunk(c)) => format!("chunk {}", c.content),
        Ok(ChatStreamEvent::ReasoningChunk(c)) => format!("reasoning {}", c.content),
        Ok(ChatStreamEvent::ThoughtSignatureChunk(_)) => "signature".to_owned(),
        Ok(ChatStreamEvent::ToolCallChunk(t)) => {
            format!("tool {} {}", t.tool_call.call_id, t.tool_call.fn_arguments)
        }
        Ok(ChatStreamEvent::End(e)) => format!("end usage={}", e.captured_usage.is_some()),
        Ok(ChatStreamEvent::Heartbeat) => "heartbeat".to_owned(),
        Err(e) => format!("err {}", short(e)),
    }
}

/// Reads a whole stream (the adapter's `ChatStream` or genai's own): its items as lines.
pub async fn drain(stream: impl Stream<Item = genai::Result<ChatStreamEvent>>) -> Vec<String> {
    let mut stream = std::pin::pin!(stream);
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        out.push(event_line(&item));
    }
    out
}

/// What a streamed call inside a run read to its end, as lines.
pub type StreamOutcome = Result<genai::Result<Vec<String>>, graphmind::Aborted>;

/// Streams `request()` to `model` inside the run `a` (so the agent node is `agent:a`) and
/// reads the stream to its end.
pub fn spawn_stream(
    gm: &graphmind::Session,
    client: graphmind_genai::Client,
    model: &'static str,
) -> tokio::task::JoinHandle<StreamOutcome> {
    let gm = gm.clone();
    tokio::spawn(async move {
        gm.run("a", async {
            let opened = client.exec_chat_stream(model, request(), None).await?;
            Ok(drain(opened.stream).await)
        })
        .await
    })
}
