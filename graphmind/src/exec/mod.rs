//! The execution side of the runtime: what a gated call needs from its session ([`Host`]),
//! the scope it runs in (run, hold clocks), ids, and the policies for tools and model steps.

pub(crate) mod detached;
pub(crate) mod loops;
pub(crate) mod scope;
pub(crate) mod step;
pub(crate) mod tool;

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The clock of event timestamps and node durations: `quanta`'s TSC-based instant (one read
/// costs about a third of `std::time::Instant::now` where the TSC is invariant; elsewhere it
/// falls back to the OS monotonic clock).
pub(crate) use quanta::Instant;

use graphmind_protocol::{Extra, Message, Mode, NodeKind, PausePoint, PauseReason, SdkInfo};

use crate::gate::{GateSink, Registry};

/// What the execution side needs from a session. The session implements it; the unit tests
/// implement it with an in-memory recorder.
pub(crate) trait Host: GateSink + Send + Sync + 'static {
    /// Enabled (not disabled, not disposed): events are recorded.
    fn enabled(&self) -> bool;
    /// Attached to a debugger that may control the app: gates may hold.
    fn attached(&self) -> bool;
    /// Records one event for `run_id` (stamps seq/ts; never blocks). Returns its seq, if
    /// recorded.
    fn emit(&self, run_id: &str, message: Message) -> Option<u64>;
    /// Records one event that happened at `at` (its `ts`), kept compact until it is sent.
    fn record(&self, run_id: &str, record: crate::record::Record, at: Instant) -> Option<u64> {
        let _ = at;
        self.emit(run_id, record.into_message())
    }
    /// Whether an armed breakpoint holds a gate at `point` of (`kind`, `name`), and the
    /// current mode (O(1) whatever the number of breakpoints).
    fn gate_rule(&self, kind: NodeKind, name: &str, point: PausePoint) -> (bool, Mode);
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
    /// The session's implicit run.
    fn implicit(&self) -> &ImplicitRun;
    /// The loop guard in effect.
    fn loop_guard(&self) -> &crate::config::LoopGuard {
        static OFF: crate::config::LoopGuard = crate::config::LoopGuard::OFF;
        &OFF
    }
    /// Prints a warning (the config's warning hook, or standard error).
    fn warn(&self, message: &str) {
        let _ = message;
    }
    /// A token batch of this session is waiting for its interval: flushed early if the
    /// session is disposed first.
    fn track_tokens(&self, buf: std::sync::Weak<crate::tokens::TokenBuf>) {
        let _ = buf;
    }
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
        // Gates hold only for a debugger that may control the app.
        self.is_controlled()
    }
    fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        crate::session::Inner::emit(self, run_id, message)
    }
    fn record(&self, run_id: &str, record: crate::record::Record, at: Instant) -> Option<u64> {
        crate::session::Inner::record(self, run_id, record, at)
    }
    fn gate_rule(&self, kind: NodeKind, name: &str, point: PausePoint) -> (bool, Mode) {
        crate::session::Inner::gate_rule(self, kind, name, point)
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
    fn implicit(&self) -> &ImplicitRun {
        &self.implicit
    }
    fn loop_guard(&self) -> &crate::config::LoopGuard {
        &self.loop_guard
    }
    fn warn(&self, message: &str) {
        self.config.warn(message);
    }
    fn track_tokens(&self, buf: std::sync::Weak<crate::tokens::TokenBuf>) {
        crate::session::Inner::track_tokens(self, buf);
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
    let (hit, mode) = host.gate_rule(kind, name, point);
    if hit {
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
    // Whole hundredths of a millisecond (10 µs), rounded half up, in integer arithmetic: one
    // float division (exact to the shortest decimal) instead of a float chain and `round`.
    let nanos = d
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()));
    let hundredths = nanos.saturating_add(5_000) / 10_000;
    // Below 2^53 hundredths (2,850 years) the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let hundredths = hundredths as f64;
    hundredths / 100.0
}

/// Milliseconds between two instants (0 if `to` is earlier).
pub(crate) fn millis_between(from: Instant, to: Instant) -> f64 {
    millis(to.saturating_duration_since(from))
}

// ---- the implicit run ----------------------------------------------------------------------

/// A session's implicit run: the run of calls outside any run scope, announced with
/// `run.started {meta:{name:"implicit", implicit:true}}` on first use and finished when the
/// session is disposed.
#[derive(Default)]
pub(crate) struct ImplicitRun {
    id: OnceLock<RunId>,
    ended: std::sync::atomic::AtomicBool,
    /// The loop guard's streak of the implicit run.
    pub(crate) streak: std::sync::Mutex<loops::Streak>,
}

/// The id of `host`'s implicit run, starting it on first use.
pub(crate) fn implicit_run_id(host: &dyn Host) -> &RunId {
    host.implicit().id.get_or_init(|| {
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
        id
    })
}

/// [`implicit_run_id`], shared.
pub(crate) fn implicit_run(host: &Arc<dyn Host>) -> RunId {
    Arc::clone(implicit_run_id(&**host))
}

/// Ends a session's implicit run, if it has one, with `run.finished {status:"ok"}`
/// (`dispose()` calls this before closing).
pub(crate) fn end_implicit_run(host: &dyn Host) {
    let implicit = host.implicit();
    let Some(id) = implicit.id.get() else {
        return;
    };
    if implicit.ended.swap(true, Ordering::Relaxed) {
        return;
    }
    host.emit(
        id,
        Message::RunFinished(graphmind_protocol::RunFinished {
            status: graphmind_protocol::Status::Ok,
            error: None,
            extra: Extra::new(),
        }),
    );
}

#[cfg(test)]
mod millis_tests {
    use super::millis;
    use std::time::Duration;

    #[test]
    fn durations_round_to_hundredths_of_a_millisecond() {
        let ms = |nanos: u64| millis(Duration::from_nanos(nanos));
        assert_eq!(ms(0), 0.0);
        assert_eq!(ms(4_999), 0.0);
        assert_eq!(ms(5_000), 0.01);
        assert_eq!(ms(70_000), 0.07);
        assert_eq!(ms(1_234_567), 1.23);
        assert_eq!(ms(1_235_000), 1.24);
        assert_eq!(millis(Duration::from_secs(1)), 1000.0);
        assert_eq!(millis(Duration::from_secs(86_400 * 365)), 31_536_000_000.0);
        assert!(millis(Duration::MAX).is_finite());
        // Written as the shortest decimal, like the other clients' two-decimal durations.
        assert_eq!(serde_json::to_string(&ms(70_000)).unwrap(), "0.07");
        assert_eq!(serde_json::to_string(&ms(123_456_789)).unwrap(), "123.46");
    }
}
