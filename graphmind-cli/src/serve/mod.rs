//! `graphmind serve`: the debugger hub. One loopback port serves `/ingest` (apps),
//! `/ws/ui` (viewers), the HTTP API and the viewer page.

mod api;
mod ingest;
mod security;
mod state;
mod storage;
mod tokens;
mod ui_feed;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use clap::{Args, ValueEnum};
use graphmind_protocol::{BreakpointMatcher, NodeKind, PausePoint};
use serde_json::json;

use crate::paths;
use state::{Config, Hub};
use storage::{Retention, Storage};
use tokens::Token;

/// What the agent token (run file) may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllowControl {
    /// Breakpoints and mode only.
    Off,
    /// Also continue, retry and abort held gates.
    Resume,
    /// Also inject results.
    Inject,
}

impl AllowControl {
    fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Resume => "resume",
            Self::Inject => "inject",
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
    /// Milliseconds before a run whose app went away counts as abandoned (tests shorten it;
    /// env GRAPHMIND_ABANDON_GRACE_MS too).
    #[arg(long, hide = true)]
    pub abandon_grace_ms: Option<u64>,
    /// Milliseconds a resume waits for the app's answer before reporting "sent" (default
    /// 5000; tests shorten it; env GRAPHMIND_RESUME_WAIT_MS too).
    #[arg(long, hide = true)]
    pub resume_wait_ms: Option<u64>,
    /// Milliseconds an /ingest socket may stay open without sending hello before it is
    /// closed (default 10000; tests shorten it; env GRAPHMIND_HELLO_TIMEOUT_MS too).
    #[arg(long, hide = true)]
    pub hello_timeout_ms: Option<u64>,
    /// Milliseconds a /ws/ui socket may take to send its auth frame before it is closed
    /// (default 5000; tests shorten it; env GRAPHMIND_UI_AUTH_TIMEOUT_MS too).
    #[arg(long, hide = true)]
    pub ui_auth_timeout_ms: Option<u64>,
    /// Milliseconds a connection may take to send a request's headers (also the most an idle
    /// keep-alive connection is kept) before it is closed (default 10000; tests shorten it;
    /// env GRAPHMIND_HEADER_TIMEOUT_MS too).
    #[arg(long, hide = true)]
    pub header_timeout_ms: Option<u64>,
    /// Milliseconds between retention passes while the hub runs (default 3600000; tests
    /// shorten it; env GRAPHMIND_RETENTION_INTERVAL_MS too).
    #[arg(long, hide = true)]
    pub retention_interval_ms: Option<u64>,
}

/// Serves HTTP/1.1 (with WebSocket upgrades) on every accepted connection. Unlike
/// `axum::serve` it bounds the time a client may take to send a request's headers, so a local
/// process cannot hold connections open by sending nothing (or a byte at a time), and it turns
/// Nagle off: gate controls are small, latency-bound frames.
async fn accept_loop(listener: tokio::net::TcpListener, app: Router, header_timeout: Duration) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                eprintln!("graphmind: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            // Errors are the client's (a reset, a timeout, bad HTTP): nothing to report.
            let _ = http
                .serve_connection(TokioIo::new(tcp), service)
                .with_upgrades()
                .await;
        });
    }
}

/// Epoch milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

/// A started hub.
pub struct Running {
    /// The port listened on.
    pub port: u16,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The viewer link with its token in the fragment.
    pub viewer_url: String,
    /// The run file.
    pub run_file: PathBuf,
    hub: Arc<Hub>,
    _db_lock: std::fs::File,
    server: tokio::task::JoinHandle<()>,
    /// The run-frame ticker, the housekeeping and the periodic retention.
    tasks: [tokio::task::JoinHandle<()>; 3],
}

/// Keeps a long-lived hub's memory bounded: finished runs beyond `--memory-runs` leave memory
/// (after the writer committed everything of them), and stale session tokens and closed
/// pauses are forgotten.
async fn housekeeping(hub: Arc<Hub>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut n: u64 = 0;
    loop {
        tick.tick().await;
        let ids = hub.eviction_candidates();
        if !ids.is_empty() {
            hub.writer.barrier().await;
            hub.evict(&ids);
        }
        n += 1;
        if n.is_multiple_of(5) {
            hub.sweep();
        }
    }
}

/// Applies the retention rule every `interval` (the first time one interval after the start,
/// which applied it already); the runs it deleted leave memory too, and the viewers are told
/// (`removed` frames of /ws/ui).
async fn retain_periodically(hub: Arc<Hub>, retention: Retention, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let since = now_ms();
        let protect = hub.retention_protect();
        let deleted = hub.writer.retain(retention, since, protect).await;
        if deleted.is_empty() {
            continue;
        }
        for row in hub.forget_deleted(&deleted, since) {
            hub.writer.revive(row).await;
        }
    }
}

/// Starts a hub: storage, tokens, listener, run file. Returns once it is listening.
pub async fn start(args: &ServeArgs) -> Result<Running, String> {
    let breakpoints = initial_breakpoints(&args.pause_on_error)?;
    let home = paths::home();
    paths::private_dir(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
    let db = args.db.clone().unwrap_or_else(paths::default_db);
    let retention = Retention {
        keep: args.keep,
        max_age_days: 30,
    };
    // Listen first: a second hub on a busy port must not touch the first one's database.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                format!(
                    "port {} is in use (is another graphmind serve running? try --port 0)",
                    args.port
                )
            } else {
                format!("cannot listen on 127.0.0.1:{}: {e}", args.port)
            }
        })?;
    let storage = {
        let db = db.clone();
        tokio::task::spawn_blocking(move || Storage::open(&db, retention, now_ms()))
            .await
            .map_err(|e| e.to_string())??
    };
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let ms = |flag: Option<u64>, env: &str, default: u64| {
        flag.or_else(|| std::env::var(env).ok().and_then(|v| v.parse().ok()))
            .unwrap_or(default)
    };
    let grace_ms = ms(args.abandon_grace_ms, "GRAPHMIND_ABANDON_GRACE_MS", 15_000);
    let resume_wait_ms = ms(args.resume_wait_ms, "GRAPHMIND_RESUME_WAIT_MS", 5_000);
    let hello_timeout_ms = ms(args.hello_timeout_ms, "GRAPHMIND_HELLO_TIMEOUT_MS", 10_000);
    let ui_auth_timeout_ms = ms(
        args.ui_auth_timeout_ms,
        "GRAPHMIND_UI_AUTH_TIMEOUT_MS",
        5_000,
    );
    let header_timeout = Duration::from_millis(ms(
        args.header_timeout_ms,
        "GRAPHMIND_HEADER_TIMEOUT_MS",
        10_000,
    ));
    let retention_interval = Duration::from_millis(
        ms(
            args.retention_interval_ms,
            "GRAPHMIND_RETENTION_INTERVAL_MS",
            3_600_000,
        )
        .max(10),
    );
    let cfg = Config {
        version: env!("CARGO_PKG_VERSION"),
        port,
        allow_control: args.allow_control,
        viewer_token: Token::generate()?,
        agent_token: Token::generate()?,
        hub_secret: Token::generate()?,
        abandon_grace: Duration::from_millis(grace_ms),
        resume_wait: Duration::from_millis(resume_wait_ms),
        hello_timeout: Duration::from_millis(hello_timeout_ms),
        memory_runs: args.memory_runs,
        ui_auth_timeout: Duration::from_millis(ui_auth_timeout_ms),
    };
    let url = format!("http://127.0.0.1:{port}");
    let viewer_url = format!("{url}/#token={}", cfg.viewer_token.as_str());
    let run_doc = json!({
        "port": port,
        "pid": std::process::id(),
        "url": url,
        // The reference family's key, and the one earlier graphmind CLIs read.
        "agentToken": cfg.agent_token.as_str(),
        "token": cfg.agent_token.as_str(),
        "viewerToken": cfg.viewer_token.as_str(),
        "allowControl": cfg.allow_control.as_str(),
        "version": cfg.version,
        graphmind_protocol::hub_auth::SECRET_KEY: cfg.hub_secret.as_str(),
    });
    let db_lock = storage.lock;
    let hub = Hub::new(
        cfg,
        storage.writer,
        storage.reader,
        storage.runs,
        storage.deleted,
        breakpoints,
    );
    let app: Router = Router::new()
        .route("/ingest", get(ingest::handler))
        .route("/ws/ui", get(ui_feed::handler))
        .merge(api::routes())
        .merge(crate::viewer::routes())
        .layer(DefaultBodyLimit::max(2 * 1024 * 1024))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&hub),
            security::guard,
        ))
        .with_state(Arc::clone(&hub));
    let run_dir = paths::run_dir();
    paths::private_dir(&run_dir)
        .map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
    let run_file = paths::run_file(port);
    paths::write_private(&run_file, format!("{run_doc}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", run_file.display()))?;
    let server = tokio::spawn(accept_loop(listener, app, header_timeout));
    {
        // Runs an earlier start left running get the same grace as any app that went away.
        let hub = Arc::clone(&hub);
        tokio::spawn(async move {
            tokio::time::sleep(hub.cfg.abandon_grace).await;
            hub.abandon_unclaimed().await;
        });
    }
    let ticker = {
        let hub = Arc::clone(&hub);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                hub.flush_dirty_runs();
            }
        })
    };
    let housekeeping = tokio::spawn(housekeeping(Arc::clone(&hub)));
    let retainer = tokio::spawn(retain_periodically(
        Arc::clone(&hub),
        retention,
        retention_interval,
    ));
    Ok(Running {
        port,
        url,
        viewer_url,
        run_file,
        hub,
        _db_lock: db_lock,
        server,
        tasks: [ticker, housekeeping, retainer],
    })
}

impl Running {
    /// Stops listening, closes app connections, flushes storage and removes the run file.
    pub async fn shutdown(self) {
        self.server.abort();
        for t in &self.tasks {
            t.abort();
        }
        self.hub.close_apps();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.hub.writer.barrier()).await;
        let _ = std::fs::remove_file(&self.run_file);
    }
}

/// Opens `url` in the desktop's browser, best effort; `false` if no opener could be started.
pub(crate) fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let child = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match child {
        Ok(mut c) => {
            // Reap it so it does not linger as a zombie.
            std::thread::spawn(move || {
                let _ = c.wait();
            });
            true
        }
        Err(_) => false,
    }
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
        // The viewer token appears in one place only, the human-readable line on stderr;
        // stdout (often captured by scripts) and --json output never carry a token. The run
        // file holds both tokens, and `graphmind open` builds the link from it.
        if args.json {
            let line = json!({
                "port": running.port,
                "url": running.url,
                "pid": std::process::id(),
                "version": env!("CARGO_PKG_VERSION"),
                "runFile": running.run_file,
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
                running.run_file.display()
            );
        }
        if !args.no_open {
            let _ = open_browser(&running.viewer_url);
        }
        let _ = stop.recv().await;
        eprintln!("graphmind: shutting down");
        running.shutdown().await;
        ExitCode::SUCCESS
    });
    rt.shutdown_timeout(Duration::from_millis(500));
    code
}
