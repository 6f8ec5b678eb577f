//! The execution side of the runtime: what a gated call needs from its session ([`Host`]),
//! the scope it runs in (run, hold clocks), ids, and the policies for tools and model steps.

pub(crate) mod detached;
pub(crate) mod scope;
pub(crate) mod step;
pub(crate) mod tool;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The clock of event timestamps and node durations: `quanta`'s TSC-based instant (one read
/// costs about a third of `std::time::Instant::now` where the TSC is invariant; elsewhere it
/// falls back to the OS monotonic clock).
pub(crate) use quanta::Instant;

use graphmind_protocol::{
    BreakpointMatcher, Extra, Message, Mode, NodeKind, PausePoint, PauseReason, SdkInfo,
};

use crate::gate::{GateSink, Registry};

/// What the execution side needs from a session. The session implements it; the unit tests
/// implement it with an in-memory recorder.
pub(crate) trait Host: GateSink + Send + Sync + 'static {
    /// Enabled (not disabled, not disposed): events are recorded.
    fn enabled(&self) -> bool;
    /// Attached to a debugger: gates may hold.
    fn attached(&self) -> bool;
    /// Records one event for `run_id` (stamps seq/ts; never blocks).
    fn emit(&self, run_id: &str, message: Message);
    /// Records one event that happened at `at` (its `ts`), kept compact until it is sent.
    fn record(&self, run_id: &str, record: crate::record::Record, at: Instant) {
        let _ = at;
        self.emit(run_id, record.into_message());
    }
    /// Current breakpoints and mode.
    fn debug_state(&self) -> (Vec<BreakpointMatcher>, Mode);
    /// Held gates.
    fn gates(&self) -> &Registry;
    /// Automatic continue after this long held; `None` = wait forever.
    fn pause_timeout(&self) -> Option<Duration>;
    /// Token batching interval (34 ms by default).
    fn token_interval(&self) -> Duration;
    /// App name for run.started.
    fn app(&self) -> String;
    /// SDK info for run.started.
    fn sdk(&self) -> SdkInfo;
    /// Session meta merged into run.started.meta.
    fn meta(&self) -> Extra;
    /// Whether [`Host::first_use`] still has work to do (cheap).
    fn needs_first_use(&self) -> bool {
        false
    }
    /// The first instrumented use: starts the transport, or waits for attachment when the
    /// session was configured to.
    fn first_use(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
}

impl Host for crate::session::Inner {
    fn enabled(&self) -> bool {
        self.is_enabled()
    }
    fn attached(&self) -> bool {
        self.is_attached()
    }
    fn emit(&self, run_id: &str, message: Message) {
        let _ = crate::session::Inner::emit(self, run_id, message);
    }
    fn record(&self, run_id: &str, record: crate::record::Record, at: Instant) {
        let _ = crate::session::Inner::record(self, run_id, record, at);
    }
    fn debug_state(&self) -> (Vec<BreakpointMatcher>, Mode) {
        let s = crate::session::Inner::debug_state(self);
        (s.breakpoints.clone(), s.mode)
    }
    fn gates(&self) -> &Registry {
        &self.gates
    }
    fn pause_timeout(&self) -> Option<Duration> {
        self.config.pause_timeout
    }
    fn token_interval(&self) -> Duration {
        self.config.token_interval
    }
    fn app(&self) -> String {
        self.config.app.clone()
    }
    fn sdk(&self) -> SdkInfo {
        SdkInfo {
            name: self.config.sdk_name.clone(),
            version: self.config.sdk_version.clone(),
            extra: Extra::new(),
        }
    }
    fn meta(&self) -> Extra {
        self.config.meta.clone()
    }
    fn needs_first_use(&self) -> bool {
        crate::session::Inner::needs_first_use(self)
    }
    fn first_use(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(crate::session::Inner::first_use(self))
    }
}

/// Whether the default session records events (one relaxed load once it exists).
#[inline]
pub(crate) fn default_enabled() -> bool {
    crate::session::default_enabled()
}

/// The default session as a host.
pub(crate) fn default_host() -> Arc<dyn Host> {
    crate::session::default_inner()
}

/// Whether a gate at `point` of node (`kind`, `name`) should hold, and why.
pub(crate) fn should_pause(
    host: &dyn Host,
    kind: NodeKind,
    name: &str,
    point: PausePoint,
) -> Option<PauseReason> {
    if !host.attached() {
        return None;
    }
    let (breakpoints, mode) = host.debug_state();
    if breakpoints.iter().any(|m| m.matches(kind, name, point)) {
        return Some(if point == PausePoint::Error {
            PauseReason::Error
        } else {
            PauseReason::Breakpoint
        });
    }
    if mode == Mode::Step && point != PausePoint::After {
        return Some(if point == PausePoint::Error {
            PauseReason::Error
        } else {
            PauseReason::Step
        });
    }
    None
}

// ---- ids ---------------------------------------------------------------------------------

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: fall back to the clock, ids only need to be unlikely to repeat.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = nanos ^ u128::from(std::process::id()) << 64;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8;
        }
    }
    buf
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Six hex characters fixed for the process.
pub(crate) fn process_base() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| hex(&random_bytes::<3>()))
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Ids a thread takes from [`COUNTER`] at a time.
const ID_BLOCK: u64 = 256;

thread_local! {
    /// This thread's block of ids: (next, end).
    static IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// The next value of the id counter shared by every generated id: unique in the process and
/// increasing on each thread (threads take blocks of ids, so no shared write per id).
pub(crate) fn next_counter() -> u64 {
    IDS.try_with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = COUNTER.fetch_add(ID_BLOCK, Ordering::Relaxed) + 1;
            end = next + ID_BLOCK;
        }
        ids.set((next + 1, end));
        next
    })
    .unwrap_or_else(|_| COUNTER.fetch_add(1, Ordering::Relaxed) + 1)
}

/// `<prefix>_<6 hex per process>_<counter>` (`pause_`, `call_`, `inv_`), in one allocation.
pub(crate) fn next_id(prefix: &str) -> String {
    use std::fmt::Write;
    let n = next_counter();
    let base = process_base();
    let mut id = String::with_capacity(prefix.len() + base.len() + 22);
    id.push_str(prefix);
    id.push('_');
    id.push_str(base);
    id.push('_');
    let _ = write!(id, "{n}");
    id
}

/// A run id shared by every event of the run without copying it.
pub(crate) type RunId = Arc<str>;

/// `run_` + 12 hex.
pub(crate) fn new_run_id() -> String {
    format!("run_{}", hex(&random_bytes::<6>()))
}

/// Milliseconds as the protocol writes durations: rounded to 0.01, never negative or NaN.
pub(crate) fn millis(d: Duration) -> f64 {
    if d.is_zero() {
        return 0.0;
    }
    let ms = (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0;
    if ms.is_finite() && ms > 0.0 { ms } else { 0.0 }
}

/// Milliseconds between two instants (0 if `to` is earlier).
pub(crate) fn millis_between(from: Instant, to: Instant) -> f64 {
    millis(to.saturating_duration_since(from))
}

// ---- the implicit run ----------------------------------------------------------------------

/// Implicit runs by session (the address of its state).
static IMPLICIT_RUNS: Mutex<Vec<(usize, RunId)>> = Mutex::new(Vec::new());

/// Calls outside any run scope are attributed to one implicit run per session, announced
/// with `run.started {meta:{name:"implicit", implicit:true}}` on first use.
pub(crate) fn implicit_run(host: &Arc<dyn Host>) -> RunId {
    let key = Arc::as_ptr(host).cast::<()>() as usize;
    // This thread's last answer, valid while no implicit run was started or ended since.
    let generation = IMPLICIT_GEN.load(Ordering::Acquire);
    let hit = IMPLICIT_CACHE.try_with(|c| {
        let c = c.borrow();
        (c.0 == generation && c.1 == key)
            .then(|| c.2.clone())
            .flatten()
    });
    if let Ok(Some(id)) = hit {
        return id;
    }
    let id = implicit_run_slow(host, key);
    let _ = IMPLICIT_CACHE.try_with(|c| *c.borrow_mut() = (generation, key, Some(Arc::clone(&id))));
    id
}

/// Bumped whenever an implicit run starts or ends: invalidates the per-thread caches.
static IMPLICIT_GEN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// (generation, session key, its implicit run) as last looked up on this thread.
    static IMPLICIT_CACHE: std::cell::RefCell<(u64, usize, Option<RunId>)> =
        const { std::cell::RefCell::new((u64::MAX, 0, None)) };
}

fn implicit_run_slow(host: &Arc<dyn Host>, key: usize) -> RunId {
    let mut runs = IMPLICIT_RUNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, id)) = runs.iter().find(|(k, _)| *k == key) {
        return Arc::clone(id);
    }
    let id: RunId = new_run_id().into();
    let mut meta = host.meta();
    meta.insert("name".into(), "implicit".into());
    meta.insert("implicit".into(), true.into());
    host.emit(
        &id,
        Message::RunStarted(graphmind_protocol::RunStarted {
            app: host.app(),
            sdk: host.sdk(),
            meta: Some(meta),
            extra: Extra::new(),
        }),
    );
    runs.push((key, Arc::clone(&id)));
    IMPLICIT_GEN.fetch_add(1, Ordering::Release);
    id
}

/// Ends a session's implicit run, if it has one, with `run.finished {status:"ok"}`
/// (`dispose()` calls this before closing).
pub(crate) fn end_implicit_run(host: &dyn Host) {
    let key = std::ptr::from_ref(host).cast::<()>() as usize;
    let id = {
        let mut runs = IMPLICIT_RUNS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(at) = runs.iter().position(|(k, _)| *k == key) else {
            return;
        };
        let id = runs.swap_remove(at).1;
        IMPLICIT_GEN.fetch_add(1, Ordering::Release);
        id
    };
    host.emit(
        &id,
        Message::RunFinished(graphmind_protocol::RunFinished {
            status: graphmind_protocol::Status::Ok,
            error: None,
            extra: Extra::new(),
        }),
    );
}
