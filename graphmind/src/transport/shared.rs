//! What the transport thread shares with its session: the replay ring, the link flags, the
//! debugger's breakpoints and mode, the held gates, and the wake-ups between the two sides.
//! The session embeds one; the transport reads and writes it through its methods and
//! flags, and never sees the rest of the session.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use tokio::sync::Notify;

use super::Ring;
use crate::breakpoints::DebugState;
use crate::config::Config;
use crate::gate::Registry;

/// The state the session and its transport thread share.
pub(crate) struct Shared {
    /// The session's settings.
    pub(crate) config: Config,
    /// The debugger's URL.
    pub(crate) url: String,
    /// The URL came from `GRAPHMIND_URL` (not from code): a debugger is expected there.
    pub(crate) url_from_env: bool,
    /// A debugger is attached (hello.ack processed, not yet dropped).
    pub(crate) attached: AtomicBool,
    /// A debugger was attached at some point (so events left unsent at close are a loss
    /// worth saying, not the normal life of an app run without a debugger).
    pub(crate) ever_attached: AtomicBool,
    /// The attached debugger proved itself (or is trusted explicitly): its gates may hold.
    pub(crate) trusted: AtomicBool,
    /// Control frames ignored from a debugger that was not trusted.
    pub(crate) ignored_controls: AtomicU64,
    /// `dispose` began or the last handle was dropped: no new gates, no reconnects.
    pub(crate) closing: AtomicBool,
    /// The replay ring (every recorded event until the hub confirms it).
    pub(crate) ring: Mutex<Ring>,
    /// Breakpoints and mode as last set by the debugger.
    pub(crate) debug: RwLock<DebugState>,
    /// Held gates (execution side).
    pub(crate) gates: Registry,
    /// Wakes the transport: events to send, a `ready` kick, shutdown.
    pub(crate) wake: Notify,
    /// A `ready` call wants an attempt now.
    pub(crate) kick: AtomicBool,
    /// The transport is connecting or waiting for `hello.ack`.
    pub(crate) attempting: AtomicBool,
    /// The transport should flush, close and stop.
    pub(crate) shutdown: AtomicBool,
    /// Wakes whatever the transport is blocked on when `shutdown` is set.
    pub(crate) stop: Notify,
    /// Warnings already said (each once).
    pub(crate) warned: Mutex<Vec<&'static str>>,
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
            gates,
            wake: Notify::new(),
            kick: AtomicBool::new(false),
            attempting: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            stop: Notify::new(),
            warned: Mutex::new(Vec::new()),
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

    pub(crate) fn ring(&self) -> MutexGuard<'_, Ring> {
        // Nothing panics while holding the lock; recover anyway rather than poison the app.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one seq from the session counter without recording an event (the transport
    /// uses it for `hello`). Events get theirs from [`Inner::emit`].
    pub(crate) fn next_seq(&self) -> u64 {
        self.ring().take_seq()
    }

    /// The breakpoints and mode to decide gates with (a read lock: hold it briefly).
    pub(crate) fn debug(&self) -> std::sync::RwLockReadGuard<'_, DebugState> {
        self.debug.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_debug_state(&self, state: DebugState) {
        *self.debug.write().unwrap_or_else(PoisonError::into_inner) = state;
    }

    /// Changes the state in place (O(1) for one breakpoint: no copy of the set).
    pub(crate) fn update_debug_state(&self, f: impl FnOnce(&mut DebugState)) {
        f(&mut self.debug.write().unwrap_or_else(PoisonError::into_inner));
    }

    /// Says once that no debugger answered at the session's URL, the app running detached.
    /// Only when it matters: `GRAPHMIND_URL` named the debugger, or `ready()` failed; an app
    /// run without a debugger on purpose hears nothing.
    pub(crate) fn warn_no_debugger(&self, context: &str) {
        const SAID: [&str; 4] = [
            "bad-url",
            "not-websocket",
            "version-mismatch",
            "no-debugger",
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
