//! The session API with feature `enabled` off: the same types and functions, doing nothing.

use std::time::Duration;

use crate::config::Config;

/// A snapshot of a session's counters, from [`Session::stats`]. With feature `enabled` off
/// every field is zero or false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Whether the session is enabled.
    pub enabled: bool,
    /// Whether a debugger is attached right now.
    pub attached: bool,
    /// Events held in the replay ring.
    pub buffered: usize,
    /// Events dropped from the ring so far.
    pub dropped: u64,
    /// Events recorded so far (each is stored by the hub, or lost and announced).
    pub recorded: u64,
    /// Events evicted from the ring before the hub confirmed them (announced to the hub as
    /// lost seqs; see `docs/PROTOCOL.md`, `hub.ack`).
    pub lost: u64,
    /// Gates held right now.
    pub held_gates: usize,
    /// The last seq handed out, if any.
    pub last_seq: Option<u64>,
    /// Whether the attached debugger may control the app (it proved itself, or is trusted
    /// explicitly; see [`Config::trust_hub`](crate::Config::trust_hub)). `attached` and not
    /// `trusted` means the app only reports to it.
    pub trusted: bool,
    /// Control frames (`exec.resume`, `breakpoint.*`, `mode.set`) ignored so far because
    /// they came from a debugger that was not trusted.
    pub ignored_controls: u64,
}

/// A session that never connects: feature `enabled` is off.
#[derive(Clone, Debug)]
pub struct Session {
    config: std::sync::Arc<Config>,
}

impl Session {
    /// A session that does nothing.
    #[must_use]
    pub fn new(config: Config) -> Self {
        Self {
            config: std::sync::Arc::new(config),
        }
    }

    /// Always `false`: nothing can attach.
    pub async fn ready(&self, timeout: Duration) -> bool {
        let _ = timeout;
        false
    }

    /// All zero.
    #[must_use]
    pub fn stats(&self) -> Stats {
        Stats::default()
    }

    /// Always `false`.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        false
    }

    /// Always `false`.
    #[must_use]
    pub fn is_attached(&self) -> bool {
        false
    }

    /// The config this session was built from.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The endpoint a session would dial.
    #[must_use]
    pub fn url(&self) -> String {
        self.config.resolved_url()
    }

    /// Always empty.
    #[must_use]
    pub fn breakpoints(&self) -> Vec<graphmind_protocol::BreakpointMatcher> {
        Vec::new()
    }

    /// Always `run`.
    #[must_use]
    pub fn mode(&self) -> graphmind_protocol::Mode {
        graphmind_protocol::Mode::Run
    }

    /// Records nothing; always `None`.
    pub fn emit(&self, run_id: &str, message: graphmind_protocol::Message) -> Option<u64> {
        let _ = (run_id, message);
        None
    }

    /// Does nothing.
    pub async fn dispose(&self) {}
}

/// What [`init`] returns; with feature `enabled` off dropping it does nothing.
#[must_use = "bind it, `let _gm = graphmind::init(…);`"]
#[derive(Debug)]
pub struct InitGuard {
    session: Session,
}

impl InitGuard {
    /// The guarded session (also reachable through `Deref`).
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }
}

impl std::ops::Deref for InitGuard {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

/// Builds a no-op session.
pub fn init(config: Config) -> InitGuard {
    InitGuard {
        session: Session::new(config),
    }
}

/// A no-op session.
#[must_use]
pub fn session() -> Session {
    Session::new(Config::new("rust-app"))
}

/// Does nothing: there is no session to close.
pub fn shutdown() {}
