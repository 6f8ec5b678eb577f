//! Editing a held call's arguments (GraphMind 0.6 `edit-input`) against the fake debugger:
//! an accepted edit runs the body with the edited arguments, each bad edit is refused with
//! its code while the gate stays held, `requestId` is echoed, and nothing is edited without
//! the hub's capability or with the kill switch on.

mod macro_support;

use graphmind_tests::adapter::resume_with;

use graphmind_tests::FakeDebugger;
use macro_support::{SECOND, finished, paused, run_finished, wait_count};
use serde_json::{Value, json};

#[graphmind::tool]
async fn search(q: String, limit: u32) -> String {
    format!("{q}:{limit}")
}

#[graphmind::tool]
async fn borrowed(q: &str) -> String {
    q.to_uppercase()
}

/// A session attached to `hub`, holding before every tool; `caps` are the ack's
/// `hubCapabilities`.
async fn attached(hub: &FakeDebugger, caps: &[&str], cfg: graphmind::Config) -> graphmind::Session {
    hub.set_hub_capabilities(caps);
    hub.set_breakpoints(vec![json!({"kind": "tool"})]);
    let gm = graphmind::Session::new(cfg);
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm
}

const EDIT_CAPS: &[&str] = &["pause-registry", "edit-input"];

#[tokio::test]
async fn an_accepted_edit_runs_the_body_with_the_edited_arguments_and_the_node_shows_them() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, EDIT_CAPS, hub.config("edit")).await;
    let hello = &hub.frames_of("hello")[0];
    let caps = hello.payload()["capabilities"].clone();
    assert!(
        caps.as_array()
            .expect("caps")
            .contains(&json!("edit-input")),
        "{caps}"
    );
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", search("a".into(), 5)).await }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["editable"], true);
    let started = &hub.frames_of("node.started")[1];
    assert_eq!(
        held.payload()["instanceId"],
        started.payload()["instanceId"],
        "exec.paused names the held execution"
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"q": "b"}, "requestId": "req-1"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out, "b:5",
        "the body sees the edited argument, the other one kept"
    );
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "continue");
    assert_eq!(
        resumed.payload()["edited"]["after"],
        json!({"q": "b", "limit": 5})
    );
    assert_eq!(resumed.payload()["requestId"], "req-1");
    let fin = &finished(&hub, "tool:search")[0];
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["output"], "b:5");
    assert_eq!(
        fin["edited"],
        json!({"before": {"q": "a", "limit": 5}, "after": {"q": "b", "limit": 5}})
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn each_bad_edit_is_refused_with_its_code_and_the_gate_stays_held_until_a_valid_one() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, EDIT_CAPS, hub.config("edit")).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", search("a".into(), 5)).await }
    });
    let held = paused(&hub, 1).await;
    let secret = "s3cr3t-value";
    let bad = [
        (json!({"action": "continue", "input": [secret]}), "shape"),
        (
            json!({"action": "continue", "input": {"nope": secret}}),
            "shape",
        ),
        (
            json!({"action": "continue", "input": {"q": {"__graphmindTruncated": true, "preview": secret}}}),
            "truncated",
        ),
        (
            json!({"action": "continue", "input": {"q": "__REDACTED__"}}),
            "placeholder",
        ),
        (
            json!({"action": "continue", "input": {"q": format!("{secret}…[graphmind: truncated]")}}),
            "placeholder",
        ),
        (
            json!({"action": "continue", "input": {"limit": secret}}),
            "schema",
        ),
        (
            json!({"action": "continue", "input": {"limit": -3}}),
            "schema",
        ),
        (
            json!({"action": "abort", "input": {"q": "b"}}),
            "unsupported",
        ),
    ];
    for (i, (payload, _)) in bad.iter().enumerate() {
        let mut payload = payload.clone();
        payload["requestId"] = json!(format!("bad-{i}"));
        resume_with(&hub, &held, payload);
    }
    let refused = wait_count(&hub, "exec.refused", bad.len()).await;
    for (i, (frame, (_, code))) in refused.iter().zip(&bad).enumerate() {
        let p = frame.payload();
        assert_eq!(p["code"], *code, "refusal {i}: {p}");
        assert_eq!(
            p["requestId"],
            format!("bad-{i}"),
            "refusal {i} echoes its request"
        );
        let message = p["message"].as_str().expect("message");
        assert!(message.chars().count() <= 200, "{message}");
        assert!(
            !message.contains(secret),
            "a refusal never quotes the values: {message}"
        );
    }
    tokio::time::sleep(SECOND / 10).await;
    assert!(
        !task.is_finished(),
        "the gate stays held after every refusal"
    );
    assert!(hub.frames_of("exec.resumed").is_empty());

    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"limit": 7}, "requestId": "ok"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, "a:7");
    let resumed = &wait_count(&hub, "exec.resumed", 1).await[0];
    assert_eq!(resumed.payload()["requestId"], "ok");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn without_the_hub_capability_no_edit_is_offered_or_honoured() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, &["pause-registry"], hub.config("edit")).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", search("a".into(), 5)).await }
    });
    let held = paused(&hub, 1).await;
    assert!(
        held.payload().get("editable").is_none(),
        "{}",
        held.payload()
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"q": "b"}, "requestId": "e"}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "disabled");
    assert_eq!(refused[0].payload()["requestId"], "e");
    resume_with(&hub, &held, json!({"action": "continue"}));
    assert_eq!(task.await.expect("joined").expect("not aborted"), "a:5");
    run_finished(&hub).await;
    assert!(finished(&hub, "tool:search")[0].get("edited").is_none());
    gm.dispose().await;
}

#[tokio::test]
async fn the_kill_switch_takes_edit_input_off_the_hello_and_refuses_edits() {
    let hub = FakeDebugger::start().await;
    let cfg = hub
        .config("edit")
        .env_vars([("GRAPHMIND_DISABLE_EDIT_INPUT", "1")]);
    let gm = attached(&hub, EDIT_CAPS, cfg).await;
    let caps = hub.frames_of("hello")[0].payload()["capabilities"].clone();
    assert!(
        !caps
            .as_array()
            .expect("caps")
            .contains(&json!("edit-input")),
        "{caps}"
    );
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", search("a".into(), 5)).await }
    });
    let held = paused(&hub, 1).await;
    assert!(held.payload().get("editable").is_none());
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"q": "b"}}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "disabled");
    assert!(
        refused[0].payload()["message"]
            .as_str()
            .is_some_and(|m| m.contains("GRAPHMIND_DISABLE_EDIT_INPUT")),
        "the refusal names the switch"
    );
    resume_with(&hub, &held, json!({"action": "continue"}));
    assert_eq!(task.await.expect("joined").expect("not aborted"), "a:5");
    gm.dispose().await;
}

#[tokio::test]
async fn a_tool_whose_arguments_borrow_is_not_editable_and_refuses_an_edit_as_unsupported() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, EDIT_CAPS, hub.config("edit")).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", async { borrowed("a").await }).await }
    });
    let held = paused(&hub, 1).await;
    assert!(held.payload().get("editable").is_none());
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"q": "b"}}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    resume_with(&hub, &held, json!({"action": "continue"}));
    assert_eq!(task.await.expect("joined").expect("not aborted"), "A");
    gm.dispose().await;
}

#[tokio::test]
async fn request_id_is_echoed_on_exec_resumed_for_every_action() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, EDIT_CAPS, hub.config("edit")).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                let a = search("a".into(), 1).await;
                let b = search("b".into(), 2).await;
                let c = search("c".into(), 3).await;
                (a, b, c)
            })
            .await
        }
    });
    let first = paused(&hub, 1).await;
    resume_with(
        &hub,
        &first,
        json!({"action": "continue", "requestId": "c-1"}),
    );
    let second = paused(&hub, 2).await;
    resume_with(
        &hub,
        &second,
        json!({"action": "retry", "requestId": "r-1"}),
    );
    let third = paused(&hub, 3).await;
    resume_with(
        &hub,
        &third,
        json!({"action": "inject", "output": "x", "requestId": "i-1"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, ("a:1".to_owned(), "b:2".to_owned(), "x".to_owned()));
    let ids: Vec<Value> = wait_count(&hub, "exec.resumed", 3)
        .await
        .iter()
        .map(|f| f.payload()["requestId"].clone())
        .collect();
    let mut ids = ids.into_iter();
    assert_eq!(ids.next(), Some(json!("c-1")));
    assert_eq!(ids.next(), Some(json!("r-1")));
    assert_eq!(ids.next(), Some(json!("i-1")));
    gm.dispose().await;
}

static CONVERTS: std::sync::Mutex<Vec<(u32, String)>> = std::sync::Mutex::new(Vec::new());

/// Fails for an unknown currency; records every argument set it ran with.
#[graphmind::tool]
async fn convert(amount: u32, from: String) -> Result<String, String> {
    CONVERTS.lock().expect("lock").push((amount, from.clone()));
    if from == "XXX" {
        Err("unknown currency".into())
    } else {
        Ok(format!("{amount} {from}"))
    }
}

/// Like [`convert`], but it runs at most once.
#[graphmind::tool(retry = false)]
async fn convert_once(amount: u32, from: String) -> Result<String, String> {
    if from == "XXX" {
        Err("unknown currency".into())
    } else {
        Ok(format!("{amount} {from}"))
    }
}

async fn attached_at(hub: &FakeDebugger, point: &str) -> graphmind::Session {
    hub.set_hub_capabilities(EDIT_CAPS);
    hub.set_breakpoints(vec![json!({"kind": "tool", "point": point})]);
    let gm = graphmind::Session::new(hub.config("edit"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm
}

#[tokio::test]
async fn retry_with_an_edited_input_at_the_error_gate_reruns_the_tool_with_it() {
    let hub = FakeDebugger::start().await;
    let gm = attached_at(&hub, "error").await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", convert(100, "XXX".into())).await }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["point"], "error");
    assert_eq!(held.payload()["editable"], true, "{}", held.payload());
    // `continue` with an input at an error gate: refused shape, still held.
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"from": "EUR"}, "requestId": "e-1"}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "shape");
    assert_eq!(refused[0].payload()["requestId"], "e-1");
    tokio::time::sleep(SECOND / 10).await;
    assert!(!task.is_finished(), "still held after the refusal");
    // A bad value with retry: refused schema, still held.
    resume_with(
        &hub,
        &held,
        json!({"action": "retry", "input": {"amount": "lots"}, "requestId": "e-2"}),
    );
    let refused = wait_count(&hub, "exec.refused", 2).await;
    assert_eq!(refused[1].payload()["code"], "schema");
    resume_with(
        &hub,
        &held,
        json!({"action": "retry", "input": {"from": "EUR"}, "requestId": "e-3"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, Ok("100 EUR".to_owned()), "the retry ran with the edit");
    assert!(
        CONVERTS
            .lock()
            .expect("lock")
            .ends_with(&[(100, "XXX".to_owned()), (100, "EUR".to_owned())]),
        "ran twice: as called, then with the edit"
    );
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "retry");
    assert_eq!(resumed.payload()["requestId"], "e-3");
    assert_eq!(
        resumed.payload()["edited"]["after"],
        json!({"amount": 100, "from": "EUR"})
    );
    let fin = &finished(&hub, "tool:convert")[0];
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["attempts"], 2);
    assert_eq!(
        fin["edited"],
        json!({"before": {"amount": 100, "from": "XXX"}, "after": {"amount": 100, "from": "EUR"}})
    );
    let starts = hub
        .frames_of("node.started")
        .iter()
        .filter(|f| f.payload()["nodeId"] == "tool:convert")
        .count();
    assert_eq!(starts, 1, "one node, two attempts");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn retry_with_an_edited_input_at_the_after_gate_reruns_the_tool_with_it() {
    let hub = FakeDebugger::start().await;
    let gm = attached_at(&hub, "after").await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", search("a".into(), 5)).await }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["point"], "after");
    assert_eq!(held.payload()["editable"], true);
    resume_with(
        &hub,
        &held,
        json!({"action": "retry", "input": {"limit": 9}, "requestId": "a-1"}),
    );
    // The retry's after gate holds again: continue it.
    let again = paused(&hub, 2).await;
    assert_eq!(again.payload()["point"], "after");
    assert_eq!(again.payload()["output"], "a:9", "{}", again.payload());
    resume_with(&hub, &again, json!({"action": "continue"}));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, "a:9");
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "retry");
    assert_eq!(
        resumed.payload()["edited"]["after"],
        json!({"q": "a", "limit": 9})
    );
    let fin = &finished(&hub, "tool:search")[0];
    assert_eq!(fin["output"], "a:9");
    assert_eq!(fin["edited"]["after"], json!({"q": "a", "limit": 9}));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_tool_that_runs_once_is_not_editable_at_its_error_gate() {
    let hub = FakeDebugger::start().await;
    let gm = attached_at(&hub, "error").await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", convert_once(1, "XXX".into())).await }
    });
    let held = paused(&hub, 1).await;
    assert!(
        held.payload().get("editable").is_none(),
        "{}",
        held.payload()
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "retry", "input": {"from": "EUR"}, "requestId": "o-1"}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    resume_with(&hub, &held, json!({"action": "continue"}));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, Err("unknown currency".to_owned()));
    gm.dispose().await;
}
