//! Every gate and action on a non-streaming `#[graphmind::model_step]`, as exact event
//! sequences against the fake debugger.

mod macro_support;

use std::sync::{Mutex, MutexGuard, PoisonError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn seen(message: &str) -> usize {
    lock(&SEEN).iter().filter(|m| *m == message).count()
}

use graphmind_tests::FakeDebugger;
use macro_support::{SECOND, attached, events, finished, pause_id, paused, run_finished};
use serde_json::json;

#[derive(Clone, serde::Serialize)]
struct Request {
    messages: Vec<String>,
}

fn request(text: &str) -> Request {
    Request {
        messages: vec!["system".into(), text.into()],
    }
}

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
static FAILED_ONCE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Answers `echo: <last message>`; the first call with a message containing `fail` fails,
/// so that a retry can succeed.
#[graphmind::model_step]
async fn complete(request: Request) -> Result<String, String> {
    let last = request.messages.last().cloned().unwrap_or_default();
    lock(&SEEN).push(last.clone());
    if last.contains("fail") {
        let mut failed = FAILED_ONCE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !failed.contains(&last) {
            failed.push(last.clone());
            return Err(format!("model overloaded ({last})"));
        }
    }
    Ok(format!("echo: {last}"))
}

const HEAD: [&str; 4] = [
    "run.started",
    "node.started agent:r",
    "graph.hint agent:r,llm:step",
    "node.started llm:step",
];

fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn before_continue_then_after_inject_replaces_the_response() {
    let hub = FakeDebugger::start().await;
    let gm = attached(
        &hub,
        vec![
            json!({"kind": "llm", "point": "before"}),
            json!({"kind": "llm", "point": "after"}),
        ],
    )
    .await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", complete(request("hi"))).await }
    });
    let before = paused(&hub, 1).await;
    assert_eq!(before.payload()["point"], "before");
    assert!(hub.resume(before.run_id(), &pause_id(&before), "continue"));
    let after = paused(&hub, 2).await;
    assert_eq!(after.payload()["point"], "after");
    assert!(hub.inject(after.run_id(), &pause_id(&after), json!("injected answer")));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out.as_deref(), Ok("injected answer"));
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed continue",
            "exec.paused llm:step after",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ])
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["output"], "injected answer");
    assert_eq!(fin["injected"], true);
    let started = &hub.frames_of("node.started")[1];
    assert_eq!(
        started.payload()["input"],
        json!({"request": {"messages": ["system", "hi"]}})
    );
    assert_eq!(started.payload()["parentId"], "agent:r");
    assert!(
        started.payload()["instanceId"]
            .as_str()
            .is_some_and(|id| id.ends_with(":s1"))
    );
    gm.dispose().await;
}

#[tokio::test]
async fn before_inject_skips_the_model_call() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", complete(request("skip me"))).await }
    });
    let before = paused(&hub, 1).await;
    assert!(hub.inject(before.run_id(), &pause_id(&before), json!("canned")));
    assert_eq!(
        task.await.expect("joined").expect("not aborted").as_deref(),
        Ok("canned")
    );
    assert_eq!(seen("skip me"), 0, "the body did not run");
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed inject",
            "node.finished llm:step ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ])
    );
    gm.dispose().await;
}

#[tokio::test]
async fn error_retry_reruns_the_body_in_the_same_node() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", complete(request("please fail"))).await }
    });
    let error = paused(&hub, 1).await;
    assert_eq!(error.payload()["point"], "error");
    assert!(hub.resume(error.run_id(), &pause_id(&error), "retry"));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out.as_deref(), Ok("echo: please fail"));
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "node.error llm:step String",
            "exec.paused llm:step error",
            "exec.resumed retry",
            "node.finished llm:step ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&hub, "llm:step")[0]["attempts"], 2);
    assert_eq!(seen("please fail"), 2, "one retry, two attempts");
    gm.dispose().await;
}

#[tokio::test]
async fn error_inject_recovers_with_the_injected_response() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", complete(request("fail again"))).await }
    });
    let error = paused(&hub, 1).await;
    assert!(hub.inject(error.run_id(), &pause_id(&error), json!("recovered")));
    assert_eq!(
        task.await.expect("joined").expect("not aborted").as_deref(),
        Ok("recovered")
    );
    run_finished(&hub).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(
        (
            fin["status"].as_str(),
            fin["injected"].as_bool(),
            fin["recoveredFromError"].as_bool()
        ),
        (Some("ok"), Some(true), Some(true))
    );
    gm.dispose().await;
}

#[tokio::test]
async fn before_abort_ends_the_run_without_calling_the_model() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", complete(request("never"))).await }
    });
    let before = paused(&hub, 1).await;
    assert!(hub.resume(before.run_id(), &pause_id(&before), "abort"));
    let aborted = task.await.expect("joined").expect_err("aborted");
    assert_eq!(aborted.name(), "r");
    assert_eq!(seen("never"), 0, "the body did not run");
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.paused llm:step before",
            "exec.resumed abort",
            "node.finished llm:step aborted",
            "node.finished agent:r aborted",
            "run.finished aborted",
        ])
    );
    tokio::time::sleep(SECOND / 10).await;
    gm.dispose().await;
}
