//! Shared by the adapter's integration tests: a session attached to
//! the fake debugger, and one compact line per event for exact sequence comparisons.
#![allow(dead_code)]

use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame};

use serde_json::Value;

pub const SECOND: Duration = Duration::from_secs(1);

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("rig-tests"));
    assert!(gm.ready(5 * SECOND).await, "did not attach");
    gm
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

/// Test tools: `add` (counts its calls) and `flaky` (fails its first `fail_first` calls).
pub mod tools {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rig_agent::tool::{Tool, ToolContext};
    use serde::Deserialize;
    use serde_json::json;

    /// A tool's failure.
    #[derive(Debug)]
    pub struct Failed(pub String);

    impl std::fmt::Display for Failed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Failed {}

    #[derive(Deserialize)]
    pub struct AddArgs {
        x: i64,
        y: i64,
    }

    /// Adds `x` and `y`; `calls` counts the calls.
    #[derive(Clone, Default)]
    pub struct Add {
        pub calls: Arc<AtomicUsize>,
    }

    impl Tool for Add {
        const NAME: &'static str = "add";
        type Error = Failed;
        type Args = AddArgs;
        type Output = i64;

        fn description(&self) -> String {
            "Adds x and y".into()
        }

        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]})
        }

        async fn call(&self, _c: &mut ToolContext, args: AddArgs) -> Result<i64, Failed> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(args.x + args.y)
        }
    }

    /// Fails its first `fail_first` calls with "backend down", then answers `"ok"`.
    #[derive(Clone, Default)]
    pub struct Flaky {
        pub calls: Arc<AtomicUsize>,
        pub fail_first: usize,
    }

    impl Tool for Flaky {
        const NAME: &'static str = "flaky";
        type Error = Failed;
        type Args = serde_json::Value;
        type Output = String;

        fn description(&self) -> String {
            "Fails at first".into()
        }

        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object", "properties": {}})
        }

        async fn call(
            &self,
            _c: &mut ToolContext,
            _a: serde_json::Value,
        ) -> Result<String, Failed> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n < self.fail_first {
                Err(Failed("backend down".into()))
            } else {
                Ok("ok".into())
            }
        }
    }
}
