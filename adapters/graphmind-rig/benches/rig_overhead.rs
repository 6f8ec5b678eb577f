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

mod support;

use support::{Add, agent, bare, instrumented, median};

/// Mean of the middle 80 %.
fn trimmed_mean(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let cut = v.len() / 10;
    let mid = &v[cut..v.len() - cut];
    mid.iter().sum::<f64>() / mid.len() as f64
}

fn main() {
    let (warmup, iterations) = support::iterations();
    let _gm = support::detached();
    let add = Add::default();
    let (mut b, mut i) = support::interleaved(
        warmup,
        iterations,
        async || bare(&agent(&add, false)).await,
        async || instrumented(&agent(&add, false)).await,
    );
    assert_eq!(add.calls(), 2 * (warmup + iterations));
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
}
