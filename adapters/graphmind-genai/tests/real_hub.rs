//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a provider's 500 held at the hub's default error breakpoint, answered over the hub's
//! HTTP API with an inject; `exec_chat` returns the injected response and the hub stores
//! the run with the step's output and usage.

mod support;

use std::time::Duration;

use genai::chat::ChatRequest;
use graphmind_genai::Instrument;
use serde_json::{Value, json};
use support::mock::Mock;

fn temp_home(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "graphmind-genai-{name}-{}-{}",
        std::process::id(),
        graphmind_hub::now_ms()
    ));
    std::fs::create_dir_all(dir.join("run")).expect("temp home");
    dir
}

async fn get(http: &reqwest::Client, url: &str, token: &str) -> Value {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("hub answers")
        .json()
        .await
        .expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_held_at_the_real_hub_is_injected_over_its_api() {
    let home = temp_home("hub");
    let mut config = graphmind_hub::HubConfig::new(home.join("runs.db"));
    config.port = 0;
    config.run_dir = Some(home.join("run"));
    config.allow_control = graphmind_hub::AllowControl::Inject;
    let hub = graphmind_hub::start(config).await.expect("the hub starts");
    let gm = graphmind::Session::new(
        graphmind::Config::new("genai-hub")
            .url(format!("ws://127.0.0.1:{}/ingest", hub.port))
            .hub_home(&home)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(gm.ready(Duration::from_secs(10)).await, "attached");
    assert!(gm.stats().trusted, "the hub proved itself");

    let mock = Mock::start().await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("hub-agent", async {
                client
                    .exec_chat("claude-always-500", ChatRequest::from_user("hi"), None)
                    .await
            })
            .await
        }
    });

    let http = reqwest::Client::new();
    let mut pause = Value::Null;
    for _ in 0..200 {
        let pauses = get(&http, &format!("{}/api/pauses", hub.url), &hub.agent_token).await;
        if let Some(p) = pauses["pauses"].as_array().and_then(|p| p.first()) {
            pause = p.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pause["nodeId"], "llm:step", "{pause}");
    assert_eq!(pause["point"], "error");
    let run_id = pause["runId"].as_str().expect("runId").to_owned();
    let pause_id = pause["pauseId"].as_str().expect("pauseId").to_owned();
    let resumed = http
        .post(format!(
            "{}/api/runs/{run_id}/pauses/{pause_id}/resume",
            hub.url
        ))
        .bearer_auth(&hub.agent_token)
        .json(&json!({"action": "inject", "output": {
            "content": [{"Text": "Injected over the hub's API."}],
            "model_iden": {"adapter_kind": "Anthropic", "model_name": "claude-always-500"},
            "provider_model_iden": {"adapter_kind": "Anthropic", "model_name": "claude-canned"},
            "stop_reason": {"Completed": "end_turn"},
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        }}))
        .send()
        .await
        .expect("resume");
    assert!(resumed.status().is_success(), "{:?}", resumed.text().await);

    let resp = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("the injected response");
    assert_eq!(resp.first_text(), Some("Injected over the hub's API."));
    assert_eq!(mock.count(), 1, "one request went out, and failed");

    let mut finished = Value::Null;
    for _ in 0..200 {
        let events = get(
            &http,
            &format!("{}/api/runs/{run_id}/events", hub.url),
            &hub.agent_token,
        )
        .await;
        if let Some(f) = events["events"].as_array().and_then(|es| {
            es.iter()
                .find(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "llm:step")
        }) {
            finished = f["payload"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(finished["injected"], true, "{finished}");
    assert_eq!(finished["output"]["finishReason"], "stop");
    assert_eq!(finished["output"]["text"], "Injected over the hub's API.");
    assert_eq!(finished["usage"]["inputTokens"], 11);
    assert_eq!(finished["model"], "claude-canned");
    assert_eq!(finished["api"], "genai.chat");
    gm.dispose().await;
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&home);
}
