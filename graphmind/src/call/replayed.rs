//! A call answered by the replayer (see `crate::replay`; the decision is taken when its node
//! starts, in `node_run`): the extras of a served call, the stop at a divergence, and the
//! answer at the `before` gate of a node started by hand.

use graphmind_protocol::{Extra, PauseReason, Status};
use serde_json::Value;

use super::context::Call;
use super::node_run::{Finish, NodeRun};
use crate::replay::{Decision, Divergence, Served};

/// `node.finished` extras of a call answered from the recording.
pub(crate) fn served_extra(step: usize) -> Extra {
    let mut extra = Extra::new();
    extra.insert("injected".into(), true.into());
    extra.insert("replayed".into(), true.into());
    extra.insert("replayStep".into(), step.into());
    extra
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
            extra,
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
pub(crate) fn by_hand(
    node: &NodeRun,
    decision: Decision,
) -> Result<crate::gate::Resume, Option<PauseReason>> {
    match decision {
        Decision::Serve(served) => Ok(crate::gate::Resume::Inject(answer(served))),
        Decision::Stop(d) => {
            report(node, &d);
            Ok(crate::gate::Resume::Abort)
        }
        Decision::Fork { hold: true } => Err(Some(PauseReason::Breakpoint)),
        Decision::Fork { hold: false } | Decision::Live => Err(None),
    }
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
