//! What the transport thread shares with its session: the replay ring, the link flags, the
//! debugger's breakpoints and mode, the held gates, and the wake-ups between the two sides.
//! The session embeds one; the transport reads and writes it through its methods and
//! flags, and never sees the rest of the session.

use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use tokio::sync::Notify;

use super::Ring;
use crate::breakpoints::DebugState;
use crate::config::Config;
use crate::event::Record;
use crate::gate::Registry;

/// The state the session and its transport thread share. Its fields are private: both
/// sides go through the methods below.
pub(crate) struct Shared {
    /// The session's settings.
    config: Config,
    /// The debugger's URL.
    url: String,
    /// The URL came from `GRAPHMIND_URL` (not from code): a debugger is expected there.
    url_from_env: bool,
    /// A debugger is attached (hello.ack processed, not yet dropped).
    attached: AtomicBool,
    /// A debugger was attached at some point (so events left unsent at close are a loss
    /// worth saying, not the normal life of an app run without a debugger).
    ever_attached: AtomicBool,
    /// The attached debugger proved itself (or is trusted explicitly): its gates may hold.
    trusted: AtomicBool,
    /// Control frames ignored from a debugger that was not trusted.
    ignored_controls: AtomicU64,
    /// `dispose` began or the last handle was dropped: no new gates, no reconnects.
    closing: AtomicBool,
    /// The replay ring (every recorded event until the hub confirms it).
    ring: Mutex<Ring>,
    /// Breakpoints and mode as last set by the debugger.
    debug: RwLock<DebugState>,
    /// Whether `debug` holds a breakpoint or a mode other than `run` (set under its write
    /// lock): with neither, no gate rule can match, and a call decides its gates without
    /// taking the lock.
    rules: AtomicBool,
    /// Held gates (execution side).
    gates: Registry,
    /// Wakes the transport: events to send, a `ready` kick, shutdown.
    wake: Notify,
    /// Events were pushed since the transport last took a batch, and it was woken for them:
    /// later events need not wake it again (see [`Shared::wake_for_events`]).
    events_woken: AtomicBool,
    /// A `ready` call wants an attempt now.
    kick: AtomicBool,
    /// The transport is connecting or waiting for `hello.ack`.
    attempting: AtomicBool,
    /// The transport should flush, close and stop.
    shutdown: AtomicBool,
    /// Wakes whatever the transport is blocked on when `shutdown` is set.
    stop: Notify,
    /// Warnings already said (each once).
    warned: Mutex<Vec<&'static str>>,
}

impl Shared {
    /// The state of a new session (detached, nothing held, no debugger seen).
    pub(crate) fn new(config: Config, url: String, url_from_env: bool, ring: Ring) -> Self {
        let gates = Registry::new();
        if config.edit_input_killed() {
            gates.kill_edits();
        }
        Self {
            config,
            url,
            url_from_env,
            attached: AtomicBool::new(false),
            ever_attached: AtomicBool::new(false),
            trusted: AtomicBool::new(false),
            ignored_controls: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            ring: Mutex::new(ring),
            debug: RwLock::new(DebugState::default()),
            rules: AtomicBool::new(false),
            gates,
            wake: Notify::new(),
            events_woken: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            attempting: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            stop: Notify::new(),
            warned: Mutex::new(Vec::new()),
        }
    }

    /// The session's settings.
    #[inline]
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The debugger's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The URL came from `GRAPHMIND_URL` (not from code): a debugger is expected there.
    pub(crate) fn url_from_env(&self) -> bool {
        self.url_from_env
    }

    /// Held gates (execution side).
    #[inline]
    pub(crate) fn gates(&self) -> &Registry {
        &self.gates
    }

    /// A debugger was attached at some point in this session.
    pub(crate) fn ever_attached(&self) -> bool {
        self.ever_attached.load(Relaxed)
    }

    /// The attached (or next) debugger may control the app.
    pub(crate) fn is_trusted(&self) -> bool {
        self.trusted.load(Relaxed)
    }

    /// Control frames ignored from untrusted debuggers so far.
    pub(crate) fn ignored_controls(&self) -> u64 {
        self.ignored_controls.load(Relaxed)
    }

    /// `dispose` began or the last handle was dropped.
    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Relaxed)
    }

    /// Starts closing; `true` if it had started already.
    pub(crate) fn begin_closing(&self) -> bool {
        self.closing.swap(true, Relaxed)
    }

    /// Detaches for good (closing): new gates continue at once.
    pub(crate) fn detach(&self) {
        self.attached.store(false, Relaxed);
    }

    /// Tells the transport to flush, close and stop (closing too), and wakes it.
    pub(crate) fn signal_shutdown(&self) {
        self.closing.store(true, Relaxed);
        self.shutdown.store(true, Relaxed);
        self.stop.notify_one();
        self.wake.notify_one();
    }

    /// The transport should flush, close and stop.
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Relaxed)
    }

    /// Resolves once [`Shared::signal_shutdown`] is called after this was created (check
    /// [`Shared::is_shutdown`] after creating it, before awaiting).
    pub(crate) fn stopped(&self) -> tokio::sync::futures::Notified<'_> {
        self.stop.notified()
    }

    /// Wakes the transport for an event just pushed, unless an earlier event did since its
    /// last batch: one wake per batch, not one atomic read-modify-write of the `Notify` per
    /// event. Sequentially consistent with [`Shared::taking_events`]: either this sees the
    /// flag cleared (and wakes), or the transport's next batch, taken after clearing it, holds
    /// the event.
    #[inline]
    pub(crate) fn wake_for_events(&self) {
        if !self.events_woken.load(SeqCst) && !self.events_woken.swap(true, SeqCst) {
            self.wake.notify_one();
        }
    }

    /// The transport is about to take a batch: events pushed from now on wake it again.
    pub(crate) fn taking_events(&self) {
        self.events_woken.store(false, SeqCst);
    }

    /// Resolves when the transport is woken (a wake-up before this is awaited is kept).
    pub(crate) fn woken(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    /// Asks the transport for a connection attempt now, unless one is under way.
    pub(crate) fn kick(&self) {
        if !self.attempting.load(Relaxed) {
            self.kick.store(true, Relaxed);
            self.wake.notify_one();
        }
    }

    /// Whether a `ready` call asked for an attempt now.
    pub(crate) fn kicked(&self) -> bool {
        self.kick.load(Relaxed)
    }

    /// A pending kick is satisfied (an attach happened).
    pub(crate) fn clear_kick(&self) {
        self.kick.store(false, Relaxed);
    }

    /// The transport is connecting (or stopped): clears a pending kick when it starts.
    pub(crate) fn set_attempting(&self, on: bool) {
        if on {
            self.attempting.store(true, Relaxed);
            self.kick.store(false, Relaxed);
        } else {
            self.attempting.store(false, Relaxed);
        }
    }

    /// A debugger is attached (hello.ack processed, not yet dropped).
    #[inline]
    pub(crate) fn is_attached(&self) -> bool {
        self.attached.load(Relaxed)
    }

    /// Attached to a debugger that may control the app: gates may hold.
    #[inline]
    pub(crate) fn is_controlled(&self) -> bool {
        self.attached.load(Relaxed) && self.trusted.load(Relaxed)
    }

    /// Whether the next attached debugger may control the app (set before attaching).
    pub(crate) fn set_trusted(&self, on: bool) {
        self.trusted.store(on, Relaxed);
    }

    /// Counts one control frame ignored from an untrusted debugger.
    pub(crate) fn ignored_control(&self) {
        self.ignored_controls.fetch_add(1, Relaxed);
    }

    pub(crate) fn set_attached(&self, on: bool) {
        let on = on && !self.closing.load(Relaxed);
        if on {
            self.ever_attached.store(true, Relaxed);
        }
        self.attached.store(on, Relaxed);
    }

    /// The replay ring, locked.
    pub(crate) fn ring(&self) -> MutexGuard<'_, Ring> {
        // Nothing panics while holding the lock; recover anyway rather than poison the app.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stamps `record` with the next seq and stores it in the ring. Returns the seq.
    #[inline]
    pub(crate) fn record(&self, ts: u64, run_id: &str, record: Record) -> u64 {
        self.ring().push(ts, run_id, record)
    }

    /// Takes one seq from the session counter without recording an event (the transport
    /// uses it for `hello`). Events get theirs from [`Shared::record`].
    pub(crate) fn next_seq(&self) -> u64 {
        self.ring().take_seq()
    }

    /// The breakpoints and mode to decide gates with (a read lock: hold it briefly).
    pub(crate) fn debug(&self) -> std::sync::RwLockReadGuard<'_, DebugState> {
        self.debug.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a breakpoint is armed or the mode is not `run` (one relaxed load, no lock):
    /// when not, no gate rule matches and [`Shared::debug`] need not be read.
    #[inline]
    pub(crate) fn has_rules(&self) -> bool {
        self.rules.load(Acquire)
    }

    pub(crate) fn set_debug_state(&self, state: DebugState) {
        self.update_debug_state(|s| *s = state);
    }

    /// Changes the state in place (O(1) for one breakpoint: no copy of the set).
    pub(crate) fn update_debug_state(&self, f: impl FnOnce(&mut DebugState)) {
        let mut state = self.debug.write().unwrap_or_else(PoisonError::into_inner);
        f(&mut state);
        self.rules.store(
            !state.breakpoints.is_empty() || state.mode != graphmind_protocol::Mode::Run,
            Release,
        );
    }

    /// Says once that no debugger answered at the session's URL, the app running detached.
    /// Only when it matters: `GRAPHMIND_URL` named the debugger, or `ready()` failed; an app
    /// run without a debugger on purpose hears nothing.
    pub(crate) fn warn_no_debugger(&self, context: &str) {
        const SAID: [&str; 5] = [
            "bad-url",
            "not-websocket",
            "version-mismatch",
            "no-debugger",
            "frame-too-large",
        ];
        let said = self
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|k| SAID.contains(k));
        if !said {
            self.warn_once(
                "no-debugger",
                &format!(
                    "no debugger answered at {} ({context}): the app runs detached; start \
                     `graphmind serve`, or check the port (`graphmind serve` prints its \
                     ws://…/ingest address)",
                    self.url
                ),
            );
        }
    }

    /// Prints `message` once per `key` for this session.
    pub(crate) fn warn_once(&self, key: &'static str, message: &str) {
        {
            let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
            if warned.contains(&key) {
                return;
            }
            warned.push(key);
        }
        self.config.warn(message);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use graphmind_protocol::{BreakpointMatcher, Mode};

    use super::*;

    fn shared() -> Shared {
        let config = Config::new("shared").env_vars(std::iter::empty::<(String, String)>());
        Shared::new(
            config,
            "ws://127.0.0.1:9/ingest".into(),
            false,
            Ring::new(64, 1 << 20),
        )
    }

    /// Whether `woken` resolves now (a wake-up was stored for it).
    fn woken_now(shared: &Shared) -> bool {
        let fut = pin!(shared.woken());
        fut.poll(&mut Context::from_waker(Waker::noop())).is_ready()
    }

    #[test]
    fn rules_present_follows_breakpoints_and_mode() {
        let s = shared();
        assert!(!s.has_rules(), "a new session has no rule");
        let bp = BreakpointMatcher {
            name: Some("t".into()),
            ..BreakpointMatcher::default()
        };
        s.update_debug_state(|d| d.breakpoints.set(bp.clone()));
        assert!(s.has_rules(), "a breakpoint is a rule");
        s.update_debug_state(|d| d.breakpoints.clear(&bp));
        assert!(!s.has_rules(), "cleared again");
        s.update_debug_state(|d| d.mode = Mode::Step);
        assert!(s.has_rules(), "step mode holds gates");
        s.set_debug_state(DebugState::default());
        assert!(!s.has_rules(), "a reset state has none");
    }

    #[test]
    fn events_wake_the_transport_once_per_batch() {
        let s = shared();
        s.wake_for_events();
        s.wake_for_events();
        assert!(woken_now(&s), "the first event wakes the transport");
        assert!(
            !woken_now(&s),
            "later events before the next batch do not wake it again"
        );
        s.taking_events();
        s.wake_for_events();
        assert!(woken_now(&s), "an event after the batch was taken wakes it");
    }
}
