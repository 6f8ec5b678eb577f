//! `graphmind::time::timeout`: its clock stops while a gate inside it is held.

use std::time::{Duration, Instant};

use graphmind_tests::FakeDebugger;
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn slow(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

#[tokio::test]
async fn held_time_does_not_count_against_the_timeout() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "slow"})]);
    let gm = graphmind::Session::new(hub.config("timeout"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run(
                "t",
                graphmind::time::timeout(Duration::from_millis(300), slow(50)),
            )
            .await
        }
    });
    let p = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    let held_from = Instant::now();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!task.is_finished(), "a held gate does not time out");
    assert!(hub.resume(
        p.run_id(),
        p.payload()["pauseId"].as_str().expect("id"),
        "continue"
    ));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Ok(50),
        "50 ms of work fits a 300 ms budget once 400 ms held are excluded"
    );
    assert!(held_from.elapsed() >= Duration::from_millis(400));
    gm.dispose().await;
}

#[tokio::test]
async fn unheld_work_still_times_out() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("timeout-plain"));
    assert!(gm.ready(2 * SECOND).await);
    let t = Instant::now();
    let out = gm
        .run(
            "t",
            graphmind::time::timeout(Duration::from_millis(60), slow(1_000)),
        )
        .await
        .expect("not aborted");
    assert!(out.is_err(), "1 s of work does not fit 60 ms");
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "timed out near 60 ms, not after the work"
    );
    gm.dispose().await;
}
