//! The signals that stop a long-running command cleanly: SIGINT (Ctrl-C), SIGTERM (`kill`,
//! service managers) and SIGHUP (the terminal went away). A command that owns a hub must
//! shut it down on any of them, so its run file does not outlive it; `graphmind replay`
//! removes the recording it handed its app.

#[cfg(unix)]
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Which stop signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    Hangup,
}

// `graphmind demo` and `graphmind replay` report the signal they stopped on.
impl Stop {
    /// The shell's exit status for a process ended by this signal (128 + its number).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
            Self::Hangup => 129,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
        }
    }
}

/// The stop signals, listened to from [`StopSignals::install`] on: a signal that arrives
/// before [`StopSignals::recv`] is awaited is kept, not lost, and no longer ends the process
/// uncleanly.
pub struct StopSignals {
    #[cfg(unix)]
    int: Option<Signal>,
    #[cfg(unix)]
    term: Option<Signal>,
    #[cfg(unix)]
    hup: Option<Signal>,
}

impl StopSignals {
    /// Starts listening (inside a tokio runtime). A signal whose handler cannot be installed
    /// keeps its default action. Elsewhere than on Unix, only Ctrl-C is listened to.
    pub fn install() -> Self {
        Self {
            #[cfg(unix)]
            int: signal(SignalKind::interrupt()).ok(),
            #[cfg(unix)]
            term: signal(SignalKind::terminate()).ok(),
            #[cfg(unix)]
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// Waits for Ctrl-C (where there are no Unix signals).
    #[cfg(not(unix))]
    pub async fn recv(&mut self) -> Stop {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        Stop::Interrupt
    }

    /// Waits for the next stop signal (forever when no handler could be installed).
    #[cfg(unix)]
    pub async fn recv(&mut self) -> Stop {
        async fn next(s: Option<&mut Signal>) {
            match s {
                Some(s) => {
                    if s.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = next(self.int.as_mut()) => Stop::Interrupt,
            () = next(self.term.as_mut()) => Stop::Terminate,
            () = next(self.hup.as_mut()) => Stop::Hangup,
        }
    }
}
