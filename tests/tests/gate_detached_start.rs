//! A call that starts while its session is detached runs ungated to its end, even if a
//! debugger attaches (with a matching breakpoint) while its body runs; its events are
//! recorded and replayed. The next call, started attached, holds at the breakpoint.

use std::sync::Mutex;
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Handshake, frame};
use serde_json::json;
use tokio::sync::oneshot;

const SECOND: Duration = Duration::from_secs(1);

static GO: Mutex<Option<oneshot::Receiver<()>>> = Mutex::new(None);

#[graphmind::tool]
async fn warm_up(n: u32) -> u32 {
    n
}

#[graphmind::tool]
async fn slow_probe(n: u32) -> u32 {
    let go = GO.lock().expect("lock").take();
    if let Some(go) = go {
        let _ = go.await;
    }
    n + 1
}

#[tokio::test]
async fn a_call_started_detached_is_not_gated_when_a_debugger_attaches_meanwhile() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    hub.set_breakpoints(vec![json!({"name": "slow_probe", "point": "after"})]);
    let gm = graphmind::Session::new(hub.config("detached-start"));
    let (go_tx, go_rx) = oneshot::channel();
    *GO.lock().expect("lock") = Some(go_rx);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                // The first use starts the transport; the hub never acks, so the session
                // stays detached while slow_probe starts.
                warm_up(1).await;
                slow_probe(1).await
            })
            .await
        }
    });
    hub.wait_connections(1, 2 * SECOND).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!gm.is_attached());
    hub.set_handshake(Handshake::Ack);
    // A `ready` joins the attempt in flight (never acked, so it fails); a later one kicks
    // a new attempt, which the hub acks.
    assert!(
        graphmind_tests::attach(&gm, 2 * SECOND).await,
        "attaches once the hub acks"
    );
    go_tx.send(()).expect("the body waits");
    assert_eq!(
        tokio::time::timeout(2 * SECOND, task)
            .await
            .expect("not held at the after breakpoint")
            .expect("joined")
            .expect("ok"),
        2
    );
    hub.wait_match(
        &frame("node.finished").with("nodeId", "tool:slow_probe"),
        2 * SECOND,
    )
    .await;
    let frames = hub.frames();
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "tool:slow_probe")
        .expect("finished");
    assert_eq!(fin.payload()["status"], "ok");
    assert_eq!(fin.payload()["output"], 2);
    assert!(hub.frames_of("exec.paused").is_empty());

    // Started attached, the same tool holds at its after breakpoint.
    let held = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r2", slow_probe(5)).await }
    });
    let paused = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(paused.payload()["nodeId"], "tool:slow_probe");
    assert_eq!(paused.payload()["output"], 6);
    let id = paused.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.resume(paused.run_id(), &id, "continue"));
    assert_eq!(held.await.expect("joined").expect("ok"), 6);
    hub.assert_valid();
    gm.dispose().await;
}
