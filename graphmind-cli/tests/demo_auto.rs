//! `graphmind demo --auto`: the bundled agent holds on its planted error, the demo injects the
//! fix through the control API and exits 0 once the run finished ok.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{TempDir, hub};

fn graphmind(home: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(args)
        .env("GRAPHMIND_HOME", home)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("GRAPHMIND_URL")
        .env_remove("GRAPHMIND_DISABLED")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn graphmind")
}

/// Waits for the child within `limit` (killing it after), returning (code, stdout, stderr).
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    let mut err = String::new();
    child.stdout.take().map(|mut s| s.read_to_string(&mut out));
    child.stderr.take().map(|mut s| s.read_to_string(&mut err));
    (status.and_then(|s| s.code()), out, err)
}

#[test]
fn demo_auto_injects_the_fix_and_exits_0_once_the_run_is_ok() {
    let home = TempDir::new("demo-auto");
    let child = graphmind(
        &home.0,
        &["demo", "--auto", "--no-open", "--port", "0", "--json"],
    );
    let (code, out, err) = finish(child, Duration::from_secs(60));
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let line: serde_json::Value =
        serde_json::from_str(out.lines().next().unwrap_or("")).expect("one JSON line first");
    assert!(line["port"].as_u64().unwrap_or(0) > 0);
    assert!(line["viewerUrl"].as_str().unwrap_or("").contains("#token="));
    assert!(
        err.contains("inject at tool:lookup_order (error) -> resumed"),
        "{err}"
    );
    assert!(
        err.contains("reference RF-1042"),
        "the agent finished its answer: {err}"
    );
    assert!(err.contains("finished ok"), "{err}");
}

#[test]
fn demo_auto_on_a_hub_that_may_not_inject_says_how_and_runs_nothing() {
    let h = hub(|_| {});
    let port = h.port.to_string();
    let demo = graphmind(&h.home, &["demo", "--auto", "--no-open", "--port", &port]);
    let (code, out, err) = finish(demo, Duration::from_secs(30));
    drop(h);
    assert_eq!(code, Some(1), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(&format!("already on port {port}")), "{out}");
    assert!(err.contains("--allow-control inject"), "{err}");
    assert!(!out.contains("ticket:"), "the agent did not start: {out}");
}
