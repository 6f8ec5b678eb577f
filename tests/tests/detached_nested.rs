//! The order of what detached calls leave in the replay ring when one runs inside another:
//! a call that finishes in its first poll keeps its `node.started` until that poll ends (one
//! ring entry for its two events), and every event recorded on the thread meanwhile still
//! comes after it. (Its own binary: calls outside a run go to the default session, which
//! another test's `init` would replace.)

use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame, Handshake, any_frame};

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn inner_step(n: u64) -> u64 {
    n + 1
}

#[graphmind::tool]
async fn outer_step(n: u64) -> u64 {
    inner_step(n).await + inner_step(n + 10).await
}

#[graphmind::tool]
async fn yields_then_calls(n: u64) -> u64 {
    tokio::task::yield_now().await;
    inner_step(n).await
}

/// A call that finishes in its first poll keeps its two events in one ring entry, its
/// `node.started` waiting for the poll's end: events recorded on the thread meanwhile (a
/// nested call's) still come after it, and a call that waits records its `node.started` at
/// the end of its first poll. Seqs stay consecutive and in order, stamps in time order.
#[tokio::test]
async fn a_nested_call_in_a_first_poll_comes_after_its_callers_node_started() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::init(hub.config("detached-nested"));
    assert_eq!(inner_step(0).await, 1);
    hub.wait_connections(1, 2 * SECOND).await;
    assert!(!gm.is_attached());
    let before = gm.stats();

    assert_eq!(outer_step(1).await, 2 + 12);
    assert_eq!(yields_then_calls(5).await, 6);
    let in_run = gm.run("nested", async { outer_step(2).await }).await;
    assert_eq!(in_run.expect("ok"), 3 + 13);
    let after = gm.stats();
    assert!(!gm.is_attached(), "all of it ran detached");
    // 2 outer calls with 2 inner each, 1 yielding call with 1 inner, 2 events each, plus the
    // scoped run's run.started and run.finished and its agent node's two events.
    assert_eq!(after.recorded - before.recorded, 8 * 2 + 2 + 2);
    let last = after.last_seq.expect("recorded");

    hub.set_handshake(Handshake::Ack);
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await, "attaches");
    let frames = hub
        .wait_matches(&any_frame().seq(last), 1, 3 * SECOND)
        .await;
    let events: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.kind() != "hello" && f.seq() > before.last_seq.expect("first call"))
        .collect();
    let seqs: Vec<u64> = events.iter().map(|f| f.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "consecutive seqs in order: {seqs:?}"
    );
    let shown: Vec<String> = events
        .iter()
        .map(|f| {
            let p = f.payload();
            match f.kind() {
                "node.started" => format!(
                    "+{}({})",
                    p["name"].as_str().unwrap_or("?"),
                    p["input"]["n"]
                ),
                "node.finished" => {
                    format!("-{}={}", p["nodeId"].as_str().unwrap_or("?"), p["output"])
                }
                other => other.to_owned(),
            }
        })
        .collect();
    assert_eq!(
        shown,
        [
            "+outer_step(1)",
            "+inner_step(1)",
            "-tool:inner_step=2",
            "+inner_step(11)",
            "-tool:inner_step=12",
            "-tool:outer_step=14",
            "+yields_then_calls(5)",
            "+inner_step(5)",
            "-tool:inner_step=6",
            "-tool:yields_then_calls=6",
            "run.started",
            "+nested(null)",
            "+outer_step(2)",
            "+inner_step(2)",
            "-tool:inner_step=3",
            "+inner_step(12)",
            "-tool:inner_step=13",
            "-tool:outer_step=16",
            "-agent:nested=null",
            "run.finished",
        ]
    );
    // Each finished frame's stamp is not before its started one's, and ids pair up.
    for f in events.iter().filter(|f| f.kind() == "node.finished") {
        let id = &f.payload()["instanceId"];
        let started = events
            .iter()
            .find(|s| s.kind() == "node.started" && s.payload()["instanceId"] == *id)
            .expect("its node.started");
        assert!(started.seq() < f.seq());
        let ts = |f: &Frame| f.json["ts"].as_u64().expect("ts");
        assert!(ts(started) <= ts(f), "{} after {}", ts(started), ts(f));
    }
    gm.dispose().await;
    hub.assert_valid();
}
