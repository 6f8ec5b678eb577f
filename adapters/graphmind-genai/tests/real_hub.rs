//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a provider's 500 held at the hub's default error breakpoint, answered over the hub's
//! HTTP API with an inject; `exec_chat` returns the injected response and the hub stores
//! the run with the step's output and usage.

mod support;

use std::time::Duration;

use genai::chat::ChatRequest;
use graphmind_genai::Instrument;
use graphmind_tests::adapter::hub::RealHub;
use serde_json::json;
use support::mock::Mock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_held_at_the_real_hub_is_injected_over_its_api() {
    let hub = RealHub::start("genai-hub").await;
    let mock = Mock::start().await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = hub.session.clone();
        async move {
            gm.run("hub-agent", async {
                client
                    .exec_chat("claude-always-500", ChatRequest::from_user("hi"), None)
                    .await
            })
            .await
        }
    });

    let pause = hub.first_pause().await;
    assert_eq!(pause["nodeId"], "llm:step", "{pause}");
    assert_eq!(pause["point"], "error");
    hub.resume(
        &pause,
        &json!({"action": "inject", "output": {
            "content": [{"Text": "Injected over the hub's API."}],
            "model_iden": {"adapter_kind": "Anthropic", "model_name": "claude-always-500"},
            "provider_model_iden": {"adapter_kind": "Anthropic", "model_name": "claude-canned"},
            "stop_reason": {"Completed": "end_turn"},
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        }}),
    )
    .await;

    let resp = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("the injected response");
    assert_eq!(resp.first_text(), Some("Injected over the hub's API."));
    assert_eq!(mock.count(), 1, "one request went out, and failed");

    let run_id = pause["runId"].as_str().expect("runId");
    let finished = hub.stored_finish(run_id, "llm:step").await;
    assert_eq!(finished["injected"], true, "{finished}");
    assert_eq!(finished["output"]["finishReason"], "stop");
    assert_eq!(finished["output"]["text"], "Injected over the hub's API.");
    assert_eq!(finished["usage"]["inputTokens"], 11);
    assert_eq!(finished["model"], "claude-canned");
    assert_eq!(finished["api"], "genai.chat");
    hub.stop().await;
}
