//! Sessions: the process-wide default and explicit instances, `ready`, `stats`, `dispose`,
//! and the emitting side the execution modules call.

use std::cell::RefCell;
use std::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::time::Duration;

use graphmind_protocol::{BreakpointMatcher, Message, Mode, NodeKind, PausePoint};

use crate::clock::{Instant, now_ms};
use crate::config::Config;
use crate::event::Record;
use crate::gate::{GateSink, ReleaseReason};
use crate::transport::{self, Handle, Link, Ring, Shared};

/// A token batch waiting for its interval: closing the session sends it at once.
pub(crate) trait PendingTokens: Send + Sync {
    /// Sends what is batched now.
    fn flush(&self);
}

/// A snapshot of a session's counters, from [`Session::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Whether the session is enabled (not switched off, not disposed).
    pub enabled: bool,
    /// Whether a debugger is attached right now.
    pub attached: bool,
    /// Events held in the replay ring.
    pub buffered: usize,
    /// Events dropped from the ring so far (oldest first, when a limit was reached).
    pub dropped: u64,
    /// Events recorded so far (each is stored by the hub, or lost and announced).
    pub recorded: u64,
    /// Events evicted from the ring before the hub confirmed them (announced to the hub as
    /// lost seqs; see `docs/PROTOCOL.md`, `hub.ack`).
    pub lost: u64,
    /// Gates held right now.
    pub held_gates: usize,
    /// The last seq handed out (hello included), if any.
    pub last_seq: Option<u64>,
    /// Whether the attached debugger may control the app (it proved itself, or is trusted
    /// explicitly; see [`Config::trust_hub`](crate::Config::trust_hub)). `attached` and not
    /// `trusted` means the app only reports to it.
    pub trusted: bool,
    /// Control frames (`exec.resume`, `breakpoint.*`, `mode.set`) ignored so far because
    /// they came from a debugger that was not trusted.
    pub ignored_controls: u64,
}

/// A connection to a debugger, or the decision not to have one. Cheap to clone: clones share
/// one state, one replay ring and one transport thread.
///
/// Most apps use the process default ([`crate::init`] / [`crate::session`]); build more with
/// [`Session::new`]. The transport starts lazily, on the first event, gate or
/// [`Session::ready`], and stops when the last clone is dropped or [`Session::dispose`] runs.
#[derive(Clone)]
pub struct Session {
    owner: Arc<LastHandle>,
}

/// Closes the session when the last public handle goes away.
struct LastHandle {
    inner: Arc<Inner>,
}

impl Drop for LastHandle {
    fn drop(&mut self) {
        // The same bounded close as the guard of `init`: a process that lets its last
        // handle go at the end of `main` still has its run delivered.
        self.inner.close_blocking(CLOSE_BUDGET);
    }
}

/// How long closing waits for the transport to flush and say goodbye (`dispose`, the drop of
/// an [`InitGuard`] or of a session's last handle). A local debugger needs milliseconds; a
/// hung one costs this much at most.
const CLOSE_BUDGET: Duration = Duration::from_millis(1500);

/// What [`init`] returns: the process default [`Session`] (every `Session` method is
/// reachable through it), which is closed when the guard is dropped.
///
/// Keep it alive for as long as the app reports to the debugger, typically by binding it
/// at the top of `main`: `let _gm = graphmind::init(…);`. (`let _ = graphmind::init(…)`
/// drops it at once and closes the session right away.) Dropping it does what
/// [`Session::dispose`] does, synchronously and within a bounded time (1.5 s at most):
/// every held gate continues, what is still queued is sent, the socket is closed and the
/// session's implicit run is finished. It never needs a runtime and is safe to drop
/// inside one: it waits on the session's own transport thread. Async code can still call
/// `dispose().await` first, which makes the drop a no-op. Closing with events that never
/// reached a debugger that was attached is said once on stderr (or to
/// [`Config::on_warning`]).
///
/// Like sentry's `ClientInitGuard` or tracing-appender's `WorkerGuard`.
#[must_use = "dropping the guard closes the session at once: bind it, `let _gm = graphmind::init(…);`"]
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

impl std::fmt::Debug for InitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InitGuard").field(&self.session).finish()
    }
}

impl Drop for InitGuard {
    fn drop(&mut self) {
        self.session.inner().close_blocking(CLOSE_BUDGET);
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("app", &self.inner().shared.config().app)
            .field("url", &self.inner().shared.url())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Session {
    /// A new session. Reads the environment switches now; a disabled session opens no
    /// socket, starts no thread and allocates no buffer.
    #[must_use]
    pub fn new(config: Config) -> Self {
        Self {
            owner: Arc::new(LastHandle {
                inner: Inner::new(config),
            }),
        }
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.owner.inner
    }

    /// Waits up to `timeout` for a debugger to attach; `true` once `hello.ack` was processed
    /// (breakpoints armed, replay queued). Never errors: `false` means detached (disabled,
    /// disposed, no debugger, or too slow). Instant when already attached. Calls made while
    /// an attempt is under way share it; otherwise a call starts an attempt at once, even in
    /// the middle of a retry back-off (so it also reconnects right after a disconnect). Like
    /// the reference client it then waits for the whole `timeout` unless the debugger
    /// attaches. Works on any executor (its timer runs on the transport thread).
    pub async fn ready(&self, timeout: Duration) -> bool {
        self.inner().ready(timeout).await
    }

    /// Counters: enabled, attached, buffered, dropped, recorded, lost, held gates, last seq.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner().stats()
    }

    /// Whether this session instruments anything (switches on, not disposed).
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.inner().is_enabled()
    }

    /// Whether a debugger is attached right now.
    #[must_use]
    pub fn is_attached(&self) -> bool {
        self.inner().shared.is_attached()
    }

    /// The config this session was built from.
    #[must_use]
    pub fn config(&self) -> &Config {
        self.inner().shared.config()
    }

    /// The endpoint this session dials.
    #[must_use]
    pub fn url(&self) -> &str {
        self.inner().shared.url()
    }

    /// The breakpoints armed by the debugger (from `hello.ack`, `breakpoint.set` and
    /// `breakpoint.clear`). Empty until a debugger attached.
    #[must_use]
    pub fn breakpoints(&self) -> Vec<BreakpointMatcher> {
        self.inner().shared.debug().breakpoints.to_vec()
    }

    /// The debugger's mode (`run` until a debugger says otherwise).
    #[must_use]
    pub fn mode(&self) -> Mode {
        self.inner().shared.debug().mode
    }

    /// Records one raw event for `run_id` (low-level: instrumentation normally does this).
    /// It gets the next seq and the current time, lands in the replay ring and is sent by
    /// the transport thread; this never waits for the socket. Returns the seq, or `None`
    /// when the session is disabled or disposed.
    pub fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        self.inner().emit(run_id, message)
    }

    /// Ends the session: every held gate continues (each emits `exec.resumed`), queued frames
    /// are flushed for a short while (200 ms at most), the socket is closed (code 1000) and
    /// pending `ready` calls return `false`. Idempotent; later events are ignored. Dropping
    /// the [`InitGuard`] of [`init`], or the last handle of a session, does the same
    /// synchronously; `dispose` is the way to do it without blocking a thread.
    ///
    /// A connection still being set up (a short program that disposes right after its run)
    /// gets 200 ms more to finish first, so what was recorded still reaches the debugger; a
    /// debugger that is down costs nothing, one that never answers at most that grace.
    pub async fn dispose(&self) {
        self.inner().dispose().await;
    }
}

/// The state behind a [`Session`], shared with the transport thread.
pub(crate) struct Inner {
    /// What the transport thread shares with the session.
    pub(crate) shared: Shared,
    me: Weak<Inner>,
    enabled: bool,
    /// `dispose` finished: events are ignored.
    disposed: AtomicBool,
    transport: OnceLock<Option<Handle>>,
    first_use_done: AtomicBool,
    /// The run of instrumented calls outside any run scope.
    pub(crate) implicit: crate::implicit_run::ImplicitRun,
    /// Redaction switches in effect (applied before an event reaches the ring).
    hide: crate::config::Hide,
    /// The loop guard in effect.
    pub(crate) loop_guard: crate::config::LoopGuard,
    /// The recording answering this session's calls (`GRAPHMIND_REPLAY`).
    pub(crate) replayer: Option<Arc<crate::replay::Replayer>>,
    /// Token batches armed since the last prune (flushed by `dispose`).
    tokens: Mutex<Vec<Weak<dyn PendingTokens>>>,
    /// The clock of `ts`: an event at instant `t` is stamped `(t - base)` in whole
    /// milliseconds plus `offset` (epoch ms minus that, at the last wall-clock reading), so an
    /// event costs one monotonic clock read. The wall clock is read again at most once a
    /// second, so `ts` follows clock steps and suspends as reading it every time would.
    base: Instant,
    offset: AtomicU64,
    /// `(t - base)` in ms when `offset` was last computed.
    synced: AtomicU64,
}

impl Inner {
    fn new(mut config: Config) -> Arc<Self> {
        (config.ping_interval, config.pong_timeout) = config.resolved_liveness();
        let enabled = config.resolved_enabled();
        let url_from_env =
            config.url.is_none() && config.var("GRAPHMIND_URL").is_some_and(|v| !v.is_empty());
        let url = match (enabled && config.url.is_none() && !url_from_env)
            .then(|| config.resolved_hub_home())
            .flatten()
        {
            Some(home) => found_hub(&config, &home),
            None => config.resolved_url(),
        };
        let ring = Ring::new(config.ring_events, config.ring_bytes);
        let hide = config.resolved_hide();
        let loop_guard = config.resolved_loop_guard();
        let replayer = if enabled {
            crate::replay::session_replayer(&mut config)
        } else {
            None
        };
        let base = Instant::now();
        Arc::new_cyclic(|me| Self {
            shared: Shared::new(config, url, url_from_env, ring),
            me: me.clone(),
            enabled,
            disposed: AtomicBool::new(false),
            transport: OnceLock::new(),
            first_use_done: AtomicBool::new(false),
            implicit: crate::implicit_run::ImplicitRun::default(),
            tokens: Mutex::new(Vec::new()),
            hide,
            loop_guard,
            replayer,
            base,
            offset: AtomicU64::new(now_ms()),
            synced: AtomicU64::new(0),
        })
    }

    /// Enabled and not closing: instrumentation should record and may gate.
    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled && !self.shared.is_closing()
    }

    /// Stamps `message` with the next seq and the current time, records it in the replay
    /// ring and, when attached, wakes the transport to send it. Never blocks on the socket
    /// and never awaits; starts the transport lazily. Returns the seq, or `None` when the
    /// session is disabled or disposed (nothing recorded).
    pub(crate) fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        if !self.enabled || self.disposed.load(Relaxed) {
            return None;
        }
        self.record(run_id, Record::Message(Arc::new(message)), Instant::now())
    }

    /// [`Inner::emit`] for an event that happened at `at` (stamped `ts`), kept as a compact
    /// record until it is sent.
    pub(crate) fn record(&self, run_id: &str, record: Record, at: Instant) -> Option<u64> {
        // Deferred `node.started` of calls polled on this thread come first.
        crate::event::flush_waiting();
        if !self.enabled || self.disposed.load(Relaxed) {
            self.warn_used_after_close();
            return None;
        }
        let ts = self.ts_at(at);
        let record = if self.hide.any() {
            self.hide.record(record)
        } else {
            record
        };
        let seq = self.push(ts, run_id, record);
        Some(seq)
    }

    /// Stores `record` in the ring and wakes the transport when attached. While attached a
    /// compact record is shared ([`Record::shared`]), so the transport serializes it after
    /// releasing the ring's lock instead of holding it, which a recording thread would wait
    /// for.
    #[inline]
    fn push(&self, ts: u64, run_id: &str, record: Record) -> u64 {
        if self.shared.is_attached() {
            let seq = self.shared.record(ts, run_id, record.shared());
            self.shared.wake_for_events();
            seq
        } else {
            let seq = self.shared.record(ts, run_id, record);
            self.touch();
            seq
        }
    }

    /// [`Inner::record`] for a tool call's two events (started at `started`, finished at
    /// `finished`) as one ring entry; split in two when the session redacts.
    pub(crate) fn record_call(
        &self,
        run_id: &str,
        mut call: crate::event::Call,
        started: Instant,
        finished: Instant,
    ) -> Option<u64> {
        if self.hide.any() {
            let (s, f) = call.split();
            let seq = self.record(run_id, Record::Started(s), started);
            self.record(run_id, Record::Finished(f), finished);
            return seq;
        }
        crate::event::flush_waiting();
        if !self.enabled || self.disposed.load(Relaxed) {
            self.warn_used_after_close();
            return None;
        }
        let ts = self.ts_at(started);
        call.finished_after =
            u32::try_from(self.ts_at(finished).saturating_sub(ts)).unwrap_or(u32::MAX);
        Some(self.push(ts, run_id, Record::Call(call)))
    }

    /// Epoch milliseconds of `at` (see the `offset` field).
    fn ts_at(&self, at: Instant) -> u64 {
        let mono = self.mono_ms(at);
        if mono.saturating_sub(self.synced.load(Relaxed)) >= 1000 {
            let now = Instant::now();
            let wall = now_ms();
            let at_sync = self.mono_ms(now);
            self.offset.store(wall.wrapping_sub(at_sync), Relaxed);
            self.synced.store(at_sync, Relaxed);
        }
        mono.wrapping_add(self.offset.load(Relaxed))
    }

    /// Whole milliseconds from the session's clock base to `at`.
    fn mono_ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether a breakpoint holds a gate at `point` of (`kind`, `name`), and the mode.
    pub(crate) fn gate_rule(&self, kind: NodeKind, name: &str, point: PausePoint) -> (bool, Mode) {
        if !self.shared.has_rules() {
            // No breakpoint and mode `run`: what the locked read would say, without the lock.
            return (false, Mode::Run);
        }
        let state = self.shared.debug();
        (state.breakpoints.matches(kind, name, point), state.mode)
    }

    /// Starts the transport if it is not running yet (first use). `None` when disabled or
    /// closing, or if the thread could not be started.
    pub(crate) fn touch(&self) -> Option<&Handle> {
        if !self.enabled {
            return None;
        }
        if let Some(h) = self.transport.get() {
            return h.as_ref();
        }
        if self.shared.is_closing() {
            return None;
        }
        self.transport
            .get_or_init(|| {
                self.me.upgrade().and_then(|me| {
                    let owner: Arc<dyn AsRef<Shared> + Send + Sync> = me;
                    transport::start(owner)
                })
            })
            .as_ref()
    }

    /// With [`Config::wait_for_attach`]: the first call (and every call racing with it) waits
    /// for `ready`; later calls return at once. Without it this only starts the transport.
    /// The execution side calls this on the first instrumented use.
    pub(crate) async fn first_use(&self) {
        if self.first_use_done.load(Relaxed) || !self.enabled {
            return;
        }
        match self.shared.config().wait_for_attach {
            Some(budget) => {
                self.ready(budget).await;
            }
            None => {
                self.touch();
            }
        }
        self.first_use_done.store(true, Relaxed);
    }

    /// Whether [`Inner::first_use`] still has something to do (a cheap pre-check).
    #[inline]
    pub(crate) fn needs_first_use(&self) -> bool {
        self.enabled && !self.first_use_done.load(Relaxed)
    }

    pub(crate) async fn ready(&self, timeout: Duration) -> bool {
        if !self.is_enabled() {
            return false;
        }
        if self.shared.is_attached() {
            return true;
        }
        let Some(handle) = self.touch() else {
            return false;
        };
        let mut link = handle.subscribe();
        let mut failures = handle.subscribe_failures();
        // Callers during an attempt share it; otherwise start one now.
        self.shared.kick();
        // Attached → true; closed, or the shared attempt failed (refused, no ack, version
        // mismatch) → false at once, so a detached app never idles out the whole timeout.
        let attached = async move {
            let attached = std::pin::pin!(async {
                link.wait_for(|l| *l != Link::Detached)
                    .await
                    .is_ok_and(|l| *l == Link::Attached)
            });
            let failed = std::pin::pin!(failures.changed());
            match futures_util::future::select(attached, failed).await {
                futures_util::future::Either::Left((v, _)) => v,
                futures_util::future::Either::Right(_) => false,
            }
        };
        let attached = handle.deadline(timeout, attached).await.unwrap_or(false);
        if !attached && !self.shared.is_closing() {
            // The app asked for a debugger and got none: say so (once), unless the reason
            // was said already (a bad URL, not a WebSocket, another protocol version).
            self.shared
                .warn_no_debugger(&format!("ready() waited {timeout:?}"));
        }
        attached
    }

    pub(crate) fn stats(&self) -> Stats {
        if !self.enabled {
            return Stats::default();
        }
        let (buffered, dropped, last_seq, recorded, lost) = {
            let ring = self.shared.ring();
            (
                ring.len(),
                ring.dropped(),
                ring.last_seq(),
                ring.recorded(),
                ring.lost(),
            )
        };
        Stats {
            enabled: self.is_enabled(),
            attached: self.shared.is_attached(),
            buffered,
            dropped,
            recorded,
            lost,
            held_gates: self.shared.gates().held_count(),
            last_seq,
            trusted: self.shared.is_attached() && self.shared.is_trusted(),
            ignored_controls: self.shared.ignored_controls(),
        }
    }

    /// Tells the transport to flush, close and stop; no further reconnects.
    fn signal_shutdown(&self) {
        self.shared.signal_shutdown();
    }

    pub(crate) async fn dispose(&self) {
        if !self.enabled || self.shared.begin_closing() {
            return;
        }
        let attached = self.shared.is_attached();
        // New gates continue at once from here on; held ones continue now.
        self.shared.detach();
        self.shared.gates().release_all(ReleaseReason::Dispose);
        self.flush_tokens();
        self.end_implicit_run();
        if let Some(Some(handle)) = self.transport.get() {
            self.signal_shutdown();
            if let Some(done) = handle.take_done() {
                let _ = handle.deadline(CLOSE_BUDGET, done).await;
            }
            handle.set_link(Link::Closed);
        }
        self.disposed.store(true, Relaxed);
        self.warn_unsent(attached);
    }

    /// [`Inner::dispose`] without a runtime: blocks this thread (never a runtime's timer or
    /// IO) for at most `limit` while the transport thread flushes and closes.
    pub(crate) fn close_blocking(&self, limit: Duration) {
        if !self.enabled || self.shared.begin_closing() {
            self.signal_shutdown();
            return;
        }
        let attached = self.shared.is_attached();
        self.shared.detach();
        self.shared.gates().release_all(ReleaseReason::Dispose);
        self.flush_tokens();
        self.end_implicit_run();
        if let Some(Some(handle)) = self.transport.get() {
            self.signal_shutdown();
            // Waiting for itself would only burn the budget.
            let on_transport = std::thread::current().name() == Some(transport::THREAD_NAME);
            if !on_transport {
                handle.wait_finished(limit);
            }
            handle.set_link(Link::Closed);
        }
        self.disposed.store(true, Relaxed);
        self.warn_unsent(attached);
    }

    /// Says once that an instrumented call ran after the session closed (it started on a
    /// closed session, or recorded an event after the close): it is not recorded, and the
    /// session ended before the app's work did. Called only on the closed path, so an open
    /// session pays nothing for it.
    pub(crate) fn warn_used_after_close(&self) {
        if self.enabled && self.shared.is_closing() {
            self.shared.warn_once(
                "used-after-close",
                &format!(
                    "an instrumented call ran after the session of app \"{}\" closed, so it \
                     was not recorded (a session closes when the guard of graphmind::init \
                     drops, on dispose() or graphmind::shutdown(), or as the process exits): \
                     keep the guard alive until the app's work ends",
                    self.shared.config().app
                ),
            );
        }
    }

    /// Says once, in one line, that the session closed before every event reached the
    /// debugger it was attached to, and why: the debugger went away first (`attached` false
    /// when closing began), or it was still taking them when the close budget ran out. A
    /// session that never attached keeps its events by design, silently.
    fn warn_unsent(&self, attached: bool) {
        if self.shared.ever_attached() && self.shared.ring().has_pending() {
            self.shared
                .warn_once("unsent", &unsent_message(self.shared.url(), attached));
        }
    }

    /// Remembers an armed token batch, so `dispose` can send it before closing.
    pub(crate) fn track_tokens(&self, buf: Weak<dyn PendingTokens>) {
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        if tokens.iter().any(|b| Weak::ptr_eq(b, &buf)) {
            return;
        }
        if tokens.len() >= 64 {
            // Batches whose node is gone have been flushed (before node.finished).
            tokens.retain(|b| b.strong_count() > 0);
        }
        tokens.push(buf);
    }

    /// Sends every pending token batch now.
    fn flush_tokens(&self) {
        let tokens =
            std::mem::take(&mut *self.tokens.lock().unwrap_or_else(PoisonError::into_inner));
        for buf in tokens.iter().filter_map(std::sync::Weak::upgrade) {
            buf.flush();
        }
    }

    /// Ends the session's implicit run, if it has one, with `run.finished {status:"ok"}`
    /// (closing calls this before the transport stops).
    fn end_implicit_run(&self) {
        if let Some(id) = self.implicit.end() {
            let _ = self.emit(
                id,
                Message::RunFinished(graphmind_protocol::RunFinished {
                    status: graphmind_protocol::Status::Ok,
                    error: None,
                    extra: graphmind_protocol::Extra::new(),
                }),
            );
        }
    }
}

impl AsRef<Shared> for Inner {
    fn as_ref(&self) -> &Shared {
        &self.shared
    }
}

impl GateSink for Inner {
    fn emit_event(&self, run_id: &str, message: Message) {
        let _ = self.emit(run_id, message);
    }
}

/// The URL of a session that names none (no `Config::url`, no `GRAPHMIND_URL`): the one live
/// `graphmind serve` of this user, found by its run file and said once on stderr, as the
/// CLI finds a hub started with `--port 0`; else the default URL (several live hubs: that
/// is said too, naming their ports).
fn found_hub(config: &Config, home: &std::path::Path) -> String {
    match transport::discover_hub(home) {
        Ok(Some((url, file))) => {
            if url != crate::DEFAULT_URL {
                config.warn(&format!(
                    "no GRAPHMIND_URL: reporting to the graphmind serve at {url} (its run \
                     file is {})",
                    file.display()
                ));
            }
            url
        }
        Ok(None) => config.resolved_url(),
        Err(ports) => {
            config.warn(&format!(
                "no GRAPHMIND_URL, and graphmind serve runs on ports {}: using {}; set \
                 GRAPHMIND_URL=ws://127.0.0.1:<port>/ingest to choose",
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::DEFAULT_URL
            ));
            config.resolved_url()
        }
    }
}

/// The one line said when a session closes with events its debugger never got: the debugger
/// went away while the session was kept (`attached` false when closing began), or the session
/// was closed while the debugger was still taking them.
fn unsent_message(url: &str, attached: bool) -> String {
    if attached {
        format!(
            "the session closed while the debugger at {url} was still taking its events \
             (closing waits {} ms at most): the last run there is incomplete",
            CLOSE_BUDGET.as_millis()
        )
    } else {
        format!(
            "the debugger at {url} went away before the session closed: the events \
             recorded since never reached it, so the last run there is incomplete"
        )
    }
}

static DEFAULT: RwLock<Option<Session>> = RwLock::new(None);
/// Mirrors whether the default session is enabled, so a disabled app pays one relaxed load.
static DEFAULT_STATE: AtomicU8 = AtomicU8::new(DEFAULT_UNSET);
const DEFAULT_UNSET: u8 = 0;
const DEFAULT_OFF: u8 = 1;
const DEFAULT_ON: u8 = 2;
/// Bumped whenever the default session is replaced: invalidates the per-thread caches.
static DEFAULT_GEN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's view of the default session (generation, state), so instrumented calls
    /// find it without taking the `DEFAULT` lock.
    static DEFAULT_CACHE: RefCell<(u64, Weak<Inner>)> = const { RefCell::new((u64::MAX, Weak::new())) };
}

/// The default session's state (built from the environment on first use if needed): one
/// thread-local read and one refcount increment once this thread has seen it.
pub(crate) fn default_inner() -> Arc<Inner> {
    let generation = DEFAULT_GEN.load(Acquire);
    let hit = DEFAULT_CACHE.try_with(|c| {
        let c = c.borrow();
        if c.0 == generation {
            c.1.upgrade()
        } else {
            None
        }
    });
    if let Ok(Some(inner)) = hit {
        return inner;
    }
    let inner = Arc::clone(session().inner());
    let _ = DEFAULT_CACHE.try_with(|c| *c.borrow_mut() = (generation, Arc::downgrade(&inner)));
    inner
}

/// The default session was built from the environment by [`session`] (not by [`init`]).
static DEFAULT_FROM_ENV: AtomicBool = AtomicBool::new(false);

/// Makes `s` the default; the previous default, and whether [`session`] had built it.
fn set_default(s: &Session) -> (Option<Session>, bool) {
    let mut slot = DEFAULT.write().unwrap_or_else(PoisonError::into_inner);
    let from_env = DEFAULT_FROM_ENV.swap(false, Relaxed);
    DEFAULT_STATE.store(
        if s.inner().enabled {
            DEFAULT_ON
        } else {
            DEFAULT_OFF
        },
        Relaxed,
    );
    let old = slot.replace(s.clone());
    DEFAULT_GEN.fetch_add(1, Release);
    (old, from_env)
}

/// Builds a session from `config` and makes it the process default (what
/// [`session`] returns and what instrumented code reports to). Returns its [`InitGuard`]:
/// bind it for the life of the app (`let _gm = graphmind::init(…);`); dropping it flushes
/// and closes the session. The previous default, if any, stops once its last handle is
/// dropped; [`Session::dispose`] it first to release its held gates and flush it.
///
/// Call it before the first instrumented call. Instrumented code that ran earlier reported
/// to a default session built from the environment ([`Config::from_env`]): `init` closes that
/// one here as its guard would (its implicit run is finished, what it recorded is flushed,
/// within 1.5 s at most) and says once, through the new config's warning hook, that it
/// happened. The early session is not reconfigured in place: its events were already
/// stamped with its app, URL and redaction switches, so they stay what they were.
pub fn init(config: Config) -> InitGuard {
    let s = Session::new(config);
    let (old, old_from_env) = set_default(&s);
    arm_close_at_exit();
    if let Some(old) = old.filter(|_| old_from_env) {
        let early = old.inner();
        if early.is_enabled() && early.shared.ring().last_seq().is_some() {
            s.inner().shared.warn_once(
                "used-before-init",
                &format!(
                    "instrumented code ran before graphmind::init: it reported to a default \
                     session built from the environment (app \"{}\", {}), now closed with its \
                     implicit run finished; call graphmind::init before the first \
                     instrumented call",
                    early.shared.config().app,
                    early.shared.url()
                ),
            );
        }
        early.close_blocking(CLOSE_BUDGET);
    }
    InitGuard { session: s }
}

/// The process default session; built from [`Config::from_env`] on first use if
/// [`init`] was never called.
#[must_use]
pub fn session() -> Session {
    if let Some(s) = DEFAULT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        return s.clone();
    }
    let mut slot = DEFAULT.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = slot.as_ref() {
        return s.clone();
    }
    let s = Session::new(Config::from_env());
    DEFAULT_FROM_ENV.store(true, Relaxed);
    DEFAULT_STATE.store(
        if s.inner().enabled {
            DEFAULT_ON
        } else {
            DEFAULT_OFF
        },
        Relaxed,
    );
    *slot = Some(s.clone());
    DEFAULT_GEN.fetch_add(1, Release);
    drop(slot);
    arm_close_at_exit();
    s
}

/// Closes the process default session now, as dropping the [`InitGuard`] of [`init`] does:
/// every held gate continues, the implicit run is finished and what was recorded is sent,
/// within 1.5 s at most (a loss is said on stderr). Blocks this thread, never a runtime's
/// timer or IO. Later events are ignored.
///
/// Call it before ending the process where the guard cannot drop and the main thread's exit
/// does not close the session either: `std::process::exit` called on a thread other than
/// `main`, or on a platform whose C library does not run the main thread's thread-local
/// destructors in `exit` (the session is closed there on Linux with glibc). Nothing can
/// deliver a run after `std::process::abort`, a panic with `panic = "abort"` or a fatal
/// signal (SIGKILL, or Ctrl-C with no handler).
pub fn shutdown() {
    let default = DEFAULT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if let Some(s) = default {
        s.inner().close_blocking(CLOSE_BUDGET);
    }
}

/// Closes the default session when the main thread's thread-locals are destroyed: when `main`
/// returns, and in `std::process::exit` called on the main thread (glibc's `exit` runs them
/// first). So a guard that never drops (`std::process::exit`, `mem::forget`, a guard moved
/// into a static) still has its run delivered; after a normal drop this finds the session
/// closed and does nothing.
struct CloseAtExit;

impl Drop for CloseAtExit {
    fn drop(&mut self) {
        // A panic escaping a thread-local destructor aborts the process.
        let _ = std::panic::catch_unwind(shutdown);
    }
}

thread_local! {
    static CLOSE_AT_EXIT: CloseAtExit = const { CloseAtExit };
}

/// Arms [`CloseAtExit`] when called on the main thread (another thread's end is not the
/// process's: closing there would cut the app's session short).
fn arm_close_at_exit() {
    if std::thread::current().name() == Some("main") {
        let _ = CLOSE_AT_EXIT.try_with(|_| ());
    }
}

/// Whether the default session is enabled: one relaxed load once it exists (it is built from
/// the environment on the first call if needed). The disabled fast path of instrumentation.
#[inline]
pub(crate) fn default_enabled() -> bool {
    match DEFAULT_STATE.load(Relaxed) {
        DEFAULT_ON => true,
        DEFAULT_OFF => false,
        _ => session().inner().enabled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35 item 7: the line had 22 spaces of a string continuation in it and blamed the
    /// guard whatever happened.
    #[test]
    fn the_unsent_warning_is_one_clean_line_saying_what_happened() {
        let url = "ws://127.0.0.1:4747/ingest";
        let gone = unsent_message(url, false);
        let cut = unsent_message(url, true);
        assert_eq!(
            gone,
            "the debugger at ws://127.0.0.1:4747/ingest went away before the session closed: \
             the events recorded since never reached it, so the last run there is incomplete"
        );
        assert_eq!(
            cut,
            "the session closed while the debugger at ws://127.0.0.1:4747/ingest was still \
             taking its events (closing waits 1500 ms at most): the last run there is incomplete"
        );
        for line in [gone, cut] {
            assert!(!line.contains("  ") && !line.contains('\n'), "{line:?}");
        }
    }

    #[test]
    fn event_ts_follows_the_wall_clock_from_one_monotonic_read() {
        let s = Session::new(Config::new("ts").env_vars(std::iter::empty::<(String, String)>()));
        let inner = s.inner();
        assert!(inner.enabled);
        let before = now_ms();
        let ts = inner.ts_at(Instant::now());
        let after = now_ms();
        assert!(
            ts + 1 >= before && ts <= after + 1,
            "{before} <= {ts} <= {after}"
        );
        // Later instants keep the wall-clock reading (re-read at most once a second).
        let later = Instant::now() + Duration::from_millis(1500);
        let ts2 = inner.ts_at(later);
        assert!(
            ts2 + 1 >= before + 1500 && ts2 <= now_ms() + 1501,
            "{ts2} is 1.5 s after {before}"
        );
        assert!(
            inner.ts_at(Instant::now()) <= ts2,
            "an earlier instant stays earlier"
        );
    }
}
