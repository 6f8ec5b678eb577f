//! A tool call that starts while its session is detached: `node.started` before the body,
//! `node.finished` (after `node.error` for an `Err`) at its end, and nothing else — no gates,
//! no held time, no token batch. Its state is a fraction of a gated call's, so the call
//! costs little more than the two events it leaves in the replay ring.
//!
//! A call that finishes in its first poll (most tool calls) leaves one ring entry for its two
//! events: its `node.started` waits until that poll ends and goes into the ring with its
//! `node.finished` ([`crate::event::Call`]). Meanwhile it sits in a thread-local list, and any
//! event recorded on the thread during the poll (a nested call's, an emit) records the waiting
//! ones first ([`flush_deferred`]), so a call's `node.started` still precedes every event it
//! causes.

use std::borrow::Cow;
use std::cell::RefCell;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use graphmind_protocol::{ErrorInfo, Extra, Status};

use super::Host;
use super::scope::RunCtx;
use crate::call::node_run::{
    compact_input, compact_val, emit_error, record_finished, record_tool_started,
};
use crate::captured::Val;
use crate::clock::{Instant, millis_between};
use crate::event::{Call, Finished, InstanceId, Label, Payload, Record, Started};
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
///
/// Kept within 128 bytes: it moves into the thread-local list and back on a first poll, and
/// a move that size is a few inline stores where a larger one is a `memcpy` call.
pub(crate) struct DetachedNode {
    run: RunRef,
    site: &'static ToolSite,
    started: Instant,
    phase: Phase,
}

/// How far a detached call's node is.
enum Phase {
    /// `node.started`, not recorded yet: it waits for the end of the first poll.
    Waiting(Started),
    /// `node.started` is recorded; the call's id.
    Open(InstanceId),
    /// Finished.
    Done,
}

thread_local! {
    /// The open nodes of detached calls in their first poll on this thread, outermost first.
    static DEFERRED: RefCell<Vec<DetachedNode>> = const { RefCell::new(Vec::new()) };
}

/// Records the waiting `node.started` of the calls in their first poll on this thread,
/// outermost first: called before any other event is recorded (the records it makes skip it),
/// through [`crate::event::flush_waiting`].
fn flush_deferred() {
    DEFERRED.with(|d| {
        let Ok(mut d) = d.try_borrow_mut() else {
            return;
        };
        for node in d.iter_mut() {
            node.record_started();
        }
    });
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
        if run.host().defers() && compact_input(&input) {
            return Self {
                run,
                site,
                started: Instant::now(),
                phase: Phase::Waiting(Started {
                    label: Label::Tool(site),
                    instance_id,
                    parent_id: parent,
                    input: Some(input),
                }),
            };
        }
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
            started,
            phase: Phase::Open(instance_id),
        }
    }

    /// Whether its `node.started` waits to be recorded.
    fn waiting(&self) -> bool {
        matches!(self.phase, Phase::Waiting(_))
    }

    /// Records the waiting `node.started`, if any.
    fn record_started(&mut self) {
        self.phase = match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Waiting(started) => Phase::Open(self.record(started)),
            other => other,
        };
    }

    /// Records `started` (stamped at the call's start) and returns the call's id.
    fn record(&self, started: Started) -> InstanceId {
        let id = started.instance_id.clone();
        self.run
            .host()
            .record(self.run.run_id(), Record::Started(started), self.started);
        id
    }

    /// Records the end: `node.error` first for an error, then `node.finished` (with a
    /// waiting `node.started` as one entry when it ended well and its output is small).
    fn finish(&mut self, outcome: Ending, extra: Extra) {
        let instance_id = match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => return,
            Phase::Open(id) => id,
            Phase::Waiting(started) => {
                if outcome.error.is_none()
                    && extra.is_empty()
                    && outcome.output.as_ref().is_none_or(compact_val)
                {
                    let now = Instant::now();
                    self.run.host().record_call(
                        self.run.run_id(),
                        Call {
                            started,
                            finished_after: 0,
                            duration_ms: millis_between(self.started, now),
                            status: outcome.status,
                            output: outcome.output,
                        },
                        self.started,
                        now,
                    );
                    return;
                }
                self.record(started)
            }
        };
        let (host, run_id) = (self.run.host(), self.run.run_id());
        if let Some(error) = outcome.error {
            emit_error(host, run_id, self.site.node_id, &instance_id, error, 0.0);
        }
        let now = Instant::now();
        record_finished(
            host,
            run_id,
            Finished {
                node_id: Cow::Borrowed(self.site.node_id),
                instance_id,
                duration_ms: millis_between(self.started, now),
                status: outcome.status,
                output: outcome.output,
                held_ms: 0.0,
                more: None,
            },
            None,
            extra.into(),
            now,
        );
    }
}

impl Drop for DetachedNode {
    fn drop(&mut self) {
        if matches!(self.phase, Phase::Done) {
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
        // `None` only during a first poll (the node is then in `DEFERRED`).
        node: Option<DetachedNode>,
        done: fn(&D::Output) -> Ending,
    }
}

impl<D: Future> Recording<D> {
    pub(crate) fn new(fut: D, node: DetachedNode, done: fn(&D::Output) -> Ending) -> Self {
        Self {
            fut,
            node: Some(node),
            done,
        }
    }
}

/// Puts a node back from `DEFERRED` when its first poll ends (or unwinds).
struct Deferred<'a> {
    slot: &'a mut Option<DetachedNode>,
    depth: usize,
}

impl Drop for Deferred<'_> {
    fn drop(&mut self) {
        *self.slot = DEFERRED.with(|d| {
            let mut d = d.try_borrow_mut().ok()?;
            // Nested first polls have put theirs back already: this one is the last.
            d.truncate(self.depth + 1);
            let node = d.pop();
            if d.is_empty() {
                crate::event::set_waiting(None);
            }
            node
        });
    }
}

impl<D: Future> Future for Recording<D> {
    type Output = D::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<D::Output> {
        let this = self.project();
        if this.node.as_ref().is_some_and(DetachedNode::waiting)
            && let Some(node) = this.node.take()
        {
            // First poll with `node.started` waiting: the node stays reachable for events
            // recorded on this thread meanwhile.
            // The node comes back on `Err` (the list is borrowed: a poll inside a flush).
            #[allow(clippy::result_large_err)]
            let depth = DEFERRED.with(|d| match d.try_borrow_mut() {
                Ok(mut d) => {
                    d.push(node);
                    crate::event::set_waiting(Some(flush_deferred));
                    Ok(d.len() - 1)
                }
                Err(_) => Err(node),
            });
            match depth {
                Ok(depth) => {
                    let polled = {
                        let _back = Deferred {
                            slot: &mut *this.node,
                            depth,
                        };
                        this.fut.poll(cx)
                    };
                    let Poll::Ready(out) = polled else {
                        if let Some(node) = this.node {
                            node.record_started();
                        }
                        return Poll::Pending;
                    };
                    if let Some(node) = this.node {
                        node.finish((this.done)(&out), Extra::new());
                    }
                    return Poll::Ready(out);
                }
                Err(mut node) => {
                    node.record_started();
                    *this.node = Some(node);
                }
            }
        }
        let out = std::task::ready!(this.fut.poll(cx));
        if let Some(node) = this.node {
            node.finish((this.done)(&out), Extra::new());
        }
        Poll::Ready(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_detached_node_moves_in_a_few_inline_stores() {
        // Past 128 bytes a move is a `memcpy` call (on x86-64 with SSE2).
        assert!(size_of::<super::DetachedNode>() <= 128);
        assert!(size_of::<Option<super::DetachedNode>>() <= 128);
    }
}
