//! Shared by the adapter's integration tests: a session attached to the fake debugger (the rest is `graphmind_tests::adapter`), and the test tools.
#![allow(dead_code, unused_imports)]

use graphmind_tests::FakeDebugger;
pub use graphmind_tests::adapter::*;
use serde_json::Value;

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "rig-tests", breakpoints).await
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
