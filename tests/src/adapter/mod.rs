//! What the SDK adapters' integration tests (`adapters/*/tests`) share: a session attached to
//! the [`FakeDebugger`], the `n`-th pause and one helper per resume action, one compact line
//! per event for exact sequence comparisons, and the payloads of one node's events. With the
//! feature `hub`, `hub::RealHub` runs the real hub in-process for end-to-end tests.
//!
//! ```no_run
//! use graphmind_tests::FakeDebugger;
//! use graphmind_tests::adapter::{attached, continue_at, events, runs_finished};
//!
//! # async fn demo() {
//! let hub = FakeDebugger::start().await;
//! let gm = attached(&hub, "my-adapter-tests", vec![serde_json::json!({"kind": "tool"})]).await;
//! // … start an instrumented call on another task, then:
//! let paused = continue_at(&hub, 1).await;
//! assert_eq!(paused.payload()["point"], "before");
//! runs_finished(&hub, 1).await;
//! println!("{:?}", events(&hub));
//! gm.dispose().await;
//! # }
//! ```

#[cfg(feature = "hub")]
pub mod hub;

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{FakeDebugger, Frame};

/// One second, the unit the adapters' tests count their waits in.
pub const SECOND: Duration = Duration::from_secs(1);

/// How long a wait for a frame may take before the test fails (generous: a loaded machine).
const WAIT: Duration = Duration::from_secs(10);

/// A session of `app` attached to `hub`, which sent `breakpoints` in its ack. Panics if it
/// does not attach within 5 s.
pub async fn attached(
    hub: &FakeDebugger,
    app: &str,
    breakpoints: Vec<Value>,
) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config(app));
    assert!(gm.ready(5 * SECOND).await, "did not attach");
    gm
}

/// A session of `app` on a hub that never acks: the session connects (its transport runs)
/// but stays detached, so its calls take the detached path until [`attach_late`].
pub async fn detached(app: &str) -> (FakeDebugger, graphmind::Session) {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(crate::Handshake::Never);
    let gm = graphmind::Session::new(hub.config(app));
    gm.run("warm-up", async {}).await.expect("not aborted");
    hub.wait_connections(1, 5 * SECOND).await;
    assert!(!gm.is_attached());
    (hub, gm)
}

/// Lets the hub of [`detached`] ack, and waits until the replay of the session's ring has
/// arrived (every event recorded so far).
pub async fn attach_late(hub: &FakeDebugger, gm: &graphmind::Session) {
    let recorded = gm.stats().last_seq.expect("events recorded");
    hub.set_handshake(crate::Handshake::Ack);
    assert!(crate::attach(gm, 5 * SECOND).await, "did not attach");
    hub.wait_matches(&crate::any_frame().seq(recorded), 1, WAIT)
        .await;
}

/// The [`events`] lines of `llm:step` and of `run.finished`, from the first `llm:step` one
/// (after the warm-up run of [`detached`]): what two sessions running the same model calls
/// must share.
pub fn step_lines(hub: &FakeDebugger) -> Vec<String> {
    events(hub)
        .into_iter()
        .filter(|l| l.contains("llm:step") || l.starts_with("run.finished"))
        .skip_while(|l| l.starts_with("run.finished"))
        .collect()
}

/// Asserts that `late` — the hub of a session that ran some model calls detached, then
/// attached late ([`detached`], [`attach_late`]) — got the `llm:step` frames that `hub` got
/// from the same calls made attached: the same [`step_lines`], the same `node.started` and
/// `node.finished` payloads but for what differs from one execution to the next
/// ([`stable`]), and every detached step took time (`durationMs` > 0). Returns the step lines,
/// for the caller's own checks.
#[track_caller]
pub fn assert_same_steps(late: &FakeDebugger, hub: &FakeDebugger) -> Vec<String> {
    let lines = step_lines(late);
    assert_eq!(lines, step_lines(hub));
    assert_eq!(
        stable(started(late, "llm:step")),
        stable(started(hub, "llm:step"))
    );
    assert_eq!(
        stable(finished(late, "llm:step")),
        stable(finished(hub, "llm:step"))
    );
    for f in finished(late, "llm:step") {
        assert!(f["durationMs"].as_f64().is_some_and(|d| d > 0.0), "{f}");
    }
    lines
}

/// Node payloads without what differs from one execution to the next (`ts`, `durationMs`,
/// `heldMs`, `instanceId`).
#[must_use]
pub fn stable(payloads: Vec<Value>) -> Vec<Value> {
    payloads
        .into_iter()
        .map(|mut p| {
            if let Some(map) = p.as_object_mut() {
                for key in ["ts", "durationMs", "heldMs", "instanceId"] {
                    map.remove(key);
                }
            }
            p
        })
        .collect()
}

/// The `n`-th (1-based) `exec.paused` frame, waiting for it.
pub async fn paused(hub: &FakeDebugger, n: usize) -> Frame {
    let mut frames = hub.wait_count("exec.paused", n, WAIT).await;
    frames.swap_remove(n - 1)
}

/// The pause id of an `exec.paused` frame.
pub fn pause_id(frame: &Frame) -> String {
    frame.payload()["pauseId"]
        .as_str()
        .expect("pauseId")
        .to_owned()
}

/// Waits for the `n`-th pause and answers it with `action` (`continue`, `retry`, `abort`, …);
/// returns the pause's frame. Panics if the answer could not be sent.
pub async fn resume_at(hub: &FakeDebugger, n: usize, action: &str) -> Frame {
    let p = paused(hub, n).await;
    assert!(
        hub.resume(p.run_id(), &pause_id(&p), action),
        "sent {action}"
    );
    p
}

/// Answers the pause of `held` with `payload` (an `exec.resume` body without its `pauseId`,
/// e.g. `{"action": "continue", "input": {…}}`, which this fills in). Panics if the answer
/// could not be sent.
pub fn resume_with(hub: &FakeDebugger, held: &Frame, mut payload: Value) {
    payload["pauseId"] = Value::String(pause_id(held));
    assert!(
        hub.send(&hub.control("exec.resume", held.run_id(), payload)),
        "sent exec.resume"
    );
}

/// Waits for the `n`-th pause and continues it; returns the pause's frame.
pub async fn continue_at(hub: &FakeDebugger, n: usize) -> Frame {
    resume_at(hub, n, "continue").await
}

/// Waits for the `n`-th pause and retries it; returns the pause's frame.
pub async fn retry_at(hub: &FakeDebugger, n: usize) -> Frame {
    resume_at(hub, n, "retry").await
}

/// Waits for the `n`-th pause and aborts the run; returns the pause's frame.
pub async fn abort_at(hub: &FakeDebugger, n: usize) -> Frame {
    resume_at(hub, n, "abort").await
}

/// Waits for the `n`-th pause and injects `output`; returns the pause's frame.
pub async fn inject_at(hub: &FakeDebugger, n: usize, output: Value) -> Frame {
    let p = paused(hub, n).await;
    assert!(hub.inject(p.run_id(), &pause_id(&p), output), "sent inject");
    p
}

/// Waits for the `n`-th pause and rejects it with `reason` (GraphMind 0.6 `reject`); returns
/// the pause's frame.
pub async fn reject_at(hub: &FakeDebugger, n: usize, reason: &str) -> Frame {
    let p = paused(hub, n).await;
    let control = hub.control(
        "exec.resume",
        p.run_id(),
        serde_json::json!({"pauseId": pause_id(&p), "action": "reject", "reason": reason}),
    );
    assert!(hub.send(&control), "sent reject");
    p
}

/// The spawned call's result, failing the test when it has not ended within 20 s.
pub async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(20 * SECOND, task)
        .await
        .expect("the call ended")
        .expect("joined")
}

/// Waits for `n` frames of `kind`; returns every frame of that kind received so far.
pub async fn wait_count(hub: &FakeDebugger, kind: &str, n: usize) -> Vec<Frame> {
    hub.wait_count(kind, n, WAIT).await
}

/// Waits until `n` runs have finished on the wire.
pub async fn runs_finished(hub: &FakeDebugger, n: usize) {
    hub.wait_count("run.finished", n, WAIT).await;
}

/// One line per event (`hello` and `node.token` left out): the type and what identifies it,
/// e.g. `node.finished tool:add ok`, `exec.paused llm:step before`, `graph.hint tool:a,tool:b`.
pub fn events(hub: &FakeDebugger) -> Vec<String> {
    hub.frames()
        .iter()
        .filter(|f| f.kind() != "hello" && f.kind() != "node.token")
        .map(line)
        .collect()
}

/// The line [`events`] shows for one frame.
pub fn line(frame: &Frame) -> String {
    let p = frame.payload();
    let s = |key: &str| p[key].as_str().unwrap_or("-").to_owned();
    match frame.kind() {
        "node.started" => format!("node.started {}", s("nodeId")),
        "node.finished" => format!("node.finished {} {}", s("nodeId"), s("status")),
        "node.error" => format!(
            "node.error {} {}",
            s("nodeId"),
            p["error"]["name"].as_str().unwrap_or("-")
        ),
        "node.token" => format!("node.token {}", s("nodeId")),
        "exec.paused" => format!("exec.paused {} {}", s("nodeId"), s("point")),
        "exec.resumed" => format!("exec.resumed {}", s("action")),
        "exec.refused" => format!("exec.refused {}", s("code")),
        "run.finished" => format!("run.finished {}", s("status")),
        "graph.hint" => {
            let nodes: Vec<String> = p["nodes"]
                .as_array()
                .map(|ns| {
                    ns.iter()
                        .map(|n| n["nodeId"].as_str().unwrap_or("-").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            format!("graph.hint {}", nodes.join(","))
        }
        other => other.to_owned(),
    }
}

/// The payloads of the frames of `kind` for `node_id`, in order.
fn payloads(hub: &FakeDebugger, kind: &str, node_id: &str) -> Vec<Value> {
    hub.frames_of(kind)
        .iter()
        .filter(|f| f.payload()["nodeId"] == node_id)
        .map(|f| f.payload().clone())
        .collect()
}

/// The payloads of `node.finished` for `node_id`.
pub fn finished(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    payloads(hub, "node.finished", node_id)
}

/// The payloads of `node.started` for `node_id`.
pub fn started(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    payloads(hub, "node.started", node_id)
}

/// Every delta of every `node.token` of `node_id`, in order.
pub fn deltas(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    payloads(hub, "node.token", node_id)
        .iter()
        .flat_map(|p| p["deltas"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The expected event lines, as owned strings to compare with [`events`].
pub fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| (*s).to_owned()).collect()
}

/// Deserializes an SDK type from JSON (the tests build requests and responses this way: the
/// JSON is the provider API's). Panics if it does not fit.
pub fn sdk<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("an SDK type")
}

/// The first word of an error's message (enough to tell errors apart in a line).
pub fn short(e: &dyn std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}
