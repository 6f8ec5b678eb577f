//! Helpers shared by the `macro_*` test files: attach to the fake debugger, answer pauses,
//! and render the client's events as one compact line each for exact comparisons.
#![allow(dead_code)]

use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame};
use serde_json::Value;

pub const SECOND: Duration = Duration::from_secs(1);

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("macro-tests"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm
}

/// The `n`-th (1-based) `exec.paused` frame, waiting for it.
pub async fn paused(hub: &FakeDebugger, n: usize) -> Frame {
    let frames = hub
        .wait_for("exec.paused", 3 * SECOND, |fs| {
            fs.iter().filter(|f| f.kind() == "exec.paused").count() >= n
        })
        .await;
    frames
        .into_iter()
        .filter(|f| f.kind() == "exec.paused")
        .nth(n - 1)
        .expect("present")
}

/// The pause id of an `exec.paused` frame.
pub fn pause_id(frame: &Frame) -> String {
    frame.payload()["pauseId"]
        .as_str()
        .expect("pauseId")
        .to_owned()
}

/// Waits for `n` frames of `kind`.
pub async fn wait_count(hub: &FakeDebugger, kind: &str, n: usize) -> Vec<Frame> {
    hub.wait_for(kind, 3 * SECOND, |fs| {
        fs.iter().filter(|f| f.kind() == kind).count() >= n
    })
    .await;
    hub.frames_of(kind)
}

/// One line per event (hello excluded): the type and what identifies it, so that a test can
/// compare the whole sequence at once.
pub fn events(hub: &FakeDebugger) -> Vec<String> {
    hub.frames()
        .iter()
        .filter(|f| f.kind() != "hello")
        .map(line)
        .collect()
}

fn line(frame: &Frame) -> String {
    let p = frame.payload();
    let s = |key: &str| p[key].as_str().unwrap_or("-").to_owned();
    match frame.kind() {
        "node.started" => format!("node.started {}", s("nodeId")),
        "node.finished" => format!("node.finished {} {}", s("nodeId"), s("status")),
        "node.error" => format!("node.error {}", s("nodeId")),
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

/// The payloads of `node.finished` for `node_id`.
pub fn finished(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    hub.frames_of("node.finished")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node_id)
        .map(|f| f.payload().clone())
        .collect()
}

/// Waits until the run has finished on the wire.
pub async fn run_finished(hub: &FakeDebugger) {
    wait_count(hub, "run.finished", 1).await;
}
