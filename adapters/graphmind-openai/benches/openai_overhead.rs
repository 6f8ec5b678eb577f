//! What the adapter adds to one chat request, against the bare async-openai client in the
//! same run: `chat().create` against the local mock OpenAI server through the bare client and
//! through the wrapped client, detached (graphmind enabled, nothing listening: the step's
//! events land in the replay ring), then, in a second phase, disabled (`enabled(false)`). The
//! cases are interleaved per round, in an order that rotates, so the drift of a loaded machine
//! lands on all of them alike; each round also times the bare client twice, so the noise
//! floor (bare against bare) is printed beside the overhead.
//!
//! Run: `cargo bench -p graphmind-openai --bench openai_overhead` (rounds:
//! `OPENAI_BENCH_ROUNDS`, 3000 by default; without `--bench`, as `cargo test --all-targets`
//! runs it, 20 rounds as a smoke test).

#[path = "../tests/support/mock.rs"]
mod mock;

use std::hint::black_box;
use std::time::{Duration, Instant};

use async_openai::types::chat::CreateChatCompletionRequest;
use graphmind_openai::Instrument;

fn request() -> CreateChatCompletionRequest {
    serde_json::from_value(serde_json::json!({
        "model": "text",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon?"}
        ]
    }))
    .expect("a request")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Bare,
    BareAgain,
    Wrapped,
}

/// CPU time this thread has run, in nanoseconds (`/proc/thread-self/schedstat`'s first
/// field; 0 where it cannot be read). The calling thread runs the client side of each request
/// (`block_on`), so its CPU per call shows what the wrapper costs apart from the server's
/// and the kernel's wake-ups.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `rounds` rounds of the three cases (order rotating per round) and prints the
/// medians and the median of the per-round ratios.
fn compare(name: &str, rounds: usize, unit: &dyn Fn(Case) -> Duration) {
    for case in [Case::Bare, Case::Wrapped, Case::BareAgain] {
        for _ in 0..rounds.min(200) / 4 + 1 {
            unit(case); // warm-up
        }
    }
    let orders = [
        [Case::Bare, Case::Wrapped, Case::BareAgain],
        [Case::Wrapped, Case::BareAgain, Case::Bare],
        [Case::BareAgain, Case::Bare, Case::Wrapped],
    ];
    let (mut bare, mut again, mut wrapped) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ratio, mut noise) = (Vec::new(), Vec::new());
    // The calling thread's CPU per case, summed over the rounds.
    let mut cpu = [0u64; 3];
    for r in 0..rounds {
        let mut t = [0.0f64; 3];
        for case in orders[r % 3] {
            let c0 = thread_cpu_ns();
            let us = unit(case).as_secs_f64() * 1e6;
            let i = match case {
                Case::Bare => 0,
                Case::Wrapped => 1,
                Case::BareAgain => 2,
            };
            t[i] = us;
            cpu[i] += thread_cpu_ns().saturating_sub(c0);
        }
        bare.push(t[0]);
        wrapped.push(t[1]);
        again.push(t[2]);
        ratio.push(t[1] / t[0]);
        noise.push(t[2] / t[0]);
    }
    let (mb, mw, ma) = (median(&mut bare), median(&mut wrapped), median(&mut again));
    let (mr, mn) = (median(&mut ratio), median(&mut noise));
    println!(
        "{name}: {rounds} rounds, medians: bare {mb:.1} µs, wrapped {mw:.1} µs, bare again {ma:.1} µs"
    );
    println!(
        "{name}: wrapped / bare = {:.4} (median of per-round ratios; {:+.2} %), \
         bare again / bare = {:.4} ({:+.2} %, the noise floor); ratio of medians {:.4}",
        mr,
        (mr - 1.0) * 100.0,
        mn,
        (mn - 1.0) * 100.0,
        mw / mb
    );
    let per_call = |ns: u64| ns as f64 / rounds.max(1) as f64 / 1e3;
    println!(
        "{name}: calling thread's CPU per call: bare {:.1} µs, wrapped {:.1} µs, bare again {:.1} µs \
         (wrapped adds {:+.1} µs)",
        per_call(cpu[0]),
        per_call(cpu[1]),
        per_call(cpu[2]),
        per_call(cpu[1]) - (per_call(cpu[0]) + per_call(cpu[2])) / 2.0
    );
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds = if benching {
        std::env::var("OPENAI_BENCH_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3000)
    } else {
        20
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = rt.block_on(mock::Mock::start());
    let bare = mock.client();
    let wrapped = mock.client().graphmind();
    let req = request();
    let unit = |case: Case| {
        let t = Instant::now();
        let out = match case {
            Case::Wrapped => rt.block_on(wrapped.chat().create(req.clone())),
            Case::Bare | Case::BareAgain => rt.block_on(bare.chat().create(req.clone())),
        };
        black_box(out.expect("ok"));
        t.elapsed()
    };

    // Nothing listens on port 9 (discard): the session stays detached.
    let detached = graphmind::init(
        graphmind::Config::new("bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(detached.is_enabled());
    compare("chat.create, detached", rounds, &unit);
    assert!(
        detached.stats().buffered > 0,
        "the steps reach the replay ring"
    );

    let disabled = graphmind::init(
        graphmind::Config::new("bench")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!disabled.is_enabled());
    compare("chat.create, disabled", rounds, &unit);
    drop((detached, disabled));
}
