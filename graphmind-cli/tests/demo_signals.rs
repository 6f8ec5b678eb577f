//! `graphmind demo` stopped by SIGTERM or SIGHUP (not only Ctrl-C) shuts its hub down: the run
//! file `$GRAPHMIND_HOME/run/serve-<port>.json` does not outlive it. Before, only SIGINT was
//! handled and `kill <pid>` left a stale run file behind.

mod support;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{TempDir, first_json_line, graphmind_in, http, wait_for};

/// A `graphmind demo --no-open --port 0 --json` whose run is held on its planted error.
struct Demo {
    child: Child,
    run_file: PathBuf,
    _home: TempDir,
}

impl Demo {
    fn held() -> Self {
        let home = TempDir::new("demo-signal");
        let mut child = graphmind_in(&home.0)
            .args(["demo", "--no-open", "--port", "0", "--json"])
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env_remove("GRAPHMIND_URL")
            .env_remove("GRAPHMIND_DISABLED")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn graphmind demo");
        let line = first_json_line(&mut child, "demo").unwrap_or_else(|e| panic!("{e}"));
        let port = u16::try_from(line["port"].as_u64().expect("port")).expect("port fits");
        let run_file = home.0.join("run").join(format!("serve-{port}.json"));
        let demo = Self {
            child,
            run_file,
            _home: home,
        };
        assert!(demo.run_file.exists(), "the demo's hub wrote its run file");
        // The agent holds on its error gate: the demo is in its longest wait.
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&demo.run_file).expect("run file"))
                .expect("run file is JSON");
        let auth = format!("Bearer {}", run["token"].as_str().expect("token"));
        wait_for(20, "the demo run to hold on its error", || {
            let r = http(
                port,
                "GET",
                "/api/pauses",
                &[("Authorization", &auth)],
                None,
            );
            (r.status == 200 && r.json()["pauses"].as_array().is_some_and(|p| !p.is_empty()))
                .then_some(())
        });
        demo
    }

    /// Sends `signal` and waits (at most 10 s) for the exit: (exit code, stderr).
    fn stop_with(&mut self, signal: &str) -> (Option<i32>, String) {
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("demo did not exit within 10 s of SIG{signal}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status.code(), err)
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_clean_stop(signal: &str, code: i32) {
    let mut demo = Demo::held();
    let (status, err) = demo.stop_with(signal);
    // (the home is still there: `demo` owns it)
    assert!(demo.run_file.parent().is_some_and(std::path::Path::is_dir));
    assert!(
        !demo.run_file.exists(),
        "SIG{signal} left the run file {} behind; stderr:\n{err}",
        demo.run_file.display()
    );
    assert_eq!(status, Some(code), "stderr:\n{err}");
    assert!(
        err.contains(&format!("interrupted (SIG{signal})")),
        "stderr:\n{err}"
    );
}

#[test]
fn demo_sigterm_removes_its_run_file() {
    assert_clean_stop("TERM", 143);
}

#[test]
fn demo_sighup_removes_its_run_file() {
    assert_clean_stop("HUP", 129);
}

#[test]
fn demo_sigint_still_removes_its_run_file() {
    assert_clean_stop("INT", 130);
}
