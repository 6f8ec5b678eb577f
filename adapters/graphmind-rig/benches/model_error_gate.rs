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

mod support;

use support::{Add, agent, instrumented, median};

fn main() {
    let (warmup, iterations) = support::iterations();
    let _gm = support::detached();
    let add = Add::default();
    let (mut plain, mut gated) = support::interleaved(
        warmup,
        iterations,
        async || instrumented(&agent(&add, false)).await,
        async || instrumented(&agent(&add, true)).await,
    );
    assert_eq!(add.calls(), 2 * (warmup + iterations));
    // Two model calls per prompt call; µs to ns.
    let mut diff: Vec<f64> = plain
        .iter()
        .zip(&gated)
        .map(|(p, g)| (g - p) / 2.0 * 1e3)
        .collect();
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
}
