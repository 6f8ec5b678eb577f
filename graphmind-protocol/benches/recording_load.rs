//! Reading a recording (`Recording::parse`) whose steps all run in parallel: every
//! `node.started` first, then every `node.finished`, in start order (`in_order`) or in
//! reverse (`reversed`), for 10k, 100k and 200k steps. Linear reading means the 100k and
//! 200k cases take ~10× and ~20× the 10k case in both orders (issue 34: today's list scans
//! made them quadratic — 100k reversed took 42 s in the release CLI).
//!
//! After the criterion cases (with `--bench` only, not under `cargo test --benches`) it
//! prints, per order, the median of five reads of each size, its time per step and its
//! ratio to the 10k case of the same run. `RECORDING_LOAD_SIZES=10000,20000` picks other
//! sizes (the first is the baseline). Under `cargo test --benches` (criterion's test mode:
//! each case once, in a debug build) the sizes are divided by 100.
//!
//! Run: `cargo bench -p graphmind-protocol --bench recording_load`.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use graphmind_protocol::recording::Recording;

/// Whether criterion runs for measurement (`--bench`), not as a test.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn sizes() -> Vec<usize> {
    let chosen = std::env::var("RECORDING_LOAD_SIZES")
        .ok()
        .map(|s| {
            s.split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect::<Vec<usize>>()
        })
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| vec![10_000, 100_000, 200_000]);
    if measuring() {
        chosen
    } else {
        chosen.into_iter().map(|n| (n / 100).max(1)).collect()
    }
}

/// `n` calls of one tool started in parallel, then finished in start order or reversed.
fn parallel_recording(n: usize, reversed: bool) -> String {
    let mut text = String::with_capacity(n * 260);
    text.push_str(r#"{"gm":1,"seq":0,"ts":1,"runId":"run_p","type":"node.started","payload":{"nodeId":"agent:p","kind":"agent","name":"p","instanceId":"run_p"}}"#);
    text.push('\n');
    for i in 0..n {
        text.push_str(&format!(
            r#"{{"gm":1,"seq":{},"ts":1,"runId":"run_p","type":"node.started","payload":{{"nodeId":"tool:fetch","kind":"tool","name":"fetch","instanceId":"c{i}","input":{{"page":{i}}}}}}}"#,
            i + 1
        ));
        text.push('\n');
    }
    let order: Box<dyn Iterator<Item = usize>> = if reversed {
        Box::new((0..n).rev())
    } else {
        Box::new(0..n)
    };
    for (k, i) in order.enumerate() {
        text.push_str(&format!(
            r#"{{"gm":1,"seq":{},"ts":1,"runId":"run_p","type":"node.finished","payload":{{"nodeId":"tool:fetch","instanceId":"c{i}","durationMs":1,"status":"ok","output":{{"page":{i}}}}}}}"#,
            n + k + 1
        ));
        text.push('\n');
    }
    text
}

const ORDERS: [(&str, bool); 2] = [("in_order", false), ("reversed", true)];

fn recording_load(c: &mut Criterion) {
    let sizes = sizes();
    let mut g = c.benchmark_group("recording_load");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (order, reversed) in ORDERS {
        for &n in &sizes {
            let text = parallel_recording(n, reversed);
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(order, n), &text, |b, text| {
                b.iter(|| {
                    let rec = Recording::parse(text, None).expect("a recording");
                    assert_eq!(rec.steps.len(), n);
                    rec
                });
            });
        }
    }
    g.finish();
    if measuring() {
        ratios(&sizes);
    }
}

/// The median of five reads of each size, per order, against the first size's.
fn ratios(sizes: &[usize]) {
    for (order, reversed) in ORDERS {
        let mut base: Option<(usize, f64)> = None;
        for &n in sizes {
            let text = parallel_recording(n, reversed);
            let mut runs: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let rec = Recording::parse(&text, None).expect("a recording");
                    let took = t.elapsed().as_secs_f64();
                    assert_eq!(rec.steps.len(), n);
                    took
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            let median = runs[2];
            let (n0, t0) = *base.get_or_insert((n, median));
            println!(
                "recording_load {order} {n}: median {:.1} ms ({:.0} ns per step), {:.2}x the {n0} case for {:.1}x the steps",
                median * 1e3,
                median * 1e9 / n as f64,
                median / t0,
                n as f64 / n0 as f64
            );
        }
    }
}

criterion_group!(benches, recording_load);
criterion_main!(benches);
