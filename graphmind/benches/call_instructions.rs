//! Instructions per call of `#[graphmind::tool]` detached (outside and inside a run scope)
//! and of `#[tracing::instrument]` with a `fmt` subscriber writing to a sink, counted by
//! valgrind's callgrind on the calling thread, and the ratio detached / `tracing` of the same
//! run. Unlike a timing, the count does not move with the machine's load: a change to the
//! detached path shows up as its exact instruction cost, on a shared 2-core machine too.
//! (Instructions are not time: a `memcpy` call, a cache miss or an atomic costs more than its
//! count says, so a speed claim still needs the `overhead` bench's timings.)
//!
//! Each case runs in a child process of this binary under `valgrind --tool=callgrind`: 20,000
//! warm-up calls, then `GM_ICOUNT_CALLS` (50,000) measured ones. Callgrind counts only inside
//! the measured loop, so the session's start and the clock's calibration (whose length varies
//! from process to process) are left out, and the figure is the same in every run of one
//! binary. Each case runs `GM_ICOUNT_REPS` (3) times; the median is printed beside every run,
//! so a variation would show.
//!
//! Run: `cargo bench -p graphmind --bench call_instructions` (needs `valgrind` on `PATH`;
//! Debian: `apt-get install valgrind`; without it, it says so and exits). Without `--bench`,
//! as `cargo test --all-targets` runs it, it runs each case 1,000 times in-process and checks
//! what they return and record.

mod support;

use std::hint::black_box;
use std::process::Command;

use support::{detached_session, ready, sink_dispatch, traced};

#[graphmind::tool]
async fn gated(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

#[graphmind::tool]
async fn gated_in_run(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

const WARM_UP: u64 = 20_000;
const CASES: [&str; 3] = ["detached", "detached in a run", "tracing"];

// The loops. Each runs once as the warm-up and once measured, in a function named
// `measured_*`: callgrind counts only inside those (see `count`), so the session's start and
// the clock's calibration (the first call's, of a length that varies) are left out.

#[inline(always)]
fn detached_calls(calls: u64) -> u64 {
    (0..calls).fold(0, |sum, _| {
        sum.wrapping_add(ready(gated(black_box(1), black_box(2))))
    })
}

#[inline(always)]
async fn in_run_calls(calls: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..calls {
        sum = sum.wrapping_add(gated_in_run(black_box(1), black_box(2)).await);
    }
    sum
}

#[inline(always)]
fn tracing_calls(calls: u64) -> u64 {
    (0..calls).fold(0, |sum, _| {
        sum.wrapping_add(ready(traced(black_box(1), black_box(2))))
    })
}

#[inline(never)]
fn measured_detached(calls: u64) -> u64 {
    detached_calls(calls)
}

/// `calls` calls in a run of their own (its start and end, a few events, are counted too).
#[inline(always)]
fn run_of_calls(calls: u64) -> u64 {
    ready(graphmind::run("bench", in_run_calls(calls))).expect("not aborted")
}

#[inline(never)]
fn measured_in_run(calls: u64) -> u64 {
    run_of_calls(calls)
}

#[inline(never)]
fn measured_tracing(calls: u64) -> u64 {
    tracing_calls(calls)
}

/// Runs `case` for `calls` calls (after the warm-up, which runs the same code) and returns
/// the sum of the results.
fn run_case(case: &str, calls: u64) -> u64 {
    match case {
        "tracing" => tracing::dispatcher::with_default(&sink_dispatch(), || {
            tracing_calls(WARM_UP).wrapping_add(measured_tracing(calls))
        }),
        "detached" | "detached in a run" => {
            let session = detached_session("bench");
            let sum = if case == "detached" {
                detached_calls(WARM_UP).wrapping_add(measured_detached(calls))
            } else {
                run_of_calls(WARM_UP).wrapping_add(measured_in_run(calls))
            };
            assert!(
                session.stats().buffered > 0,
                "the calls' events reach the replay ring"
            );
            sum
        }
        other => panic!("unknown case {other:?}; the cases: {CASES:?}"),
    }
}

/// The calling thread's instructions inside the measured loops when this binary runs
/// `case` for `calls` calls under callgrind.
fn count(case: &str, calls: u64, dir: &std::path::Path) -> u64 {
    let out = dir.join(format!("cg.{}.{calls}", case.replace(' ', "_")));
    let exe = std::env::current_exe().expect("this binary");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg("--collect-atstart=no")
        .arg("--toggle-collect=*measured_*")
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
    let reps: usize = std::env::var("GM_ICOUNT_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut per_call = Vec::new();
    for case in CASES {
        let mut runs: Vec<f64> = (0..reps)
            .map(|_| {
                #[allow(clippy::cast_precision_loss)]
                let n = count(case, calls, &dir) as f64 / calls as f64;
                n
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        let n = runs[runs.len() / 2];
        let all: Vec<String> = runs.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "{case}: {n:.0} instructions per call (median of {reps} runs: {}; calling thread; {calls} calls)",
            all.join(" ")
        );
        per_call.push(n);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "ratio detached / tracing::instrument+fmt: {:.3} (in a run: {:.3})",
        per_call[0] / per_call[2],
        per_call[1] / per_call[2]
    );
}
