//! Where graphmind keeps its files: `$GRAPHMIND_HOME` (default `~/.graphmind`), the database
//! and the run files of running hubs.

use std::path::PathBuf;

/// `$GRAPHMIND_HOME`, or `~/.graphmind`.
pub fn home() -> PathBuf {
    match std::env::var_os("GRAPHMIND_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => {
            let base = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map_or_else(|| PathBuf::from("."), PathBuf::from);
            base.join(".graphmind")
        }
    }
}

/// The default database path.
pub fn default_db() -> PathBuf {
    home().join("graphmind.db")
}

/// The directory of run files.
pub fn run_dir() -> PathBuf {
    home().join("run")
}

/// The run file of a hub listening on `port`.
pub fn run_file(port: u16) -> PathBuf {
    run_dir().join(format!("serve-{port}.json"))
}
