//! Per-call overhead of `#[graphmind::tool]`, in one run: a plain async fn, the same tool
//! detached (enabled, nothing listening: events still land in the replay ring; outside and
//! inside a run scope), attached to a debugger that sets no breakpoint (every gate is checked
//! and passes; the events are sent), disabled (inlined into the caller, and behind a
//! non-inlined call), and `#[tracing::instrument]` with a `fmt` subscriber writing to a sink;
//! and one `Instant::now()` for reference.
//!
//! After the criterion cases of each session (with `--bench` only: not under
//! `cargo test --benches`) it prints ratios measured by interleaving the case and its
//! baseline in seven rounds of 100,000 calls each (the median of the rounds, and every
//! round's figure): detached / `tracing`, attached / `tracing` and the attached call in ns.
//!
//! Run: `cargo bench -p graphmind --bench overhead`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use support::{detached_session, ready, sink_dispatch, traced};

async fn plain(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

// One instrumented fn per case, each called from one place, as a tool usually is.
#[graphmind::tool]
async fn gated(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_off(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_in_run(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_attached(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_shared(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

/// A minimal debugger on 127.0.0.1: acks every `hello` (no breakpoints, mode run) and reads
/// and drops every frame. Returns its port.
fn sink_debugger() -> u16 {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    while let Some(Ok(msg)) = ws.next().await {
                        if let Message::Text(text) = msg
                            && text.contains(r#""type":"hello""#)
                        {
                            let ack = serde_json::json!({
                                "gm": 1, "seq": 0, "ts": 0, "runId": "*", "type": "hello.ack",
                                "payload": {
                                    "versions": {"protocol": 1, "viewer": "bench"},
                                    "capabilities": [], "breakpoints": [], "mode": "run",
                                    "sessionToken": "bench",
                                },
                            });
                            if ws
                                .send(Message::Text(ack.to_string().into()))
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                });
            }
        });
    });
    port
}

/// Behind a call the optimizer may not inline: the cost when an instrumented fn's future is
/// not inlined into its caller (e.g. it is called from many places).
#[inline(never)]
fn plain_out_of_line(a: u64, b: u64) -> u64 {
    ready(plain(a, b))
}

#[inline(never)]
fn gated_out_of_line(a: u64, b: u64) -> u64 {
    ready(gated_shared(a, b))
}

/// Nanoseconds per call of `f` over `n` calls.
fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    let start = std::time::Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether criterion runs for measurement (`--bench`), not as a test.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Interleaves `case` and the `tracing` baseline (with `dispatch` as the subscriber) for
/// seven rounds and prints the median ratio and the case's median time per call.
fn print_ratio(label: &str, dispatch: &tracing::Dispatch, mut case: impl FnMut()) {
    const ROUNDS: usize = 7;
    const CALLS: u32 = 100_000;
    let (mut ratios, mut times) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = per_call(CALLS, &mut case);
        let base = tracing::dispatcher::with_default(dispatch, || {
            per_call(CALLS, || {
                black_box(ready(traced(black_box(1), black_box(2))));
            })
        });
        ratios.push(t / base);
        times.push(t);
    }
    let rounds: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    println!(
        "ratio {label} / tracing::instrument+fmt: median {:.3} (rounds {}); {label}: median {:.1} ns per call",
        median(ratios),
        rounds.join(" "),
        median(times),
    );
}

fn overhead(c: &mut Criterion) {
    let dispatch = sink_dispatch();
    let mut g = c.benchmark_group("call");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_secs(1));

    g.bench_function("plain async fn", |b| {
        b.iter(|| ready(plain(black_box(1), black_box(2))));
    });

    let detached = detached_session("bench");
    assert_eq!(ready(gated(1, 2)), 3);
    assert!(
        detached.stats().buffered > 0,
        "events reach the replay ring"
    );
    g.bench_function("tool, detached", |b| {
        b.iter(|| ready(gated(black_box(1), black_box(2))));
    });
    // The same inside a run scope (`graphmind::run` / `run!`), as agents usually call tools:
    // the run's id and its agent node (the parent) come from the scope.
    g.bench_function("tool, detached, in a run", |b| {
        b.iter_custom(|iters| {
            ready(graphmind::run("bench", async move {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    black_box(gated_in_run(black_box(1), black_box(2)).await);
                }
                start.elapsed()
            }))
            .expect("not aborted")
        });
    });
    assert!(!detached.is_attached());
    if measuring() {
        print_ratio("detached", &dispatch, || {
            black_box(ready(gated(black_box(1), black_box(2))));
        });
    }

    // Attached to a debugger that sets no breakpoint: each call checks its gates (they pass)
    // and its two events are sent by the transport thread.
    let port = sink_debugger();
    // The loop guard is off: every call here has the same input. The sink is trusted (it
    // proves nothing; `TrustHub::Any`), so gates are checked as for the user's own hub: an
    // untrusted debugger's session records as if detached and would measure that path.
    let attached = graphmind::init(
        graphmind::Config::new("bench")
            .url(format!("ws://127.0.0.1:{port}/ingest"))
            .trust_hub(graphmind::TrustHub::Any)
            .on_loop(graphmind::OnLoop::Off)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    assert!(
        rt.block_on(attached.ready(Duration::from_secs(5))),
        "attached"
    );
    g.bench_function("tool, attached, no breakpoint", |b| {
        b.iter(|| ready(gated_attached(black_box(1), black_box(2))));
    });
    if measuring() {
        print_ratio("attached", &dispatch, || {
            black_box(ready(gated_attached(black_box(1), black_box(2))));
        });
    }
    assert!(attached.is_attached(), "stayed attached");
    assert!(
        attached.stats().trusted,
        "gates are checked as for a trusted hub"
    );
    rt.block_on(attached.dispose());

    let disabled = graphmind::init(
        graphmind::Config::new("bench")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!disabled.is_enabled());
    g.bench_function("tool, disabled", |b| {
        b.iter(|| ready(gated_off(black_box(1), black_box(2))));
    });
    g.bench_function("plain async fn, out of line", |b| {
        b.iter(|| plain_out_of_line(black_box(1), black_box(2)));
    });
    g.bench_function("tool, disabled, out of line", |b| {
        b.iter(|| gated_out_of_line(black_box(1), black_box(2)));
    });

    // Reference: one monotonic clock read (a detached call takes two, one per event).
    g.bench_function("Instant::now (reference)", |b| {
        b.iter(std::time::Instant::now);
    });

    tracing::dispatcher::with_default(&dispatch, || {
        g.bench_function("tracing::instrument + fmt to sink", |b| {
            b.iter(|| ready(traced(black_box(1), black_box(2))));
        });
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
