//! What a PauseInfo shows of the held execution: input from node.started, the error from
//! node.error, and — when the client puts them in `exec.paused` (an `after` gate's result is in
//! no earlier event) — the input, output, error and instanceId it carries; after a hub restart
//! the client's replay (all duplicates) restores them for nodes that started before it.
//! It also lists the actions the gate accepts when the client says (`actions`).

mod support;

use serde_json::{Value, json};
use support::{App, block_on, get_async, hub};

async fn only_pause(port: u16) -> Value {
    let v = get_async(port, "/api/pauses?wait=5".into()).await.json();
    let pauses = v["pauses"].as_array().expect("pauses").clone();
    assert_eq!(pauses.len(), 1, "{v}");
    pauses[0].clone()
}

#[test]
fn an_after_pause_shows_the_result_the_client_sent_with_it() {
    let h = hub(|_| {});
    block_on(async {
        let mut app = App::running(h.port, "run_after", "after").await;
        app.emit(
            "run_after",
            "node.started",
            json!({"nodeId": "tool:quote", "kind": "tool", "name": "quote", "instanceId": "call_9", "input": {"sku": "A"}}),
        )
        .await;
        app.emit(
            "run_after",
            "exec.paused",
            json!({"pauseId": "pause_a_1", "nodeId": "tool:quote", "point": "after", "output": {"cents": 5}}),
        )
        .await;
        let p = only_pause(h.port).await;
        assert_eq!(p["point"], json!("after"));
        assert_eq!(p["input"], json!({"sku": "A"}));
        assert_eq!(p["output"], json!({"cents": 5}));
        assert_eq!(p["instanceId"], json!("call_9"));
        assert_eq!(p["error"], Value::Null);
    });
}

#[test]
fn a_pause_prefers_what_exec_paused_carries_over_earlier_events() {
    let h = hub(|_| {});
    block_on(async {
        let mut app = App::running(h.port, "run_err", "err").await;
        app.emit(
            "run_err",
            "node.started",
            json!({"nodeId": "tool:f", "kind": "tool", "name": "f", "instanceId": "call_1", "input": {"a": 1}}),
        )
        .await;
        app.emit(
            "run_err",
            "node.error",
            json!({"nodeId": "tool:f", "instanceId": "call_1", "error": {"name": "E", "message": "boom"}}),
        )
        .await;
        app.emit(
            "run_err",
            "exec.paused",
            json!({"pauseId": "pause_e_1", "nodeId": "tool:f", "point": "error", "instanceId": "call_2", "input": {"a": 2}}),
        )
        .await;
        let p = only_pause(h.port).await;
        assert_eq!(p["reason"], json!("error"));
        assert_eq!(p["error"], json!({"name": "E", "message": "boom"}));
        assert_eq!(p["input"], json!({"a": 2}));
        assert_eq!(p["instanceId"], json!("call_2"));
        assert_eq!(p["output"], Value::Null);
    });
}

#[test]
fn after_a_hub_restart_the_replay_restores_what_a_pause_shows() {
    let dir = support::TempDir::new("pause-replay");
    let started = support::env(
        2,
        "run_r",
        "node.started",
        json!({"nodeId": "tool:q", "kind": "tool", "name": "q", "instanceId": "call_7", "input": {"a": 1}}),
    );
    let run_started = support::env(
        1,
        "run_r",
        "run.started",
        json!({"app": "test-app", "sdk": {"name": "rust", "version": "0.1.0"}, "meta": {"name": "r"}}),
    );
    {
        let s = support::InProcessHub::start_in(&dir.0, |_| {});
        block_on(async {
            let mut app = App::connect(s.port).await;
            app.peer.send(&run_started).await;
            app.peer.send(&started).await;
        });
        support::wait_for(10, "stored", || (s.seqs("run_r").len() == 2).then_some(()));
        s.stop();
    }
    let s = support::InProcessHub::start_in(&dir.0, |_| {});
    block_on(async {
        let mut app = App::connect_resuming(s.port, None, 3).await;
        app.peer.send(&run_started).await;
        app.peer.send(&started).await;
        app.seq = 10;
        app.emit(
            "run_r",
            "exec.paused",
            json!({"pauseId": "pause_r_1", "nodeId": "tool:q", "point": "after"}),
        )
        .await;
        let p = only_pause(s.port).await;
        assert_eq!(p["input"], json!({"a": 1}), "{p}");
        assert_eq!(p["instanceId"], json!("call_7"));
        assert_eq!(p["name"], json!("q"));
    });
    assert_eq!(s.health()["stats"]["duplicates"], json!(2));
}

#[test]
fn a_pause_shows_the_actions_its_gate_accepts_and_ignores_a_malformed_list() {
    let h = hub(|_| {});
    block_on(async {
        let mut app = App::running(h.port, "run_acts", "acts").await;
        app.emit(
            "run_acts",
            "node.started",
            json!({"nodeId": "llm:step", "kind": "llm", "name": "step", "instanceId": "inv_1:s1"}),
        )
        .await;
        app.emit(
            "run_acts",
            "exec.paused",
            json!({"pauseId": "pause_s_1", "nodeId": "llm:step", "point": "before", "actions": ["continue", "retry", "abort"]}),
        )
        .await;
        let p = only_pause(h.port).await;
        assert_eq!(p["actions"], json!(["continue", "retry", "abort"]));
        app.emit(
            "run_acts",
            "exec.resumed",
            json!({"pauseId": "pause_s_1", "action": "continue"}),
        )
        .await;
        app.emit(
            "run_acts",
            "exec.paused",
            json!({"pauseId": "pause_s_2", "nodeId": "llm:step", "point": "before", "actions": ["continue", "fly"]}),
        )
        .await;
        // `wait` answers as soon as any pause is open (the first may still be): poll for it.
        let mut second = None;
        for _ in 0..100 {
            let v = get_async(h.port, "/api/pauses".into()).await.json();
            second = v["pauses"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["pauseId"] == "pause_s_2"))
                .cloned();
            if second.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let p = second.expect("the second pause within 5 s");
        assert_eq!(
            p["actions"],
            Value::Null,
            "an unknown action: treated as not said"
        );
    });
}
