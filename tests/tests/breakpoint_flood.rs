//! A flood of `breakpoint.set` frames: applying each is O(1) in the client, so a resume sent
//! after 10,000 of them is applied promptly and calls stay fast with 10,000 armed (each set
//! used to copy the whole list, and each gate decision cloned it: 6.6 s for the flood on a
//! release build and 2.7 ms per call after it).

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);
const FLOOD: usize = 10_000;

#[graphmind::tool]
async fn held(i: u32) -> u32 {
    i + 1
}

#[graphmind::tool]
async fn late(i: u32) -> u32 {
    i + 2
}

#[graphmind::tool]
async fn free(i: u32) -> u32 {
    i + 3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_breakpoint_sets_leave_resumes_applied_and_calls_fast() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "held"})]);
    let gm = graphmind::Session::new(hub.config("breakpoint-flood"));
    assert!(gm.ready(2 * SECOND).await, "attached");
    let call = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", held(1)).await }
    });
    let paused = hub.wait_for_kind("exec.paused", 5 * SECOND).await;
    let pause_id = paused.payload()["pauseId"].as_str().expect("pauseId");

    for i in 0..FLOOD {
        assert!(hub.breakpoint_set(json!({"name": format!("flood_{i}"), "kind": "tool"})));
    }
    assert!(hub.breakpoint_set(json!({"name": "late"})));
    let sent = Instant::now();
    assert!(hub.resume(paused.run_id(), pause_id, "continue"));
    let out = tokio::time::timeout(30 * SECOND, call)
        .await
        .expect("the resume behind the flood was applied")
        .expect("joined");
    assert_eq!(out.expect("not aborted"), 2);
    let resumed_after = sent.elapsed();
    assert!(
        resumed_after < 5 * SECOND,
        "the resume waited {resumed_after:?} behind the flood"
    );
    assert_eq!(gm.breakpoints().len(), FLOOD + 2, "every set applied once");

    // 1,000 calls no breakpoint matches, with 10,002 armed: microseconds each.
    let t = Instant::now();
    let mut sum = 0u64;
    for i in 0..1000u32 {
        sum += u64::from(gm.run("r", free(i)).await.expect("ran"));
    }
    let took = t.elapsed();
    assert_eq!(sum, (3..1003u64).sum::<u64>());
    assert!(took < 2 * SECOND, "1,000 calls took {took:?}");

    // The last set of the flood is armed: its tool is held.
    let call = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", late(1)).await }
    });
    hub.wait_match(
        &frame("exec.paused").with("nodeId", "tool:late"),
        5 * SECOND,
    )
    .await;
    let paused = hub.frames();
    let paused = paused
        .iter()
        .find(|f| f.kind() == "exec.paused" && f.payload()["nodeId"] == "tool:late")
        .expect("late held");
    let pause_id = paused.payload()["pauseId"].as_str().expect("pauseId");
    assert!(hub.resume(paused.run_id(), pause_id, "continue"));
    let out = tokio::time::timeout(5 * SECOND, call)
        .await
        .expect("resumed");
    assert_eq!(out.expect("joined").expect("not aborted"), 3);
    gm.dispose().await;
}

#[tokio::test]
async fn a_cleared_flood_breakpoint_no_longer_holds() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("breakpoint-flood-clear"));
    assert!(gm.ready(2 * SECOND).await, "attached");
    for i in 0..100 {
        assert!(hub.breakpoint_set(json!({"name": format!("flood_{i}")})));
    }
    assert!(hub.breakpoint_set(json!({"name": "free"})));
    assert!(hub.breakpoint_clear(json!({"name": "free"})));
    let deadline = Instant::now() + 5 * SECOND;
    while gm.breakpoints().len() != 100 {
        assert!(
            Instant::now() < deadline,
            "{} armed",
            gm.breakpoints().len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let out = tokio::time::timeout(5 * SECOND, gm.run("r", free(1))).await;
    assert_eq!(out.expect("not held").expect("ran"), 4);
    assert!(hub.frames_of("exec.paused").is_empty());
    gm.dispose().await;
}
