//! Shared by the adapter's integration tests: the mock provider server (OpenAI and Anthropic dialects), a session attached to
//! the fake debugger, and one compact line per event for exact sequence comparisons.
#![allow(dead_code)]

pub mod mock;

use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub const SECOND: Duration = Duration::from_secs(1);

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("genai-tests"));
    assert!(gm.ready(5 * SECOND).await, "did not attach");
    gm
}

/// Deserializes a genai type from JSON.
pub fn sdk<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a genai type")
}

/// The `n`-th (1-based) `exec.paused` frame, waiting for it.
pub async fn paused(hub: &FakeDebugger, n: usize) -> Frame {
    let frames = hub
        .wait_for("exec.paused", 10 * SECOND, |fs| {
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
    hub.wait_for(kind, 10 * SECOND, |fs| {
        fs.iter().filter(|f| f.kind() == kind).count() >= n
    })
    .await;
    hub.frames_of(kind)
}

/// Waits until `n` runs have finished on the wire.
pub async fn runs_finished(hub: &FakeDebugger, n: usize) {
    wait_count(hub, "run.finished", n).await;
}

/// One line per event (hello and node.token excluded): the type and what identifies it.
pub fn events(hub: &FakeDebugger) -> Vec<String> {
    hub.frames()
        .iter()
        .filter(|f| f.kind() != "hello" && f.kind() != "node.token")
        .map(line)
        .collect()
}

fn line(frame: &Frame) -> String {
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

/// The payloads of `node.started` for `node_id`.
pub fn started(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    hub.frames_of("node.started")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node_id)
        .map(|f| f.payload().clone())
        .collect()
}

/// Every delta of every `node.token` of `node_id`, in order.
pub fn deltas(hub: &FakeDebugger, node_id: &str) -> Vec<Value> {
    hub.frames_of("node.token")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node_id)
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// The expected event lines.
pub fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| (*s).to_owned()).collect()
}

/// The first word of an error's message (enough to tell errors apart in a line).
pub fn short(e: &dyn std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}
