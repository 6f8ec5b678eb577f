//! What the adapter adds to one rig agent run, detached (graphmind enabled, nothing listening:
//! the nodes' events land in the replay ring): a prompt call whose first model call asks for
//! one tool call and whose second answers (two model calls, one tool call), on rig's scripted
//! model, bare (`agent.prompt(…)`) against instrumented (`agent.graphmind().prompt(…)`).
//!
//! The two cases are interleaved: every iteration runs both, in alternating order, so drift of
//! the machine (another build on the other core, frequency changes) hits both alike. The
//! result is the ratio of the medians, and of the trimmed means, in the same run.
//!
//! Run: `cargo bench -p graphmind-rig --bench rig_overhead` (under `cargo test` it runs a few
//! iterations only, as a smoke test).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use graphmind_rig::Instrument;
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

/// A fresh agent (the scripted model consumes its turns).
fn agent(add: &Add) -> Agent {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "add", json!({"x": 2, "y": 3})),
        MockTurn::text("5"),
    ]);
    AgentBuilder::new(model)
        .name("bench")
        .preamble("You add numbers.")
        .tool(add.clone())
        .build()
}

async fn bare(agent: &Agent) -> Duration {
    let t = Instant::now();
    let out = agent.prompt("2+3?").max_turns(4).await.expect("bare run");
    let d = t.elapsed();
    black_box(out);
    d
}

async fn instrumented(agent: &Agent) -> Duration {
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

/// Mean of the middle 80 %.
fn trimmed_mean(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let cut = v.len() / 10;
    let mid = &v[cut..v.len() - cut];
    mid.iter().sum::<f64>() / mid.len() as f64
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
    let (mut b, mut i) = (Vec::new(), Vec::new());
    rt.block_on(async {
        for n in 0..warmup + iterations {
            let (a1, a2) = (agent(&add), agent(&add));
            // Alternate which case goes first.
            let (tb, ti) = if n % 2 == 0 {
                let tb = bare(&a1).await;
                (tb, instrumented(&a2).await)
            } else {
                let ti = instrumented(&a2).await;
                (bare(&a1).await, ti)
            };
            if n >= warmup {
                b.push(tb.as_secs_f64() * 1e6);
                i.push(ti.as_secs_f64() * 1e6);
            }
        }
    });
    assert_eq!(add.0.load(Ordering::Relaxed), 2 * (warmup + iterations));
    let (mb, mi) = (median(&mut b), median(&mut i));
    let (tb, ti) = (trimmed_mean(&mut b), trimmed_mean(&mut i));
    println!(
        "rig_overhead: one prompt call = 2 model calls + 1 tool call, {iterations} interleaved iterations"
    );
    println!("  bare rig          median {mb:8.1} µs   trimmed mean {tb:8.1} µs");
    println!("  graphmind-rig     median {mi:8.1} µs   trimmed mean {ti:8.1} µs  (detached)");
    println!(
        "  ratio             median {:8.3}      trimmed mean {:8.3}   (overhead {:+.1} % / {:+.1} %)",
        mi / mb,
        ti / tb,
        (mi / mb - 1.0) * 100.0,
        (ti / tb - 1.0) * 100.0
    );
    rt.block_on(gm.dispose());
}
