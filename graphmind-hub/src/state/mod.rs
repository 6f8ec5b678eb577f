//! The hub's live state: debug state, connected apps and their identities (run ownership),
//! runs, the pause registry and connected viewers. One mutex guards it; nothing awaits while
//! holding it.
//!
//! This module holds the shared types and [`HubState`] itself; each submodule adds the methods
//! of one topic:
//! - `access`: the tokens of the HTTP API and of viewer control.
//! - `apps`: app connections, their identities and session tokens, abandoned runs.
//! - `intake`: taking in an app's events (dedupe, run claims, pause bookkeeping, storage,
//!   fan-out to subscribed viewers).
//! - `runs`: run state, reads of runs (memory and storage), eviction and retention.
//! - `pauses`: the pause registry, resume routing and its outcomes.
//! - `remember`: decisions remembered for a run, applied by the hub to further holds.
//! - `debug`: breakpoints and mode.
//! - `breakpoint_bounds`: what the breakpoint list may hold, in count and in bytes.
//! - `viewers`: viewer connections, subscriptions, broadcasts and `removed` frames.
//! - `views`: the JSON of runs, pauses and the debug state (no topic imports another's
//!   views: they all read them from here).

mod access;
mod apps;
pub mod breakpoint_bounds;
mod debug;
mod intake;
mod pauses;
mod remember;
mod runs;
mod viewers;
mod views;

pub use intake::{Incoming, Pending};

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use graphmind_protocol::control::{Principal, Remembered, ResumeAnswer};
use graphmind_protocol::feed::RunStatus;
use graphmind_protocol::{
    BreakpointMatcher, Envelope, Message, Mode, PausePoint, PauseReason, ResumeAction,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot, watch};

use super::storage::{Reader, RunRow, Writer};
use super::tokens::Token;
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
/// Longest run id taken in, in characters (a longer one is dropped and counted).
pub const MAX_RUN_ID_CHARS: usize = 128;
pub use breakpoint_bounds::MAX_BREAKPOINTS;
/// Bytes a viewer's outgoing queue may hold; a viewer past it is closed, socket and all (it
/// reconnects and replays). Event bodies are shared with storage and other viewers, so this
/// over-counts: a viewer's own share of the hub's memory is at most this.
pub const VIEWER_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Event reads from storage (HTTP event pages, `/ws/ui` replay pages) that may run at once;
/// each holds at most one page of `api::PAGE_BYTES` / `ui_feed::FRAME_BYTES`.
pub const READ_PERMITS: usize = 4;
/// Most decisions remembered for runs at once, over all runs (`remember`).
pub const MAX_REMEMBERED: usize = 256;
/// Largest `exec.resume` frame sent to an app (the Python client closes on frames > 1 MiB).
pub const MAX_CONTROL_FRAME: usize = 1024 * 1024;
/// Deepest nesting (objects and arrays) of a resume's `output` or `input`: an app drops a frame
/// nested deeper than [`graphmind_protocol::MAX_DEPTH`] without answering, and `exec.resume`
/// puts the value two levels down (the envelope, its payload). A deeper one is refused (`422`).
pub const MAX_RESUME_DEPTH: usize = graphmind_protocol::MAX_DEPTH - 2;

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
    /// The secret the hub proves itself to apps with (run file `hubSecret`; see
    /// `graphmind_protocol::hub_auth`).
    pub hub_secret: Token,
    /// Grace before a run whose app went away counts as abandoned.
    pub abandon_grace: Duration,
    /// How long a resume waits for the app's `exec.resumed` / `exec.refused` (5 s).
    pub resume_wait: Duration,
    /// How long an `/ingest` socket may stay open without sending `hello` (10 s).
    pub hello_timeout: Duration,
    /// Most finished (or abandoned) runs kept in memory; older ones are read from storage.
    pub memory_runs: usize,
    /// How long a `/ws/ui` socket may take to send its auth frame (5 s).
    pub ui_auth_timeout: Duration,
    /// How long a request's body may take to arrive once its headers did (10 s).
    pub body_timeout: Duration,
    /// Whether held calls may run with an edited input (`hubCapabilities` `edit-input`).
    pub edit_input: bool,
    /// Who decided, when a resume request names nobody: the user the hub runs as.
    pub operator: Option<String>,
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
    /// `hub.ack` frames sent (to apps that announced `hub-ack`).
    pub acks_sent: AtomicU64,
    /// Finished runs dropped from memory (they stay in storage).
    pub runs_evicted: AtomicU64,
    /// Runs deleted by the retention rule while running.
    pub runs_deleted: AtomicU64,
    /// Events of runs the retention rule deleted (an app replaying its ring), dropped.
    pub events_for_deleted_runs: AtomicU64,
    /// Session tokens forgotten (their app gone and nothing left to reclaim).
    pub tokens_expired: AtomicU64,
    /// Frames for a run another app connection claimed (dropped).
    pub foreign_run_frames: AtomicU64,
    /// Frames whose run id holds a lone UTF-16 surrogate (dropped).
    pub run_ids_invalid: AtomicU64,
    /// Frames whose run id is longer than [`MAX_RUN_ID_CHARS`] (dropped).
    pub run_ids_too_long: AtomicU64,
    /// Breakpoints refused: the hub holds [`MAX_BREAKPOINTS`] already, or a matcher or the
    /// whole list is over its byte limit ([`breakpoint_bounds`]).
    pub breakpoints_refused: AtomicU64,
    /// Viewers closed for falling behind: past their queue's byte budget or message count,
    /// or not taking a frame within the send timeout.
    pub viewers_closed_slow: AtomicU64,
    /// Event pages refused with `503` because [`READ_PERMITS`] reads were running.
    pub reads_busy: AtomicU64,
    /// `/ws/ui` sockets closed for sending no auth frame in time.
    pub ui_auth_timeouts: AtomicU64,
    /// `/ws/ui` sockets closed for a first frame without a valid token.
    pub ui_auth_rejected: AtomicU64,
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
            "acksSent": g(&self.acks_sent),
            "runsEvicted": g(&self.runs_evicted),
            "runsDeleted": g(&self.runs_deleted),
            "eventsForDeletedRuns": g(&self.events_for_deleted_runs),
            "sessionTokensExpired": g(&self.tokens_expired),
            "foreignRunFrames": g(&self.foreign_run_frames),
            "runIdsInvalid": g(&self.run_ids_invalid),
            "runIdsTooLong": g(&self.run_ids_too_long),
            "breakpointsRefused": g(&self.breakpoints_refused),
            "viewersClosedSlow": g(&self.viewers_closed_slow),
            "readsBusy": g(&self.reads_busy),
            "uiAuthTimeouts": g(&self.ui_auth_timeouts),
            "uiAuthRejected": g(&self.ui_auth_rejected),
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

impl ViewerOut {
    /// What it holds in bytes, as counted against [`VIEWER_QUEUE_BYTES`].
    pub fn bytes(&self) -> usize {
        match self {
            Self::Frame(f) | Self::Removed { frame: f, .. } => f.len(),
            Self::Event { run_id, body, .. } => run_id.len() + body.len(),
        }
    }
}

/// The accounting of one viewer's outgoing queue, shared by the hub (which fills it) and the
/// viewer's connection (which drains it): the bytes it holds, and the signal by which the hub
/// closes a viewer that fell behind. The connection awaits [`closed`](Self::closed) beside
/// everything else it does, so a viewer that stops reading is closed even while a send to it
/// is stuck.
#[derive(Debug, Default)]
pub struct ViewerQueue {
    bytes: AtomicUsize,
    closing: AtomicBool,
    close: Notify,
}

impl ViewerQueue {
    /// Marks an item as taken off the queue by the connection.
    pub fn taken(&self, item: &ViewerOut) {
        self.bytes.fetch_sub(item.bytes(), Ordering::Relaxed);
    }

    /// Completes once the hub closed the viewer.
    pub async fn closed(&self) {
        self.close.notified().await;
    }

    /// Whether the hub closed the viewer.
    pub fn is_closed(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Closes the viewer (its connection ends, dropping whatever is queued).
    pub fn shut(&self) {
        if !self.closing.swap(true, Ordering::Relaxed) {
            // A stored permit: the connection may not be awaiting yet.
            self.close.notify_one();
        }
    }
}

/// Run ids per `removed` feed frame at most (a large retention pass sends several).
pub const REMOVED_BATCH: usize = 500;

/// Runs listed in a viewer's `hello`.
pub const HELLO_RUNS: usize = 200;

/// The answer to a resume request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The app confirmed the release.
    Resumed {
        /// The action the app reported.
        action: String,
        /// Who the release is credited to.
        principal: Principal,
        /// The input the call ran with, when it was edited (`edited.after`).
        edited: Option<Value>,
        /// The decision is remembered for further holds of the node in the run.
        remembered: bool,
    },
    /// Sent, not confirmed in time.
    Sent,
    /// The app (or the hub itself, before forwarding) refused; the gate stays held.
    Refused {
        /// The refusal code.
        code: String,
        /// The explanation.
        message: Option<String>,
        /// The hub refused it without asking the app (editing off, an app or gate that
        /// cannot take an edit).
        by_hub: bool,
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

    /// The answer to a resume request of `pause_id` in `run_id`, sent with `request_id`.
    pub fn answer(&self, run_id: &str, pause_id: &str, request_id: Option<String>) -> ResumeAnswer {
        let message = self.message();
        let (action, code, principal, edited, remembered) = match self {
            Self::Resumed {
                action,
                principal,
                edited,
                remembered,
            } => (
                Some(action.clone()),
                None,
                Some(*principal),
                edited.clone(),
                *remembered,
            ),
            Self::Refused { code, .. } => (None, Some(code.clone()), None, None, false),
            _ => (None, None, None, None, false),
        };
        let refused_by = match self {
            Self::Refused { by_hub, .. } => Some(if *by_hub { "hub" } else { "app" }.to_owned()),
            _ => None,
        };
        ResumeAnswer {
            outcome: self.name().to_owned(),
            run_id: run_id.to_owned(),
            pause_id: pause_id.to_owned(),
            action,
            code,
            error: message.clone().filter(|_| !self.ok()),
            message,
            request_id,
            principal,
            edited,
            remembered,
            refused_by,
        }
    }

    /// A readable explanation.
    pub fn message(&self) -> Option<String> {
        match self {
            Self::Resumed { .. } => None,
            Self::Sent => Some(
                "the app did not answer in time; the gate is still held (retry, or check the app)"
                    .into(),
            ),
            Self::Refused { message, code, .. } => Some(
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
    /// Nothing but a valid agent token (checked before a body is read).
    Token,
    /// Change breakpoints or mode.
    Debug,
    /// Resume a gate with this action.
    Resume(ResumeAction),
    /// Run a held call with an edited input (as much as an inject: it changes what runs).
    Edit,
}

#[derive(Debug, Default)]
struct NodeSeen {
    kind: Option<&'static str>,
    name: Option<String>,
    instance_id: Option<String>,
    input: Option<Held>,
    output: Option<Held>,
    error: Option<Value>,
}

/// A node's input or output as the hub keeps it for a pause to show: the value (a frame read
/// the full way), or where it is in the frame's stored text (a frame read quickly: parsed only
/// when a pause shows it, so the frames most traffic is made of build no JSON tree).
#[derive(Debug, Clone)]
enum Held {
    Value(Value),
    Span(Arc<str>, std::ops::Range<usize>),
}

impl Held {
    fn value(&self) -> Option<Value> {
        match self {
            Self::Value(v) => Some(v.clone()),
            Self::Span(text, span) => crate::quick_parse::value_at(text, span),
        }
    }
}

/// Most runs remembered as announced incomplete before they are in memory.
const MAX_GAPS_PENDING: usize = 10_000;

#[derive(Debug)]
struct RunState {
    /// Its id, shared with the rows queued for storage and the viewers' events.
    id: Arc<str>,
    app: Option<String>,
    name: Option<String>,
    status: RunStatus,
    started_at: Option<u64>,
    ended_at: Option<u64>,
    sdk: Option<Value>,
    created_at: u64,
    event_count: u64,
    /// Its `node.error` events taken in.
    error_count: u64,
    /// Its app announced events of it lost (`lostRuns`): shown as incomplete.
    incomplete: bool,
    /// The identity (app session) that owns the run.
    owner: Option<u64>,
    /// Seqs stored; `None` until loaded from the database (a run of an earlier start, or a
    /// finished run that receives more frames).
    seqs: Option<HashSet<u64>>,
    nodes: HashMap<String, NodeSeen>,
    /// When its latest event was taken in (epoch ms; 0 for a run loaded from storage).
    touched: u64,
}

#[derive(Debug)]
struct InFlight {
    request_id: String,
    waiter: Option<oneshot::Sender<Outcome>>,
    /// Who asked (stamped onto the stored `exec.resumed`).
    principal: Principal,
    /// Their label.
    operator: Option<String>,
    /// The decision to remember once the app confirms it.
    remember: Option<Remembered>,
    /// Sent by the hub for a remembered decision.
    remembered: bool,
}

#[derive(Debug)]
struct Pause {
    run_id: String,
    pause_id: String,
    node_id: String,
    point: PausePoint,
    reason: PauseReason,
    instance_id: Option<String>,
    since: u64,
    kind: Option<String>,
    name: Option<String>,
    input: Option<Value>,
    output: Option<Value>,
    error: Option<Value>,
    /// The loop guard's details of a `reason: "loop"` hold.
    loop_info: Option<Value>,
    /// The actions the gate accepts, when the client says (`"actions"` on `exec.paused`, an
    /// array of action names); `None`: not said, any may be tried.
    actions: Option<Value>,
    /// Its input may be replaced: the gate said `editable`, its app announced `edit-input`
    /// and the hub has editing on.
    editable: bool,
    identity: Option<u64>,
    inflight: Option<InFlight>,
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
    /// Its `hello` announced `edit-input`.
    edit_input: bool,
    /// Its `hello` announced `reject`.
    reject: bool,
}

#[derive(Debug)]
struct ViewerConn {
    tx: mpsc::Sender<ViewerOut>,
    queue: Arc<ViewerQueue>,
    sub: Option<Arc<str>>,
}

impl ViewerConn {
    /// Queues `item`; `false` (and the viewer is being closed) when the queue is past its
    /// byte budget or message count.
    fn offer(&self, item: ViewerOut) -> bool {
        if self.queue.is_closed() {
            return false;
        }
        let n = item.bytes();
        let held = self.queue.bytes.fetch_add(n, Ordering::Relaxed) + n;
        if held > VIEWER_QUEUE_BYTES || self.tx.try_send(item).is_err() {
            self.queue.shut();
            return false;
        }
        true
    }
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
    /// Runs the retention rule deleted (tombstones) → when (epoch ms): their events are
    /// dropped on intake. Kept as storage keeps them (`storage::TOMBSTONE_MAX_AGE_MS`, at
    /// most `storage::TOMBSTONE_MAX`).
    deleted: HashMap<String, u64>,
    pauses: HashMap<PauseKey, Pause>,
    closed: HashMap<PauseKey, Closed>,
    /// Decisions remembered for runs, oldest first (at most `remember::MAX_REMEMBERED`).
    remembered: Vec<Remembered>,
    viewers: HashMap<u64, ViewerConn>,
    dirty: HashSet<String>,
    /// Runs announced incomplete (`lostRuns`) before the hub had them in memory: the flag is
    /// applied when they come (at most [`MAX_GAPS_PENDING`]; storage keeps them all).
    gaps_pending: HashSet<String>,
}

/// The hub.
pub struct HubState {
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
    /// Limits the event reads from storage running at once ([`READ_PERMITS`]).
    pub reads: Arc<Semaphore>,
    /// The OTLP exporter, when the hub exports (`HubConfig::otlp`): offered each finished run.
    pub otlp: std::sync::OnceLock<crate::otlp::Exporter>,
    /// The open connections and their budget (set once listening).
    pub connections: std::sync::OnceLock<Arc<crate::connections::Connections>>,
}

impl HubState {
    /// A hub over opened storage (the runs it holds in memory, whether storage holds more,
    /// and the ids of the runs the retention rule deleted) with the given initial debug state.
    pub fn new(
        cfg: Config,
        writer: Writer,
        reader: Arc<Reader>,
        stored: Vec<RunRow>,
        more_stored: bool,
        deleted: Vec<(String, u64)>,
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
                evicted: more_stored,
                runs,
                deleted: deleted.into_iter().collect(),
                pauses: HashMap::new(),
                closed: HashMap::new(),
                remembered: Vec::new(),
                viewers: HashMap::new(),
                dirty: HashSet::new(),
                gaps_pending: HashSet::new(),
            }),
            seq: AtomicU64::new(0),
            ids: AtomicU64::new(1),
            subscribed: AtomicUsize::new(0),
            pauses_version: watch::channel(0).0,
            reads: Arc::new(Semaphore::new(READ_PERMITS)),
            otlp: std::sync::OnceLock::new(),
            connections: std::sync::OnceLock::new(),
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

    /// [`HubState::frame`] for the ingest socket (`hub.ack`).
    pub(crate) fn control_frame(&self, run_id: &str, message: Message) -> String {
        self.frame(run_id, message)
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

    /// The `/health` document.
    pub fn health(&self) -> Value {
        let st = self.lock();
        json!({
            "ok": true,
            // The reference family's hubs name themselves here too.
            "name": "graphmind",
            "version": self.cfg.version,
            "pid": std::process::id(),
            "port": self.cfg.port,
            "apps": st.apps.len(),
            "viewers": st.viewers.len(),
            "runs": st.runs.len(),
            "sessionTokens": st.tokens.len(),
            "pauses": st.pauses.len(),
            "stats": self.stats.to_json(),
            "otlp": self.otlp.get().map(crate::otlp::Exporter::health),
            "connections": self.connections.get().map(|c| c.health()),
        })
    }
}
