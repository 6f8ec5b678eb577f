//! Shared by the adapter's integration tests: a session attached to the fake debugger, a
//! prompt call held at a gate and seen through to the run's end (the rest is
//! `graphmind_tests::adapter`), and the test tools.
#![allow(dead_code, unused_imports)]

use graphmind_rig::Instrument;
use graphmind_tests::FakeDebugger;
pub use graphmind_tests::adapter::*;
use rig_agent::Agent;
use rig_agent::agent::PromptResponse;
use rig_agent::completion::PromptError;
use serde_json::Value;

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "rig-tests", breakpoints).await
}

/// What a prompt call inside a graphmind run returns.
pub type Outcome = Result<Result<PromptResponse, PromptError>, graphmind::Aborted>;

/// `prompt` to `agent` (up to four turns) inside the run `a`, so the agent node is `agent:a`.
pub fn spawn_in_run(
    gm: &graphmind::Session,
    agent: Agent,
    prompt: &str,
) -> tokio::task::JoinHandle<Outcome> {
    let gm = gm.clone();
    let prompt = prompt.to_owned();
    tokio::spawn(async move {
        gm.run("a", async move {
            agent
                .graphmind()
                .prompt(prompt)
                .with(|r| r.max_turns(4))
                .await
        })
        .await
    })
}

/// A prompt call running inside the run `a` on a session attached to a fake debugger that
/// set one breakpoint: answer its gates through `hub`, then [`Gated::finish`].
pub struct Gated {
    /// The fake debugger.
    pub hub: FakeDebugger,
    /// The session attached to it.
    pub gm: graphmind::Session,
    /// The prompt call.
    pub task: tokio::task::JoinHandle<Outcome>,
}

/// How a gated prompt call ended.
pub struct Finished {
    /// What the app got.
    pub out: Outcome,
    /// The run's events, one line each (see `events`).
    pub events: Vec<String>,
    /// The fake debugger, for the frames (every one schema-checked already).
    pub hub: FakeDebugger,
}

/// Starts `prompt` to `agent` inside the run `a`, with the breakpoint `{kind, point}` set.
pub async fn gated(kind: &str, point: &str, agent: Agent, prompt: &str) -> Gated {
    let hub = FakeDebugger::start().await;
    let gm = attached(
        &hub,
        vec![serde_json::json!({"kind": kind, "point": point})],
    )
    .await;
    let task = spawn_in_run(&gm, agent, prompt);
    Gated { hub, gm, task }
}

impl Gated {
    /// Waits for the prompt call and its run to end, checks every frame against the schema
    /// and closes the session.
    pub async fn finish(self) -> Finished {
        let out = join(self.task).await;
        runs_finished(&self.hub, 1).await;
        let events = events(&self.hub);
        self.hub.assert_valid();
        self.gm.dispose().await;
        Finished {
            out,
            events,
            hub: self.hub,
        }
    }
}

impl Finished {
    /// The app's response, for a call that was neither aborted nor failed.
    pub fn response(&self) -> &PromptResponse {
        match &self.out {
            Ok(Ok(response)) => response,
            other => panic!("expected a response, got {other:?}"),
        }
    }
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
