//! The loop guard: a tool called with the same input several times in a row within a run
//! holds at its `before` gate with `reason: "loop"` (see [`crate::Config::on_loop`]). Only
//! calls that run while a debugger is attached are observed; one streak per run (tool
//! calls only: a model step between two tool calls does not break their streak).

use graphmind_protocol::{Extra, PauseReason};

use super::Host;
use super::context::Call;
use crate::call::node_run::NodeRun;
use crate::config::OnLoop;
use crate::loop_guard::Streak;

/// Observes the first `before` gate of an attached tool call: when it completes a loop and
/// the guard pauses, the reason and the `loop` summary its `exec.paused` carries.
pub(crate) fn check(call: &Call, node: &NodeRun) -> Option<(PauseReason, Extra)> {
    let (Some(fingerprint), Some(seq)) = (node.loop_fp, node.started_seq) else {
        return None;
    };
    let host: &dyn Host = &*node.host;
    let guard = host.loop_guard();
    if guard.on == OnLoop::Off
        || guard
            .allow
            .iter()
            .any(|a| *a == *node.node_id || *a == *call.name)
    {
        return None;
    }
    let observe = |streak: &mut Streak| {
        let repeats = streak.observe(&node.node_id, fingerprint, seq);
        (repeats, streak.first_seq, streak.last_seq)
    };
    let (repeats, first, last) = match &call.run {
        Some(run) => observe(
            &mut run
                .streak
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
        None => observe(
            &mut host
                .implicit()
                .streak
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
    };
    if repeats < guard.threshold {
        return None;
    }
    if guard.on == OnLoop::Warn {
        // No fingerprint here: it hashes the input, which redaction may be hiding.
        if repeats == guard.threshold {
            host.warn(&format!(
                "loop: {} called {repeats} times in a row with the same input",
                node.node_id
            ));
        }
        return None;
    }
    let fingerprint = format!("{fingerprint:016x}");
    let mut extra = Extra::new();
    extra.insert(
        "loop".into(),
        serde_json::json!({
            "repeats": repeats,
            "firstSeq": first,
            "lastSeq": last,
            "fingerprint": fingerprint,
            "kind": "repeat",
        }),
    );
    Some((PauseReason::Loop, extra))
}
