//! The hub's live state: debug state, connected apps and their identities (run ownership),
//! runs, the pause registry and connected viewers. One mutex guards it; nothing awaits while
//! holding it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use graphmind_protocol::{
    BreakpointChange, BreakpointMatcher, Envelope, ExecResume, Extra, HelloAck, HubVersions,
    Message, Mode, ModeSet, PausePoint, RUN_ANY, ResumeAction,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::storage::{EventRow, Reader, RunRow, Writer};
use super::tokens::{Token, random_id};
use super::{AllowControl, now_ms};

/// How long a closed pause is remembered (to tell "taken" from "gone").
const CLOSED_MEMORY: Duration = Duration::from_secs(600);
/// A finished run stays in memory at least this long after its latest event, whatever the cap
/// (its last `run` frame reaches the viewers, and an event being taken in finds it).
const EVICT_IDLE_MS: u64 = 1000;
/// Session tokens kept per app identity (the newest; an app resumes with the latest it got).
const TOKENS_PER_IDENTITY: usize = 4;
/// Most session tokens kept in all; beyond it those of disconnected apps go, oldest first.
pub const MAX_SESSION_TOKENS: usize = 16_384;
/// Capacity of a viewer's outgoing queue; a viewer that falls this far behind is dropped
/// (it reconnects and replays).
pub const VIEWER_QUEUE: usize = 65_536;
/// Largest `exec.resume` frame sent to an app (the Python client closes on frames > 1 MiB).
pub const MAX_CONTROL_FRAME: usize = 1024 * 1024;

/// Fixed settings of one hub start.
#[derive(Debug)]
pub struct Config {
    /// Hub version.
    pub version: &'static str,
    /// Port listened on.
    pub port: u16,
    /// What the agent token may do.
    pub allow_control: AllowControl,
    /// Token of the viewer page (URL fragment).
    pub viewer_token: Token,
    /// Token of agents and scripts (run file).
    pub agent_token: Token,
    /// Grace before a run whose app went away counts as abandoned.
    pub abandon_grace: Duration,
    /// How long a resume waits for the app's `exec.resumed` / `exec.refused` (5 s).
    pub resume_wait: Duration,
    /// How long an `/ingest` socket may stay open without sending `hello` (10 s).
    pub hello_timeout: Duration,
    /// Most finished (or abandoned) runs kept in memory; older ones are read from storage.
    pub memory_runs: usize,
}

/// Counters since start (reported by `/health`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Text frames received on /ingest.
    pub frames_in: AtomicU64,
    /// Events accepted (new (runId, seq)).
    pub events_accepted: AtomicU64,
    /// Events dropped as duplicates.
    pub duplicates: AtomicU64,
    /// Frames that were not valid envelopes.
    pub invalid_frames: AtomicU64,
    /// Binary frames (ignored).
    pub binary_frames: AtomicU64,
    /// Frames of unknown type (stored opaquely).
    pub unknown_types: AtomicU64,
    /// Payloads shrunk to the budget.
    pub shrunk: AtomicU64,
    /// Frames before hello (ignored).
    pub ignored_before_hello: AtomicU64,
    /// `/ingest` sockets closed for sending no `hello` in time.
    pub hello_timeouts: AtomicU64,
    /// Events the apps announced lost (`"dropped": n`: evicted from their replay rings before
    /// they were sent).
    pub client_dropped: AtomicU64,
    /// Finished runs dropped from memory (they stay in storage).
    pub runs_evicted: AtomicU64,
    /// Runs deleted by the retention rule while running.
    pub runs_deleted: AtomicU64,
    /// Session tokens forgotten (their app gone and nothing left to reclaim).
    pub tokens_expired: AtomicU64,
}

impl Stats {
    fn to_json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "framesIn": g(&self.frames_in),
            "eventsAccepted": g(&self.events_accepted),
            "duplicates": g(&self.duplicates),
            "invalidFrames": g(&self.invalid_frames),
            "binaryFrames": g(&self.binary_frames),
            "unknownTypes": g(&self.unknown_types),
            "shrunk": g(&self.shrunk),
            "ignoredBeforeHello": g(&self.ignored_before_hello),
            "helloTimeouts": g(&self.hello_timeouts),
            "clientDropped": g(&self.client_dropped),
            "runsEvicted": g(&self.runs_evicted),
            "runsDeleted": g(&self.runs_deleted),
            "sessionTokensExpired": g(&self.tokens_expired),
        })
    }
}

/// A frame for an app connection's writer.
#[derive(Debug)]
pub enum AppOut {
    /// A text frame.
    Text(String),
    /// Close with a code and reason.
    Close(u16, String),
}

/// A message for a viewer connection's writer.
#[derive(Debug, Clone)]
pub enum ViewerOut {
    /// A ready feed frame.
    Frame(Arc<str>),
    /// A live event of a run (the viewer filters by its subscription).
    Event {
        /// The run.
        run_id: Arc<str>,
        /// The event's seq.
        seq: u64,
        /// The stored envelope.
        body: Arc<str>,
    },
    /// A `removed` frame: these runs were deleted by the retention rule. The viewer's
    /// connection ends its subscription if it is to one of them.
    Removed {
        /// The ready feed frame.
        frame: Arc<str>,
        /// The runs it names.
        runs: Arc<HashSet<String>>,
    },
}

/// Run ids per `removed` feed frame at most (a large retention pass sends several).
pub const REMOVED_BATCH: usize = 500;

/// The answer to a resume request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The app confirmed the release.
    Resumed {
        /// The action the app reported.
        action: String,
    },
    /// Sent, not confirmed in time.
    Sent,
    /// The app refused; the gate stays held.
    Refused {
        /// The app's code.
        code: String,
        /// The app's message.
        message: Option<String>,
    },
    /// Another resume won.
    Taken(String),
    /// No such open pause.
    Gone(String),
    /// Bad request.
    Invalid(String),
    /// Missing or wrong token.
    Unauthorized(String),
    /// Token valid but not allowed.
    Forbidden(String),
}

impl Outcome {
    /// The wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Resumed { .. } => "resumed",
            Self::Sent => "sent",
            Self::Refused { .. } => "refused",
            Self::Taken(_) => "taken",
            Self::Gone(_) => "gone",
            Self::Invalid(_) => "invalid",
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
        }
    }

    /// Whether the request succeeded.
    pub fn ok(&self) -> bool {
        matches!(self, Self::Resumed { .. } | Self::Sent)
    }

    /// A readable explanation.
    pub fn message(&self) -> Option<String> {
        match self {
            Self::Resumed { .. } => None,
            Self::Sent => Some("sent to the app; it has not confirmed in time".into()),
            Self::Refused { message, code } => Some(
                message
                    .clone()
                    .unwrap_or_else(|| format!("the app refused ({code})")),
            ),
            Self::Taken(m)
            | Self::Gone(m)
            | Self::Invalid(m)
            | Self::Unauthorized(m)
            | Self::Forbidden(m) => Some(m.clone()),
        }
    }
}

/// What an event's run needs read from storage before the event is taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Nothing: the run is in memory with its seqs, or it is new.
    Nothing,
    /// The run is in memory without its seqs (a run of an earlier start, or a finished one).
    Seqs,
    /// The run is not in memory but may be stored (runs were evicted).
    Run,
}

/// What a token is asked to do.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// Change breakpoints or mode.
    Debug,
    /// Resume a gate with this action.
    Resume(ResumeAction),
}

#[derive(Debug, Default)]
struct NodeSeen {
    kind: Option<String>,
    name: Option<String>,
    instance_id: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    error: Option<Value>,
}

#[derive(Debug)]
struct RunState {
    app: Option<String>,
    name: Option<String>,
    status: String,
    started_at: Option<u64>,
    ended_at: Option<u64>,
    sdk: Option<Value>,
    created_at: u64,
    event_count: u64,
    /// The identity (app session) that owns the run.
    owner: Option<u64>,
    /// Seqs stored; `None` until loaded from the database (a run of an earlier start, or a
    /// finished run that receives more frames).
    seqs: Option<HashSet<u64>>,
    nodes: HashMap<String, NodeSeen>,
    /// When its latest event was taken in (epoch ms; 0 for a run loaded from storage).
    touched: u64,
}

impl RunState {
    /// A run as stored (no owner, seqs not loaded).
    fn from_row(r: RunRow) -> (String, Self) {
        let sdk = r.sdk.as_deref().and_then(|s| serde_json::from_str(s).ok());
        (
            r.run_id,
            Self {
                app: r.app,
                name: r.name,
                status: r.status,
                started_at: r.started_at,
                ended_at: r.ended_at,
                sdk,
                created_at: r.created_at,
                event_count: r.event_count,
                owner: None,
                seqs: None,
                nodes: HashMap::new(),
                touched: 0,
            },
        )
    }

    /// The sort key of run lists (newest first): start, else first sight.
    fn start_key(&self) -> u64 {
        self.started_at.unwrap_or(self.created_at)
    }

    /// Keeps what a pause of a node shows: the latest execution's input, output and error.
    fn track_node(&mut self, message: &Message) {
        match message {
            Message::NodeStarted(p) => {
                self.nodes.insert(
                    p.node_id.clone(),
                    NodeSeen {
                        kind: Some(p.kind.as_str().to_owned()),
                        name: Some(p.name.clone()),
                        instance_id: Some(p.instance_id.clone()),
                        input: p.input.clone(),
                        output: None,
                        error: None,
                    },
                );
            }
            Message::NodeFinished(p) => {
                let n = self.nodes.entry(p.node_id.clone()).or_default();
                n.output.clone_from(&p.output);
            }
            Message::NodeError(p) => {
                let n = self.nodes.entry(p.node_id.clone()).or_default();
                n.error = serde_json::to_value(&p.error).ok();
            }
            _ => {}
        }
    }

    fn finished(&self) -> bool {
        matches!(self.status.as_str(), "ok" | "error" | "aborted")
    }

    /// Finished or abandoned: counted against the memory cap.
    fn settled(&self) -> bool {
        self.finished() || self.status == "abandoned"
    }

    fn row(&self, run_id: &str) -> RunRow {
        RunRow {
            run_id: run_id.to_owned(),
            app: self.app.clone(),
            name: self.name.clone(),
            status: self.status.clone(),
            started_at: self.started_at,
            ended_at: self.ended_at,
            sdk: self.sdk.as_ref().map(Value::to_string),
            created_at: self.created_at,
            event_count: self.event_count,
        }
    }
}

#[derive(Debug)]
struct InFlight {
    request_id: String,
    waiter: Option<oneshot::Sender<Outcome>>,
}

#[derive(Debug)]
struct Pause {
    run_id: String,
    pause_id: String,
    node_id: String,
    point: String,
    reason: String,
    instance_id: Option<String>,
    since: u64,
    kind: Option<String>,
    name: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    error: Option<Value>,
    /// The loop guard's details of a `reason: "loop"` hold.
    loop_info: Option<Value>,
    identity: Option<u64>,
    inflight: Option<InFlight>,
}

impl Pause {
    fn to_json(&self) -> Value {
        json!({
            "pauseId": self.pause_id,
            "runId": self.run_id,
            "nodeId": self.node_id,
            "point": self.point,
            "reason": self.reason,
            "instanceId": self.instance_id,
            "since": self.since,
            "kind": self.kind,
            "name": self.name,
            "input": self.input,
            "output": self.output,
            "error": self.error,
            "loop": self.loop_info,
            "state": if self.inflight.is_some() { "resuming" } else { "open" },
        })
    }
}

#[derive(Debug)]
struct Closed {
    at: Instant,
    action: Option<String>,
    by: &'static str,
}

#[derive(Debug)]
struct AppConn {
    identity: u64,
    tx: mpsc::UnboundedSender<AppOut>,
    app: Option<String>,
}

#[derive(Debug)]
struct ViewerConn {
    tx: mpsc::Sender<ViewerOut>,
    sub: Option<Arc<str>>,
}

type PauseKey = (String, String);

#[derive(Debug, Clone, Copy)]
struct SessionToken {
    identity: u64,
    /// Issue order (newer tokens have larger numbers).
    issued: u64,
}

#[derive(Debug)]
struct State {
    breakpoints: Vec<BreakpointMatcher>,
    mode: Mode,
    apps: HashMap<u64, AppConn>,
    /// Session token → identity.
    tokens: HashMap<String, SessionToken>,
    /// Identity → its live connection.
    live: HashMap<u64, u64>,
    /// Identity → when its last connection went away (while it has unfinished runs).
    left: HashMap<u64, Instant>,
    /// Identity → when its last connection went away (any identity; forgotten after the
    /// abandon grace, with its session tokens unless it still owns unfinished runs).
    gone: HashMap<u64, Instant>,
    /// Whether runs were dropped from memory since start (then a run missing from memory may
    /// still be in storage).
    evicted: bool,
    runs: HashMap<String, RunState>,
    pauses: HashMap<PauseKey, Pause>,
    closed: HashMap<PauseKey, Closed>,
    viewers: HashMap<u64, ViewerConn>,
    dirty: HashSet<String>,
}

/// The hub.
pub struct Hub {
    /// Settings of this start.
    pub cfg: Config,
    /// Counters.
    pub stats: Stats,
    /// The storage writer.
    pub writer: Writer,
    /// The storage readers.
    pub reader: Arc<Reader>,
    state: Mutex<State>,
    seq: AtomicU64,
    ids: AtomicU64,
    subscribed: AtomicUsize,
    pauses_version: watch::Sender<u64>,
}

fn matcher_json(m: &BreakpointMatcher) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

impl Hub {
    /// A hub over opened storage with the given initial debug state.
    pub fn new(
        cfg: Config,
        writer: Writer,
        reader: Arc<Reader>,
        stored: Vec<RunRow>,
        breakpoints: Vec<BreakpointMatcher>,
    ) -> Arc<Self> {
        let runs = stored.into_iter().map(RunState::from_row).collect();
        Arc::new(Self {
            cfg,
            stats: Stats::default(),
            writer,
            reader,
            state: Mutex::new(State {
                breakpoints,
                mode: Mode::Run,
                apps: HashMap::new(),
                tokens: HashMap::new(),
                live: HashMap::new(),
                left: HashMap::new(),
                gone: HashMap::new(),
                evicted: false,
                runs,
                pauses: HashMap::new(),
                closed: HashMap::new(),
                viewers: HashMap::new(),
                dirty: HashSet::new(),
            }),
            seq: AtomicU64::new(0),
            ids: AtomicU64::new(1),
            subscribed: AtomicUsize::new(0),
            pauses_version: watch::channel(0).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock must not take the whole hub down with it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// A hub → app frame with runId `*` (or the given run) and the hub's own seq.
    fn frame(&self, run_id: &str, message: Message) -> String {
        Envelope::new(
            self.seq.fetch_add(1, Ordering::Relaxed),
            now_ms(),
            run_id,
            message,
        )
        .to_json()
    }

    // ----- apps -------------------------------------------------------------------------

    /// Registers an app connection after its hello and builds the `hello.ack`. Returns the
    /// connection id, its identity, the ack frame and the run rows to store again (runs the
    /// identity reclaimed from `abandoned`).
    pub fn app_hello(
        &self,
        tx: mpsc::UnboundedSender<AppOut>,
        app: Option<String>,
        capabilities: Vec<String>,
        resume_token: Option<&str>,
    ) -> (u64, u64, String, Vec<RunRow>) {
        let conn = self.next_id();
        let session_token = random_id("sess");
        let issued = self.next_id();
        let mut st = self.lock();
        let identity = resume_token
            .and_then(|t| st.tokens.get(t).map(|s| s.identity))
            .unwrap_or_else(|| self.next_id());
        st.tokens
            .insert(session_token.clone(), SessionToken { identity, issued });
        st.live.insert(identity, conn);
        st.left.remove(&identity);
        st.gone.remove(&identity);
        st.apps.insert(conn, AppConn { identity, tx, app });
        // The identity's runs are live again; a reclaimed abandoned run is running again in
        // storage too.
        let st = &mut *st;
        let mut rows = Vec::new();
        for (id, run) in &mut st.runs {
            if run.owner == Some(identity) {
                if run.status == "abandoned" {
                    run.status = "running".into();
                    rows.push(run.row(id));
                }
                st.dirty.insert(id.clone());
            }
        }
        let ack = HelloAck {
            versions: HubVersions {
                protocol: graphmind_protocol::PROTOCOL_VERSION,
                viewer: self.cfg.version.to_owned(),
                extra: Extra::new(),
            },
            capabilities,
            breakpoints: st.breakpoints.clone(),
            mode: st.mode,
            session_token: Some(session_token),
            hub_capabilities: Some(
                [
                    "run-claim",
                    "dedupe",
                    "shrink",
                    "request-id",
                    "pause-registry",
                ]
                .map(String::from)
                .to_vec(),
            ),
            extra: Extra::new(),
        };
        let frame = self.frame(RUN_ANY, Message::HelloAck(ack));
        (conn, identity, frame, rows)
    }

    /// Handles an app connection going away: its pauses close (the app already continued),
    /// and its unfinished runs become abandoned unless it comes back within the grace.
    pub fn app_disconnected(self: &Arc<Self>, conn: u64) {
        let mut orphaned = false;
        let identity;
        {
            let mut st = self.lock();
            let Some(app) = st.apps.remove(&conn) else {
                return;
            };
            identity = app.identity;
            if st.live.get(&identity) != Some(&conn) {
                return; // the identity already moved to a newer connection
            }
            st.live.remove(&identity);
            st.gone.insert(identity, Instant::now());
            let st = &mut *st;
            let keys: Vec<PauseKey> = st
                .pauses
                .iter()
                .filter(|(_, p)| p.identity == Some(identity))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if let Some(mut p) = st.pauses.remove(&k) {
                    if let Some(w) = p.inflight.take().and_then(|f| f.waiter) {
                        let _ = w.send(Outcome::Gone(
                            "the app disconnected; its held gates continued".into(),
                        ));
                    }
                    st.closed.insert(
                        k,
                        Closed {
                            at: Instant::now(),
                            action: Some("continue".into()),
                            by: "disconnect",
                        },
                    );
                }
            }
            for (id, run) in &st.runs {
                if run.owner == Some(identity) && !run.finished() {
                    orphaned = true;
                    st.dirty.insert(id.clone());
                }
            }
            if orphaned {
                st.left.insert(identity, Instant::now());
            }
        }
        self.pauses_changed();
        if orphaned {
            let hub = Arc::clone(self);
            tokio::spawn(async move {
                tokio::time::sleep(hub.cfg.abandon_grace).await;
                hub.abandon(identity).await;
            });
        }
    }

    async fn abandon(&self, identity: u64) {
        let rows: Vec<RunRow> = {
            let mut st = self.lock();
            if st.live.contains_key(&identity) {
                return;
            }
            // The identity came back and left again since this timer started: the timer of
            // its latest departure decides.
            if st
                .left
                .get(&identity)
                .is_some_and(|t| t.elapsed() < self.cfg.abandon_grace)
            {
                return;
            }
            st.left.remove(&identity);
            let st = &mut *st;
            let mut rows = Vec::new();
            let now = now_ms();
            for (id, run) in &mut st.runs {
                if run.owner == Some(identity) && run.status == "running" {
                    run.status = "abandoned".into();
                    run.touched = now;
                    st.dirty.insert(id.clone());
                    rows.push(run.row(id));
                }
            }
            rows
        };
        for r in rows {
            self.writer.run(r).await;
        }
    }

    /// Marks the runs an earlier start left `running` that no app has claimed since this
    /// start as `abandoned` (called once, the abandon grace after the start).
    pub async fn abandon_unclaimed(&self) {
        let rows: Vec<RunRow> = {
            let mut st = self.lock();
            let st = &mut *st;
            let mut rows = Vec::new();
            let now = now_ms();
            for (id, run) in &mut st.runs {
                if run.owner.is_none() && run.status == "running" {
                    run.status = "abandoned".into();
                    run.touched = now;
                    st.dirty.insert(id.clone());
                    rows.push(run.row(id));
                }
            }
            rows
        };
        for r in rows {
            self.writer.run(r).await;
        }
    }

    /// What must be read from storage before an event of `run_id` is taken in.
    pub fn needs_load(&self, run_id: &str) -> Load {
        let mut st = self.lock();
        let evicted = st.evicted;
        match st.runs.get_mut(run_id) {
            Some(r) => {
                // An event is on its way in: the run must not leave memory meanwhile.
                if r.settled() {
                    r.touched = now_ms();
                }
                if r.seqs.is_none() {
                    Load::Seqs
                } else {
                    Load::Nothing
                }
            }
            None if evicted => Load::Run,
            None if evicted => Load::Run,
            None => Load::Nothing,
        }
    }

    /// Installs the stored seqs of a run (of an earlier start, or a finished one), and the
    /// stored run itself if it is not in memory (it was evicted).
    pub fn install_seqs(&self, run_id: &str, stored: Option<RunRow>, seqs: HashSet<u64>) {
        let mut st = self.lock();
        if let Some(r) = st.runs.get_mut(run_id) {
            if r.seqs.is_none() {
                r.seqs = Some(seqs);
            }
        } else if let Some(row) = stored {
            let (id, mut r) = RunState::from_row(row);
            r.seqs = Some(seqs);
            r.touched = now_ms();
            st.runs.insert(id, r);
        }
    }

    /// Takes in one event of an app: dedupe, run and pause bookkeeping, storage, fan-out.
    /// `body` is the envelope text to store (already shrunk). Returns whether the event was
    /// new (not a duplicate, and its app still connected).
    pub async fn app_event(&self, conn: u64, env: &Envelope, body: Arc<str>) -> bool {
        let run_id = env.run_id.as_str();
        let mut rows = Vec::new();
        let mut pauses_changed = false;
        let mut duplicate = false;
        'locked: {
            let mut guard = self.lock();
            let st = &mut *guard;
            let Some(app) = st.apps.get(&conn) else {
                return false;
            };
            let identity = app.identity;
            let app_name = app.app.clone();
            let now = now_ms();
            let run = st.runs.entry(run_id.to_owned()).or_insert_with(|| {
                let r = RunState {
                    app: app_name,
                    name: None,
                    status: "running".into(),
                    started_at: None,
                    ended_at: None,
                    sdk: None,
                    created_at: now,
                    event_count: 0,
                    owner: Some(identity),
                    seqs: Some(HashSet::new()),
                    nodes: HashMap::new(),
                    touched: now,
                };
                rows.push(r.row(run_id));
                r
            });
            run.touched = now;
            if let Some(seqs) = &mut run.seqs
                && !seqs.insert(env.seq)
            {
                self.stats.duplicates.fetch_add(1, Ordering::Relaxed);
                duplicate = true;
                // A replay of an unfinished run whose owner is not connected: its app is back
                // (e.g. after a hub restart, where its old session token means nothing).
                if !run.finished() && !run.owner.is_some_and(|o| st.live.contains_key(&o)) {
                    run.owner = Some(identity);
                    if run.status == "abandoned" {
                        run.status = "running".into();
                        rows.push(run.row(run_id));
                    }
                    st.dirty.insert(run_id.to_owned());
                }
                // The replay comes oldest first, so it leaves the nodes as the app last
                // reported them (a hub of a new start knows nothing of them yet).
                if !run.finished() {
                    run.track_node(&env.message);
                }
                break 'locked;
            }
            self.stats.events_accepted.fetch_add(1, Ordering::Relaxed);
            // Ownership: the identity that claimed the run keeps it while it is connected;
            // a run whose owner is gone goes to whoever reports it now.
            let owner_live = run.owner.is_some_and(|o| st.live.contains_key(&o));
            if run.owner != Some(identity) && !owner_live {
                run.owner = Some(identity);
            }
            run.event_count += 1;
            if run.status == "abandoned" {
                run.status = "running".into();
                rows.push(run.row(run_id));
            }
            st.dirty.insert(run_id.to_owned());
            match &env.message {
                Message::RunStarted(p) => {
                    // The app that starts a run owns it.
                    run.owner = Some(identity);
                    run.app = Some(p.app.clone());
                    run.sdk = serde_json::to_value(&p.sdk).ok();
                    run.name = p
                        .meta
                        .as_ref()
                        .and_then(|m| m.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    run.started_at = Some(env.ts);
                    rows.push(run.row(run_id));
                }
                Message::RunFinished(p) => {
                    run.status = p.status.as_str().to_owned();
                    run.ended_at = Some(env.ts);
                    run.nodes.clear();
                    // A long-lived hub must not keep every seq of every run it ever saw: a
                    // finished run forgets them, and loads them from storage again if more of
                    // it arrives (a replay).
                    run.seqs = None;
                    rows.push(run.row(run_id));
                    // A finished run holds no gate any more.
                    let stale: Vec<PauseKey> = st
                        .pauses
                        .keys()
                        .filter(|(r, _)| r == run_id)
                        .cloned()
                        .collect();
                    for k in stale {
                        if let Some(mut pause) = st.pauses.remove(&k) {
                            if let Some(w) = pause.inflight.take().and_then(|f| f.waiter) {
                                let _ = w.send(Outcome::Gone("the run finished".into()));
                            }
                            st.closed.insert(
                                k,
                                Closed {
                                    at: Instant::now(),
                                    action: None,
                                    by: "app",
                                },
                            );
                            pauses_changed = true;
                        }
                    }
                }
                Message::NodeStarted(_) | Message::NodeFinished(_) | Message::NodeError(_) => {
                    run.track_node(&env.message);
                }
                Message::ExecPaused(p) => {
                    let seen = run.nodes.get(&p.node_id);
                    let reason = p.reason.map_or_else(
                        || {
                            if p.point == PausePoint::Error {
                                "error"
                            } else if st.mode == Mode::Step && p.point != PausePoint::After {
                                "step"
                            } else {
                                "breakpoint"
                            }
                        },
                        |r| r.as_str(),
                    );
                    let node_kind = seen
                        .and_then(|n| n.kind.clone())
                        .or_else(|| p.node_id.split_once(':').map(|(k, _)| k.to_owned()));
                    let node_name = seen
                        .and_then(|n| n.name.clone())
                        .or_else(|| p.node_id.split_once(':').map(|(_, n)| n.to_owned()));
                    let key = (run_id.to_owned(), p.pause_id.clone());
                    st.closed.remove(&key);
                    st.pauses.insert(
                        key,
                        Pause {
                            run_id: run_id.to_owned(),
                            pause_id: p.pause_id.clone(),
                            node_id: p.node_id.clone(),
                            point: p.point.as_str().to_owned(),
                            reason: reason.to_owned(),
                            instance_id: p
                                .extra
                                .get("instanceId")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                                .or_else(|| seen.and_then(|n| n.instance_id.clone())),
                            since: now,
                            kind: node_kind,
                            name: node_name,
                            // A client may say what is held in the pause itself (at an
                            // `after` gate the result is not in any earlier event).
                            input: p
                                .extra
                                .get("input")
                                .cloned()
                                .or_else(|| seen.and_then(|n| n.input.clone())),
                            output: p
                                .extra
                                .get("output")
                                .cloned()
                                .or_else(|| seen.and_then(|n| n.output.clone())),
                            error: p
                                .extra
                                .get("error")
                                .cloned()
                                .or_else(|| seen.and_then(|n| n.error.clone())),
                            loop_info: p.extra.get("loop").cloned(),
                            // The gate is held by the app that reported it.
                            identity: Some(identity),
                            inflight: None,
                        },
                    );
                    pauses_changed = true;
                }
                Message::ExecResumed(p) => {
                    let key = find_pause(&st.pauses, run_id, &p.pause_id, identity);
                    if let Some(mut pause) = key.as_ref().and_then(|k| st.pauses.remove(k)) {
                        let by = match pause.inflight.take().and_then(|f| f.waiter) {
                            Some(w) => {
                                let _ = w.send(Outcome::Resumed {
                                    action: p.action.as_str().to_owned(),
                                });
                                "hub"
                            }
                            None => "app",
                        };
                        prune_closed(&mut st.closed);
                        st.closed.insert(
                            (pause.run_id, pause.pause_id),
                            Closed {
                                at: Instant::now(),
                                action: Some(p.action.as_str().to_owned()),
                                by,
                            },
                        );
                        pauses_changed = true;
                    }
                }
                Message::ExecRefused(p) => {
                    let key = find_pause(&st.pauses, run_id, &p.pause_id, identity);
                    // A refusal that names another request (a late answer to one that timed
                    // out) does not answer the one in flight.
                    let answers = |f: &InFlight| {
                        p.extra
                            .get("requestId")
                            .and_then(Value::as_str)
                            .is_none_or(|r| r == f.request_id)
                    };
                    if let Some(pause) = key.as_ref().and_then(|k| st.pauses.get_mut(k))
                        && pause.inflight.as_ref().is_some_and(answers)
                        && let Some(f) = pause.inflight.take()
                    {
                        if let Some(w) = f.waiter {
                            let _ = w.send(Outcome::Refused {
                                code: p.code.as_str().to_owned(),
                                message: p.message.clone(),
                            });
                        }
                        pauses_changed = true;
                    }
                }
                _ => {}
            }
        }
        for r in rows {
            self.writer.run(r).await;
        }
        if duplicate {
            return false;
        }
        let run_arc: Arc<str> = Arc::from(run_id);
        self.writer
            .event(EventRow {
                run_id: Arc::clone(&run_arc),
                seq: env.seq,
                ts: env.ts,
                kind: env.message.type_name().to_owned(),
                body: Arc::clone(&body),
            })
            .await;
        if pauses_changed {
            self.pauses_changed();
        }
        // Fan-out after the event is queued for storage: a viewer that subscribes later
        // finds it in the database, one that subscribed earlier gets it here.
        if self.subscribed.load(Ordering::Relaxed) > 0 {
            let mut st = self.lock();
            let mut dead = Vec::new();
            for (id, v) in &st.viewers {
                if v.sub.as_deref() == Some(run_id)
                    && v.tx
                        .try_send(ViewerOut::Event {
                            run_id: Arc::clone(&run_arc),
                            seq: env.seq,
                            body: Arc::clone(&body),
                        })
                        .is_err()
                {
                    dead.push(*id);
                }
            }
            for id in dead {
                drop_viewer(&mut st, &self.subscribed, id);
            }
        }
        true
    }

    // ----- resume -----------------------------------------------------------------------

    /// Checks a bearer token of the HTTP API for `need`.
    pub fn authorize_agent(&self, bearer: Option<&str>, need: Need) -> Result<(), Outcome> {
        let Some(token) = bearer else {
            return Err(Outcome::Unauthorized(
                "missing Authorization: Bearer <agent token> (the token is in the run file)".into(),
            ));
        };
        if self.cfg.viewer_token.matches(token) {
            return Err(Outcome::Unauthorized(
                "this is the viewer token; the HTTP API takes the agent token from the run file"
                    .into(),
            ));
        }
        if !self.cfg.agent_token.matches(token) {
            return Err(Outcome::Unauthorized("wrong token".into()));
        }
        let allowed = match need {
            Need::Debug => true,
            Need::Resume(ResumeAction::Inject) => self.cfg.allow_control == AllowControl::Inject,
            Need::Resume(_) => self.cfg.allow_control != AllowControl::Off,
        };
        if allowed {
            Ok(())
        } else {
            let (what, flag) = match need {
                Need::Resume(ResumeAction::Inject) => ("inject", "inject"),
                _ => ("resume gates", "resume"),
            };
            Err(Outcome::Forbidden(format!(
                "the agent token may not {what}: start graphmind serve with --allow-control {flag}"
            )))
        }
    }

    /// Checks the viewer token of a `/ws/ui` control frame.
    pub fn authorize_viewer(&self, token: Option<&str>) -> Result<(), Outcome> {
        match token {
            Some(t) if self.cfg.viewer_token.matches(t) => Ok(()),
            Some(t) if self.cfg.agent_token.matches(t) => Err(Outcome::Unauthorized(
                "this is the agent token; viewer control takes the token of the viewer link".into(),
            )),
            Some(_) => Err(Outcome::Unauthorized(
                "wrong token; open the link graphmind serve printed".into(),
            )),
            None => Err(Outcome::Unauthorized(
                "control needs the viewer token: open the link graphmind serve printed".into(),
            )),
        }
    }

    /// Sends `exec.resume` to the app owning the run and waits (bounded) for its answer.
    /// The first resume of a pause wins; others get `taken` while it is in flight or after
    /// it released the gate.
    pub async fn resume(
        &self,
        run_id: &str,
        pause_id: &str,
        action: ResumeAction,
        output: Option<Value>,
    ) -> Outcome {
        if action == ResumeAction::Inject && output.is_none() {
            return Outcome::Invalid("inject needs an output".into());
        }
        let request_id = random_id("req");
        let payload = ExecResume {
            pause_id: pause_id.to_owned(),
            action,
            output: if action == ResumeAction::Inject {
                output
            } else {
                None
            },
            input: None,
            request_id: Some(request_id.clone()),
            extra: Extra::new(),
        };
        let frame = self.frame(run_id, Message::ExecResume(payload));
        if frame.len() > MAX_CONTROL_FRAME {
            return Outcome::Invalid(format!(
                "the output is too large ({} bytes); at most {MAX_CONTROL_FRAME} bytes reach an app",
                frame.len()
            ));
        }
        let rx = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let key = (run_id.to_owned(), pause_id.to_owned());
            let Some(pause) = st.pauses.get_mut(&key) else {
                return match st.closed.get(&key) {
                    Some(c) if c.by == "hub" => Outcome::Taken(format!(
                        "another resume already released this pause ({})",
                        c.action.as_deref().unwrap_or("?")
                    )),
                    Some(c) if c.by == "disconnect" => {
                        Outcome::Gone("the app disconnected; its held gates continued".into())
                    }
                    Some(_) => Outcome::Gone("the app already released this pause".into()),
                    None => Outcome::Gone(format!("no open pause {pause_id} in run {run_id}")),
                };
            };
            if pause.inflight.is_some() {
                return Outcome::Taken("another resume of this pause is in flight".into());
            }
            let conn = pause.identity.and_then(|i| st.live.get(&i));
            let Some(app) = conn.and_then(|c| st.apps.get(c)) else {
                return Outcome::Gone("the app that owns this run is not connected".into());
            };
            if app.tx.send(AppOut::Text(frame)).is_err() {
                return Outcome::Gone("the app that owns this run is not connected".into());
            }
            let (tx, rx) = oneshot::channel();
            pause.inflight = Some(InFlight {
                request_id: request_id.clone(),
                waiter: Some(tx),
            });
            rx
        };
        self.pauses_changed();
        match tokio::time::timeout(self.cfg.resume_wait, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Outcome::Gone("the pause closed".into()),
            Err(_) => {
                // Let a later resume try again.
                let mut st = self.lock();
                let key = (run_id.to_owned(), pause_id.to_owned());
                if let Some(p) = st.pauses.get_mut(&key)
                    && p.inflight
                        .as_ref()
                        .is_some_and(|f| f.request_id == request_id)
                {
                    p.inflight = None;
                }
                drop(st);
                self.pauses_changed();
                Outcome::Sent
            }
        }
    }

    // ----- debug state ------------------------------------------------------------------

    /// The debug state as JSON.
    pub fn debug_json(&self) -> Value {
        let st = self.lock();
        debug_json(&st)
    }

    fn push_debug(&self, st: &State, frames: &[String]) {
        for app in st.apps.values() {
            for f in frames {
                let _ = app.tx.send(AppOut::Text(f.clone()));
            }
        }
        let mut feed = debug_json(st);
        feed["type"] = json!("debug");
        broadcast(st, &Arc::from(feed.to_string()));
    }

    /// Adds a breakpoint unless an equal one exists.
    pub fn set_breakpoint(&self, m: BreakpointMatcher) -> Value {
        let m = BreakpointMatcher {
            extra: Extra::new(),
            ..m
        };
        let mut st = self.lock();
        if !st.breakpoints.iter().any(|b| b.same_rule(&m)) {
            st.breakpoints.push(m.clone());
            let f = self.frame(
                RUN_ANY,
                Message::BreakpointSet(BreakpointChange {
                    matcher: m,
                    extra: Extra::new(),
                }),
            );
            self.push_debug(&st, &[f]);
        }
        debug_json(&st)
    }

    /// Removes breakpoints equal to `m`, or all of them.
    pub fn clear_breakpoints(&self, m: Option<BreakpointMatcher>) -> Value {
        let mut st = self.lock();
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut st.breakpoints)
            .into_iter()
            .partition(|b| m.as_ref().is_none_or(|m| b.same_rule(m)));
        st.breakpoints = keep;
        let mut frames = Vec::new();
        let mut sent: Vec<BreakpointMatcher> = Vec::new();
        for g in gone {
            if !sent.iter().any(|s| s.same_rule(&g)) {
                frames.push(self.frame(
                    RUN_ANY,
                    Message::BreakpointClear(BreakpointChange {
                        matcher: g.clone(),
                        extra: Extra::new(),
                    }),
                ));
                sent.push(g);
            }
        }
        if !frames.is_empty() {
            self.push_debug(&st, &frames);
        }
        debug_json(&st)
    }

    /// Switches the mode.
    pub fn set_mode(&self, mode: Mode) -> Value {
        let mut st = self.lock();
        if st.mode != mode {
            st.mode = mode;
            let f = self.frame(
                RUN_ANY,
                Message::ModeSet(ModeSet {
                    mode,
                    extra: Extra::new(),
                }),
            );
            self.push_debug(&st, &[f]);
        }
        debug_json(&st)
    }

    /// Replaces the breakpoints (when given) and the mode (when given).
    pub fn replace_debug(&self, bps: Option<Vec<BreakpointMatcher>>, mode: Option<Mode>) -> Value {
        if let Some(bps) = bps {
            let current: Vec<BreakpointMatcher> = self.lock().breakpoints.clone();
            for c in current
                .iter()
                .filter(|c| !bps.iter().any(|b| b.same_rule(c)))
            {
                self.clear_breakpoints(Some(c.clone()));
            }
            for b in bps {
                self.set_breakpoint(b);
            }
        }
        if let Some(m) = mode {
            self.set_mode(m);
        }
        self.debug_json()
    }

    // ----- viewers ----------------------------------------------------------------------

    /// Registers a viewer and builds its `hello` frame, atomically with respect to updates.
    /// `stored`: the newest stored runs, read before when runs were evicted from memory.
    pub fn viewer_connected(
        &self,
        tx: mpsc::Sender<ViewerOut>,
        stored: &[RunRow],
    ) -> (u64, String) {
        let id = self.next_id();
        let mut st = self.lock();
        let hello = json!({
            "type": "hello",
            "version": self.cfg.version,
            "debug": debug_json(&st),
            "runs": runs_json(&st, HELLO_RUNS, stored),
            "pauses": pauses_json(&st, None),
        });
        st.viewers.insert(id, ViewerConn { tx, sub: None });
        (id, hello.to_string())
    }

    /// Sets (or clears) a viewer's subscription.
    pub fn viewer_subscribe(&self, id: u64, run: Option<Arc<str>>) {
        let mut st = self.lock();
        if let Some(v) = st.viewers.get_mut(&id) {
            match (&v.sub, &run) {
                (None, Some(_)) => {
                    self.subscribed.fetch_add(1, Ordering::Relaxed);
                }
                (Some(_), None) => {
                    self.subscribed.fetch_sub(1, Ordering::Relaxed);
                }
                _ => {}
            }
            v.sub = run;
        }
    }

    /// Forgets a viewer.
    pub fn viewer_disconnected(&self, id: u64) {
        let mut st = self.lock();
        drop_viewer(&mut st, &self.subscribed, id);
    }

    /// Sends `run` frames for runs changed since the last call (called on a short tick so a
    /// flood of events becomes a few updates).
    pub fn flush_dirty_runs(&self) {
        let mut st = self.lock();
        if st.dirty.is_empty() {
            return;
        }
        let dirty = std::mem::take(&mut st.dirty);
        if st.viewers.is_empty() {
            return;
        }
        for id in dirty {
            if let Some(r) = st.runs.get(&id) {
                let frame = json!({"type": "run", "run": run_json(&st, &id, r)});
                broadcast(&st, &Arc::from(frame.to_string()));
            }
        }
    }

    fn pauses_changed(&self) {
        let st = self.lock();
        if !st.viewers.is_empty() {
            let frame = json!({"type": "pauses", "pauses": pauses_json(&st, None)});
            broadcast(&st, &Arc::from(frame.to_string()));
        }
        drop(st);
        self.pauses_version.send_modify(|v| *v += 1);
    }

    // ----- reads ------------------------------------------------------------------------

    /// Whether runs were evicted from memory since start: then lists and reads of runs must
    /// look in storage too.
    pub fn evicted_any(&self) -> bool {
        self.lock().evicted
    }

    /// Runs, newest first: those in memory, merged with `stored` (the newest stored runs, read
    /// when runs were evicted from memory; memory wins for a run in both).
    pub fn runs(&self, limit: usize, stored: &[RunRow]) -> Vec<Value> {
        runs_json(&self.lock(), limit, stored)
    }

    /// One run's summary, if it is in memory.
    pub fn run(&self, run_id: &str) -> Option<Value> {
        let st = self.lock();
        st.runs.get(run_id).map(|r| run_json(&st, run_id, r))
    }

    /// One run's summary, from memory or else from storage (an evicted run).
    pub async fn run_anywhere(&self, run_id: &str) -> Result<Option<Value>, String> {
        if let Some(r) = self.run(run_id) {
            return Ok(Some(r));
        }
        let reader = Arc::clone(&self.reader);
        let rid = run_id.to_owned();
        let row = tokio::task::spawn_blocking(move || reader.run(&rid))
            .await
            .map_err(|e| e.to_string())??;
        // It may have come back into memory meanwhile: memory is newer.
        if let Some(r) = self.run(run_id) {
            return Ok(Some(r));
        }
        Ok(row.map(|row| {
            let (id, r) = RunState::from_row(row);
            run_json(&self.lock(), &id, &r)
        }))
    }

    /// The newest `limit` stored runs when runs were evicted from memory (else none: memory
    /// holds every stored run).
    pub async fn stored_runs(&self, limit: usize) -> Result<Vec<RunRow>, String> {
        if !self.evicted_any() {
            return Ok(Vec::new());
        }
        let reader = Arc::clone(&self.reader);
        tokio::task::spawn_blocking(move || reader.runs(limit))
            .await
            .map_err(|e| e.to_string())?
    }

    // ----- housekeeping -----------------------------------------------------------------

    /// Finished (or abandoned) runs beyond the memory cap that may leave memory, oldest first:
    /// not touched in the last second and holding no pause. Evict them with
    /// [`Hub::evict`] once the writer committed everything queued before.
    pub fn eviction_candidates(&self) -> Vec<String> {
        let st = self.lock();
        let cap = self.cfg.memory_runs;
        if st.runs.len() <= cap {
            return Vec::new();
        }
        let settled = st.runs.values().filter(|r| r.settled()).count();
        if settled <= cap {
            return Vec::new();
        }
        let paused = paused_runs(&st);
        let now = now_ms();
        let mut c: Vec<(u64, &String)> = st
            .runs
            .iter()
            .filter(|(id, r)| evictable(&st, id, r, &paused, now))
            .map(|(id, r)| (r.start_key(), id))
            .collect();
        c.sort_unstable();
        c.truncate(settled - cap);
        c.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// Drops the given runs from memory, those still evictable. Returns how many left.
    pub fn evict(&self, ids: &[String]) -> usize {
        let mut guard = self.lock();
        let st = &mut *guard;
        let paused: HashSet<String> = paused_runs(st).into_iter().map(str::to_owned).collect();
        let paused: HashSet<&str> = paused.iter().map(String::as_str).collect();
        let now = now_ms();
        let mut n = 0;
        for id in ids {
            let Some(r) = st.runs.get(id) else { continue };
            if !evictable(st, id, r, &paused, now) {
                continue;
            }
            st.runs.remove(id);
            st.dirty.remove(id);
            n += 1;
        }
        if n > 0 {
            st.evicted = true;
            self.stats
                .runs_evicted
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    /// Forgets what a long-lived hub no longer needs: session tokens of apps that went away
    /// more than the abandon grace ago and own no unfinished run (at most
    /// [`TOKENS_PER_IDENTITY`] per app, [`MAX_SESSION_TOKENS`] in all), and closed pauses
    /// older than their memory.
    pub fn sweep(&self) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let grace = self.cfg.abandon_grace;
        st.gone.retain(|_, t| t.elapsed() < grace);
        st.closed.retain(|_, c| c.at.elapsed() < CLOSED_MEMORY);
        let mut keep: HashSet<u64> = st.live.keys().copied().collect();
        keep.extend(st.left.keys().copied());
        keep.extend(st.gone.keys().copied());
        keep.extend(
            st.runs
                .values()
                .filter(|r| !r.finished())
                .filter_map(|r| r.owner),
        );
        let before = st.tokens.len();
        st.tokens.retain(|_, t| keep.contains(&t.identity));
        // The newest few per identity.
        let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
        for t in st.tokens.values() {
            per.entry(t.identity).or_default().push(t.issued);
        }
        let mut oldest_kept: HashMap<u64, u64> = HashMap::new();
        for (identity, mut issued) in per {
            if issued.len() > TOKENS_PER_IDENTITY {
                issued.sort_unstable_by(|a, b| b.cmp(a));
                oldest_kept.insert(identity, issued[TOKENS_PER_IDENTITY - 1]);
            }
        }
        if !oldest_kept.is_empty() {
            st.tokens.retain(|_, t| {
                oldest_kept
                    .get(&t.identity)
                    .is_none_or(|&min| t.issued >= min)
            });
        }
        // A hard cap: those of disconnected apps go first, oldest first.
        if st.tokens.len() > MAX_SESSION_TOKENS {
            let mut idle: Vec<(u64, String)> = st
                .tokens
                .iter()
                .filter(|(_, t)| !st.live.contains_key(&t.identity))
                .map(|(k, t)| (t.issued, k.clone()))
                .collect();
            idle.sort_unstable();
            let excess = st.tokens.len() - MAX_SESSION_TOKENS;
            for (_, k) in idle.into_iter().take(excess) {
                st.tokens.remove(&k);
            }
        }
        let expired = before - st.tokens.len();
        if expired > 0 {
            self.stats
                .tokens_expired
                .fetch_add(expired as u64, Ordering::Relaxed);
        }
    }

    /// The runs a retention pass must not delete: those still running or holding a pause.
    pub fn retention_protect(&self) -> HashSet<String> {
        let st = self.lock();
        let paused = paused_runs(&st);
        st.runs
            .iter()
            .filter(|(id, r)| r.status == "running" || paused.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Drops runs the retention pass that started at `since` (epoch ms) deleted from memory.
    /// A run that became active again meanwhile stays; its returned row is to be stored again.
    /// The others are announced to every viewer in `removed` frames (at most
    /// [`REMOVED_BATCH`] ids each); a viewer subscribed to one of them is unsubscribed, and a
    /// viewer whose queue has no room for the frame is dropped (it reconnects, and its new
    /// `hello` no longer lists them).
    pub fn forget_deleted(&self, ids: &[String], since: u64) -> Vec<RunRow> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let paused: HashSet<String> = paused_runs(st).into_iter().map(str::to_owned).collect();
        let mut rows = Vec::new();
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            match st.runs.get(id) {
                Some(r) if r.status == "running" || paused.contains(id) || r.touched >= since => {
                    rows.push(r.row(id));
                }
                Some(_) => {
                    st.runs.remove(id);
                    st.dirty.remove(id);
                    removed.push(id.clone());
                }
                // Evicted from memory earlier: only storage had it.
                None => removed.push(id.clone()),
            }
        }
        if !removed.is_empty() {
            announce_removed(st, &self.subscribed, &removed);
        }
        self.stats
            .runs_deleted
            .fetch_add(ids.len() as u64, Ordering::Relaxed);
        rows
    }

    /// Open pauses, oldest first.
    pub fn pauses(&self, run_id: Option<&str>) -> Vec<Value> {
        pauses_json(&self.lock(), run_id)
    }

    /// Waits until a pause (of `run_id`, if given) is open, or the time is up.
    pub async fn wait_pauses(&self, run_id: Option<&str>, wait: Duration) -> Vec<Value> {
        let mut rx = self.pauses_version.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            rx.borrow_and_update();
            let p = self.pauses(run_id);
            if !p.is_empty() {
                return p;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return self.pauses(run_id),
            }
        }
    }

    /// One pause, open or recently closed.
    pub fn pause(&self, run_id: &str, pause_id: &str) -> Option<Value> {
        let st = self.lock();
        let key = (run_id.to_owned(), pause_id.to_owned());
        if let Some(p) = st.pauses.get(&key) {
            return Some(p.to_json());
        }
        st.closed
            .get(&key)
            .filter(|c| c.at.elapsed() < CLOSED_MEMORY)
            .map(|c| {
                json!({"pauseId": pause_id, "runId": run_id, "state": "closed",
                   "action": c.action, "by": c.by})
            })
    }

    /// The `/health` document.
    pub fn health(&self) -> Value {
        let st = self.lock();
        json!({
            "ok": true,
            "version": self.cfg.version,
            "pid": std::process::id(),
            "port": self.cfg.port,
            "apps": st.apps.len(),
            "viewers": st.viewers.len(),
            "runs": st.runs.len(),
            "sessionTokens": st.tokens.len(),
            "pauses": st.pauses.len(),
            "stats": self.stats.to_json(),
        })
    }

    /// Closes every app connection (shutdown).
    pub fn close_apps(&self) {
        let st = self.lock();
        for app in st.apps.values() {
            let _ = app.tx.send(AppOut::Close(
                1001,
                "graphmind serve is shutting down".into(),
            ));
        }
    }
}

fn find_pause(
    pauses: &HashMap<PauseKey, Pause>,
    run_id: &str,
    pause_id: &str,
    identity: u64,
) -> Option<PauseKey> {
    let key = (run_id.to_owned(), pause_id.to_owned());
    if pauses.contains_key(&key) {
        return Some(key);
    }
    // Some clients report exec.resumed outside the run's id; pause ids are unique per app.
    pauses
        .iter()
        .find(|(_, p)| p.pause_id == pause_id && p.identity == Some(identity))
        .map(|(k, _)| k.clone())
}

fn prune_closed(closed: &mut HashMap<PauseKey, Closed>) {
    if closed.len() > 1024 {
        closed.retain(|_, c| c.at.elapsed() < CLOSED_MEMORY);
    }
}

fn drop_viewer(st: &mut State, subscribed: &AtomicUsize, id: u64) {
    if let Some(v) = st.viewers.remove(&id)
        && v.sub.is_some()
    {
        subscribed.fetch_sub(1, Ordering::Relaxed);
    }
}

fn broadcast(st: &State, frame: &Arc<str>) {
    for v in st.viewers.values() {
        // A viewer whose queue is full is dropped on its next live event; a missed list
        // update is repaired by the next one.
        let _ = v.tx.try_send(ViewerOut::Frame(Arc::clone(frame)));
    }
}

/// Sends `removed` frames naming `removed` to every viewer, ends the subscriptions to those
/// runs, and drops the viewers that cannot take a frame.
fn announce_removed(st: &mut State, subscribed: &AtomicUsize, removed: &[String]) {
    if st.viewers.is_empty() {
        return;
    }
    let gone: HashSet<&str> = removed.iter().map(String::as_str).collect();
    let batches: Vec<ViewerOut> = removed
        .chunks(REMOVED_BATCH)
        .map(|ids| ViewerOut::Removed {
            frame: Arc::from(json!({"type": "removed", "runIds": ids}).to_string()),
            runs: Arc::new(ids.iter().cloned().collect()),
        })
        .collect();
    let mut dead = Vec::new();
    for (id, v) in &mut st.viewers {
        if v.sub.as_deref().is_some_and(|s| gone.contains(s)) {
            v.sub = None;
            subscribed.fetch_sub(1, Ordering::Relaxed);
        }
        if batches.iter().any(|b| v.tx.try_send(b.clone()).is_err()) {
            dead.push(*id);
        }
    }
    for id in dead {
        drop_viewer(st, subscribed, id);
    }
}

fn debug_json(st: &State) -> Value {
    json!({
        "breakpoints": st.breakpoints.iter().map(matcher_json).collect::<Vec<_>>(),
        "mode": st.mode.as_str(),
    })
}

fn run_json(st: &State, run_id: &str, r: &RunState) -> Value {
    let live = !r.finished() && r.owner.is_some_and(|o| st.live.contains_key(&o));
    let started = r.started_at.unwrap_or(r.created_at);
    json!({
        "runId": run_id,
        "app": r.app,
        "name": r.name,
        "status": r.status,
        "live": live,
        "startedAt": started,
        "endedAt": r.ended_at,
        "durationMs": r.ended_at.map(|e| e.saturating_sub(started)),
        "eventCount": r.event_count,
        "sdk": r.sdk,
    })
}

/// Runs listed in a viewer's `hello`.
pub const HELLO_RUNS: usize = 200;

/// The newest `limit` runs of memory and `stored` (memory wins for a run in both).
fn runs_json(st: &State, limit: usize, stored: &[RunRow]) -> Vec<Value> {
    let extra: Vec<(String, RunState)> = stored
        .iter()
        .filter(|r| !st.runs.contains_key(&r.run_id))
        .map(|r| RunState::from_row(r.clone()))
        .collect();
    let mut v: Vec<(&String, &RunState)> = st
        .runs
        .iter()
        .chain(extra.iter().map(|(id, r)| (id, r)))
        .collect();
    v.sort_by(|a, b| {
        b.1.start_key()
            .cmp(&a.1.start_key())
            .then_with(|| b.0.cmp(a.0))
    });
    v.into_iter()
        .take(limit)
        .map(|(id, r)| run_json(st, id, r))
        .collect()
}

/// Runs that hold an open pause.
fn paused_runs(st: &State) -> HashSet<&str> {
    st.pauses.keys().map(|(r, _)| r.as_str()).collect()
}

/// Whether a run may leave memory: finished or abandoned, idle for a second, no pause held,
/// no app reporting it.
fn evictable(st: &State, id: &str, r: &RunState, paused: &HashSet<&str>, now: u64) -> bool {
    r.settled()
        && r.touched.saturating_add(EVICT_IDLE_MS) <= now
        && !paused.contains(id)
        && (r.finished() || !r.owner.is_some_and(|o| st.live.contains_key(&o)))
}

fn pauses_json(st: &State, run_id: Option<&str>) -> Vec<Value> {
    let mut v: Vec<&Pause> = st
        .pauses
        .values()
        .filter(|p| run_id.is_none_or(|r| p.run_id == r))
        .collect();
    v.sort_by(|a, b| {
        a.since
            .cmp(&b.since)
            .then_with(|| a.pause_id.cmp(&b.pause_id))
    });
    v.into_iter().map(Pause::to_json).collect()
}
