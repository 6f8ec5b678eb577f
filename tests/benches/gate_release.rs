//! How long 1,000 held gates take to release once the debugger dies, against a baseline
//! measured in the same run: 1,000 tasks woken by a oneshot each on the same runtime (what
//! waking and joining that many tasks costs at all).
//!
//! Run: `cargo bench -p graphmind-tests --bench gate_release` (prints one line per case:
//! min, median and max over the rounds).

use std::time::{Duration, Instant};

use graphmind_tests::FakeDebugger;
use serde_json::json;

const GATES: u32 = 1000;
const ROUNDS: usize = 15;

#[graphmind::tool]
async fn work(i: u32) -> u32 {
    i + 1
}

/// One round: 1,000 gates held, the debugger killed; the time until every call returned.
async fn release_round(round: usize) -> Duration {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "work"})]);
    let gm = graphmind::Session::new(hub.config(&format!("bench-release-{round}")));
    assert!(gm.ready(Duration::from_secs(2)).await, "attached");
    let tasks: Vec<_> = (0..GATES)
        .map(|i| {
            let gm = gm.clone();
            tokio::spawn(async move { gm.run("many", work(i)).await })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while gm.stats().held_gates < GATES as usize {
        assert!(Instant::now() < deadline, "gates held");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed = Instant::now();
    hub.kill();
    for t in tasks {
        t.await.expect("joined").expect("not aborted");
    }
    let took = killed.elapsed();
    gm.dispose().await;
    took
}

/// The baseline: 1,000 tasks each waiting on a oneshot, all sent, all joined.
async fn baseline_round() -> Duration {
    let (senders, tasks): (Vec<_>, Vec<_>) = (0..GATES)
        .map(|i| {
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            (
                tx,
                tokio::spawn(async move { rx.await.map_or(0, |v| v + i) }),
            )
        })
        .unzip();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let start = Instant::now();
    for tx in senders {
        let _ = tx.send(1);
    }
    for t in tasks {
        t.await.expect("joined");
    }
    start.elapsed()
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: [{:.2} {:.2} {:.2}] ms (min median max, {} rounds)",
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        times.len()
    );
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: one quick round keeps it working.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut release = Vec::new();
        let mut baseline = Vec::new();
        for round in 0..rounds {
            baseline.push(baseline_round().await);
            release.push(release_round(round).await);
        }
        report("baseline: 1000 oneshot wake-ups joined", baseline);
        report("1000 held gates released after the debugger died", release);
    });
}
