//! Instructions per call of `#[graphmind::tool]` detached (outside and inside a run scope)
//! and of `#[tracing::instrument]` with a `fmt` subscriber writing to a sink, counted by
//! valgrind's callgrind on the calling thread, and the ratio detached / `tracing` of the same
//! run. Unlike a timing, the count does not move with the machine's load: a change to the
//! detached path shows up as its exact instruction cost, on a shared 2-core machine too.
//! (Instructions are not time: a `memcpy` call, a cache miss or an atomic costs more than its
//! count says, so a speed claim still needs the `overhead` bench's timings.)
//!
//! Each case runs in a child process of this binary under `valgrind --tool=callgrind`, once
//! with 20,000 warm-up calls only and once with `GM_ICOUNT_CALLS` (50,000) more; the
//! difference of the main thread's totals, divided by the calls, is the figure (start-up,
//! warm-up and the session's one-off work cancel out).
//!
//! Run: `cargo bench -p graphmind --bench call_instructions` (needs `valgrind` on `PATH`;
//! Debian: `apt-get install valgrind`; without it, it says so and exits). Without `--bench`,
//! as `cargo test --all-targets` runs it, it runs each case 1,000 times in-process and checks
//! what they return and record.

use std::hint::black_box;
use std::pin::pin;
use std::process::Command;
use std::task::{Context, Poll, Waker};

#[graphmind::tool]
async fn gated(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_in_run(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[tracing::instrument]
async fn traced(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

/// Polls a future that completes without waiting (all of these do) to its output.
#[inline(always)]
fn ready<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

const WARM_UP: u64 = 20_000;
const CASES: [&str; 3] = ["detached", "detached in a run", "tracing"];

/// Runs `case` for `calls` calls (after the warm-up) and returns the sum of the results.
fn run_case(case: &str, calls: u64) -> u64 {
    let total = WARM_UP + calls;
    let mut sum = 0u64;
    match case {
        "tracing" => {
            let dispatch = tracing::Dispatch::new(
                tracing_subscriber::fmt()
                    .with_writer(std::io::sink)
                    .finish(),
            );
            tracing::dispatcher::with_default(&dispatch, || {
                for _ in 0..total {
                    sum = sum.wrapping_add(ready(traced(black_box(1), black_box(2))));
                }
            });
        }
        "detached" | "detached in a run" => {
            // Nothing listens on port 9 (discard): the session stays detached.
            let session = graphmind::init(
                graphmind::Config::new("bench")
                    .url("ws://127.0.0.1:9/ingest")
                    .env_vars(std::iter::empty::<(String, String)>()),
            );
            assert!(session.is_enabled());
            if case == "detached" {
                for _ in 0..total {
                    sum = sum.wrapping_add(ready(gated(black_box(1), black_box(2))));
                }
            } else {
                sum = ready(graphmind::run("bench", async move {
                    let mut sum = 0u64;
                    for _ in 0..total {
                        sum = sum.wrapping_add(gated_in_run(black_box(1), black_box(2)).await);
                    }
                    sum
                }))
                .expect("not aborted");
            }
            assert!(
                session.stats().buffered > 0,
                "the calls' events reach the replay ring"
            );
        }
        other => panic!("unknown case {other:?}; the cases: {CASES:?}"),
    }
    sum
}

/// The calling thread's instruction count of this binary running `case` for `calls` calls
/// under callgrind.
fn count(case: &str, calls: u64, dir: &std::path::Path) -> u64 {
    let out = dir.join(format!("cg.{}.{calls}", case.replace(' ', "_")));
    let exe = std::env::current_exe().expect("this binary");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(["--case", case, "--calls", &calls.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("valgrind runs");
    assert!(status.success(), "{case}: valgrind run failed ({status})");
    // Thread 1 is the main thread, which makes every call.
    let file = format!("{}-01", out.display());
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{file}: no summary line"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    if let (Some(case), Some(calls)) = (arg("--case"), arg("--calls")) {
        black_box(run_case(case, calls.parse().expect("--calls N")));
        return;
    }
    if !args.iter().any(|a| a == "--bench") {
        // Smoke test (`cargo test --all-targets`): every case runs and adds up.
        for case in CASES {
            assert_eq!(run_case(case, 1_000), 3 * (WARM_UP + 1_000), "{case}");
        }
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("call_instructions: valgrind is not on PATH (Debian: apt-get install valgrind)");
        return;
    }
    let calls: u64 = std::env::var("GM_ICOUNT_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let dir = std::env::temp_dir().join(format!("gm-icount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut per_call = Vec::new();
    for case in CASES {
        let base = count(case, 0, &dir);
        let with = count(case, calls, &dir);
        #[allow(clippy::cast_precision_loss)]
        let n = with.saturating_sub(base) as f64 / calls as f64;
        println!("{case}: {n:.0} instructions per call (calling thread; {calls} calls)");
        per_call.push(n);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "ratio detached / tracing::instrument+fmt: {:.3} (in a run: {:.3})",
        per_call[0] / per_call[2],
        per_call[1] / per_call[2]
    );
}
