//! Shared by the adapter's benchmarks: the counting `add` tool, the scripted agent of one
//! prompt call (a tool call, then the answer), the detached session, and the interleaved
//! timing loop whose two cases take turns going first.
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use graphmind_rig::{GateModelErrors, Instrument};
use rig_agent::tool::{Tool, ToolContext};
use rig_agent::{Agent, AgentBuilder};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde::Deserialize;
use serde_json::json;

/// The tool's failure (it never fails).
#[derive(Debug)]
pub struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Failed {}

#[derive(Deserialize)]
pub struct Operands {
    x: i64,
    y: i64,
}

/// Adds `x` and `y`, counting its calls.
#[derive(Clone, Default)]
pub struct Add(Arc<AtomicUsize>);

impl Add {
    /// How many times the tool ran.
    pub fn calls(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Tool for Add {
    const NAME: &'static str = "add";
    type Error = Failed;
    type Args = Operands;
    type Output = i64;

    fn description(&self) -> String {
        "Adds x and y".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}})
    }

    async fn call(&self, _: &mut ToolContext, a: Operands) -> Result<i64, Failed> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(a.x + a.y)
    }
}

/// A fresh agent (the scripted model consumes its turns): two model calls, the first asking
/// for one `add`; with `gated`, its model also served through `gate_model_errors`.
pub fn agent(add: &Add, gated: bool) -> Agent {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ]);
    let builder = AgentBuilder::new(model.clone())
        .name("bench")
        .preamble("You add numbers.");
    let builder = if gated {
        builder.gate_model_errors(model)
    } else {
        builder
    };
    builder.tool(add.clone()).build()
}

/// One prompt call through rig alone (`agent.prompt(…)`), timed.
pub async fn bare(agent: &Agent) -> Duration {
    let t = Instant::now();
    let out = agent.prompt("2+3?").max_turns(4).await.expect("bare run");
    let d = t.elapsed();
    black_box(out);
    d
}

/// One prompt call through the adapter (`agent.graphmind().prompt(…)`), timed.
pub async fn instrumented(agent: &Agent) -> Duration {
    let t = Instant::now();
    let out = agent
        .graphmind()
        .prompt("2+3?")
        .with(|r| r.max_turns(4))
        .await
        .expect("instrumented run");
    let d = t.elapsed();
    black_box(out);
    d
}

/// `(warm-up, measured)` iterations: many under `cargo bench`, a few as a smoke test under
/// `cargo test`.
pub fn iterations() -> (usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        (500, 5000)
    } else {
        (5, 20)
    }
}

/// A session that stays detached: nothing listens on port 9 (discard), so the nodes' events
/// land in the replay ring.
pub fn detached() -> graphmind::InitGuard {
    graphmind::init(
        graphmind::Config::new("rig-bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    )
}

/// Times `a` and `b` (each builds its own agent and returns the time of its prompt call)
/// `warmup + iterations` times on one current-thread runtime, alternating which goes first,
/// so drift of the machine hits both alike; the measured times in µs, paired by iteration.
pub fn interleaved(
    warmup: usize,
    iterations: usize,
    a: impl AsyncFn() -> Duration,
    b: impl AsyncFn() -> Duration,
) -> (Vec<f64>, Vec<f64>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    rt.block_on(async {
        for n in 0..warmup + iterations {
            let (da, db) = if n % 2 == 0 {
                let da = a().await;
                (da, b().await)
            } else {
                let db = b().await;
                (a().await, db)
            };
            if n >= warmup {
                ta.push(da.as_secs_f64() * 1e6);
                tb.push(db.as_secs_f64() * 1e6);
            }
        }
    });
    (ta, tb)
}

/// The median (sorts `v`).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
