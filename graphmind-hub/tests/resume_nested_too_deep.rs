//! A resume nested 99–127 levels deep was answered `202` and silently lost: the hub parsed up
//! to serde_json's 128 levels, the Rust client drops a frame nested past
//! `graphmind_protocol::MAX_DEPTH` (100) without answering. Now one limit holds on both sides:
//! an output (or edited input) at `MAX_RESUME_DEPTH` reaches the real client and is used; one
//! level more is refused `422` naming the limit, and the gate stays held.

mod support;

use std::time::Duration;

use graphmind_hub::MAX_RESUME_DEPTH;
use serde_json::{Value, json};
use support::{attached, block_on, get_async, hub, resume_async};

#[graphmind::tool]
async fn lookup(key: String) -> Value {
    json!({ "key": key })
}

/// `levels` arrays inside each other around `1`: nesting `levels` deep.
fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = Value::Array(vec![v]);
    }
    v
}

#[test]
fn the_limit_is_the_clients() {
    assert_eq!(MAX_RESUME_DEPTH, graphmind_protocol::MAX_DEPTH - 2);
}

#[test]
fn a_resume_one_level_past_the_clients_limit_is_refused_and_one_at_it_is_delivered() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Inject;
    });
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"kind": "tool", "name": "lookup"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let port = h.port;
    let token = h.agent_token.clone();
    block_on(async {
        let gm = attached(port, "deep-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("deep", async { lookup("k".into()).await }).await }
        });
        let p = get_async(port, "/api/pauses?wait=10".into()).await.json();
        let pause = p["pauses"][0].clone();
        let run = pause["runId"].as_str().expect("held").to_owned();
        let pause_id = pause["pauseId"].as_str().expect("pauseId").to_owned();

        // One level past the limit: refused by the hub, naming the limit; nothing sent.
        let r = resume_async(
            port,
            token.clone(),
            run.clone(),
            pause_id.clone(),
            json!({"action": "inject", "output": nested(MAX_RESUME_DEPTH + 1)}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(
            r.body.contains(&MAX_RESUME_DEPTH.to_string()),
            "the answer names the limit: {}",
            r.body
        );
        let still = get_async(port, format!("/api/pauses?runId={run}"))
            .await
            .json();
        assert_eq!(
            still["pauses"][0]["pauseId"],
            json!(pause_id),
            "the gate stays held"
        );

        // Exactly at the limit: the client takes it and the call returns it.
        let deepest = nested(MAX_RESUME_DEPTH);
        let r = resume_async(
            port,
            token,
            run,
            pause_id,
            json!({"action": "inject", "output": deepest}),
        )
        .await;
        assert_eq!(r.status, 200, "the app confirmed it: {}", r.body);
        let out = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the run finished")
            .expect("joined");
        assert_eq!(out.ok(), Some(nested(MAX_RESUME_DEPTH)));
        gm.dispose().await;
    });
}
