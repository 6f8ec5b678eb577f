//! The control commands (`runs`, `record`, `pauses`, `wait`, `resume`, `break`, `mode`): they
//! talk to a running `graphmind serve` over its HTTP API (`docs/http-api.md`).
//!
//! Exit codes: 0 ok, 1 usage, 2 timeout, 3 unreachable, 4 gone, 5 unauthorized, 6 refused,
//! 7 taken.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Which hub to talk to.
#[derive(Args, Debug, Clone)]
pub struct HubArgs {
    /// Port of the running `graphmind serve`.
    #[arg(long, default_value_t = 4747)]
    pub port: u16,
}

/// The control subcommands.
#[derive(Subcommand, Debug)]
pub enum ControlCommand {
    /// List runs, newest first.
    Runs {
        #[command(flatten)]
        hub: HubArgs,
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a run's stored envelopes as NDJSON.
    Record {
        #[command(flatten)]
        hub: HubArgs,
        /// The run.
        run_id: String,
        /// Output file (default stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List open pauses.
    Pauses {
        #[command(flatten)]
        hub: HubArgs,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Block until a pause opens and show it.
    Wait {
        #[command(flatten)]
        hub: HubArgs,
        /// Give up after this many seconds (exit 2).
        #[arg(long)]
        timeout: Option<f64>,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Release a held gate.
    Resume {
        #[command(flatten)]
        hub: HubArgs,
        /// The pause.
        pause_id: String,
        /// Its run.
        #[arg(long = "run")]
        run: String,
        /// continue, retry, inject or abort.
        #[arg(long)]
        action: String,
        /// Injected output: JSON text or @file.
        #[arg(long)]
        output: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Set, clear or list breakpoints.
    Break {
        #[command(flatten)]
        hub: HubArgs,
        /// set, clear or list.
        op: String,
        /// Node kind.
        #[arg(long)]
        kind: Option<String>,
        /// Node name.
        #[arg(long)]
        name: Option<String>,
        /// before, after or error.
        #[arg(long)]
        point: Option<String>,
    },
    /// Switch the debugger mode (run or step).
    Mode {
        #[command(flatten)]
        hub: HubArgs,
        /// run or step.
        mode: String,
    },
}

/// Runs a control command.
pub fn main(cmd: ControlCommand) -> ExitCode {
    let _ = cmd;
    eprintln!("graphmind: this command is not implemented yet");
    ExitCode::from(1)
}
