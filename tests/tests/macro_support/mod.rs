//! Helpers shared by the `macro_*` test files: the adapters' test helpers
//! (`graphmind_tests::adapter`) with the macro tests' app name, and one compact line per
//! event — `node.token` included — for exact comparisons.
#![allow(dead_code)]

use graphmind_tests::FakeDebugger;
#[allow(unused_imports)] // each test file uses a part of them
pub use graphmind_tests::adapter::{SECOND, finished, pause_id, paused, wait_count};
use serde_json::Value;

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "macro-tests", breakpoints).await
}

/// One line per event (hello excluded, tokens kept): the type and what identifies it, so
/// that a test can compare the whole sequence at once.
pub fn events(hub: &FakeDebugger) -> Vec<String> {
    hub.frames()
        .iter()
        .filter(|f| f.kind() != "hello")
        .map(graphmind_tests::adapter::line)
        .collect()
}

/// Waits until the run has finished on the wire.
pub async fn run_finished(hub: &FakeDebugger) {
    graphmind_tests::adapter::runs_finished(hub, 1).await;
}
