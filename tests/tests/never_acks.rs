//! A debugger that accepts the WebSocket but never answers `hello`: the client gives up
//! after the 1 s handshake budget, stays detached, and `ready()` returns in bounded time.

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, Handshake, eventually};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn the_client_gives_up_after_the_handshake_budget() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::Session::new(hub.config("never-acked"));
    let t = Instant::now();
    assert!(!gm.ready(Duration::from_millis(1500)).await);
    let took = t.elapsed();
    assert!(
        took < Duration::from_millis(1900),
        "ready(1.5 s) took {took:?}"
    );
    hub.wait_for_kind("hello", SECOND).await;
    assert!(!gm.is_attached());
    // The client closed the socket once its 1 s budget ran out.
    let closed = eventually("the client to hang up", SECOND, || {
        hub.open_connections() == 0
    })
    .await
        + took;
    assert!(
        closed >= Duration::from_millis(900) && closed < Duration::from_millis(2500),
        "hung up after {closed:?}"
    );
    assert_eq!(hub.connections(), 1, "retried before the slow interval");
    gm.dispose().await;
}

#[tokio::test]
async fn gates_do_not_wait_for_a_handshake_that_never_comes() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    hub.set_breakpoints(vec![serde_json::json!({})]);
    let gm = graphmind::Session::new(hub.config("never-acked-run"));
    let t = Instant::now();
    let out = gm.run("detached-run", async { "done" }).await;
    assert_eq!(out.expect("not aborted"), "done");
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "a run waited {:?}",
        t.elapsed()
    );
    hub.wait_for_kind("hello", 2 * SECOND).await;
    assert_eq!(
        hub.frames().len(),
        1,
        "only hello: nothing is sent before an ack"
    );
    assert!(gm.stats().buffered >= 4);
    gm.dispose().await;
}

#[tokio::test]
async fn a_slow_ack_within_the_budget_still_attaches_after_junk() {
    let hub = FakeDebugger::start().await;
    hub.set_before_ack(vec!["not json".into(), "{\"gm\":1}".into()]);
    let gm = graphmind::Session::new(hub.config("junk-then-ack"));
    assert!(gm.ready(2 * SECOND).await);
    gm.dispose().await;
}
