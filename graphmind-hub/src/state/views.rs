//! The JSON views of the state that the HTTP API and the `/ws/ui` feed send: runs, pauses and
//! the debug state. Built from [`State`] alone, so every topic module (and the viewers'
//! broadcasts) can use them without importing each other.

use graphmind_protocol::BreakpointMatcher;
use serde_json::{Value, json};

use super::{Pause, RunState, State};
use crate::storage::RunRow;

fn matcher_json(m: &BreakpointMatcher) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

pub(super) fn debug_json(st: &State) -> Value {
    json!({
        "breakpoints": st.breakpoints.iter().map(matcher_json).collect::<Vec<_>>(),
        "mode": st.mode.as_str(),
    })
}

impl Pause {
    pub(super) fn to_json(&self) -> Value {
        json!({
            "pauseId": self.pause_id,
            "runId": self.run_id,
            "nodeId": self.node_id,
            "point": self.point,
            "reason": self.reason,
            "instanceId": self.instance_id,
            "since": self.since,
            "kind": self.kind,
            "name": self.name,
            "input": self.input,
            "output": self.output,
            "error": self.error,
            "loop": self.loop_info,
            "actions": self.actions,
            "state": if self.inflight.is_some() { "resuming" } else { "open" },
        })
    }
}

pub(super) fn pauses_json(st: &State, run_id: Option<&str>) -> Vec<Value> {
    let mut v: Vec<&Pause> = st
        .pauses
        .values()
        .filter(|p| run_id.is_none_or(|r| p.run_id == r))
        .collect();
    v.sort_by(|a, b| {
        a.since
            .cmp(&b.since)
            .then_with(|| a.pause_id.cmp(&b.pause_id))
    });
    v.into_iter().map(Pause::to_json).collect()
}

pub(super) fn run_json(st: &State, run_id: &str, r: &RunState) -> Value {
    let live = !r.finished() && r.owner.is_some_and(|o| st.live.contains_key(&o));
    let started = r.started_at.unwrap_or(r.created_at);
    json!({
        "runId": run_id,
        "app": r.app,
        "name": r.name,
        "status": r.status,
        "live": live,
        "startedAt": started,
        "endedAt": r.ended_at,
        "durationMs": r.ended_at.map(|e| e.saturating_sub(started)),
        "eventCount": r.event_count,
        "incomplete": r.incomplete,
        "sdk": r.sdk,
    })
}

/// The newest `limit` runs of memory and `stored` (memory wins for a run in both).
pub(super) fn runs_json(st: &State, limit: usize, stored: &[RunRow]) -> Vec<Value> {
    let extra: Vec<(String, RunState)> = stored
        .iter()
        .filter(|r| !st.runs.contains_key(&r.run_id))
        .map(|r| RunState::from_row(r.clone()))
        .collect();
    let mut v: Vec<(&String, &RunState)> = st
        .runs
        .iter()
        .chain(extra.iter().map(|(id, r)| (id, r)))
        .collect();
    v.sort_by(|a, b| {
        b.1.start_key()
            .cmp(&a.1.start_key())
            .then_with(|| b.0.cmp(a.0))
    });
    v.into_iter()
        .take(limit)
        .map(|(id, r)| run_json(st, id, r))
        .collect()
}
