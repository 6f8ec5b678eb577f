//! The real `graphmind serve` binary in a private home, for the tests of the binary itself:
//! its output and exit codes, signals, a hub killed hard, the memory of the hub process.
//! Anything else starts the hub in-process (`support::hub`).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{HubAccess, TempDir, free_port, register};

/// A running `graphmind serve` process (for tests of the binary itself: its output, exit
/// codes and signals, a hub killed hard, the memory of the hub process).
pub struct SpawnedHub {
    pub child: Child,
    /// Its `--json` line.
    pub line: Value,
    access: HubAccess,
}

impl SpawnedHub {
    /// Starts `graphmind serve --port 0 --json --no-open` with `GRAPHMIND_HOME=home` and the
    /// extra flags.
    pub fn start_in(home: &Path, extra: &[&str]) -> Self {
        let mut a: Vec<OsString> = vec!["--port".into(), "0".into()];
        a.extend(extra.iter().map(OsString::from));
        Self::spawn(home, a).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `graphmind serve --json --no-open <flags>` with `GRAPHMIND_HOME=home`: its `--json`
    /// line read within 20 s, its agent token from the run file, its viewer token from the
    /// viewer URL. `Err` when it printed no JSON line (killed then). A flag of the form
    /// `GRAPHMIND_…=value` is set in its environment instead (the timings a test shortens).
    fn spawn(home: &Path, flags: Vec<OsString>) -> Result<Self, String> {
        let (env, flags): (Vec<OsString>, Vec<OsString>) = flags
            .into_iter()
            .partition(|f| f.to_string_lossy().starts_with("GRAPHMIND_"));
        let mut cmd = super::graphmind_in(home);
        for e in &env {
            let e = e.to_string_lossy();
            let (k, v) = e.split_once('=').expect("GRAPHMIND_X=value");
            cmd.env(k, v);
        }
        let mut child = cmd
            .args(["serve", "--json", "--no-open"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn graphmind serve: {e}"))?;
        let line = super::first_json_line(&mut child, "serve")?;
        let port = u16::try_from(line["port"].as_u64().expect("port")).expect("port fits");
        super::rust_client::hub_started(port, home);
        let run_file = home.join("run").join(format!("serve-{port}.json"));
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(&run_file).expect("run file"))
                .expect("run file is JSON");
        let agent_token = run["agentToken"].as_str().expect("agentToken").to_owned();
        assert_eq!(
            run["token"].as_str(),
            Some(agent_token.as_str()),
            "the run file holds the token under both keys"
        );
        let viewer_token = run["viewerToken"]
            .as_str()
            .expect("viewerToken in the run file")
            .to_owned();
        register(port, &agent_token, &viewer_token);
        Ok(Self {
            child,
            line,
            access: HubAccess {
                port,
                home: home.to_path_buf(),
                agent_token,
                viewer_token,
            },
        })
    }

    /// Sends SIGINT and waits for the exit (at most 10 s).
    pub fn interrupt(&mut self) -> std::process::ExitStatus {
        self.stop_with("INT")
    }

    /// Sends SIGTERM (a clean stop, as `kill` does) and waits for the exit (at most 10 s).
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.stop_with("TERM")
    }

    /// Sends the signal `sig` (`INT`, `TERM`, …) and waits for the exit (at most 10 s).
    fn stop_with(&mut self, sig: &str) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "serve did not exit on SIG{sig}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl std::ops::Deref for SpawnedHub {
    type Target = HubAccess;
    fn deref(&self) -> &HubAccess {
        &self.access
    }
}

impl Drop for SpawnedHub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `graphmind serve --json --no-open --port <port> --db <db> <extra>` with
/// `GRAPHMIND_HOME=home` (a fixed port, so a restarted hub is found by the same client).
pub fn serve_on(home: &Path, port: u16, db: &Path, extra: &[&str]) -> Result<SpawnedHub, String> {
    let mut a: Vec<OsString> = vec![
        "--port".into(),
        port.to_string().into(),
        "--db".into(),
        db.into(),
    ];
    a.extend(extra.iter().map(OsString::from));
    let s = SpawnedHub::spawn(home, a).map_err(|e| format!("serve on port {port}: {e}"))?;
    assert_eq!(s.line["port"].as_u64(), Some(u64::from(port)));
    Ok(s)
}

/// A hub restarted on `port` with the same home and database ([`serve_on`]), started off the
/// async runtime.
pub async fn restart_on(home: &Path, port: u16, db: &Path) -> SpawnedHub {
    let (home, db) = (home.to_path_buf(), db.to_path_buf());
    tokio::task::spawn_blocking(move || {
        serve_on(&home, port, &db, &[]).expect("restart on the same port")
    })
    .await
    .expect("join")
}

/// A hub on a port picked here (retried if another process takes it first).
pub fn serve_on_free_port(home: &Path, db: &Path, extra: &[&str]) -> SpawnedHub {
    let mut last = String::new();
    for _ in 0..5 {
        match serve_on(home, free_port(), db, extra) {
            Ok(s) => return s,
            Err(e) => last = e,
        }
    }
    panic!("no free port for the hub: {last}");
}

/// Kills the hub at once (SIGKILL: no close frame, no cleanup) and reaps it.
pub fn kill_hard(serve: &mut SpawnedHub) {
    let _ = serve.child.kill();
    let _ = serve.child.wait();
}

/// A spawned hub in its own temporary home.
pub struct SpawnedTestHub {
    pub serve: SpawnedHub,
    pub dir: TempDir,
}

impl std::ops::Deref for SpawnedTestHub {
    type Target = SpawnedHub;
    fn deref(&self) -> &SpawnedHub {
        &self.serve
    }
}

impl std::ops::DerefMut for SpawnedTestHub {
    fn deref_mut(&mut self) -> &mut SpawnedHub {
        &mut self.serve
    }
}

/// `graphmind serve` with `extra` flags in its own temporary home.
pub fn spawned_hub(extra: &[&str]) -> SpawnedTestHub {
    let dir = TempDir::new("hub");
    let serve = SpawnedHub::start_in(&dir.0, extra);
    SpawnedTestHub { serve, dir }
}
