//! One instrumented call before it runs: its scope, run, kind, name and whether it may be
//! re-run; its gates (the hold decision as the call's policy sees it) and its parent node.

use std::borrow::Cow;
use std::sync::Arc;

use graphmind_protocol::{Extra, NodeKind, PausePoint, PauseReason};

use super::Host;
use super::scope::{RunCtx, Scope};
use crate::call::hold::{GateSpec, decide, hold_reason};
use crate::call::node_run::NodeRun;
use crate::gate::{Resume, Validator};

/// What a gate offers beyond the action table (only at `before` gates).
#[derive(Default)]
pub(crate) struct Offer {
    /// The input may be edited, checked this way.
    pub(crate) edit: Option<crate::edit::EditGate>,
    /// A reject can be carried to the caller.
    pub(crate) reject: bool,
}

/// The node that parents a run's model steps.
pub(crate) const STEP_NODE: &str = "llm:step";

/// Everything known about one call before it starts (its host and run id go to its
/// [`NodeRun`], which the gates read them from).
pub(crate) struct Call {
    pub(crate) scope: Scope,
    pub(crate) run: Option<Arc<RunCtx>>,
    pub(crate) kind: NodeKind,
    pub(crate) name: Cow<'static, str>,
    pub(crate) retry: bool,
}

impl Call {
    /// The scope and run of the running task, with its host and run id.
    pub(crate) fn current(
        kind: NodeKind,
        name: Cow<'static, str>,
        retry: bool,
    ) -> (Self, Arc<dyn Host>, crate::ids::RunId) {
        let scope = Scope::current();
        let run = scope.run.clone();
        let host = run
            .as_ref()
            .map_or_else(super::default_host, |r| Arc::clone(&r.host));
        let run_id = match &run {
            Some(r) => Arc::clone(&r.run_id),
            None => super::implicit_run(&host),
        };
        (
            Self {
                scope,
                run,
                kind,
                name,
                retry,
            },
            host,
            run_id,
        )
    }

    /// The parent of the call's node: `llm:step` once the run has had a model step (its
    /// graph hint drew the tools there, and the reference clients parent tool calls under
    /// the model step too), else the run's agent node.
    pub(crate) fn parent(&self) -> Option<crate::inline_str::SmallStr> {
        self.run.as_ref().map(|r| {
            let stepped = r
                .steps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .invocation
                .is_some();
            if stepped {
                crate::inline_str::SmallStr::from(STEP_NODE)
            } else {
                r.agent_node.clone()
            }
        })
    }

    /// A gate at `point`, offering an edit of the input or a reject where `offer` says.
    pub(crate) async fn gate_offering(
        &self,
        node: &mut NodeRun,
        point: PausePoint,
        inject: Option<fn() -> Validator>,
        held_value: Extra,
        forced: Option<PauseReason>,
        offer: Offer,
    ) -> Resume {
        // Detached, or attached with nothing to hold here (the common case): continue at
        // once, without building the hold machinery (no boxed future, no id text).
        if hold_reason(&*node.host, forced, self.kind, &self.name, point).is_none() {
            return Resume::Continue;
        }
        // Boxed: the hold machinery is only built when attached, and keeps the detached
        // policy future small.
        let out = Box::pin(decide(GateSpec {
            host: &node.host,
            run_id: &node.run_id,
            node_id: &node.node_id,
            kind: self.kind,
            name: &self.name,
            point,
            retry: self.retry,
            inject,
            abort: self.run.is_some(),
            clock: self.scope.clock.clone(),
            run_clock: self.run.as_ref().map(|r| Arc::clone(&r.held)),
            held_value,
            forced,
            edit: offer.edit,
            reject: offer.reject,
            instance_id: Some(node.instance_id.to_string()),
        }))
        .await;
        node.add_held(out.held);
        out.decision
    }

    /// The edit support of the gate of `node` at `point`, built only when that gate will
    /// hold (`forced`, or a breakpoint or step mode) and the hub takes edits. At `after` and
    /// `error` an edit goes with a retry, so it is offered only where retry is allowed.
    pub(crate) fn edit_offer(
        &self,
        node: &NodeRun,
        point: PausePoint,
        forced: bool,
        checks: impl FnOnce() -> Option<crate::call::expansion::ArgChecks>,
    ) -> Option<crate::edit::EditGate> {
        let state = node.edit.as_ref()?;
        if !node.host.gates().edits_allowed()
            || (point != PausePoint::Before && !self.retry)
            || !(forced || super::should_pause(&*node.host, self.kind, &self.name, point).is_some())
        {
            return None;
        }
        checks()?.into_gate(state.live.clone(), state.bare)
    }

    /// What a gate at `point` holds, for its `exec.paused` (built only when it will hold;
    /// synchronous, so nothing borrowed from the output lives in the gate's future).
    pub(crate) fn held_value(
        &self,
        node: &NodeRun,
        point: PausePoint,
        build: impl FnOnce() -> Extra,
    ) -> Extra {
        if super::should_pause(&*node.host, self.kind, &self.name, point).is_some() {
            build()
        } else {
            Extra::new()
        }
    }

    /// Ends the run from inside: the run scope drops the future that awaits this.
    pub(crate) async fn abort(&self) -> ! {
        if let Some(run) = &self.run {
            run.abort();
        }
        std::future::pending::<()>().await;
        unreachable!("the run scope drops an aborted call before it is polled again")
    }
}
