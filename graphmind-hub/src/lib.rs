//! The graphmind debugger hub as a library. One loopback port serves `/ingest` (apps),
//! `/ws/ui` (viewers), the HTTP API and the embedded viewer page; runs are stored in SQLite.
//!
//! [`start`] takes a [`HubConfig`] and returns a [`Running`] hub once it listens; the
//! `graphmind serve` binary is a thin layer over it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), graphmind_hub::HubError> {
//! let mut config = graphmind_hub::HubConfig::new("/tmp/graphmind-example.db");
//! config.port = 0; // any free port
//! let hub = graphmind_hub::start(config).await?;
//! println!("viewer at {}", hub.viewer_url);
//! hub.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod accept;
mod api;
mod config;
pub mod connections;
mod error;
pub mod files;
mod ingest;
mod lean;
pub mod otlp;
mod quick_parse;
mod security;
mod state;
mod storage;
mod tokens;
mod ui_feed;
mod viewer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use serde_json::json;

pub use config::{AllowControl, HubConfig};
pub use error::HubError;
pub use state::MAX_RESUME_DEPTH;
pub use state::breakpoint_bounds::{
    MAX_BREAKPOINTS, MAX_BREAKPOINTS_BYTES, MAX_MATCHER_BYTES, MAX_MATCHER_NAME_BYTES,
};
use state::{Config, HubState};
use storage::{Retention, Storage};
use tokens::Token;

/// Largest request body the hub reads (a resume's injected output, a breakpoint list); a
/// request that declares a larger `Content-Length` is answered `413` before any of it is read.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The run file of a hub listening on `port`, in `run_dir`.
pub fn run_file_in(run_dir: &std::path::Path, port: u16) -> PathBuf {
    run_dir.join(format!("serve-{port}.json"))
}

/// Epoch milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A started hub. It runs until [`shutdown`](Self::shutdown) (dropping it leaves the server
/// tasks running on the runtime until the runtime ends).
pub struct Running {
    /// The address listened on (127.0.0.1).
    pub addr: SocketAddr,
    /// The port listened on.
    pub port: u16,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The viewer link with its token in the fragment.
    pub viewer_url: String,
    /// The agent token (run file `agentToken`): HTTP API reads and control.
    pub agent_token: String,
    /// The viewer token (run file `viewerToken`, the viewer link's fragment).
    pub viewer_token: String,
    /// The run file, when [`HubConfig::run_dir`] was set.
    pub run_file: Option<PathBuf>,
    hub: Arc<HubState>,
    router: Router,
    _db_lock: std::fs::File,
    server: tokio::task::JoinHandle<()>,
    /// The run-frame ticker, the housekeeping and the periodic retention.
    tasks: [tokio::task::JoinHandle<()>; 3],
    /// The OTLP exporter's task (`HubConfig::otlp`).
    exporter: Option<tokio::task::JoinHandle<()>>,
}

/// Keeps a long-lived hub's memory bounded: finished runs beyond `--memory-runs` leave memory
/// (after the writer committed everything of them), and stale session tokens and closed
/// pauses are forgotten.
async fn housekeeping(hub: Arc<HubState>) {
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
async fn retain_periodically(hub: Arc<HubState>, retention: Retention, interval: Duration) {
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

/// The hub's routes (`/ingest`, `/ws/ui`, the HTTP API, the viewer page) over `hub`, behind
/// the Host/Origin guard.
fn router(hub: &Arc<HubState>) -> Router {
    Router::new()
        .route("/ingest", get(ingest::handler))
        .route("/ws/ui", get(ui_feed::handler))
        .merge(api::routes())
        .merge(viewer::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(security::guard))
        .with_state(Arc::clone(hub))
}

/// Starts a hub: listener, storage, tokens, run file, background tasks. Returns once it is
/// listening. Must be called within a multi-thread tokio runtime.
pub async fn start(config: HubConfig) -> Result<Running, HubError> {
    let retention = Retention {
        keep: config.keep,
        max_age_days: 30,
    };
    // The list every app is sent in its `hello.ack`: within the API's bounds too.
    let initial: Vec<&graphmind_protocol::BreakpointMatcher> = config.breakpoints.iter().collect();
    state::breakpoint_bounds::check_list(&initial)
        .map_err(|r| HubError::Breakpoints(r.message()))?;
    // Listen first: a second hub on a busy port must not touch the first one's database.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                HubError::PortInUse { port: config.port }
            } else {
                HubError::Listen {
                    port: config.port,
                    source: e,
                }
            }
        })?;
    let storage = {
        let db = config.db.clone();
        let memory_runs = config.memory_runs;
        tokio::task::spawn_blocking(move || Storage::open(&db, retention, memory_runs, now_ms()))
            .await
            .map_err(|e| HubError::Runtime(e.to_string()))?
            .map_err(HubError::Storage)?
    };
    let addr = listener.local_addr().map_err(|e| HubError::Listen {
        port: config.port,
        source: e,
    })?;
    let port = addr.port();
    let retention_interval = config.retention_interval.max(Duration::from_millis(10));
    let cfg = Config {
        version: env!("CARGO_PKG_VERSION"),
        port,
        allow_control: config.allow_control,
        viewer_token: Token::generate().map_err(HubError::Tokens)?,
        agent_token: Token::generate().map_err(HubError::Tokens)?,
        hub_secret: Token::generate().map_err(HubError::Tokens)?,
        abandon_grace: config.abandon_grace,
        resume_wait: config.resume_wait,
        edit_input: config.edit_input,
        operator: std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .ok()
            .filter(|u| !u.is_empty())
            .map(|u| graphmind_protocol::control::operator_label(&u)),
        hello_timeout: config.hello_timeout,
        memory_runs: config.memory_runs,
        ui_auth_timeout: config.ui_auth_timeout,
        body_timeout: config.body_timeout,
    };
    let url = format!("http://127.0.0.1:{port}");
    let viewer_url = format!("{url}/#token={}", cfg.viewer_token.as_str());
    let agent_token = cfg.agent_token.as_str().to_owned();
    let viewer_token = cfg.viewer_token.as_str().to_owned();
    let run_doc = json!({
        "port": port,
        "pid": std::process::id(),
        "url": url,
        // The reference family's key, and the one earlier graphmind CLIs read.
        "agentToken": cfg.agent_token.as_str(),
        "token": cfg.agent_token.as_str(),
        "viewerToken": cfg.viewer_token.as_str(),
        "allowControl": cfg.allow_control.as_str(),
        "command": config.command,
        "db": config.db,
        "version": cfg.version,
        graphmind_protocol::hub_auth::SECRET_KEY: cfg.hub_secret.as_str(),
    });
    let db_lock = storage.lock;
    let hub = HubState::new(
        cfg,
        storage.writer,
        storage.reader,
        storage.runs,
        storage.more_runs,
        storage.deleted,
        config.breakpoints,
    );
    let exporter = config.otlp.clone().map(|otlp| {
        let (exporter, task) =
            otlp::Exporter::start(otlp, hub.writer.clone(), Arc::clone(&hub.reader));
        let _ = hub.otlp.set(exporter);
        task
    });
    let app = router(&hub);
    let run_file = match &config.run_dir {
        Some(run_dir) => {
            files::private_dir(run_dir).map_err(|e| HubError::RunDir {
                path: run_dir.clone(),
                source: e,
            })?;
            let run_file = run_file_in(run_dir, port);
            files::write_private(&run_file, format!("{run_doc}\n").as_bytes()).map_err(|e| {
                HubError::RunFile {
                    path: run_file.clone(),
                    source: e,
                }
            })?;
            Some(run_file)
        }
        None => None,
    };
    let conns = connections::Connections::new(
        config
            .max_connections
            .unwrap_or_else(|| connections::budget_for(connections::descriptor_limit())),
    );
    let _ = hub.connections.set(Arc::clone(&conns));
    let server = tokio::spawn(accept::accept_loop(
        listener,
        app.clone(),
        config.header_timeout,
        conns,
    ));
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
        addr,
        port,
        url,
        viewer_url,
        agent_token,
        viewer_token,
        run_file,
        hub,
        router: app,
        _db_lock: db_lock,
        server,
        tasks: [ticker, housekeeping, retainer],
        exporter,
    })
}

impl Running {
    /// The hub's routes, to serve them on another listener or call them in-process (the
    /// same state as the hub's own listener).
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Stops listening, closes app connections, flushes storage, gives the OTLP export queue
    /// up to [`otlp::DRAIN`] to send what waits in it, and removes the run file. Runs the
    /// export could not send are reported on stderr and in the answer.
    pub async fn shutdown(self) -> Stopped {
        self.server.abort();
        for t in &self.tasks {
            t.abort();
        }
        self.hub.close_apps();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.hub.writer.barrier()).await;
        let mut stopped = Stopped::default();
        if let Some(exporter) = self.hub.otlp.get() {
            let unsent = exporter.drain(otlp::DRAIN).await;
            if unsent > 0 {
                eprintln!(
                    "graphmind: OTLP: {unsent} finished run(s) were not exported before the \
                     hub stopped (the collector did not take them within {} s)",
                    otlp::DRAIN.as_secs()
                );
            }
            stopped.otlp_unsent = Some(unsent);
        }
        if let Some(t) = &self.exporter {
            t.abort();
        }
        if let Some(f) = &self.run_file {
            let _ = std::fs::remove_file(f);
        }
        stopped
    }
}

/// What a hub's [`Running::shutdown`] left undone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Finished runs the OTLP export had not sent when its drain ended (`None`: no export).
    pub otlp_unsent: Option<u64>,
}
