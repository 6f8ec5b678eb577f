//! Every action at every gate point of a tool, against the fake debugger.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame};
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

static CALLS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn add(a: i64, b: i64) -> i64 {
    CALLS.fetch_add(1, Ordering::SeqCst);
    a + b
}

static PROBE: AtomicUsize = AtomicUsize::new(0);
static AFTER_ABORT: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn probe(a: i64, b: i64) -> i64 {
    PROBE.fetch_add(1, Ordering::SeqCst);
    a + b
}

#[graphmind::tool]
async fn flaky(n: i64) -> Result<i64, String> {
    let k = CALLS.fetch_add(1, Ordering::SeqCst);
    if n < 0 {
        Err(format!("negative input {n} (call {k})"))
    } else {
        Ok(n * 2)
    }
}

async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("gate-actions"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm
}

async fn paused(hub: &FakeDebugger, n: usize) -> Frame {
    hub.wait_count("exec.paused", n, 2 * SECOND).await;
    let frames = hub.frames();
    frames
        .into_iter()
        .filter(|f| f.kind() == "exec.paused")
        .nth(n - 1)
        .expect("present")
}

fn pause_id(f: &Frame) -> String {
    f.payload()["pauseId"].as_str().expect("pauseId").to_owned()
}

fn finished(hub: &FakeDebugger, node: &str) -> Vec<Value> {
    hub.frames_of("node.finished")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node)
        .map(|f| f.payload().clone())
        .collect()
}

#[tokio::test]
async fn before_continue_runs_the_call_and_reports_breakpoint_reason() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "add"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", add(2, 3)).await }
    });
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "before");
    assert_eq!(p.payload()["nodeId"], "tool:add");
    assert_eq!(p.payload()["reason"], "breakpoint");
    let id = pause_id(&p);
    assert!(id.starts_with("pause_") && id.split('_').nth(1).is_some_and(|b| b.len() == 6));
    assert!(hub.resume(p.run_id(), &id, "continue"));
    assert_eq!(task.await.expect("joined").expect("not aborted"), 5);
    let resumed = hub.wait_for_kind("exec.resumed", SECOND).await;
    assert_eq!(resumed.payload()["pauseId"], id.as_str());
    assert_eq!(resumed.payload()["action"], "continue");
    hub.wait_for_kind("run.finished", SECOND).await;
    let fin = finished(&hub, "tool:add");
    assert_eq!(fin[0]["status"], "ok");
    assert_eq!(fin[0]["output"], 5);
    let tool_held = fin[0]["heldMs"].as_f64().expect("heldMs");
    assert!(tool_held > 0.0);
    let agent = finished(&hub, "agent:r");
    let agent_held = agent[0]["heldMs"].as_f64().expect("agent heldMs");
    assert!(
        (agent_held - tool_held).abs() < 1.0,
        "the agent node counts its gates' holds: {agent_held} vs {tool_held}"
    );
    assert!(agent[0]["durationMs"].as_f64().expect("duration") >= agent_held);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn before_inject_skips_the_body_and_returns_the_value() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "probe", "point": "before"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", probe(1000, 1)).await }
    });
    let p = paused(&hub, 1).await;
    assert!(hub.inject(p.run_id(), &pause_id(&p), json!(42)));
    assert_eq!(task.await.expect("joined").expect("not aborted"), 42);
    assert_eq!(PROBE.load(Ordering::SeqCst), 0, "the body did not run");
    hub.wait_for_kind("run.finished", SECOND).await;
    let fin = finished(&hub, "tool:probe");
    assert_eq!(fin[0]["output"], 42);
    assert_eq!(fin[0]["injected"], true);
    gm.dispose().await;
}

#[tokio::test]
async fn after_inject_replaces_the_result_and_after_abort_keeps_the_real_output() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "add", "point": "after"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", add(1, 1)).await }
    });
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "after");
    assert!(hub.inject(p.run_id(), &pause_id(&p), json!(7)));
    assert_eq!(task.await.expect("joined").expect("not aborted"), 7);

    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r2", async {
                let x = add(2, 2).await;
                AFTER_ABORT.fetch_add(1, Ordering::SeqCst);
                x
            })
            .await
        }
    });
    let p = paused(&hub, 2).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "abort"));
    let out = task.await.expect("joined");
    assert!(out.is_err(), "aborted run returns Err(Aborted)");
    assert_eq!(
        AFTER_ABORT.load(Ordering::SeqCst),
        0,
        "nothing after the gate ran"
    );
    let seen = hub.wait_count("run.finished", 2, SECOND).await;
    assert_eq!(seen.len(), 2, "run.finished");
    let runs = hub.frames();
    let last = runs
        .iter()
        .rev()
        .find(|f| f.kind() == "run.finished")
        .expect("run.finished");
    assert_eq!(last.payload()["status"], "aborted");
    let fin = finished(&hub, "tool:add");
    assert_eq!(fin[1]["status"], "aborted");
    assert_eq!(fin[1]["output"], 4, "abort at after keeps the real result");
    gm.dispose().await;
}

#[tokio::test]
async fn error_retry_reruns_in_one_node_execution_then_error_inject_recovers() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", flaky(-1)).await }
    });
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert_eq!(p.payload()["reason"], "error");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let p2 = paused(&hub, 2).await;
    assert_eq!(p2.payload()["point"], "error");
    assert!(hub.inject(p2.run_id(), &pause_id(&p2), json!(99)));
    assert_eq!(task.await.expect("joined").expect("not aborted"), Ok(99));
    hub.wait_for_kind("run.finished", SECOND).await;
    assert_eq!(
        hub.frames_of("node.started")
            .iter()
            .filter(|f| f.payload()["nodeId"] == "tool:flaky")
            .count(),
        1
    );
    assert_eq!(hub.frames_of("node.error").len(), 2);
    let fin = finished(&hub, "tool:flaky");
    assert_eq!(fin.len(), 1);
    assert_eq!(fin[0]["status"], "ok");
    assert_eq!(fin[0]["attempts"], 2);
    assert_eq!(fin[0]["recoveredFromError"], true);
    assert_eq!(fin[0]["injected"], true);
    gm.dispose().await;
}

#[tokio::test]
async fn error_continue_returns_the_original_error() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", flaky(-5)).await }
    });
    let p = paused(&hub, 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let out = task.await.expect("joined").expect("not aborted");
    assert!(
        out.expect_err("error kept")
            .starts_with("negative input -5")
    );
    hub.wait_for_kind("run.finished", SECOND).await;
    assert_eq!(finished(&hub, "tool:flaky")[0]["status"], "error");
    gm.dispose().await;
}

#[tokio::test]
async fn refused_inject_keeps_the_gate_held_until_a_fitting_value() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "add"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", add(1, 2)).await }
    });
    let p = paused(&hub, 1).await;
    let id = pause_id(&p);
    assert!(hub.inject(p.run_id(), &id, json!("not a number")));
    let refused = hub.wait_for_kind("exec.refused", SECOND).await;
    assert_eq!(refused.payload()["code"], "schema");
    assert!(
        refused.payload()["message"]
            .as_str()
            .is_some_and(|m| m.contains("i64"))
    );
    assert!(hub.inject(p.run_id(), &id, json!({"x": "__REDACTED__"})));
    let seen = hub.wait_count("exec.refused", 2, SECOND).await;
    assert_eq!(seen.len(), 2, "exec.refused");
    assert_eq!(
        hub.frames_of("exec.refused")[1].payload()["code"],
        "placeholder"
    );
    assert!(hub.frames_of("exec.resumed").is_empty(), "still held");
    assert!(!task.is_finished());
    assert_eq!(gm.stats().held_gates, 1);
    assert!(hub.inject(p.run_id(), &id, json!(10)));
    assert_eq!(task.await.expect("joined").expect("not aborted"), 10);
    gm.dispose().await;
}

#[tokio::test]
async fn step_mode_pauses_before_and_error_but_not_after() {
    let hub = FakeDebugger::start().await;
    hub.set_mode("step");
    let gm = attached(&hub, vec![]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", add(3, 4)).await }
    });
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["reason"], "step");
    assert_eq!(p.payload()["point"], "before");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    assert_eq!(task.await.expect("joined").expect("ok"), 7);
    assert_eq!(
        hub.frames_of("exec.paused").len(),
        1,
        "no after pause in step mode"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn one_of_two_parallel_gates_held_while_the_other_completes() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "flaky", "point": "error"})]).await;
    let slow = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("slow", flaky(-1)).await }
    });
    let p = paused(&hub, 1).await;
    let fast = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("fast", flaky(4)).await }
    });
    assert_eq!(fast.await.expect("joined").expect("ok"), Ok(8));
    assert!(!slow.is_finished(), "the held gate is independent");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    assert!(slow.await.expect("joined").expect("ok").is_err());
    gm.dispose().await;
}

#[tokio::test]
async fn retry_refused_when_the_body_runs_once() {
    #[graphmind::tool(retry = false)]
    async fn once(n: i64) -> Result<i64, String> {
        if n < 0 { Err("neg".into()) } else { Ok(n) }
    }
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", once(-1)).await }
    });
    let p = paused(&hub, 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let refused = hub.wait_for_kind("exec.refused", SECOND).await;
    assert_eq!(refused.payload()["code"], "unsupported");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    assert!(task.await.expect("joined").expect("ok").is_err());
    gm.dispose().await;
}
