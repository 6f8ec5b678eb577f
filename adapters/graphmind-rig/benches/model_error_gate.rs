//! What `gate_model_errors` costs per model call: one rig agent run instrumented
//! (`agent.graphmind().prompt(…)`, detached), its default model served as rig registers it
//! against served through `gate_model_errors(model)` (the `error` gate's layer, with the
//! in-flight list of completion dispatches it reads: a global mutex push and remove, and
//! `graphmind::current_run_id()`, per model call). A prompt call here is two model calls
//! (one asks for a tool call, one answers) and one tool call, on rig's scripted model.
//!
//! The two cases are interleaved (alternating order), in the same run; the result is the
//! ratio of the medians, and the median of the per-iteration differences over the two model
//! calls of a prompt call.
//!
//! Run: `cargo bench -p graphmind-rig --bench model_error_gate` (under `cargo test` it runs
//! a few iterations only, as a smoke test).

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

#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Failed {}

#[derive(Deserialize)]
struct Operands {
    x: i64,
    y: i64,
}

#[derive(Clone, Default)]
struct Add(Arc<AtomicUsize>);

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

/// A fresh agent (the scripted model consumes its turns), its model gated or not.
fn agent(add: &Add, gated: bool) -> Agent {
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

async fn run(agent: &Agent) -> Duration {
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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (warmup, iterations) = if full { (500, 5000) } else { (5, 20) };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Detached: nothing listens on port 9 (discard).
    let gm = graphmind::init(
        graphmind::Config::new("rig-bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let add = Add::default();
    let (mut plain, mut gated, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        for n in 0..warmup + iterations {
            let (a1, a2) = (agent(&add, false), agent(&add, true));
            let (tp, tg) = if n % 2 == 0 {
                let tp = run(&a1).await;
                (tp, run(&a2).await)
            } else {
                let tg = run(&a2).await;
                (run(&a1).await, tg)
            };
            if n >= warmup {
                let (p, g) = (tp.as_secs_f64() * 1e6, tg.as_secs_f64() * 1e6);
                plain.push(p);
                gated.push(g);
                // Two model calls per prompt call.
                diff.push((g - p) / 2.0 * 1e3);
            }
        }
    });
    assert_eq!(add.0.load(Ordering::Relaxed), 2 * (warmup + iterations));
    let (mp, mg, md) = (median(&mut plain), median(&mut gated), median(&mut diff));
    println!(
        "model_error_gate: one prompt call = 2 model calls + 1 tool call, {iterations} interleaved iterations"
    );
    println!("  instrumented                      median {mp:8.1} µs");
    println!("  instrumented + gate_model_errors  median {mg:8.1} µs");
    println!(
        "  ratio                             median {:8.3}   ({:+.1} %); per model call {md:+.0} ns (median of paired differences)",
        mg / mp,
        (mg / mp - 1.0) * 100.0
    );
    rt.block_on(gm.dispose());
}
