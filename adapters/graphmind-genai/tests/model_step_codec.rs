//! `#[graphmind::model_step(codec = graphmind_genai::Genai)]` on hand-written steps over
//! genai's own client: the same output and usage as the wrapped client records, and a
//! streamed step teed through the codec.

mod support;

use futures_util::StreamExt;
use std::pin::Pin;

use futures_core::Stream;
use genai::chat::{ChatRequest, ChatResponse, ChatStreamEvent};
use graphmind_tests::FakeDebugger;
use support::mock::{Mock, TEXT};
use support::{attached, deltas, finished, runs_finished};

#[graphmind::model_step(codec = graphmind_genai::Genai, skip(client))]
async fn step(client: &genai::Client, req: ChatRequest) -> genai::Result<ChatResponse> {
    client.exec_chat("claude-text", req, None).await
}

#[graphmind::model_step(codec = graphmind_genai::Genai, skip(client), stream = true)]
async fn step_stream(
    client: &genai::Client,
    req: ChatRequest,
) -> genai::Result<Pin<Box<dyn Stream<Item = genai::Result<ChatStreamEvent>> + Send>>> {
    let options = genai::chat::ChatOptions::default().with_capture_usage(true);
    Ok(Box::pin(
        client
            .exec_chat_stream("gpt-text", req, Some(&options))
            .await?
            .stream,
    ))
}

#[tokio::test]
async fn a_codec_step_records_genais_output_usage_and_stream() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let client = mock.client();
    let text = gm
        .run("a", async {
            let r = step(&client, ChatRequest::from_user("hi"))
                .await
                .expect("ok");
            let mut s = step_stream(&client, ChatRequest::from_user("hi"))
                .await
                .expect("ok");
            let mut streamed = String::new();
            while let Some(e) = s.next().await {
                if let Ok(ChatStreamEvent::Chunk(c)) = e {
                    streamed.push_str(&c.content);
                }
            }
            (r.first_text().map(str::to_owned), streamed)
        })
        .await
        .expect("not aborted");
    assert_eq!(text, (Some(TEXT.to_owned()), TEXT.to_owned()));
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 2);
    assert_eq!(fins[0]["output"]["text"], TEXT);
    assert_eq!(fins[0]["output"]["rawFinishReason"], "end_turn");
    assert_eq!(fins[0]["usage"]["cacheReadTokens"], 100);
    assert_eq!(fins[1]["usage"]["inputTokens"], 120);
    assert_eq!(fins[1]["output"]["finishReason"], "stop");
    let text: String = deltas(&hub, "llm:step")
        .iter()
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, TEXT);
    hub.assert_valid();
    gm.dispose().await;
}
