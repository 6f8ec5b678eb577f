//! A hub that goes away while a Rust gate is held releases the gate: killed outright
//! (SIGKILL, no close frame) the held tool runs within 100 ms; stopped cleanly (SIGINT, close
//! 1001) likewise. The run then finishes on its own, detached.

mod support;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{SpawnedTestHub, attached, block_on, get_async, kill_hard, spawned_hub};

static KILLED_RAN_AT: Mutex<Option<Instant>> = Mutex::new(None);
static STOPPED_RAN_AT: Mutex<Option<Instant>> = Mutex::new(None);

#[graphmind::tool]
async fn held_on_kill(n: u64) -> u64 {
    *KILLED_RAN_AT.lock().unwrap() = Some(Instant::now());
    n + 1
}

#[graphmind::tool]
async fn held_on_stop(n: u64) -> u64 {
    *STOPPED_RAN_AT.lock().unwrap() = Some(Instant::now());
    n + 1
}

/// Arms a breakpoint on `tool`, starts a run calling it through `call`, and returns once the
/// gate is held (as the hub sees it).
async fn hold<F>(
    h: &SpawnedTestHub,
    tool: &str,
    call: F,
) -> (
    graphmind::Session,
    tokio::task::JoinHandle<Result<u64, graphmind::Aborted>>,
)
where
    F: Future<Output = u64> + Send + 'static,
{
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"kind": "tool", "name": tool}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let gm = attached(h.port, "rust-agent").await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("held", call).await }
    });
    let p = get_async(h.port, "/api/pauses?wait=10".into()).await.json();
    assert_eq!(
        p["pauses"][0]["nodeId"],
        json!(format!("tool:{tool}")),
        "{p}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!task.is_finished(), "the gate did not hold");
    assert_eq!(gm.stats().held_gates, 1);
    (gm, task)
}

#[test]
fn killing_the_hub_releases_a_held_rust_gate_within_100_ms() {
    let mut h = spawned_hub(&["--allow-control", "resume"]);
    block_on(async {
        let (gm, task) = hold(&h, "held_on_kill", held_on_kill(41)).await;
        assert!(KILLED_RAN_AT.lock().unwrap().is_none());
        let killed = Instant::now();
        kill_hard(&mut h.serve);
        let out = tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("the gate was released")
            .expect("joined");
        let ran = KILLED_RAN_AT.lock().unwrap().expect("the tool ran");
        let after = ran.saturating_duration_since(killed);
        assert_eq!(out, Ok(42), "the held call ran for real");
        assert!(
            after <= Duration::from_millis(100),
            "the held tool ran {after:?} after the hub was killed"
        );
        assert!(!gm.is_attached());
        assert_eq!(gm.stats().held_gates, 0);
        gm.dispose().await;
    });
}

#[test]
fn stopping_the_hub_releases_a_held_rust_gate_within_100_ms() {
    let mut h = spawned_hub(&["--allow-control", "resume"]);
    block_on(async {
        let (gm, task) = hold(&h, "held_on_stop", held_on_stop(1)).await;
        let stopped = Instant::now();
        let _ = std::process::Command::new("kill")
            .args(["-INT", &h.child.id().to_string()])
            .status();
        let out = tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("the gate was released")
            .expect("joined");
        let ran = STOPPED_RAN_AT.lock().unwrap().expect("the tool ran");
        let after = ran.saturating_duration_since(stopped);
        assert_eq!(out, Ok(2));
        assert!(
            after <= Duration::from_millis(100),
            "the held tool ran {after:?} after the hub was stopped"
        );
        assert!(h.interrupt().success(), "a clean stop");
        gm.dispose().await;
    });
}
