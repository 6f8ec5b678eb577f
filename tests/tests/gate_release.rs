//! Automatic releases: the debugger dying with 1,000 held gates, the pause timeout, and a
//! dropped gated future — each releases with `exec.resumed continue`.
//!
//! The bounds here are for correctness on a loaded 2-core machine (seconds): how fast 1,000
//! gates are released is measured by `cargo bench -p graphmind-tests --bench gate_release`
//! (see `BENCHMARKS.md`).

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn work(i: u32) -> u32 {
    i + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debugger_killed_with_1000_held_gates_releases_all_of_them_promptly() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(hub.config("release-1000"));
    assert!(gm.ready(2 * SECOND).await);
    let tasks: Vec<_> = (0..1000u32)
        .map(|i| {
            let gm = gm.clone();
            tokio::spawn(async move { gm.run("many", work(i)).await })
        })
        .collect();
    let deadline = Instant::now() + 10 * SECOND;
    while gm.stats().held_gates < 1000 {
        assert!(
            Instant::now() < deadline,
            "only {} gates held",
            gm.stats().held_gates
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed = Instant::now();
    hub.kill();
    let mut sum = 0u64;
    for t in tasks {
        sum += u64::from(t.await.expect("joined").expect("not aborted"));
    }
    let took = killed.elapsed();
    assert_eq!(
        sum,
        (1..=1000u64).sum::<u64>(),
        "every call continued and ran"
    );
    // A generous bound: an idle machine releases them in milliseconds, a loaded CI machine
    // was seen at 228 ms. Below the 3 s liveness budget, so a release that waited for the
    // liveness check instead of the closed socket still fails.
    assert!(took < 2 * SECOND, "released in {took:?}");
    assert_eq!(gm.stats().held_gates, 0);
    gm.dispose().await;
}

#[tokio::test]
async fn pause_timeout_continues_with_exec_resumed() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(
        hub.config("pause-timeout")
            .pause_timeout(Duration::from_millis(150)),
    );
    assert!(gm.ready(2 * SECOND).await);
    let t = Instant::now();
    assert_eq!(gm.run("r", work(1)).await.expect("ok"), 2);
    assert!(t.elapsed() >= Duration::from_millis(150));
    let resumed = hub.wait_for_kind("exec.resumed", SECOND).await;
    assert_eq!(resumed.payload()["action"], "continue");
    hub.wait_match(&frame("node.finished").with("nodeId", "tool:work"), SECOND)
        .await;
    let fin = hub.frames();
    let fin = fin
        .iter()
        .find(|f| f.kind() == "node.finished")
        .expect("finished");
    assert!(fin.payload()["heldMs"].as_f64().expect("heldMs") >= 140.0);
    gm.dispose().await;
}

#[tokio::test]
async fn dropped_gated_future_releases_with_exec_resumed() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(hub.config("dropped"));
    assert!(gm.ready(2 * SECOND).await);
    let out = tokio::time::timeout(Duration::from_millis(100), gm.run("r", work(1))).await;
    assert!(out.is_err(), "held past the tokio timeout");
    let resumed = hub.wait_for_kind("exec.resumed", SECOND).await;
    assert_eq!(resumed.payload()["action"], "continue");
    assert_eq!(gm.stats().held_gates, 0);
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let run_fin = frames
        .iter()
        .find(|f| f.kind() == "run.finished")
        .expect("run.finished");
    assert_eq!(run_fin.payload()["status"], "aborted");
    let tool_fin = hub.frames_of("node.finished");
    assert!(
        tool_fin
            .iter()
            .any(|f| f.payload()["nodeId"] == "tool:work" && f.payload()["status"] == "aborted")
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn dispose_releases_held_gates() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(hub.config("dispose"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", work(5)).await }
    });
    hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    gm.dispose().await;
    let out = tokio::time::timeout(SECOND, task)
        .await
        .expect("released")
        .expect("joined");
    assert_eq!(out.expect("not aborted"), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_timeout_and_token_batches_need_no_tokio_timer() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(
        hub.config("no-timers")
            .pause_timeout(Duration::from_millis(100)),
    );
    assert!(gm.ready(2 * SECOND).await);
    let app = std::thread::spawn({
        let gm = gm.clone();
        move || {
            // A runtime without the time driver: nothing here may need tokio's timer.
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            rt.block_on(gm.run("r", work(41)))
        }
    });
    let out = tokio::task::spawn_blocking(move || app.join())
        .await
        .expect("joined")
        .expect("no panic");
    assert_eq!(out.expect("not aborted"), 42);
    let resumed = hub.wait_for_kind("exec.resumed", SECOND).await;
    assert_eq!(resumed.payload()["action"], "continue");
    gm.dispose().await;
}
