//! A tool call that starts while its session is detached: `node.started` before the body,
//! `node.finished` (after `node.error` for an `Err`) at its end, and nothing else — no gates,
//! no held time, no token batch. Its state is a fraction of a gated call's, so the call
//! costs little more than the two events it leaves in the replay ring.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use graphmind_protocol::{ErrorInfo, Extra, Status};

use super::Host;
use super::scope::RunCtx;
use crate::call::node_run::{emit_error, record_finished, record_tool_started};
use crate::captured::Val;
use crate::clock::{Instant, millis_between};
use crate::event::{Finished, InstanceId, Payload};
use crate::ids::RunId;
use crate::sites::ToolSite;

/// How a detached call ended, read from its output.
pub(crate) struct Ending {
    pub(crate) status: Status,
    pub(crate) output: Option<Val>,
    pub(crate) error: Option<ErrorInfo>,
}

/// The open node of a detached call. Dropped unfinished (the call was cancelled, or it
/// panicked), it finishes `aborted` / `error` like any node.
pub(crate) struct DetachedNode {
    run: RunRef,
    site: &'static ToolSite,
    instance_id: InstanceId,
    started: Instant,
    open: bool,
}

/// The run a detached call belongs to: one shared handle either way.
pub(crate) enum RunRef {
    /// Outside any run scope: the session's implicit run (kept by the session).
    Implicit(Arc<dyn Host>),
    /// A run scope (its session, id and agent node).
    Run(Arc<RunCtx>),
}

impl RunRef {
    fn host(&self) -> &dyn Host {
        match self {
            Self::Implicit(host) => &**host,
            Self::Run(run) => &*run.host,
        }
    }

    fn run_id(&self) -> &RunId {
        match self {
            Self::Implicit(host) => super::implicit_run_id(&**host),
            Self::Run(run) => &run.run_id,
        }
    }
}

impl DetachedNode {
    /// Records `node.started` and starts the clock.
    pub(crate) fn start(
        run: RunRef,
        site: &'static ToolSite,
        input: Payload,
        instance_id: InstanceId,
    ) -> Self {
        let parent = match &run {
            RunRef::Run(r) => Some(r.agent_node.clone()),
            RunRef::Implicit(_) => None,
        };
        let started = record_tool_started(
            run.host(),
            run.run_id(),
            site,
            instance_id.clone(),
            parent,
            input,
        );
        Self {
            run,
            site,
            instance_id,
            started,
            open: true,
        }
    }

    /// Records the end: `node.error` first for an error, then `node.finished`.
    fn finish(&mut self, outcome: Ending, extra: Extra) {
        if !std::mem::replace(&mut self.open, false) {
            return;
        }
        let (host, run_id) = (self.run.host(), self.run.run_id());
        if let Some(error) = outcome.error {
            emit_error(
                host,
                run_id,
                self.site.node_id,
                &self.instance_id,
                error,
                0.0,
            );
        }
        let now = Instant::now();
        record_finished(
            host,
            run_id,
            Finished {
                node_id: Cow::Borrowed(self.site.node_id),
                instance_id: std::mem::replace(&mut self.instance_id, InstanceId::Call(0)),
                duration_ms: millis_between(self.started, now),
                status: outcome.status,
                output: outcome.output,
                held_ms: 0.0,
                more: None,
            },
            None,
            extra,
            now,
        );
    }
}

impl Drop for DetachedNode {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let (status, extra) = crate::call::node_run::dropped_unfinished();
        self.finish(
            Ending {
                status,
                output: None,
                error: None,
            },
            extra,
        );
    }
}

pin_project_lite::pin_project! {
    /// The body of a call that started detached, with its open node and how to read the
    /// outcome from the output.
    pub struct Recording<D: Future> {
        #[pin]
        fut: D,
        node: DetachedNode,
        done: fn(&D::Output) -> Ending,
    }
}

impl<D: Future> Recording<D> {
    pub(crate) fn new(fut: D, node: DetachedNode, done: fn(&D::Output) -> Ending) -> Self {
        Self { fut, node, done }
    }
}

impl<D: Future> Future for Recording<D> {
    type Output = D::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<D::Output> {
        let this = self.project();
        let out = std::task::ready!(this.fut.poll(cx));
        this.node.finish((this.done)(&out), Extra::new());
        Poll::Ready(out)
    }
}
