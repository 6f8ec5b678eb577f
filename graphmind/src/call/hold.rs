//! Holding one gate: whether it holds (breakpoint, step mode, loop guard), `exec.paused`,
//! waiting for the release, the pause timeout and the hold clocks.

use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::{ExecPaused, Extra, Message, NodeKind, PausePoint, PauseReason};
use serde_json::Value;
use tokio::sync::oneshot;

use super::Host;
use crate::clock::{HoldClock, Instant};
use crate::edit::EditGate;
use crate::gate::{GateSink, HeldGate, Resume, Validator};

/// One gate about to be decided.
pub(crate) struct GateSpec<'a> {
    pub(crate) host: &'a Arc<dyn Host>,
    pub(crate) run_id: &'a str,
    pub(crate) node_id: &'a str,
    pub(crate) kind: NodeKind,
    pub(crate) name: &'a str,
    pub(crate) point: PausePoint,
    pub(crate) retry: bool,
    /// Builds the inject validator (only when the gate actually holds).
    pub(crate) inject: Option<fn() -> Validator>,
    pub(crate) abort: bool,
    /// Hold clocks of the enclosing `time::timeout`s.
    pub(crate) clock: Option<Arc<HoldClock>>,
    /// The run's hold clock (the agent node's heldMs: union of its gates' holds).
    pub(crate) run_clock: Option<Arc<HoldClock>>,
    /// What the gate holds, for `exec.paused` (`output` at `after`, `error` at `error`);
    /// empty when nothing is held or the gate will not hold.
    pub(crate) held_value: Extra,
    /// Hold for this reason whatever the breakpoints say (the loop guard).
    pub(crate) forced: Option<graphmind_protocol::PauseReason>,
    /// The gate's edit support (built by the caller only when the gate will hold).
    pub(crate) edit: Option<EditGate>,
    /// Whether `reject` is allowed here.
    pub(crate) reject: bool,
    /// The held execution, for `exec.paused.instanceId`.
    pub(crate) instance_id: Option<String>,
}

/// What a gate decided, and how long it held.
pub(crate) struct Released {
    pub(crate) decision: Resume,
    pub(crate) held: Duration,
}

/// The actions this gate accepts, for `exec.paused` (a loose extra, `"actions"`): a viewer or
/// CLI offers only these; any other is refused with `exec.refused` and the gate stays held.
fn allowed_actions(retry: bool, inject: bool, abort: bool, reject: bool) -> Value {
    let all = [
        ("continue", true),
        ("retry", retry),
        ("inject", inject),
        ("abort", abort),
        ("reject", reject),
    ];
    Value::Array(
        all.iter()
            .filter(|(_, ok)| *ok)
            .map(|(name, _)| Value::from(*name))
            .collect(),
    )
}

/// Why a gate at `point` of (`kind`, `name`) holds, if it does: `forced` (the loop guard)
/// while attached, else a breakpoint or step mode. Cheap when it does not: callers check it
/// before building a [`GateSpec`].
pub(crate) fn hold_reason(
    host: &dyn Host,
    forced: Option<graphmind_protocol::PauseReason>,
    kind: NodeKind,
    name: &str,
    point: PausePoint,
) -> Option<graphmind_protocol::PauseReason> {
    match forced {
        Some(reason) if host.attached() => Some(reason),
        _ => super::should_pause(host, kind, name, point),
    }
}

/// Decides one gate: continues at once unless attached and a breakpoint or step mode
/// matches; otherwise emits `exec.paused`, holds until released, and returns the decision.
/// Dropping the returned future while held releases the gate with `continue`
/// (`exec.resumed` included).
pub(crate) async fn decide(spec: GateSpec<'_>) -> Released {
    let Some(reason) = hold_reason(&**spec.host, spec.forced, spec.kind, spec.name, spec.point)
    else {
        return Released {
            decision: Resume::Continue,
            held: Duration::ZERO,
        };
    };
    let pause_id = crate::ids::next_id("pause");
    let host = Arc::clone(spec.host);
    let reject = spec.reject && spec.point == PausePoint::Before;
    // At `after` and `error` an edit goes with a retry: offered only where retry is.
    let edit = match spec.edit {
        Some(edit)
            if (spec.point == PausePoint::Before || spec.retry) && host.gates().edits_allowed() =>
        {
            Some(edit)
        }
        _ => None,
    };
    let mut extra = spec.held_value;
    extra.insert(
        "actions".into(),
        allowed_actions(spec.retry, spec.inject.is_some(), spec.abort, reject),
    );
    if let Some(id) = spec.instance_id {
        extra.insert("instanceId".into(), Value::String(id));
    }
    // A replay's fork point: on the wire a `breakpoint` hold (the reason every peer's schema
    // knows) marked `replayFork: true`; graphmind's hub reads it back as reason `replay`.
    let reason = match reason {
        PauseReason::Replay => {
            extra.insert("replayFork".into(), Value::Bool(true));
            PauseReason::Breakpoint
        }
        other => other,
    };
    host.emit(
        spec.run_id,
        Message::ExecPaused(ExecPaused {
            pause_id: pause_id.clone(),
            node_id: spec.node_id.to_owned(),
            point: spec.point,
            reason: Some(reason),
            editable: edit.is_some(),
            extra,
        }),
    );
    let (tx, rx) = oneshot::channel();
    let sink: Arc<dyn GateSink> = host.clone();
    host.gates().insert(
        pause_id.clone(),
        HeldGate {
            run_id: spec.run_id.to_owned(),
            node_id: spec.node_id.to_owned(),
            point: spec.point,
            retry: spec.retry,
            inject: spec.inject.map(|make| make()),
            abort: spec.abort,
            edit,
            reject,
            sink,
            tx,
        },
    );
    let started = Instant::now();
    let guard = HoldGuard {
        host: &host,
        pause_id: &pause_id,
        clocks: [spec.clock, spec.run_clock],
    };
    for clock in guard.clocks.iter().flatten() {
        clock.hold_started(started);
    }
    // A detach between the decision and the insert: release_all already ran, so release
    // this one here (it would otherwise wait for the next debugger).
    if !host.attached() {
        host.gates().release(&pause_id);
    }
    // The pause timeout runs on the runtime's timer thread: it works on any executor.
    if let Some(limit) = host.pause_timeout() {
        let weak = Arc::downgrade(&host);
        let id = pause_id.clone();
        crate::delay_queue::after(limit, move || {
            if let Some(host) = weak.upgrade() {
                host.gates().release(&id);
            }
        });
    }
    let decision = rx.await.unwrap_or(Resume::Continue);
    let held = started.elapsed();
    drop(guard);
    Released { decision, held }
}

/// Ends a hold: on drop (finished or cancelled) the gate leaves the registry, with
/// `exec.resumed continue` if nobody released it yet, and the hold clocks stop.
struct HoldGuard<'a> {
    host: &'a Arc<dyn Host>,
    pause_id: &'a str,
    clocks: [Option<Arc<HoldClock>>; 2],
}

impl Drop for HoldGuard<'_> {
    fn drop(&mut self) {
        self.host.gates().release(self.pause_id);
        let now = Instant::now();
        for clock in self.clocks.iter().flatten() {
            clock.hold_ended(now);
        }
    }
}
