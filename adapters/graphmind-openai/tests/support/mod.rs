//! Shared by the adapter's integration tests: the mock OpenAI server and a session attached to the fake debugger (the rest is `graphmind_tests::adapter`).
#![allow(dead_code, unused_imports)]

pub mod mock;

use graphmind_tests::FakeDebugger;
pub use graphmind_tests::adapter::*;
use serde_json::Value;

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "openai-tests", breakpoints).await
}

/// Resumes the held gate `held` with `continue` and an edited input (GraphMind 0.6
/// `edit-input`), the resume tagged `request_id`.
pub fn edit_at(hub: &FakeDebugger, held: &graphmind_tests::Frame, input: Value, request_id: &str) {
    resume_with(
        hub,
        held,
        serde_json::json!({"action": "continue", "input": input, "requestId": request_id}),
    );
}
