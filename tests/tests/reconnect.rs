//! Reconnecting: fast retries at 200, 400 and 800 ms after an established connection
//! drops, then the slow interval; `ready()` asks for an attempt at once.

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, eventually};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_dropped_connection_is_retried_after_200_ms() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("fast-retry"));
    assert!(gm.ready(2 * SECOND).await);
    let dropped = Instant::now();
    hub.drop_connections();
    hub.wait_connections(2, 2 * SECOND).await;
    let took = dropped.elapsed();
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_millis(900),
        "reconnected after {took:?}, expected about 200 ms"
    );
    eventually("attached again", SECOND, || gm.is_attached()).await;
    gm.dispose().await;
}

#[tokio::test]
async fn a_dead_debugger_is_retried_at_200_400_800_ms_then_only_every_interval() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("backoff"));
    assert!(gm.ready(2 * SECOND).await);
    let killed = Instant::now();
    hub.kill();
    // Attempts fall at about 200, 600 and 1400 ms. Come back between the 2nd and 3rd.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    hub.restart().await;
    hub.wait_connections(2, 2 * SECOND).await;
    let took = killed.elapsed();
    assert!(
        took >= Duration::from_millis(1250) && took < Duration::from_millis(2200),
        "reconnected {took:?} after the kill, expected the 1400 ms attempt"
    );
    eventually("attached again", SECOND, || gm.is_attached()).await;

    // Past the fast retries, nothing happens for the slow interval (10 s by default)...
    let killed = Instant::now();
    hub.kill();
    tokio::time::sleep(Duration::from_millis(2300)).await;
    hub.restart().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        hub.connections(),
        2,
        "an attempt came after the fast retries were used up"
    );
    assert!(!gm.is_attached());
    // ...unless ready() asks: then an attempt starts at once.
    let asked = Instant::now();
    assert!(gm.ready(2 * SECOND).await);
    assert!(
        asked.elapsed() < Duration::from_millis(500),
        "ready took {:?}",
        asked.elapsed()
    );
    assert!(killed.elapsed() < Duration::from_secs(6));
    assert_eq!(hub.connections(), 3);
    gm.dispose().await;
}

#[tokio::test]
async fn the_slow_interval_applies_while_never_attached() {
    let hub = FakeDebugger::start().await;
    hub.kill();
    let gm = graphmind::Session::new(
        hub.config("never-attached")
            .retry_interval(Duration::from_millis(300)),
    );
    gm.emit("run_x", graphmind_tests::token_event("llm:step", "x")); // starts the transport
    tokio::time::sleep(Duration::from_millis(100)).await;
    hub.restart().await;
    let t = Instant::now();
    hub.wait_connections(1, 2 * SECOND).await;
    assert!(
        t.elapsed() < Duration::from_millis(600),
        "the retry interval was not honoured: {:?}",
        t.elapsed()
    );
    eventually("attached", SECOND, || gm.is_attached()).await;
    gm.dispose().await;
}
