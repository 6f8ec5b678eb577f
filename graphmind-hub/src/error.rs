//! Why a hub did not start: [`HubError`].

use std::path::PathBuf;

/// Why [`start`](crate::start) failed. The `Display` text is the line `graphmind serve`
/// prints after `graphmind: `.
#[derive(Debug)]
pub enum HubError {
    /// The port is taken (another hub, or another program).
    PortInUse {
        /// The port asked for.
        port: u16,
    },
    /// Listening failed for another reason.
    Listen {
        /// The port asked for.
        port: u16,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The database could not be opened, created or read.
    Storage(String),
    /// The run-file directory could not be created.
    RunDir {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The run file could not be written.
    RunFile {
        /// The directory or file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// No system randomness for the tokens.
    Tokens(String),
    /// A start task did not complete (the runtime is shutting down).
    Runtime(String),
    /// The breakpoints to start with are over a limit (count or bytes); the text names it.
    Breakpoints(String),
}

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PortInUse { port } => write!(
                f,
                "port {port} is in use (is another graphmind serve running? try --port 0)"
            ),
            Self::Listen { port, source } => {
                write!(f, "cannot listen on 127.0.0.1:{port}: {source}")
            }
            Self::Storage(e) | Self::Tokens(e) | Self::Runtime(e) => f.write_str(e),
            Self::Breakpoints(e) => write!(f, "the breakpoints to start with: {e}"),
            Self::RunDir { path, source } => {
                write!(f, "cannot create {}: {source}", path.display())
            }
            Self::RunFile { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for HubError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Listen { source, .. }
            | Self::RunDir { source, .. }
            | Self::RunFile { source, .. } => Some(source),
            _ => None,
        }
    }
}
