//! The support module of the binary's integration tests (`mod support;` in each test file):
//! the hub tests' support (`graphmind-hub/tests/support`: in-process hubs, apps, viewers, the
//! Rust client), plus
//!
//! - [`cli`]: run the control commands of the real binary with a time limit;
//! - [`spawned`]: start the real `graphmind serve` binary (its output, exit codes, signals,
//!   a hub killed hard).
#![allow(dead_code)]

#[path = "../../../graphmind-hub/tests/support/mod.rs"]
mod shared;

pub mod cli;
pub mod spawned;

#[allow(unused_imports)]
pub use {cli::*, shared::*, spawned::*};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The first line `child` prints on its (piped) stdout within 20 s (empty if none).
pub fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default()
}

/// The first line `child` prints on its (piped) stdout, as JSON, within 20 s; `what` names
/// the command in the error. On failure the child is killed.
pub fn first_json_line(
    child: &mut std::process::Child,
    what: &str,
) -> Result<serde_json::Value, String> {
    let line = first_line(child);
    serde_json::from_str(line.trim()).map_err(|_| {
        let _ = child.kill();
        let _ = child.wait();
        format!("{what} printed no JSON line in 20 s: {line:?}")
    })
}

/// The binary under test with `GRAPHMIND_HOME=home` and no stdin.
pub fn graphmind_in(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_graphmind"));
    cmd.env("GRAPHMIND_HOME", home).stdin(Stdio::null());
    cmd
}
