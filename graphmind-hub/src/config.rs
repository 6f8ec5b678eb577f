//! What a hub start is given: [`HubConfig`], plain data (no command-line parsing; the
//! `graphmind serve` flags map onto it).

use std::path::PathBuf;
use std::time::Duration;

use graphmind_protocol::{BreakpointMatcher, PausePoint};

/// What the agent token (run file) may do, the levels of the reference family's hubs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllowControl {
    /// Nothing: no breakpoints, no mode, no resume (reads only).
    #[default]
    Off,
    /// Set breakpoints and the mode; continue, retry, abort and reject held gates.
    Resume,
    /// Also inject results.
    Inject,
    /// Also run held calls with an edited input.
    Edit,
}

impl AllowControl {
    /// The wire name (`off`, `resume`, `inject`, `edit`), as in the run file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Resume => "resume",
            Self::Inject => "inject",
            Self::Edit => "edit",
        }
    }
}

/// The settings of one hub start. [`HubConfig::new`] gives the defaults of `graphmind serve`.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Port on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// The SQLite database file (created with mode 0600; a missing parent directory is
    /// created 0700).
    pub db: PathBuf,
    /// Directory of run files: the hub writes `serve-<port>.json` (port, tokens, secret;
    /// mode 0600) there once listening and removes it on shutdown. `None`: no run file.
    pub run_dir: Option<PathBuf>,
    /// The breakpoints the hub starts with (default: pause on every error).
    pub breakpoints: Vec<BreakpointMatcher>,
    /// What the agent token in the run file may do.
    pub allow_control: AllowControl,
    /// Keep the newest N runs, at start and every [`retention_interval`](Self::retention_interval)
    /// (runs older than 30 days are dropped too).
    pub keep: usize,
    /// Most finished runs kept in memory (older ones are read from the database).
    pub memory_runs: usize,
    /// How long after its app went away a run counts as abandoned (15 s).
    pub abandon_grace: Duration,
    /// How long a resume waits for the app's answer before reporting `sent` (5 s).
    pub resume_wait: Duration,
    /// How long an `/ingest` socket may stay open without sending `hello` (10 s).
    pub hello_timeout: Duration,
    /// How long a `/ws/ui` socket may take to send its auth frame (5 s).
    pub ui_auth_timeout: Duration,
    /// How long a connection may take to send a request's headers, also the most an idle
    /// keep-alive connection is kept (10 s).
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its headers did (10 s); a slower one
    /// is answered `408`. Bodies are read only after the token was checked.
    pub body_timeout: Duration,
    /// Most connections open at once (apps, viewers, HTTP clients). `None` (the default): the
    /// process's descriptor limit less [`crate::connections::FD_RESERVE`]. Past it, the
    /// connection that has waited longest for a request is closed first.
    pub max_connections: Option<usize>,
    /// Time between retention passes while the hub runs (1 h; at least 10 ms).
    pub retention_interval: Duration,
    /// Export every finished run to an OpenTelemetry collector (`serve --otlp`); `None`: off.
    pub otlp: Option<crate::otlp::OtlpConfig>,
    /// Let held calls run with an edited input (on): the hub announces `edit-input` to the
    /// apps and forwards `exec.resume.input`. Off (`graphmind serve --no-edit-input`): the
    /// capability is not announced, no pause shows editable, and the hub itself refuses an
    /// edited resume (`refused`, code `disabled`).
    pub edit_input: bool,
    /// The command that started the hub (`serve`, `demo`), written to the run file as
    /// `command`: a control command's advice names the command to restart with.
    pub command: String,
}

impl HubConfig {
    /// The defaults of `graphmind serve` with the database at `db`: port 4747, no run file,
    /// pause on every error, no control for the agent token, editing on, 200 runs kept, 1000 in memory.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            port: 4747,
            db: db.into(),
            run_dir: None,
            breakpoints: vec![BreakpointMatcher::at(PausePoint::Error)],
            allow_control: AllowControl::Off,
            keep: 200,
            memory_runs: 1000,
            abandon_grace: Duration::from_millis(15_000),
            resume_wait: Duration::from_millis(5_000),
            hello_timeout: Duration::from_millis(10_000),
            ui_auth_timeout: Duration::from_millis(5_000),
            header_timeout: Duration::from_millis(10_000),
            body_timeout: Duration::from_millis(10_000),
            max_connections: None,
            retention_interval: Duration::from_millis(3_600_000),
            otlp: None,
            edit_input: true,
            command: "serve".to_owned(),
        }
    }
}
