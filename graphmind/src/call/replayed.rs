//! A call answered by the replayer (see `crate::replay`; the decision is taken when its node
//! starts, in `node_run`): the extras of a served call, the stop at a divergence, and the
//! answer at the `before` gate of a node started by hand.

use graphmind_protocol::{Extra, PauseReason, Status};
use serde_json::Value;

use super::context::Call;
use super::node_run::{Finish, NodeRun};
use crate::replay::{Decision, Divergence, LiveReason, Served, ServedError};

pub(crate) use super::node_run::served_extra;

/// The recorded error of a call whose error type is built from one (`#[tool(replay_errors)]`):
/// `Some` when the replayer answers this call with its recorded error — `node.error` with the
/// recorded name and message, `node.finished` `error` with the served extras (the node is
/// finished), the body does not run — else `None`, the decision untouched, for the gates.
pub(crate) fn served_error(node: &mut NodeRun) -> Option<crate::RecordedError> {
    let decision = node.replay.take()?;
    let Decision::ServeError(ServedError { step, error }) = *decision else {
        node.replay = Some(decision);
        return None;
    };
    node.error(crate::errors::error_info(
        error.name.as_str(),
        error.message.clone(),
    ));
    node.finish_ref(
        Status::Error,
        Finish {
            extra: served_extra(step).into(),
            ..Finish::default()
        },
    );
    Some(error)
}

/// A recorded error the call's type is not built from: the call runs live, and the report
/// says why.
pub(crate) fn unserved_error(node: &NodeRun, served: &ServedError) {
    if let Some(r) = node.host.replayer() {
        r.unserved(served.step, LiveReason::RecordedError);
    }
}

/// The replayer's decision for a call that cannot be answered from a recording (a streaming
/// tool whose stream is created by its body): it runs live, and the report says so; a
/// divergence with `stop` aborts there. `Some(reason)` when its `before` gate must hold first
/// (a fork point with hold).
pub(crate) async fn unanswerable(call: &Call, mut node: NodeRun) -> (NodeRun, Option<PauseReason>) {
    let Some(decision) = node.replay.take() else {
        return (node, None);
    };
    match *decision {
        Decision::Serve(served) => {
            if let Some(r) = node.host.replayer() {
                r.unserved(served.step, LiveReason::NoOutput);
            }
            (node, None)
        }
        Decision::ServeError(served) => {
            unserved_error(&node, &served);
            (node, None)
        }
        Decision::Stop(d) => (stop(call, node, &d).await, None),
        Decision::Fork { hold: true } => (node, Some(PauseReason::Replay)),
        Decision::Fork { hold: false } | Decision::Live => (node, None),
    }
}

/// The recorded items of a streaming tool the replayer served, rebuilt with `decode`, and the
/// recorded step (build the tee's observer with [`served_observer`]); otherwise `None`, and the
/// call runs live (the decision left for its `before` gate when it is not a served answer: a
/// fork may hold there, a divergence stops there).
pub(crate) fn stream_items<I>(
    node: &mut NodeRun,
    decode: crate::call::expansion::ItemDecode<I>,
) -> Option<(Vec<I>, usize)> {
    let decision = node.replay.take()?;
    let served = match *decision {
        Decision::Serve(served) => served,
        other => {
            node.replay = Some(Box::new(other));
            return None;
        }
    };
    let items: Option<Vec<I>> = match (decode, served.chunks) {
        (Some(decode), Some(chunks)) => chunks.into_iter().map(decode).collect(),
        _ => None,
    };
    if items.is_none()
        && let Some(r) = node.host.replayer()
    {
        r.unserved(served.step, LiveReason::NoOutput);
    }
    items.map(|items| (items, served.step))
}

/// The observer of a stream answered from recorded step `step`: it finishes the node as
/// replayed.
pub(crate) fn served_observer(node: NodeRun, step: usize) -> super::tee::Observer {
    let mut observer = super::tee::Observer::new(node);
    observer.extra = served_extra(step);
    observer
}

/// A divergence with `stop`: `node.error` `ReplayDiverged` naming step, node and field, a
/// warning, and the run aborted at this call. Outside a run scope there is nothing to abort:
/// the node is handed back and the call runs live.
pub(crate) async fn stop(call: &Call, node: NodeRun, d: &Divergence) -> NodeRun {
    report(&node, d);
    if call.run.is_none() {
        return node;
    }
    let mut extra = Extra::new();
    extra.insert("replayDiverged".into(), true.into());
    node.finish(
        Status::Aborted,
        Finish {
            extra: extra.into(),
            ..Finish::default()
        },
    );
    call.abort().await
}

/// `node.error` `ReplayDiverged` (step, node, field, recorded vs live) and a warning.
fn report(node: &NodeRun, d: &Divergence) {
    let message = d.to_string();
    node.host.warn(&message);
    node.error(crate::errors::error_info("ReplayDiverged", message));
}

/// The replayer's decision at the `before` gate of a node started by hand
/// ([`Node`](crate::node::Node), the adapters): `Ok` answers the gate — inject the recorded
/// answer (a streamed step's chunks as a JSON array; a model step's response out of its
/// recorded output), or abort at a divergence — and `Err` lets the gate decide, holding
/// first for a fork with hold.
///
/// A served answer the gate's `fits` check refuses (it does not deserialize into what the
/// node returns) is not handed over: the call runs live, and the report says so. An answer
/// handed over marks the node replayed (its `node.finished` says `replayed`, `replayStep`).
pub(crate) fn by_hand(
    node: &mut NodeRun,
    decision: Decision,
    fits: Option<fn() -> crate::gate::Validator>,
) -> Result<crate::gate::Resume, Option<PauseReason>> {
    match decision {
        Decision::Serve(served) => {
            let step = served.step;
            let value = answer(served);
            if let Some(fits) = fits
                && fits()(&value).is_err()
            {
                if let Some(r) = node.host.replayer() {
                    r.unserved(step, LiveReason::NoOutput);
                }
                return Err(None);
            }
            node.served = Some(step);
            Ok(crate::gate::Resume::Inject(value))
        }
        Decision::ServeError(served) => {
            unserved_error(node, &served);
            Err(None)
        }
        Decision::Stop(d) => {
            report(node, &d);
            Ok(crate::gate::Resume::Abort)
        }
        Decision::Fork { hold: true } => Err(Some(PauseReason::Replay)),
        Decision::Fork { hold: false } | Decision::Live => Err(None),
    }
}

/// The replayer's decision for a hand-started node whose adapter cannot take a recorded
/// answer ([`Node::decline_replay`](crate::node::Node::decline_replay)): a served answer (or
/// error) becomes a live call, reported as [`LiveReason::NotAnswerable`]; anything else (a
/// divergence, a fork point) is kept for the `before` gate.
pub(crate) fn declined(node: &NodeRun, decision: Decision) -> Option<Decision> {
    let step = match &decision {
        Decision::Serve(served) => served.step,
        Decision::ServeError(served) => served.step,
        _ => return Some(decision),
    };
    if let Some(r) = node.host.replayer() {
        r.unserved(step, LiveReason::NotAnswerable);
    }
    None
}

/// What a hand-started node is injected with: its recorded chunks, else the response inside
/// a recorded model-step output (`{text, …, response}`), else the recorded output.
fn answer(served: Served) -> Value {
    if let Some(chunks) = served.chunks {
        return Value::Array(chunks);
    }
    let reply = served.output.get("text").is_some_and(Value::is_string);
    match served.output {
        Value::Object(mut m) if reply && m.contains_key("response") => {
            m.remove("response").unwrap_or(Value::Null)
        }
        other => other,
    }
}
