//! The tokens of the HTTP API and of viewer control.

use graphmind_protocol::ResumeAction;

use super::{HubState, Need, Outcome};
use crate::AllowControl;

impl HubState {
    /// Checks a bearer token of the HTTP API for `need`.
    pub fn authorize_agent(&self, bearer: Option<&str>, need: Need) -> Result<(), Outcome> {
        let Some(token) = bearer else {
            return Err(Outcome::Unauthorized(
                "missing Authorization: Bearer <agent token> (the token is in the run file)".into(),
            ));
        };
        if self.cfg.viewer_token.matches(token) {
            return Err(Outcome::Unauthorized(
                "this is the viewer token; the HTTP API takes the agent token from the run file"
                    .into(),
            ));
        }
        if !self.cfg.agent_token.matches(token) {
            return Err(Outcome::Unauthorized("wrong token".into()));
        }
        let allowed = match need {
            Need::Token => true,
            // As the reference hub: at `off` the agent token changes nothing, breakpoints
            // and mode included (they decide which calls hold).
            Need::Debug => self.cfg.allow_control != AllowControl::Off,
            Need::Resume(ResumeAction::Inject) => matches!(
                self.cfg.allow_control,
                AllowControl::Inject | AllowControl::Edit
            ),
            Need::Edit => self.cfg.allow_control == AllowControl::Edit,
            Need::Resume(_) => self.cfg.allow_control != AllowControl::Off,
        };
        if allowed {
            Ok(())
        } else {
            let (what, flag) = match need {
                Need::Resume(ResumeAction::Inject) => ("inject", "inject"),
                Need::Edit => ("edit inputs", "edit"),
                Need::Debug => ("change breakpoints or the mode", "resume"),
                _ => ("resume gates", "resume"),
            };
            Err(Outcome::Forbidden(format!(
                "the agent token may not {what} (this hub runs with --allow-control {}); that \
                 needs --allow-control {flag}",
                self.cfg.allow_control.as_str()
            )))
        }
    }

    /// Checks the token of a read (HTTP reads of runs, events and pauses; the `/ws/ui`
    /// feed): the viewer token or the agent token, as either holder may watch.
    pub fn authorize_reader(&self, token: Option<&str>) -> Result<(), Outcome> {
        match token {
            Some(t) if self.cfg.viewer_token.matches(t) || self.cfg.agent_token.matches(t) => {
                Ok(())
            }
            Some(_) => Err(Outcome::Unauthorized(
                "wrong token (the hub restarted?): use the agent token of the run file or the \
                 viewer link (`graphmind open`)"
                    .into(),
            )),
            None => Err(Outcome::Unauthorized(
                "reads need a token: Authorization: Bearer <agent token of the run file>, or \
                 the viewer link (`graphmind open`)"
                    .into(),
            )),
        }
    }

    /// Checks the viewer token of a `/ws/ui` control frame.
    pub fn authorize_viewer(&self, token: Option<&str>) -> Result<(), Outcome> {
        match token {
            Some(t) if self.cfg.viewer_token.matches(t) => Ok(()),
            Some(t) if self.cfg.agent_token.matches(t) => Err(Outcome::Unauthorized(
                "this is the agent token; viewer control takes the token of the viewer link".into(),
            )),
            Some(_) => Err(Outcome::Unauthorized(
                "wrong token; open the link graphmind serve printed".into(),
            )),
            None => Err(Outcome::Unauthorized(
                "control needs the viewer token: open the link graphmind serve printed".into(),
            )),
        }
    }
}
