//! Detached (graphmind enabled, no debugger): every wrapped call returns exactly what the
//! bare client returns, and its step still reaches the replay ring.

mod support;

use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use serde_json::json;
use support::mock::Mock;
use support::sdk;

fn request(model: &str, stream: bool) -> CreateChatCompletionRequest {
    sdk(json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}))
}

#[tokio::test]
async fn detached_the_wrapper_returns_what_the_bare_client_returns() {
    let mock = Mock::start().await;
    // Nothing listens on port 9 (discard).
    let gm = graphmind::Session::new(
        graphmind::Config::new("detached")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let bare = mock.client();
    let client = mock.client().graphmind();
    let (wrapped, plain) = gm
        .run("a", async {
            let w = client
                .chat()
                .create(request("tools", false))
                .await
                .expect("ok");
            let p = bare
                .chat()
                .create(request("tools", false))
                .await
                .expect("ok");
            let mut ws = Vec::new();
            let mut s = client
                .chat()
                .create_stream(request("tools", true))
                .await
                .expect("ok");
            while let Some(c) = s.next().await {
                ws.push(serde_json::to_value(c.expect("chunk")).expect("json"));
            }
            let mut ps = Vec::new();
            let mut s = bare
                .chat()
                .create_stream(request("tools", true))
                .await
                .expect("ok");
            while let Some(c) = s.next().await {
                ps.push(serde_json::to_value(c.expect("chunk")).expect("json"));
            }
            (
                (serde_json::to_value(w).expect("json"), ws),
                (serde_json::to_value(p).expect("json"), ps),
            )
        })
        .await
        .expect("not aborted");
    assert_eq!(wrapped, plain);
    assert!(!gm.is_attached());
    assert!(gm.stats().buffered > 0, "the steps reached the replay ring");
    gm.dispose().await;
}
