//! The one support module of the hub's integration tests (`mod support;` in each test file):
//!
//! - [`hub`]: start the real `graphmind serve` binary with a private home (port 0, or a fixed
//!   port so a restarted hub is found again) and talk HTTP to it over a raw socket;
//! - [`app`]: play an app or a viewer over WebSocket, and open a held gate in one call;
//! - [`cli`]: run the control commands of the real binary with a time limit;
//! - [`rust_client`]: point the real Rust client at a hub, and record what it sent.
//!
//! Each test file is a crate of its own and uses only part of this, hence `dead_code`.
#![allow(dead_code)]

pub mod app;
pub mod cli;
pub mod hub;
pub mod rust_client;

// One flat namespace for the test files (`use support::*;`); a file that needs no part of one
// of them must not warn.
#[allow(unused_imports)]
pub use {app::*, cli::*, hub::*, rust_client::*};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A private temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!(
            "gm-{tag}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `f` until it returns `Some`, for at most `secs` seconds.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `f` off the runtime's worker threads until it returns `Some`, for at most `secs`.
pub async fn wait_async<T: Send + 'static>(
    secs: u64,
    what: &'static str,
    f: impl FnMut() -> Option<T> + Send + 'static,
) -> T {
    tokio::task::spawn_blocking(move || wait_for(secs, what, f))
        .await
        .expect("join")
}

/// A fresh runtime: two worker threads, IO and time.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs an async test body on a fresh runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The first line `child` prints on its (piped) stdout, as JSON, within 20 s; `what` names
/// the command in the error. On failure the child is killed.
pub fn first_json_line(
    child: &mut std::process::Child,
    what: &str,
) -> Result<serde_json::Value, String> {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    serde_json::from_str(line.trim()).map_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
        format!("{what} printed no JSON line in 20 s: {line:?}")
    })
}

/// The `runId`s of a list of RunSummaries (the hub's `runs` arrays), in order.
pub fn run_ids<'a>(runs: impl IntoIterator<Item = &'a serde_json::Value>) -> Vec<String> {
    runs.into_iter()
        .map(|r| r["runId"].as_str().expect("runId").to_owned())
        .collect()
}

/// The binary under test with `GRAPHMIND_HOME=home` and no stdin.
pub fn graphmind_in(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_graphmind"));
    cmd.env("GRAPHMIND_HOME", home).stdin(Stdio::null());
    cmd
}
