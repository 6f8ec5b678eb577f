//! The pause registry: open and recently closed pauses, resume routing and its outcomes.

use std::sync::Arc;
use std::time::Duration;

use graphmind_protocol::{ExecResume, Extra, Message, ResumeAction};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::viewers::broadcast;
use graphmind_protocol::feed::FeedFrame;

use super::views::{pause_infos, to_json};
use super::{AppOut, CLOSED_MEMORY, HubState, InFlight, MAX_CONTROL_FRAME, Outcome};
use crate::tokens::random_id;

impl HubState {
    /// Sends `exec.resume` to the app owning the run and waits (bounded) for its answer.
    /// The first resume of a pause wins; others get `taken` while it is in flight or after
    /// it released the gate.
    pub async fn resume(
        &self,
        run_id: &str,
        pause_id: &str,
        action: ResumeAction,
        output: Option<Value>,
    ) -> Outcome {
        if action == ResumeAction::Inject && output.is_none() {
            return Outcome::Invalid("inject needs an output".into());
        }
        let request_id = random_id("req");
        let payload = ExecResume {
            pause_id: pause_id.to_owned(),
            action,
            output: if action == ResumeAction::Inject {
                output
            } else {
                None
            },
            input: None,
            request_id: Some(request_id.clone()),
            reason: None,
            extra: Extra::new(),
        };
        let frame = self.frame(run_id, Message::ExecResume(payload));
        if frame.len() > MAX_CONTROL_FRAME {
            return Outcome::Invalid(format!(
                "the output is too large ({} bytes); at most {MAX_CONTROL_FRAME} bytes reach an app",
                frame.len()
            ));
        }
        let rx = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let key = (run_id.to_owned(), pause_id.to_owned());
            let Some(pause) = st.pauses.get_mut(&key) else {
                return match st.closed.get(&key) {
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
            };
            if pause.inflight.is_some() {
                return Outcome::Taken("another resume of this pause is in flight".into());
            }
            let conn = pause.identity.and_then(|i| st.live.get(&i));
            let Some(app) = conn.and_then(|c| st.apps.get(c)) else {
                return Outcome::Gone("the app that owns this run is not connected".into());
            };
            if app.tx.send(AppOut::Text(frame)).is_err() {
                return Outcome::Gone("the app that owns this run is not connected".into());
            }
            let (tx, rx) = oneshot::channel();
            pause.inflight = Some(InFlight {
                request_id: request_id.clone(),
                waiter: Some(tx),
            });
            rx
        };
        self.pauses_changed();
        match tokio::time::timeout(self.cfg.resume_wait, rx).await {
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
        }
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
            };
            broadcast(&st, &Arc::from(frame.to_text()));
        }
        drop(st);
        self.pauses_version.send_modify(|v| *v += 1);
    }
}
