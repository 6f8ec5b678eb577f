//! A short program that never calls `dispose` (`examples/no_dispose.rs`: `let _gm =
//! graphmind::init(…)`, twenty tool calls in a run, the guard dropped at the end of `main`
//! inside the tokio runtime) has its whole run stored by the real hub, every time, on a
//! multi-threaded and on a single-threaded runtime, and exits promptly without a warning. So
//! does one that never drops the guard: `std::process::exit` on the main thread, the guard
//! leaked with `mem::forget`, or `graphmind::shutdown()` before `exit` on another thread.

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{hub, run_named, wait_for};

/// `target/<profile>/examples/no_dispose`, built once per test binary (a no-op when fresh).
fn example_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let profile_dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/<profile>");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let status = Command::new(cargo)
                .args([
                    "build",
                    "-q",
                    "-p",
                    "graphmind-examples",
                    "--example",
                    "no_dispose",
                ])
                .status()
                .expect("cargo build the example");
            assert!(status.success(), "building the example failed");
            profile_dir
                .join("examples")
                .join(format!("no_dispose{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

/// Runs the example against the hub on `port` whose run file is in `home` (so the app can
/// check the hub's proof); its (stdout, stderr, wall time).
fn run_example(port: u16, home: &std::path::Path, flags: &[&str]) -> (String, String, Duration) {
    // Built (on first use) before the clock starts: the bound is on the program, not on cargo.
    let exe = example_binary();
    let started = Instant::now();
    let out = Command::new(exe)
        .args(flags)
        .env("GRAPHMIND_URL", format!("ws://127.0.0.1:{port}/ingest"))
        .env("GRAPHMIND_HOME", home)
        .env_remove("GRAPHMIND_DISABLED")
        .env_remove("GRAPHMIND_ENV")
        .stdin(Stdio::null())
        .output()
        .expect("ran the example");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{out:?}");
    (stdout, stderr, took)
}

#[test]
fn a_program_that_never_calls_dispose_has_its_whole_run_stored() {
    whole_runs_stored(&[&[], &[], &[], &["--current-thread"]]);
}

/// Issue 35 item 6: a run was lost silently (0 runs stored, nothing printed) when the guard
/// was never dropped.
#[test]
fn a_program_that_exits_or_forgets_the_guard_still_has_its_whole_run_stored() {
    whole_runs_stored(&[
        &["--exit"],
        &["--exit", "--current-thread"],
        &["--forget"],
        &["--exit-from-thread"],
    ]);
}

fn whole_runs_stored(cases: &[&[&str]]) {
    let h = hub(|_| {});
    let mut seen: Vec<String> = Vec::new();
    for &flags in cases {
        let (stdout, stderr, took) = run_example(h.port, &h.home, flags);
        assert!(stdout.contains("total: 210"), "{stdout}");
        assert!(
            !stderr.contains("[graphmind]"),
            "a delivered run warns about nothing: {stderr}"
        );
        assert!(
            took < Duration::from_secs(15),
            "the guard closes within a bounded time: {took:?}"
        );
        // The program has exited: whatever it sent is all the hub will ever get.
        let run = wait_for(10, "the program's run listed as ok", || {
            h.runs()
                .into_iter()
                .filter(|r| r["name"] == "twenty-calls")
                .find(|r| !seen.contains(&id_of(r)) && r["status"] == "ok")
        });
        let id = id_of(&run);
        seen.push(id.clone());
        let events = wait_for(10, "run.finished stored", || {
            let ev = h.events(&id);
            ev.last()
                .is_some_and(|e| e["type"] == "run.finished")
                .then_some(ev)
        });
        let tool_finished = events
            .iter()
            .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "tool:add")
            .count();
        assert_eq!(
            tool_finished, 20,
            "every call stored ({flags:?}): {events:?}"
        );
        assert_eq!(events[0]["type"], "run.started", "{events:?}");
        let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] + 1 == w[1]),
            "no gap in the stored seqs: {seqs:?}"
        );
    }
    assert!(run_named(&h.runs(), "twenty-calls").is_some());
}

fn id_of(run: &Value) -> String {
    run["runId"]
        .as_str()
        .or_else(|| run["id"].as_str())
        .expect("a run id")
        .to_owned()
}
