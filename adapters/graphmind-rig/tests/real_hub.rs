//! The adapter against the real hub (`graphmind-hub`, in-process, as `graphmind serve` runs
//! it): a failing tool held at the hub's default error breakpoint, answered over the hub's
//! HTTP API with a retry; the tool runs again, the run succeeds and the hub stores it.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use graphmind_rig::Instrument;
use rig_agent::AgentBuilder;
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::{Value, json};
use support::tools::Flaky;

fn temp_home(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "graphmind-rig-{name}-{}-{}",
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
async fn a_tool_error_held_at_the_real_hub_is_retried_over_its_api() {
    let home = temp_home("hub");
    let mut config = graphmind_hub::HubConfig::new(home.join("runs.db"));
    config.port = 0;
    config.run_dir = Some(home.join("run"));
    config.allow_control = graphmind_hub::AllowControl::Inject;
    let hub = graphmind_hub::start(config).await.expect("the hub starts");
    let gm = graphmind::Session::new(
        graphmind::Config::new("rig-hub")
            .url(format!("ws://127.0.0.1:{}/ingest", hub.port))
            .hub_home(&home)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(gm.ready(Duration::from_secs(10)).await, "attached");
    assert!(gm.stats().trusted, "the hub proved itself");

    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_f", "flaky", json!({})),
        MockTurn::text("done"),
    ]);
    let flaky = Flaky {
        fail_first: 1,
        ..Flaky::default()
    };
    let agent = AgentBuilder::new(model)
        .name("hub-agent")
        .tool(flaky.clone())
        .build();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            agent
                .graphmind()
                .prompt("go")
                .with(|r| r.max_turns(4))
                .session(&gm)
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
    assert_eq!(pause["nodeId"], "tool:flaky", "{pause}");
    assert_eq!(pause["point"], "error");
    let run_id = pause["runId"].as_str().expect("runId").to_owned();
    let pause_id = pause["pauseId"].as_str().expect("pauseId").to_owned();
    let resumed = http
        .post(format!(
            "{}/api/runs/{run_id}/pauses/{pause_id}/resume",
            hub.url
        ))
        .bearer_auth(&hub.agent_token)
        .json(&json!({"action": "retry"}))
        .send()
        .await
        .expect("resume");
    assert!(resumed.status().is_success(), "{:?}", resumed.text().await);

    let out = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("the run succeeds");
    assert_eq!(out.output(), "done");
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 2, "retried once");

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
                .find(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "tool:flaky")
        }) {
            finished = f["payload"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(finished["status"], "ok", "{finished}");
    assert_eq!(finished["attempts"], 2);
    assert_eq!(finished["instanceId"], "call_f");
    gm.dispose().await;
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&home);
}
