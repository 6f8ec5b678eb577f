//! The control commands of the real `graphmind` binary against a hub, with a time limit, and
//! the one-line error rule.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What a command did.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Out {
    /// Asserts the exit code; on failure shows both streams.
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        if code == 0 {
            assert!(
                self.stderr.is_empty() || !self.stderr.contains("error"),
                "{}",
                self.stderr
            );
        } else {
            self.one_line_error();
        }
        self
    }

    /// The error is exactly one `graphmind: …` line on stderr.
    pub fn one_line_error(&self) -> &str {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one error line, got: {:?}", self.stderr);
        assert!(lines[0].starts_with("graphmind: "), "{}", lines[0]);
        lines[0]
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", self.stdout))
    }
}

/// Runs `graphmind <args>` with `GRAPHMIND_HOME=home`; killed after 30 s.
pub fn gm(home: &Path, args: &[&str]) -> Out {
    gm_env(home, &[], args)
}

/// [`gm`] with extra environment variables.
pub fn gm_env(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Out {
    let start = Instant::now();
    let mut child = super::graphmind_in(home)
        .envs(env.iter().copied())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn graphmind");
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = start + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("graphmind {args:?} did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: t_out.join().expect("stdout thread"),
        stderr: t_err.join().expect("stderr thread"),
        took: start.elapsed(),
    }
}

/// `gm` off the async runtime.
pub async fn gm_async(home: std::path::PathBuf, args: Vec<String>) -> Out {
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        gm(&home, &a)
    })
    .await
    .expect("join")
}

/// Owned argument list.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// `graphmind <args> --port <port of serve>` with the hub's home, off the async runtime.
pub async fn gm_on(serve: &super::HubAccess, a: &[&str]) -> Out {
    let mut v = args(a);
    v.extend(args(&["--port", &serve.port.to_string()]));
    gm_async(serve.home.clone(), v).await
}

/// `graphmind wait --json --timeout 20` against the hub: the held gate's PauseInfo.
pub async fn gm_wait_pause(serve: &super::HubAccess) -> Value {
    gm_on(serve, &["wait", "--json", "--timeout", "20"])
        .await
        .expect(0)
        .json()
}

/// `graphmind wait --timeout 5 --port <port>` in `home`, off the async runtime: exits 0 once
/// a pause is open.
pub async fn gm_wait_open(home: &Path, port: &str) {
    gm_async(
        home.to_path_buf(),
        args(&["wait", "--timeout", "5", "--port", port]),
    )
    .await
    .expect(0);
}

/// The arguments of `graphmind resume <pause> --run <run> --action <action> --port <port>`,
/// then `extra`.
pub fn resume_args(
    pause: &str,
    run: &str,
    action: &str,
    port: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut a = args(&[
        "resume", pause, "--run", run, "--action", action, "--port", port,
    ]);
    a.extend(args(extra));
    a
}

/// `graphmind resume <pauseId> --run <runId> --action <action> <extra>` of the PauseInfo `p`
/// (as `graphmind wait --json` prints it) against the hub.
pub async fn gm_resume_paused(
    serve: &super::HubAccess,
    p: &Value,
    action: &str,
    extra: &[&str],
) -> Out {
    let mut a = vec![
        "resume",
        p["pauseId"].as_str().expect("pauseId"),
        "--run",
        p["runId"].as_str().expect("runId"),
        "--action",
        action,
    ];
    a.extend_from_slice(extra);
    gm_on(serve, &a).await
}
