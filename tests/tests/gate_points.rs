//! The remaining cells of the action table: retry at before, continue and retry at after,
//! abort at error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

static BEFORE_RUNS: AtomicUsize = AtomicUsize::new(0);
static AFTER_RUNS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn before_probe(n: u32) -> u32 {
    BEFORE_RUNS.fetch_add(1, Ordering::SeqCst);
    n
}

#[graphmind::tool]
async fn after_probe(n: u32) -> u32 {
    AFTER_RUNS.fetch_add(1, Ordering::SeqCst) as u32 + n
}

#[graphmind::tool]
async fn failing(n: u32) -> Result<u32, String> {
    Err(format!("bad {n}"))
}

async fn nth_pause(hub: &FakeDebugger, n: usize) -> (String, String, String) {
    hub.wait_count("exec.paused", n, 2 * SECOND).await;
    let frames = hub.frames();
    let p: Frame = frames
        .into_iter()
        .filter(|f| f.kind() == "exec.paused")
        .nth(n - 1)
        .expect("present");
    (
        p.run_id().to_owned(),
        p.payload()["pauseId"].as_str().expect("id").to_owned(),
        p.payload()["point"].as_str().expect("point").to_owned(),
    )
}

async fn session(hub: &FakeDebugger, breakpoints: Vec<serde_json::Value>) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("gate-points"));
    assert!(gm.ready(2 * SECOND).await);
    gm
}

#[tokio::test]
async fn retry_at_before_runs_the_call_once() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub, vec![json!({"name": "before_probe"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", before_probe(4)).await }
    });
    let (run, id, point) = nth_pause(&hub, 1).await;
    assert_eq!(point, "before");
    assert!(hub.resume(&run, &id, "retry"));
    assert_eq!(task.await.expect("joined").expect("ok"), 4);
    assert_eq!(BEFORE_RUNS.load(Ordering::SeqCst), 1);
    assert_eq!(hub.frames_of("exec.paused").len(), 1);
    gm.dispose().await;
}

#[tokio::test]
async fn after_continue_returns_the_real_result_and_after_retry_runs_again_from_the_top() {
    let hub = FakeDebugger::start().await;
    let gm = session(
        &hub,
        vec![
            json!({"name": "after_probe", "point": "before"}),
            json!({"name": "after_probe", "point": "after"}),
        ],
    )
    .await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", after_probe(100)).await }
    });
    let (run, id, point) = nth_pause(&hub, 1).await;
    assert_eq!(point, "before");
    assert!(hub.resume(&run, &id, "continue"));
    let (_, id, point) = nth_pause(&hub, 2).await;
    assert_eq!(point, "after");
    assert!(hub.resume(&run, &id, "retry"));
    let paused = hub.frames_of("exec.paused");
    assert!(
        paused[0].payload().get("output").is_none(),
        "nothing is held before the call: {}",
        paused[0].payload()
    );
    assert_eq!(
        paused[1].payload()["output"],
        100,
        "the after gate shows the held result"
    );
    let (_, id, point) = nth_pause(&hub, 3).await;
    assert_eq!(
        point, "before",
        "retry at after goes through the before gate again"
    );
    assert!(hub.resume(&run, &id, "continue"));
    let (_, id, point) = nth_pause(&hub, 4).await;
    assert_eq!(point, "after");
    assert_eq!(
        hub.frames_of("exec.paused")[3].payload()["output"],
        101,
        "the second run's result is what the second after gate holds"
    );
    assert!(hub.resume(&run, &id, "continue"));
    assert_eq!(
        task.await.expect("joined").expect("ok"),
        101,
        "the second run's result"
    );
    assert_eq!(AFTER_RUNS.load(Ordering::SeqCst), 2);
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "tool:after_probe")
        .expect("finished");
    assert_eq!(fin.payload()["output"], 101);
    assert_eq!(fin.payload()["attempts"], 2);
    gm.dispose().await;
}

#[tokio::test]
async fn abort_at_error_finishes_aborted_and_ends_the_run() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub, vec![json!({"point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", failing(1)).await }
    });
    let (run, id, point) = nth_pause(&hub, 1).await;
    assert_eq!(point, "error");
    let paused = hub.frames_of("exec.paused");
    assert_eq!(
        paused[0].payload()["error"],
        json!({"name": "String", "message": "bad 1"}),
        "the error gate shows the held error"
    );
    assert!(paused[0].payload().get("output").is_none());
    assert!(hub.resume(&run, &id, "abort"));
    assert!(task.await.expect("joined").is_err(), "Err(Aborted)");
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let kinds: Vec<&str> = frames
        .iter()
        .filter(|f| f.payload()["nodeId"] == "tool:failing")
        .map(|f| f.kind())
        .collect();
    assert_eq!(
        kinds,
        ["node.started", "node.error", "exec.paused", "node.finished"]
    );
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "tool:failing")
        .expect("finished");
    assert_eq!(fin.payload()["status"], "aborted");
    assert_eq!(
        frames
            .iter()
            .find(|f| f.kind() == "run.finished")
            .expect("fin")
            .payload()["status"],
        "aborted"
    );
    gm.dispose().await;
}
