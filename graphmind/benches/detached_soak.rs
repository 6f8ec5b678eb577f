//! Whether a process that stays detached (graphmind enabled, nothing listening: the events
//! land in the replay ring and the oldest are evicted) gets slower, or bigger, the longer it
//! runs: batches of short runs (`graphmind::run!` with three `#[graphmind::tool]` calls, ten
//! events each), timed one after another. The figure is the last batch's time per run over
//! the first's, in the same run (1.0: nothing grows with the runs done), beside the
//! process's resident memory after each batch.
//!
//! Run: `cargo bench -p graphmind --bench detached_soak` (`GM_SOAK_BATCHES` batches of
//! `GM_SOAK_RUNS` runs, 10 × 20 000 by default; without `--bench`, as `cargo test
//! --all-targets` runs it, 3 × 500 as a smoke test).

mod support;

use std::time::Instant;

#[graphmind::tool]
async fn add(total: i64, n: i64) -> i64 {
    total + n
}

async fn three_calls() -> i64 {
    let mut total = 0;
    for n in 1..=3 {
        total = add(total, n).await;
    }
    total
}

/// The process's resident set in KiB (0 where `/proc` cannot be read).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let (batches, runs) = if benching {
        (
            env_or("GM_SOAK_BATCHES", 10),
            env_or("GM_SOAK_RUNS", 20_000),
        )
    } else {
        (3, 500)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let gm = support::detached_session("soak");
    let mut per_run = Vec::new();
    rt.block_on(async {
        for batch in 0..batches {
            let t = Instant::now();
            for _ in 0..runs {
                let total = graphmind::run!("soak", three_calls()).await;
                assert_eq!(total.ok(), Some(6));
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / runs as f64;
            per_run.push(us);
            let stats = gm.stats();
            println!(
                "detached_soak: batch {batch}: {us:.2} µs per run, RSS {} KiB, ring {} events, {} lost",
                rss_kib(),
                stats.buffered,
                stats.lost
            );
        }
    });
    let (first, last) = (per_run[0], per_run[per_run.len() - 1]);
    println!(
        "detached_soak: {} runs: last batch / first batch = {:.3} ({first:.2} → {last:.2} µs per run)",
        batches * runs,
        last / first
    );
}
