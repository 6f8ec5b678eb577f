//! The views of the state that the HTTP API and the `/ws/ui` feed send — runs, pauses and the
//! debug state, as the typed bodies of `graphmind_protocol::feed`. Built from [`State`] alone,
//! so every topic module (and the viewers' broadcasts) can use them without importing each
//! other.

use graphmind_protocol::feed::{DebugState, PauseInfo, PauseState, RunSummary};
use serde_json::Value;

use super::{Pause, RunState, State};
use crate::storage::RunRow;

/// A body as JSON (the HTTP handlers and the hub's methods that answer with JSON).
pub(super) fn to_json<T: serde::Serialize>(body: &T) -> Value {
    serde_json::to_value(body).unwrap_or(Value::Null)
}

pub(super) fn debug_state(st: &State) -> DebugState {
    DebugState {
        breakpoints: st.breakpoints.clone(),
        mode: st.mode,
    }
}

pub(super) fn debug_json(st: &State) -> Value {
    to_json(&debug_state(st))
}

impl Pause {
    pub(super) fn info(&self) -> PauseInfo {
        PauseInfo {
            pause_id: self.pause_id.clone(),
            run_id: self.run_id.clone(),
            node_id: self.node_id.clone(),
            point: self.point,
            reason: self.reason,
            instance_id: self.instance_id.clone(),
            since: self.since,
            kind: self.kind.clone(),
            name: self.name.clone(),
            input: self.input.clone(),
            output: self.output.clone(),
            error: self.error.clone(),
            loop_info: self.loop_info.clone(),
            actions: self.actions.clone(),
            state: if self.inflight.is_some() {
                PauseState::Resuming
            } else {
                PauseState::Open
            },
            editable: self.editable,
        }
    }
}

/// The open pauses (of `run_id`, or all), oldest first.
pub(super) fn pause_infos(st: &State, run_id: Option<&str>) -> Vec<PauseInfo> {
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
    v.into_iter().map(Pause::info).collect()
}

pub(super) fn run_summary(st: &State, run_id: &str, r: &RunState) -> RunSummary {
    let live = !r.finished() && r.owner.is_some_and(|o| st.live.contains_key(&o));
    let started = r.started_at.unwrap_or(r.created_at);
    RunSummary {
        run_id: run_id.to_owned(),
        app: r.app.clone(),
        name: r.name.clone(),
        status: r.status,
        live,
        started_at: started,
        ended_at: r.ended_at,
        duration_ms: r.ended_at.map(|e| e.saturating_sub(started)),
        event_count: r.event_count,
        error_count: r.error_count,
        incomplete: r.incomplete,
        sdk: r.sdk.clone(),
        schema_version: graphmind_protocol::PROTOCOL_VERSION,
        source: "live".to_owned(),
    }
}

/// The newest `limit` runs of memory and `stored` (memory wins for a run in both).
pub(super) fn run_summaries(st: &State, limit: usize, stored: &[RunRow]) -> Vec<RunSummary> {
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
        .map(|(id, r)| run_summary(st, id, r))
        .collect()
}
