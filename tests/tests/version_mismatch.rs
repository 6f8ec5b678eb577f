//! A debugger speaking another protocol version: one warning, connection closed, detached,
//! and no reconnect storm.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Handshake, eventually};

const SECOND: Duration = Duration::from_secs(1);

fn counting(hub: &FakeDebugger, app: &str) -> (graphmind::Config, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let config = hub
        .config(app)
        .on_warning(move |m| sink.lock().expect("lock").push(m.to_owned()));
    (config, seen)
}

async fn assert_mismatch(handshake: Handshake) {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(handshake);
    let (config, warnings) = counting(&hub, "mismatch");
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(500)).await);
    assert!(
        !gm.ready(Duration::from_millis(500)).await,
        "a second ready() attaches?"
    );
    assert!(!gm.stats().attached);
    eventually("the client to close the socket", SECOND, || {
        hub.open_connections() == 0
    })
    .await;
    assert!(
        hub.closes().iter().any(|(_, code)| *code == Some(1002)),
        "expected a close with 1002 (protocol error), got {:?}",
        hub.closes()
    );
    let attempts = hub.connections();
    assert!(
        (1..=2).contains(&attempts),
        "{attempts} connections for two ready() calls"
    );
    // No storm: without ready() calls nothing reconnects for the retry interval.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(hub.connections(), attempts);
    let warnings = warnings.lock().expect("lock").clone();
    assert_eq!(warnings.len(), 1, "warnings: {warnings:?}");
    assert!(warnings[0].contains("protocol"), "{}", warnings[0]);
    gm.dispose().await;
}

#[tokio::test]
async fn an_ack_with_protocol_2_leaves_the_client_detached_with_one_warning() {
    assert_mismatch(Handshake::Protocol(2)).await;
}

#[tokio::test]
async fn an_ack_envelope_with_gm_2_is_a_mismatch_too() {
    assert_mismatch(Handshake::Gm(2)).await;
}

#[tokio::test]
async fn gates_and_events_keep_working_detached_after_a_mismatch() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Protocol(7));
    let (config, _warnings) = counting(&hub, "mismatch-run");
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    let out = gm.run("after-mismatch", async { 41 + 1 }).await;
    assert_eq!(out.expect("not aborted"), 42);
    assert!(
        gm.stats().buffered >= 4,
        "the run's events stay in the ring"
    );
    assert!(hub.frames().iter().all(|f| f.kind() == "hello"));
    gm.dispose().await;
}
