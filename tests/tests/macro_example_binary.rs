//! The example binary as a user runs it: detached it is an ordinary program (exit 0, the
//! answer printed, no long wait); with a debugger at `GRAPHMIND_URL` it waits for attachment
//! so that its planted error holds at the first run's error gate, and it exits 0 when the
//! debugger aborts the run or goes away.

mod macro_support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, frame};
use macro_support::{SECOND, pause_id, paused};
use serde_json::json;

/// `target/<profile>/examples/support_agent`, (re)built once per test binary so a stale
/// build never answers for the current source (a no-op when it is fresh).
fn example_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_example).clone()
}

fn build_example() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let binary = profile_dir
        .join("examples")
        .join(format!("support_agent{}", std::env::consts::EXE_SUFFIX));
    {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = std::process::Command::new(cargo)
            .args([
                "build",
                "-q",
                "-p",
                "graphmind-examples",
                "--example",
                "support_agent",
            ])
            .status()
            .expect("cargo build the example");
        assert!(status.success(), "building the example failed");
    }
    binary
}

fn command(url: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(example_binary());
    cmd.env("GRAPHMIND_URL", url)
        .env_remove("GRAPHMIND_DISABLED")
        .env_remove("GRAPHMIND_ENV")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detached_it_answers_and_exits_zero_without_waiting() {
    // A port that refuses connections while held: nothing listens there.
    let refusing = graphmind_tests::RefusingPort::bind();
    let mut cmd = command(&format!("ws://127.0.0.1:{}/ingest", refusing.port));
    let started = Instant::now();
    let out = tokio::time::timeout(20 * SECOND, cmd.output())
        .await
        .expect("finished")
        .expect("ran");
    let took = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("agent: I'm sorry your parcel went missing"),
        "{stdout}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // GRAPHMIND_URL names a port nothing listens on: said once, not silent.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches(&format!(
                "no debugger answered at ws://127.0.0.1:{}/ingest",
                refusing.port
            ))
            .count(),
        1,
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_debugger_it_holds_from_the_first_gate_and_exits_zero_on_abort_and_on_death() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({})]);
    // Abort at the very first gate: the model step's before gate.
    let mut child = command(&hub.url())
        .env("GRAPHMIND_HOME", hub.home())
        .spawn()
        .expect("spawned");
    let first = paused(&hub, 1).await;
    assert_eq!(
        (
            first.payload()["nodeId"].as_str(),
            first.payload()["point"].as_str()
        ),
        (Some("llm:step"), Some("before"))
    );
    assert!(hub.resume(first.run_id(), &pause_id(&first), "abort"));
    let status = tokio::time::timeout(10 * SECOND, child.wait())
        .await
        .expect("exited")
        .expect("status");
    assert!(status.success(), "exit 0 after an abort: {status:?}");
    // The child flushed it before exiting; the fake debugger may still be reading it.
    hub.wait_match(&frame("run.finished").with("status", "aborted"), 5 * SECOND)
        .await;

    // The debugger dies while the first gate is held: the agent finishes on its own.
    let child = command(&hub.url())
        .env("GRAPHMIND_HOME", hub.home())
        .spawn()
        .expect("spawned");
    paused(&hub, 2).await;
    hub.kill();
    let out = tokio::time::timeout(10 * SECOND, child.wait_with_output())
        .await
        .expect("exited")
        .expect("output");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("agent: "),
        "{out:?}"
    );
}
