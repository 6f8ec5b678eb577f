//! The pause registry: open and recently closed pauses, resume routing and its outcomes.

use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::control::{
    MAX_REASON_CHARS, Principal, Remembered, ResumeRequest, operator_label,
};
use graphmind_protocol::{ExecResume, Extra, Message, ResumeAction};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::viewers::broadcast;
use graphmind_protocol::feed::FeedFrame;

use super::views::{pause_infos, to_json};
use super::{
    AppOut, CLOSED_MEMORY, HubState, InFlight, MAX_CONTROL_FRAME, MAX_REMEMBERED, MAX_RESUME_DEPTH,
    Outcome,
};
use crate::now_ms;
use crate::tokens::random_id;

impl HubState {
    /// Sends `exec.resume` to the app owning the run and waits (bounded) for its answer.
    /// The first resume of a pause wins; others get `taken` while it is in flight or after
    /// it released the gate. `principal` says how the request came in (stamped onto the
    /// stored `exec.resumed`). Returns the outcome and the id the request was sent with.
    pub async fn resume(
        &self,
        run_id: &str,
        pause_id: &str,
        req: ResumeRequest,
        principal: Principal,
    ) -> (Outcome, Option<String>) {
        let action = match check(&req, self.cfg.edit_input) {
            Ok(a) => a,
            Err(o) => return (o, None),
        };
        let request_id = req
            .request_id
            .clone()
            .filter(|id| graphmind_protocol::control::acceptable_request_id(id))
            .unwrap_or_else(|| random_id("req"));
        let operator = req
            .operator
            .as_deref()
            .map(operator_label)
            .filter(|o| !o.is_empty())
            .or_else(|| self.cfg.operator.clone());
        let frame = self.frame(
            run_id,
            Message::ExecResume(resume_payload(
                pause_id,
                action,
                req.output.clone(),
                req.input.clone(),
                req.reason.clone(),
                &request_id,
            )),
        );
        if frame.len() > MAX_CONTROL_FRAME {
            let what = if req.input.is_some() {
                "input"
            } else {
                "output"
            };
            return (
                Outcome::Invalid(format!(
                    "the {what} is too large ({} bytes); at most {MAX_CONTROL_FRAME} bytes reach an app",
                    frame.len()
                )),
                None,
            );
        }
        // An app drops a frame nested past `MAX_DEPTH` unanswered: refuse it here instead.
        if !graphmind_protocol::within_depth(&frame) {
            return (too_deep(req.input.is_some()), None);
        }
        let rx = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let key = (run_id.to_owned(), pause_id.to_owned());
            let Some(pause) = st.pauses.get_mut(&key) else {
                let o = match st.closed.get(&key) {
                    Some(c) if c.by == "hub" => Outcome::Taken(format!(
                        "another resume already released this pause ({})",
                        c.action.as_deref().unwrap_or("?")
                    )),
                    Some(c) if c.by == "disconnect" => {
                        Outcome::Gone("the app disconnected; its held gates continued".into())
                    }
                    Some(_) => Outcome::Gone("the app already released this pause".into()),
                    None => Outcome::Gone(format!("no open pause {pause_id} in run {run_id}")),
                };
                return (o, None);
            };
            if pause.inflight.is_some() {
                return (
                    Outcome::Taken("another resume of this pause is in flight".into()),
                    None,
                );
            }
            let conn = pause.identity.and_then(|i| st.live.get(&i));
            let Some(app) = conn.and_then(|c| st.apps.get(c)) else {
                return (
                    Outcome::Gone("the app that owns this run is not connected".into()),
                    None,
                );
            };
            if req.input.is_some() {
                let why = if !app.edit_input {
                    Some(
                        "the app did not announce edit-input: it cannot run a call with an edited input",
                    )
                } else if !pause.editable {
                    Some("this gate's input cannot be replaced (the app did not mark it editable)")
                } else {
                    None
                };
                if let Some(why) = why {
                    return (
                        Outcome::Refused {
                            code: "unsupported".into(),
                            message: Some(why.into()),
                            by_hub: true,
                        },
                        None,
                    );
                }
            }
            if action == ResumeAction::Reject {
                let listed = pause
                    .actions
                    .as_ref()
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|x| x == "reject"));
                let why = if !app.reject {
                    Some(
                        "the app did not announce reject: it cannot turn a call down with a reason",
                    )
                } else if !listed {
                    Some("this gate does not take a rejection (the app did not list reject)")
                } else {
                    None
                };
                if let Some(why) = why {
                    return (
                        Outcome::Refused {
                            code: "unsupported".into(),
                            message: Some(why.into()),
                            by_hub: true,
                        },
                        None,
                    );
                }
            }
            if req.remember
                && !st.remembered.iter().any(|r| {
                    r.run_id == run_id && r.node_id == pause.node_id && r.point == pause.point
                })
                && st.remembered.len() >= MAX_REMEMBERED
            {
                return (
                    Outcome::Invalid(format!(
                        "{MAX_REMEMBERED} decisions are remembered already: revoke some first"
                    )),
                    None,
                );
            }
            if app.tx.send(AppOut::Text(frame)).is_err() {
                return (
                    Outcome::Gone("the app that owns this run is not connected".into()),
                    None,
                );
            }
            let remember = req.remember.then(|| Remembered {
                run_id: run_id.to_owned(),
                node_id: pause.node_id.clone(),
                point: pause.point,
                action: action.as_str().to_owned(),
                output: req
                    .output
                    .clone()
                    .filter(|_| action == ResumeAction::Inject),
                reason: req.reason.clone(),
                principal,
                operator: operator.clone(),
                since: now_ms(),
                applied: 0,
            });
            let (tx, rx) = oneshot::channel();
            pause.inflight = Some(InFlight {
                request_id: request_id.clone(),
                waiter: Some(tx),
                principal,
                operator,
                remember,
                remembered: false,
            });
            rx
        };
        self.pauses_changed();
        let outcome = match tokio::time::timeout(self.cfg.resume_wait, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Outcome::Gone("the pause closed".into()),
            Err(_) => {
                // Let a later resume try again.
                let mut st = self.lock();
                let key = (run_id.to_owned(), pause_id.to_owned());
                if let Some(p) = st.pauses.get_mut(&key)
                    && p.inflight
                        .as_ref()
                        .is_some_and(|f| f.request_id == request_id)
                {
                    p.inflight = None;
                }
                drop(st);
                self.pauses_changed();
                Outcome::Sent
            }
        };
        (outcome, Some(request_id))
    }

    /// Open pauses, oldest first.
    pub fn pauses(&self, run_id: Option<&str>) -> Vec<Value> {
        pause_infos(&self.lock(), run_id)
            .iter()
            .map(to_json)
            .collect()
    }

    /// Waits until a pause (of `run_id`, if given) is open, or the time is up.
    pub async fn wait_pauses(&self, run_id: Option<&str>, wait: Duration) -> Vec<Value> {
        let mut rx = self.pauses_version.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            rx.borrow_and_update();
            let p = self.pauses(run_id);
            if !p.is_empty() {
                return p;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return self.pauses(run_id),
            }
        }
    }

    /// One pause, open or recently closed.
    pub fn pause(&self, run_id: &str, pause_id: &str) -> Option<Value> {
        let st = self.lock();
        let key = (run_id.to_owned(), pause_id.to_owned());
        if let Some(p) = st.pauses.get(&key) {
            return Some(to_json(&p.info()));
        }
        st.closed
            .get(&key)
            .filter(|c| c.at.elapsed() < CLOSED_MEMORY)
            .map(|c| {
                json!({"pauseId": pause_id, "runId": run_id, "state": "closed",
                   "action": c.action, "by": c.by})
            })
    }

    pub(super) fn pauses_changed(&self) {
        let st = self.lock();
        if !st.viewers.is_empty() {
            let frame = FeedFrame::Pauses {
                pauses: pause_infos(&st, None),
                remembered: st.remembered.clone(),
            };
            broadcast(&st, &Arc::from(frame.to_text()));
        }
        drop(st);
        self.pauses_version.send_modify(|v| *v += 1);
    }
}

/// What a resume request asks, checked before anything is sent: its action, or why not.
fn check(req: &ResumeRequest, edit_input: bool) -> Result<ResumeAction, Outcome> {
    let Some(action) = ResumeAction::from_str(&req.action) else {
        return Err(Outcome::Invalid(
            "action must be continue, retry, inject, abort or reject".into(),
        ));
    };
    if action == ResumeAction::Inject && req.output.is_none() {
        return Err(Outcome::Invalid("inject needs an output".into()));
    }
    let reject = action == ResumeAction::Reject;
    if reject {
        match req.reason.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(Outcome::Invalid(
                    "reject needs a reason: the caller gets it back".into(),
                ));
            }
            Some(r) if r.chars().count() > MAX_REASON_CHARS => {
                return Err(Outcome::Invalid(format!(
                    "the reason is too long: at most {MAX_REASON_CHARS} characters"
                )));
            }
            Some(_) => {}
        }
    } else if req.reason.is_some() {
        return Err(Outcome::Invalid("a reason goes with reject".into()));
    }
    if req.input.is_some() {
        if !matches!(action, ResumeAction::Continue | ResumeAction::Retry) {
            return Err(Outcome::Invalid(
                "an edited input goes with continue or retry".into(),
            ));
        }
        if req.remember {
            return Err(Outcome::Invalid(
                "an edited input is for this call only: it is not remembered".into(),
            ));
        }
        if !edit_input {
            return Err(Outcome::Refused {
                code: "disabled".into(),
                message: Some(
                    "editing inputs is turned off on this hub (graphmind serve --no-edit-input)"
                        .into(),
                ),
                by_hub: true,
            });
        }
    }
    if req.remember && !(reject || matches!(action, ResumeAction::Continue | ResumeAction::Inject))
    {
        return Err(Outcome::Invalid(
            "only continue, inject and reject are remembered for a run".into(),
        ));
    }
    Ok(action)
}

/// The `exec.resume` payload of a decision.
/// The refusal of a resume whose value an app would drop for its nesting.
fn too_deep(input: bool) -> Outcome {
    let what = if input { "input" } else { "output" };
    Outcome::Refused {
        code: "too_deep".into(),
        message: Some(format!(
            "the {what} nests deeper than {MAX_RESUME_DEPTH} levels of objects and arrays; an \
             app takes at most {MAX_RESUME_DEPTH} (frames at most {} deep)",
            graphmind_protocol::MAX_DEPTH
        )),
        by_hub: true,
    }
}

pub(super) fn resume_payload(
    pause_id: &str,
    action: ResumeAction,
    output: Option<Value>,
    input: Option<Value>,
    reason: Option<String>,
    request_id: &str,
) -> ExecResume {
    ExecResume {
        pause_id: pause_id.to_owned(),
        action,
        output: if action == ResumeAction::Inject {
            output
        } else {
            None
        },
        input,
        request_id: Some(request_id.to_owned()),
        reason: reason.filter(|_| action == ResumeAction::Reject),
        extra: Extra::new(),
    }
}
