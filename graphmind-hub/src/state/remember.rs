//! Decisions remembered for a run ("approve every `send_email` from now on"): a resume with
//! `remember` installs one once the app confirms it; every further hold of the same node at
//! the same point in that run is then released by the hub with the same decision, credited to
//! whoever made it, until it is revoked or the run finishes.

use graphmind_protocol::control::{ForgetRequest, Remembered};
use graphmind_protocol::{Message, ResumeAction};
use serde_json::Value;

use super::pauses::resume_payload;
use super::{AppOut, HubState, InFlight, MAX_REMEMBERED, PauseKey, State};
use crate::tokens::random_id;

impl HubState {
    /// The decisions remembered (for `run_id`, or all), oldest first.
    pub fn remembered(&self, run_id: Option<&str>) -> Vec<Remembered> {
        self.lock()
            .remembered
            .iter()
            .filter(|r| run_id.is_none_or(|id| r.run_id == id))
            .cloned()
            .collect()
    }

    /// Revokes the decisions of `run_id` that `which` names (all of the run's when it names no
    /// node); returns how many went.
    pub fn forget(&self, run_id: &str, which: &ForgetRequest) -> usize {
        let gone = {
            let mut st = self.lock();
            let before = st.remembered.len();
            st.remembered.retain(|r| {
                !(r.run_id == run_id
                    && which.node_id.as_ref().is_none_or(|n| *n == r.node_id)
                    && which.point.is_none_or(|p| p == r.point))
            });
            before - st.remembered.len()
        };
        if gone > 0 {
            self.pauses_changed();
        }
        gone
    }

    /// Releases the pause `key` (just opened) with the decision remembered for its node, if
    /// there is one: the `exec.resume` goes to the app holding it, answered like any other.
    /// Returns whether one was sent.
    pub(super) fn apply_remembered(&self, st: &mut State, key: &PauseKey, conn: u64) -> bool {
        let Some(pause) = st.pauses.get_mut(key) else {
            return false;
        };
        let Some(rule) = st.remembered.iter_mut().find(|r| {
            r.run_id == pause.run_id && r.node_id == pause.node_id && r.point == pause.point
        }) else {
            return false;
        };
        let Some(action) = ResumeAction::from_str(&rule.action) else {
            return false;
        };
        let Some(app) = st.apps.get(&conn) else {
            return false;
        };
        // Only where the gate takes it: a gate that lists its actions must list this one (a
        // gate that lists none takes what its app announced, and a reject only where listed,
        // as for a person's resume); elsewhere the gate stays held for a person.
        if !takes(pause.actions.as_ref(), action, app.reject) {
            return false;
        }
        let request_id = random_id("req");
        let frame = self.frame(
            &pause.run_id,
            Message::ExecResume(resume_payload(
                &pause.pause_id,
                action,
                rule.output.clone(),
                None,
                rule.reason.clone(),
                &request_id,
            )),
        );
        if app.tx.send(AppOut::Text(frame)).is_err() {
            return false;
        }
        rule.applied += 1;
        pause.inflight = Some(InFlight {
            request_id,
            waiter: None,
            principal: rule.principal,
            operator: rule.operator.clone(),
            remember: None,
            remembered: true,
        });
        true
    }
}

/// Whether a gate announcing `actions` (`None`: it did not say) takes a remembered `action`
/// from an app that announced `reject` or not.
fn takes(actions: Option<&Value>, action: ResumeAction, app_rejects: bool) -> bool {
    if action == ResumeAction::Reject && !app_rejects {
        return false;
    }
    match actions.and_then(Value::as_array) {
        Some(listed) => listed.iter().any(|a| a.as_str() == Some(action.as_str())),
        None => action != ResumeAction::Reject,
    }
}

/// Installs a decision confirmed by the app (replacing one for the same node and point).
pub(super) fn install(st: &mut State, rule: Remembered) {
    st.remembered.retain(|r| {
        !(r.run_id == rule.run_id && r.node_id == rule.node_id && r.point == rule.point)
    });
    if st.remembered.len() < MAX_REMEMBERED {
        st.remembered.push(rule);
    }
}

/// Forgets the decisions of a finished run.
pub(super) fn run_finished(st: &mut State, run_id: &str) -> bool {
    let before = st.remembered.len();
    st.remembered.retain(|r| r.run_id != run_id);
    before != st.remembered.len()
}
