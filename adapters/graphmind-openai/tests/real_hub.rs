//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a 429 held at the hub's default error breakpoint, answered over the hub's HTTP API
//! with an inject, the request returns the injected completion and the hub stores the run.

mod support;

use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequest;
use graphmind_openai::Instrument;
use serde_json::{Value, json};
use support::mock::{Mock, fixture_json};
use support::sdk;

fn temp_home(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "graphmind-openai-{name}-{}-{}",
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
        graphmind::Config::new("openai-hub")
            .url(format!("ws://127.0.0.1:{}/ingest", hub.port))
            .hub_home(&home)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(gm.ready(Duration::from_secs(10)).await, "attached");
    assert!(gm.stats().trusted, "the hub proved itself");

    let mock = Mock::start().await;
    let client = mock.client().graphmind();
    let req: CreateChatCompletionRequest =
        sdk(json!({"model": "quota", "messages": [{"role": "user", "content": "hi"}]}));
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("hub-agent", async { client.chat().create(req).await })
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
        .json(&json!({"action": "inject", "output": fixture_json("chat_text.json")}))
        .send()
        .await
        .expect("resume");
    assert!(resumed.status().is_success(), "{:?}", resumed.text().await);

    let resp = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("the injected completion");
    assert_eq!(resp.id, "chatcmpl-text-1");

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
    assert_eq!(finished["usage"]["cacheReadTokens"], 1280);
    assert_eq!(finished["api"], "chat.completions");
    gm.dispose().await;
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&home);
}
