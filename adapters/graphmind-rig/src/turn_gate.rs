//! The gate primitives every rig node shares: what a gate decided ([`Gate`]), a model turn's
//! gate with its inject read as the turn's text ([`gate_turn`]), and an abort ([`abort`]).

use graphmind::node::{Node, Resume};
use graphmind::protocol::PausePoint;

use crate::output::TurnInject;

/// The reason rig reports when the debugger aborted a run outside any graphmind run.
pub(crate) const ABORTED: &str = "graphmind: the debugger aborted this run";

/// What a gate decided.
pub(crate) enum Gate<T> {
    Go,
    Retry,
    Inject(T),
    Abort,
}

/// Gates `node` at `point`, an inject read as a model turn's text (`T` = [`NoInject`](crate::output::NoInject) where
/// rig would refuse any replacement: the debugger's inject is refused and the gate stays held).
pub(crate) async fn gate_turn<T: serde::de::DeserializeOwned>(
    node: &mut Node,
    point: PausePoint,
) -> Gate<TurnInject> {
    match node.gate_typed::<T>(point).await {
        Resume::Retry => Gate::Retry,
        Resume::Inject(v) => match serde_json::from_value::<TurnInject>(v) {
            Ok(t) => Gate::Inject(t),
            Err(_) => Gate::Go,
        },
        Resume::Abort => Gate::Abort,
        _ => Gate::Go,
    }
}

/// Finishes the node aborted and ends the run: inside a graphmind run this never returns (the
/// run scope drops the prompt call); outside one it returns and rig is to be stopped.
pub(crate) async fn abort(node: Node) {
    node.abort_run().await;
}
