//! A run of the wrapped client recorded and replayed with `graphmind::testing`: the replay
//! sends no request to the (mock) server, `chat().create` returns the recorded response and
//! `chat().create_stream` yields the recorded chunks, as many and the same.

mod support;

use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt;
use graphmind::testing::Replay;
use graphmind_openai::Instrument;
use serde_json::{Value, json};
use support::mock::Mock;
use support::sdk;

fn request(model: &str, stream: bool) -> CreateChatCompletionRequest {
    sdk(json!({
        "model": model,
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon, and 120 USD in EUR?"}
        ]
    }))
}

/// One plain request and one streamed: the response, and every chunk, as JSON.
async fn two_steps(
    client: graphmind_openai::Client<async_openai::config::OpenAIConfig>,
) -> (Value, Vec<Value>) {
    let resp = client
        .chat()
        .create(request("text", false))
        .await
        .expect("create");
    let mut s = client
        .chat()
        .create_stream(request("tools", true))
        .await
        .expect("stream");
    let mut chunks = Vec::new();
    while let Some(item) = s.next().await {
        chunks.push(serde_json::to_value(item.expect("chunk")).expect("json"));
    }
    (serde_json::to_value(resp).expect("json"), chunks)
}

#[tokio::test]
async fn a_recorded_adapter_run_replays_without_a_request_and_with_the_same_chunks() {
    let mock = Mock::start().await;
    let file = std::env::temp_dir().join(format!(
        "graphmind-openai-replay-{}.ndjson",
        std::process::id()
    ));
    let recorded = Replay::new(&file)
        .record(true)
        .run("two-steps", two_steps(mock.client().graphmind()))
        .await;
    assert!(recorded.was_recorded());
    let (resp, chunks) = recorded.into_output().expect("recorded run finished");
    assert_eq!(mock.count(), 2);
    assert!(chunks.len() > 2, "{chunks:?}");

    let replayed = Replay::new(&file)
        .run("two-steps", two_steps(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(replayed.served(), 2, "{:?}", replayed.outcomes());
    assert_eq!(mock.count(), 2, "the replay sent no request");
    let (resp2, chunks2) = replayed.into_output().expect("replayed run finished");
    assert_eq!(resp2, resp);
    assert_eq!(chunks2.len(), chunks.len());
    assert_eq!(chunks2, chunks);
}
