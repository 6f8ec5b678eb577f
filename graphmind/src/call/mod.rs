//! The execution side of the runtime: what a gated call needs from its session ([`Host`]),
//! the scope it runs in (run, hold clocks), ids, and the policies for tools and model steps.

pub(crate) mod context;
pub(crate) mod detached;
// Reached only through `#[doc(hidden)] __private`, so, like it, out of the documented API
// (and of `missing_docs`: `pin_project_lite` cannot document the fields of `CallFuture`).
#[doc(hidden)]
pub(crate) mod expansion;
pub(crate) mod hold;
pub(crate) mod loop_check;
pub(crate) mod node_run;
pub(crate) mod policy;
#[cfg(test)]
pub(crate) mod recorder;
pub(crate) mod replayed;
pub(crate) mod scope;
pub(crate) mod step;
pub(crate) mod tee;
pub(crate) mod tokens;
pub(crate) mod tool;

use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::{Extra, Message, Mode, NodeKind, PausePoint, PauseReason, SdkInfo};

use crate::clock::Instant;
use crate::gate::{GateSink, Registry};
use crate::ids::{RunId, new_run_id};

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
    fn record(&self, run_id: &str, record: crate::event::Record, at: Instant) -> Option<u64> {
        let _ = at;
        self.emit(run_id, record.into_message())
    }
    /// Records a tool call's `node.started` (at `started`) and `node.finished` (at
    /// `finished`), one ring entry where the host keeps compact records. Returns the first
    /// seq, if recorded.
    fn record_call(
        &self,
        run_id: &str,
        call: crate::event::Call,
        started: Instant,
        finished: Instant,
    ) -> Option<u64> {
        let (s, f) = call.split();
        let seq = self.record(run_id, crate::event::Record::Started(s), started);
        self.record(run_id, crate::event::Record::Finished(f), finished);
        seq
    }
    /// Whether a detached call's `node.started` may wait until its first poll ends (to be
    /// recorded with its `node.finished` as one entry): the host records the deferred ones of
    /// the thread before any other event ([`crate::event::flush_waiting`]).
    fn defers(&self) -> bool {
        false
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
    fn implicit(&self) -> &crate::implicit_run::ImplicitRun;
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
    fn track_tokens(&self, buf: std::sync::Weak<dyn crate::session::PendingTokens>) {
        let _ = buf;
    }
    /// The replayer answering this host's calls from a recording, if one is configured.
    fn replayer(&self) -> Option<&crate::replay::Replayer> {
        None
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
        let on = self.is_enabled();
        if !on {
            self.warn_used_after_close();
        }
        on
    }
    fn attached(&self) -> bool {
        // Gates hold only for a debugger that may control the app.
        self.shared.is_controlled()
    }
    fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        crate::session::Inner::emit(self, run_id, message)
    }
    fn record(&self, run_id: &str, record: crate::event::Record, at: Instant) -> Option<u64> {
        crate::session::Inner::record(self, run_id, record, at)
    }
    fn record_call(
        &self,
        run_id: &str,
        call: crate::event::Call,
        started: Instant,
        finished: Instant,
    ) -> Option<u64> {
        crate::session::Inner::record_call(self, run_id, call, started, finished)
    }
    fn defers(&self) -> bool {
        true
    }
    fn gate_rule(&self, kind: NodeKind, name: &str, point: PausePoint) -> (bool, Mode) {
        crate::session::Inner::gate_rule(self, kind, name, point)
    }
    fn gates(&self) -> &Registry {
        self.shared.gates()
    }
    fn pause_timeout(&self) -> Option<Duration> {
        self.shared.config().pause_timeout
    }
    fn token_interval(&self) -> Duration {
        self.shared.config().token_interval
    }
    fn app(&self) -> String {
        self.shared.config().app.clone()
    }
    fn sdk(&self) -> SdkInfo {
        SdkInfo {
            name: self.shared.config().sdk_name.clone(),
            version: self.shared.config().sdk_version.clone(),
            extra: Extra::new(),
        }
    }
    fn meta(&self) -> Extra {
        let mut meta = self.shared.config().meta.clone();
        // The recorded run a replay answers from (read off `init`'s thread: a run waits
        // here until the recording names it).
        if let Some(source) = self.replayer.as_deref().and_then(|r| r.source_run()) {
            meta.insert("replayOf".into(), source.into());
        }
        meta
    }
    fn implicit(&self) -> &crate::implicit_run::ImplicitRun {
        &self.implicit
    }
    fn loop_guard(&self) -> &crate::config::LoopGuard {
        &self.loop_guard
    }
    fn warn(&self, message: &str) {
        self.shared.config().warn(message);
    }
    fn track_tokens(&self, buf: std::sync::Weak<dyn crate::session::PendingTokens>) {
        crate::session::Inner::track_tokens(self, buf);
    }
    fn needs_first_use(&self) -> bool {
        crate::session::Inner::needs_first_use(self)
    }
    fn replayer(&self) -> Option<&crate::replay::Replayer> {
        self.replayer.as_deref()
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

// ---- the implicit run ----------------------------------------------------------------------

/// The id of `host`'s implicit run, starting it on first use.
pub(crate) fn implicit_run_id(host: &dyn Host) -> &RunId {
    host.implicit().get_or_start(|| {
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
