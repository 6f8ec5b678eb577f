//! `graphmind serve`: the flags of the hub, mapped onto [`graphmind_hub::HubConfig`], and the
//! command itself (print where it listens, open the viewer, stop on a signal).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use graphmind_hub::{HubConfig, Running};
use graphmind_protocol::{BreakpointMatcher, NodeKind, PausePoint};
use serde_json::json;

use graphmind_connect::paths;

/// What the agent token (run file) may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllowControl {
    /// Nothing: no breakpoints, no mode, no resume (the token still reads).
    Off,
    /// Set breakpoints and the mode; continue, retry, abort and reject held gates.
    Resume,
    /// Also inject results.
    Inject,
    /// Also run held calls with an edited input (`--action continue|retry --input`).
    Edit,
}

impl From<AllowControl> for graphmind_hub::AllowControl {
    fn from(a: AllowControl) -> Self {
        match a {
            AllowControl::Off => Self::Off,
            AllowControl::Resume => Self::Resume,
            AllowControl::Inject => Self::Inject,
            AllowControl::Edit => Self::Edit,
        }
    }
}

/// Flags of `graphmind serve`.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 4747)]
    pub port: u16,
    /// Database file (default $GRAPHMIND_HOME/graphmind.db, GRAPHMIND_HOME defaulting to ~/.graphmind).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Do not open the viewer in a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Pause on errors: on (every error), off, or a node kind (only errors of that kind).
    #[arg(long, default_value = "on", value_name = "on|off|KIND")]
    pub pause_on_error: String,
    /// What the agent token in the run file may do.
    #[arg(long, value_enum, default_value_t = AllowControl::Off)]
    pub allow_control: AllowControl,
    /// Print one JSON line {port,url,pid,version,…} on stdout once listening; logs go to stderr.
    #[arg(long)]
    pub json: bool,
    /// Keep the newest N runs, at start and every hour (runs older than 30 days are dropped
    /// too; a run still running or holding a pause is kept while the hub runs).
    #[arg(long, default_value_t = 200)]
    pub keep: usize,
    /// Keep at most N finished runs in memory (the newest; older ones stay in the database and
    /// are read from it when asked for).
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub memory_runs: usize,
    /// Export every finished run as it finishes (`--otlp`, `--otlp-header`, `--otlp-content`).
    #[command(flatten)]
    pub otlp: crate::export::OtlpArgs,
    /// Do not let held calls run with an edited input: the hub does not announce
    /// `edit-input`, shows no gate as editable and refuses an edited resume itself.
    #[arg(long)]
    pub no_edit_input: bool,
    /// The command that starts the hub, when not `serve` (`demo`): written to the run file,
    /// so control commands name the right command to restart with.
    #[arg(skip)]
    pub started_by: Option<&'static str>,
}

fn initial_breakpoints(flag: &str) -> Result<Vec<BreakpointMatcher>, String> {
    match flag {
        "on" => Ok(vec![BreakpointMatcher::at(PausePoint::Error)]),
        "off" => Ok(Vec::new()),
        kind => match NodeKind::from_str(kind) {
            Some(k) => Ok(vec![BreakpointMatcher {
                kind: Some(k),
                ..BreakpointMatcher::at(PausePoint::Error)
            }]),
            None => Err(format!(
                "--pause-on-error takes on, off or a node kind (agent, llm, tool, chain, \
                 retriever, server, resource, prompt, custom), not {kind:?}"
            )),
        },
    }
}

impl ServeArgs {
    /// The hub's settings: the flags, `$GRAPHMIND_HOME` (created 0700) for the database and
    /// the run files, the `GRAPHMIND_*_MS` environment for the timings (`GRAPHMIND_ABANDON_GRACE_MS`,
    /// `GRAPHMIND_RESUME_WAIT_MS`, `GRAPHMIND_HELLO_TIMEOUT_MS`, `GRAPHMIND_UI_AUTH_TIMEOUT_MS`,
    /// `GRAPHMIND_HEADER_TIMEOUT_MS`, `GRAPHMIND_BODY_TIMEOUT_MS`,
    /// `GRAPHMIND_RETENTION_INTERVAL_MS`: milliseconds).
    pub fn config(&self) -> Result<HubConfig, String> {
        let breakpoints = initial_breakpoints(&self.pause_on_error)?;
        let otlp = self.otlp.config()?;
        let home = paths::home();
        graphmind_hub::files::private_dir(&home)
            .map_err(|e| format!("cannot create {}: {e}", home.display()))?;
        // Timings an operator (or a test of the binary) may change; the defaults otherwise.
        let ms = |env: &str, default: Duration| {
            std::env::var(env)
                .ok()
                .and_then(|v| v.parse().ok())
                .map_or(default, Duration::from_millis)
        };
        let mut c = HubConfig::new(self.db.clone().unwrap_or_else(paths::default_db));
        c.port = self.port;
        c.run_dir = Some(paths::run_dir());
        c.breakpoints = breakpoints;
        c.allow_control = self.allow_control.into();
        c.keep = self.keep;
        c.memory_runs = self.memory_runs;
        c.otlp = otlp;
        c.edit_input = !self.no_edit_input;
        if let Some(command) = self.started_by {
            c.command = command.to_owned();
        }
        c.abandon_grace = ms("GRAPHMIND_ABANDON_GRACE_MS", c.abandon_grace);
        c.resume_wait = ms("GRAPHMIND_RESUME_WAIT_MS", c.resume_wait);
        c.hello_timeout = ms("GRAPHMIND_HELLO_TIMEOUT_MS", c.hello_timeout);
        c.ui_auth_timeout = ms("GRAPHMIND_UI_AUTH_TIMEOUT_MS", c.ui_auth_timeout);
        c.header_timeout = ms("GRAPHMIND_HEADER_TIMEOUT_MS", c.header_timeout);
        c.body_timeout = ms("GRAPHMIND_BODY_TIMEOUT_MS", c.body_timeout);
        c.retention_interval = ms("GRAPHMIND_RETENTION_INTERVAL_MS", c.retention_interval);
        Ok(c)
    }
}

/// Starts the hub these flags describe.
pub async fn start(args: &ServeArgs) -> Result<Running, String> {
    let config = args.config()?;
    graphmind_hub::start(config)
        .await
        .map_err(|e| e.to_string())
}

/// `graphmind serve`.
pub fn main(args: ServeArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("graphmind: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = rt.block_on(async {
        // Listening before the run file exists: a stop signal at any point removes it.
        let mut stop = crate::signals::StopSignals::install();
        let running = match start(&args).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("graphmind: {e}");
                return ExitCode::from(1);
            }
        };
        let run_file = running.run_file.clone().unwrap_or_default();
        // The viewer token appears in one place only, the human-readable line on stderr;
        // stdout (often captured by scripts) and --json output never carry a token. The run
        // file holds both tokens, and `graphmind open` builds the link from it.
        if args.json {
            let line = json!({
                "port": running.port,
                "url": running.url,
                "pid": std::process::id(),
                "version": env!("CARGO_PKG_VERSION"),
                "runFile": run_file,
                // What an app sets as `GRAPHMIND_URL` to report to this hub.
                "ingest": format!("ws://127.0.0.1:{}/ingest", running.port),
            });
            println!("{line}");
            eprintln!("graphmind: listening on {}", running.url);
        } else {
            println!("graphmind: listening on {}", running.url);
            eprintln!("graphmind: viewer at {}", running.viewer_url);
            println!(
                "graphmind: apps report to ws://127.0.0.1:{}/ingest; tokens in {} \
                 (`graphmind open` opens the viewer)",
                running.port,
                run_file.display()
            );
        }
        if !args.no_open {
            // Off the runtime: the opener is watched for a moment for a failure.
            let url = running.viewer_url.clone();
            tokio::task::spawn_blocking(move || crate::browser::open(&url));
        }
        let _ = stop.recv().await;
        eprintln!("graphmind: shutting down");
        running.shutdown().await;
        ExitCode::SUCCESS
    });
    rt.shutdown_timeout(Duration::from_millis(500));
    code
}
