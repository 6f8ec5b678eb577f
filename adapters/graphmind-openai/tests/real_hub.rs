//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a 429 held at the hub's default error breakpoint, answered over the hub's HTTP API
//! with an inject, the request returns the injected completion and the hub stores the run.

mod support;

use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequest;
use graphmind_openai::Instrument;
use graphmind_tests::adapter::hub::RealHub;
use serde_json::json;
use support::mock::{Mock, fixture_json};
use support::sdk;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_held_at_the_real_hub_is_injected_over_its_api() {
    let hub = RealHub::start("openai-hub").await;
    let mock = Mock::start().await;
    let client = mock.client().graphmind();
    let req: CreateChatCompletionRequest =
        sdk(json!({"model": "quota", "messages": [{"role": "user", "content": "hi"}]}));
    let task = tokio::spawn({
        let gm = hub.session.clone();
        async move {
            gm.run("hub-agent", async { client.chat().create(req).await })
                .await
        }
    });

    let pause = hub.first_pause().await;
    assert_eq!(pause["nodeId"], "llm:step", "{pause}");
    assert_eq!(pause["point"], "error");
    hub.resume(
        &pause,
        &json!({"action": "inject", "output": fixture_json("chat_text.json")}),
    )
    .await;

    let resp = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("the injected completion");
    assert_eq!(resp.id, "chatcmpl-text-1");

    let run_id = pause["runId"].as_str().expect("runId");
    let finished = hub.stored_finish(run_id, "llm:step").await;
    assert_eq!(finished["injected"], true, "{finished}");
    assert_eq!(finished["output"]["finishReason"], "stop");
    assert_eq!(finished["usage"]["cacheReadTokens"], 1280);
    assert_eq!(finished["api"], "chat.completions");
    hub.stop().await;
}
