//! Liveness: a reset socket is noticed at once, a hung debugger through unanswered pings,
//! and an idle but healthy connection stays up.

use std::time::Duration;

use graphmind_tests::{FakeDebugger, eventually};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_reset_socket_is_noticed_at_once() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("reset"));
    assert!(gm.ready(2 * SECOND).await);
    hub.kill();
    let took = eventually("detached", SECOND, || !gm.is_attached()).await;
    assert!(
        took < Duration::from_millis(100),
        "a reset took {took:?} to notice"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_hung_debugger_is_detected_by_missing_pongs() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(
        hub.config("hung")
            .liveness(Duration::from_millis(100), Duration::from_millis(500)),
    );
    assert!(gm.ready(2 * SECOND).await);
    hub.freeze(true);
    let took = eventually("detached", 3 * SECOND, || !gm.is_attached()).await;
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_millis(1500),
        "a hung debugger was detected after {took:?}, expected about 500 ms"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn the_liveness_budget_comes_from_the_environment() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("hung-env").env_vars([
        ("GRAPHMIND_PING_INTERVAL_MS", "100"),
        ("GRAPHMIND_HUB_DEAD_AFTER_MS", "500"),
    ]));
    assert!(gm.ready(2 * SECOND).await);
    hub.freeze(true);
    let took = eventually("detached", 5 * SECOND, || !gm.is_attached()).await;
    // The default budget (3 s) would take at least 2.5 s here.
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_millis(2500),
        "a hung debugger was detected after {took:?}, expected about 500 ms"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn the_default_liveness_budget_is_three_seconds() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("hung-default"));
    assert!(gm.ready(2 * SECOND).await);
    hub.freeze(true);
    let took = eventually("detached", 6 * SECOND, || !gm.is_attached()).await;
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_millis(4500),
        "detected after {took:?}, expected about 3 s"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn an_idle_healthy_connection_stays_up() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(
        hub.config("idle")
            .liveness(Duration::from_millis(50), Duration::from_millis(250)),
    );
    assert!(gm.ready(2 * SECOND).await);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(gm.is_attached());
    assert_eq!(
        hub.connections(),
        1,
        "the connection was dropped while the hub answered pings"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_blocked_app_runtime_does_not_delay_disconnect_detection() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("blocked-app"));
    assert!(gm.ready(2 * SECOND).await);
    hub.kill();
    // Let this runtime close the hub's sockets, then block it completely.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let blocked = std::time::Instant::now();
    let mut noticed = None;
    while blocked.elapsed() < Duration::from_millis(300) {
        if noticed.is_none() && !gm.is_attached() {
            noticed = Some(blocked.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let noticed = noticed.expect("the drop was not noticed while this runtime was blocked");
    assert!(
        noticed < Duration::from_millis(100),
        "noticed after {noticed:?}"
    );
    gm.dispose().await;
}
