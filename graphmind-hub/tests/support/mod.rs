//! The support module of the hub's integration tests (`mod support;` in each test file; the
//! binary's tests in `graphmind-cli/tests` include it and add their own parts):
//!
//! - [`hub`]: start the hub in-process through `graphmind_hub::start` with a private home
//!   (port 0, or a fixed port so a restarted hub is found again), timings set in its
//!   `HubConfig`, and talk HTTP to it over a raw socket;
//! - [`app`]: play an app or a viewer over WebSocket, and open a held gate in one call;
//! - [`rust_client`]: point the real Rust client at a hub, and record what it sent.
//!
//! Each test file is a crate of its own and uses only part of this, hence `dead_code`.
#![allow(dead_code)]

pub mod app;
pub mod hub;
pub mod rust_client;

// One flat namespace for the test files (`use support::*;`); a file that needs no part of one
// of them must not warn.
#[allow(unused_imports)]
pub use {app::*, hub::*, rust_client::*};

use std::path::PathBuf;
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

/// The `runId`s of a list of RunSummaries (the hub's `runs` arrays), in order.
pub fn run_ids<'a>(runs: impl IntoIterator<Item = &'a serde_json::Value>) -> Vec<String> {
    runs.into_iter()
        .map(|r| r["runId"].as_str().expect("runId").to_owned())
        .collect()
}
