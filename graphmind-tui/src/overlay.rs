//! The hold overlay: one held gate, its choices one key each, Enter to confirm, Esc to cancel.
//! A state machine over key presses; it emits [`AppEvent`]s and never calls the hub.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use graphmind_protocol::control::ResumeRequest;
use graphmind_protocol::feed::{PauseInfo, PauseState};
use serde_json::Value;

use crate::access::{Access, Action, unavailable};
use crate::event::{AppEvent, Outcome, ResumeResult};

/// Where the overlay is.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Choosing an action.
    Choose,
    /// An action picked; Enter sends it, Esc goes back.
    Confirm {
        /// The action.
        action: Action,
        /// The output (inject) or input (edit) to send with it.
        value: Option<Value>,
    },
    /// Typing the reason of a reject (Enter sends, Esc goes back).
    Reason(String),
    /// Editing an inject's output or an edited input inline (Enter checks it, Esc goes back).
    Inline {
        /// Inject or edit.
        action: Action,
        /// The text so far.
        text: String,
    },
    /// `$EDITOR` is open on the value.
    Editor(Action),
    /// Sent; waiting for the hub. Keys do nothing but Esc (which only hides the overlay).
    Sending(Action),
    /// The hold closed while the overlay was open (released elsewhere, or its app left).
    Gone,
}

/// A message under the choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The text.
    pub text: String,
    /// It reports a failure or a refusal.
    pub error: bool,
}

/// The overlay over one held gate.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldOverlay {
    /// The held run.
    pub run_id: String,
    /// The pause.
    pub pause_id: String,
    /// Where it is.
    pub stage: Stage,
    /// "For this run": the decision applies to the node's further holds in the run.
    pub remember: bool,
    /// The highlighted choice.
    pub cursor: usize,
    /// The latest message.
    pub note: Option<Note>,
    /// The overlay is done (closed).
    complete: bool,
}

/// What the overlay reads to decide.
pub struct Ctx<'a> {
    /// The held gate, while it is open.
    pub pause: Option<&'a PauseInfo>,
    /// The agent token's rights.
    pub access: &'a Access,
    /// What an inject starts from (the output's shape).
    pub inject_prefill: Value,
    /// `$EDITOR` is set (else the inline editor).
    pub has_editor: bool,
}

fn pretty(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl HoldOverlay {
    /// The overlay over `p`.
    #[must_use]
    pub fn new(p: &PauseInfo) -> Self {
        Self {
            run_id: p.run_id.clone(),
            pause_id: p.pause_id.clone(),
            stage: Stage::Choose,
            remember: false,
            cursor: 0,
            note: None,
            complete: false,
        }
    }

    /// Whether it closed.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    fn say(&mut self, text: impl Into<String>, error: bool) {
        self.note = Some(Note {
            text: text.into(),
            error,
        });
    }

    /// The hub's pauses changed: a hold that closed while open turns the overlay to
    /// [`Stage::Gone`] (never resumed twice); one whose resume was sent closes it.
    pub fn on_pauses(&mut self, pause: Option<&PauseInfo>) {
        if pause.is_some() || self.complete {
            return;
        }
        match self.stage {
            Stage::Sending(_) => self.complete = true,
            Stage::Gone => {}
            _ => {
                self.stage = Stage::Gone;
                self.say(
                    "this hold closed: released elsewhere, or its app went away (any key closes)",
                    true,
                );
            }
        }
    }

    /// An answer to what the overlay asked for.
    pub fn on_outcome(&mut self, o: &Outcome) {
        match o {
            Outcome::Resume { pause_id, result } if *pause_id == self.pause_id => {
                let Stage::Sending(action) = self.stage.clone() else {
                    return;
                };
                match result {
                    ResumeResult::Resumed => self.complete = true,
                    ResumeResult::Sent => {
                        self.complete = true;
                    }
                    ResumeResult::Refused(why) => {
                        self.stage = Stage::Choose;
                        let _ = action;
                        self.say(format!("{why} (the gate stays held)"), true);
                    }
                    ResumeResult::Gone(why) => {
                        self.stage = Stage::Gone;
                        self.say(format!("{why} (any key closes)"), true);
                    }
                    ResumeResult::Failed(why) => {
                        self.stage = Stage::Choose;
                        self.say(format!("{} failed: {why}", action.label()), true);
                    }
                }
            }
            Outcome::Editor { pause_id, text } if *pause_id == self.pause_id => {
                let Stage::Editor(action) = self.stage else {
                    return;
                };
                match text {
                    None => {
                        self.stage = Stage::Choose;
                        self.say("editor closed without saving: nothing sent", false);
                    }
                    Some(t) => match serde_json::from_str::<Value>(t) {
                        Ok(v) => {
                            self.stage = Stage::Confirm {
                                action,
                                value: Some(v),
                            };
                            self.note = None;
                        }
                        Err(e) => {
                            self.stage = Stage::Choose;
                            self.say(format!("not JSON ({e}): nothing sent"), true);
                        }
                    },
                }
            }
            _ => {}
        }
    }

    fn pick(&mut self, a: Action, ctx: &Ctx<'_>) -> Vec<AppEvent> {
        let Some(p) = ctx.pause else {
            return Vec::new();
        };
        self.cursor = Action::ALL.iter().position(|x| *x == a).unwrap_or(0);
        if let Some(why) = unavailable(a, p, ctx.access) {
            self.say(format!("{} is unavailable: {why}", a.label()), true);
            return Vec::new();
        }
        self.note = None;
        match a {
            Action::Inject | Action::Edit => {
                let prefill = if a == Action::Inject {
                    pretty(&ctx.inject_prefill)
                } else {
                    pretty(
                        p.input
                            .as_ref()
                            .unwrap_or(&Value::Object(Default::default())),
                    )
                };
                if ctx.has_editor {
                    self.stage = Stage::Editor(a);
                    vec![AppEvent::OpenEditor {
                        pause_id: self.pause_id.clone(),
                        action: a,
                        prefill,
                    }]
                } else {
                    self.stage = Stage::Inline {
                        action: a,
                        text: prefill,
                    };
                    Vec::new()
                }
            }
            Action::Reject => {
                self.stage = Stage::Reason(String::new());
                Vec::new()
            }
            _ => {
                self.stage = Stage::Confirm {
                    action: a,
                    value: None,
                };
                Vec::new()
            }
        }
    }

    fn send(
        &mut self,
        a: Action,
        value: Option<Value>,
        reason: Option<String>,
        ctx: &Ctx<'_>,
    ) -> Vec<AppEvent> {
        let Some(p) = ctx.pause else {
            return Vec::new();
        };
        if p.state == PauseState::Resuming {
            self.say("a resume of this hold is already in flight", true);
            self.stage = Stage::Choose;
            return Vec::new();
        }
        let remember = self.remember && a.rememberable();
        let mut request = ResumeRequest {
            action: a.wire(p.point).to_owned(),
            remember,
            operator: Some("tui".into()),
            ..ResumeRequest::default()
        };
        match a {
            Action::Inject => request.output = Some(value.unwrap_or(Value::Null)),
            Action::Edit => request.input = value,
            Action::Reject => request.reason = reason,
            _ => {}
        }
        self.stage = Stage::Sending(a);
        self.say(format!("sent {}; waiting for the app", a.label()), false);
        vec![AppEvent::Resume {
            run_id: self.run_id.clone(),
            pause_id: self.pause_id.clone(),
            action: a,
            request,
        }]
    }

    /// One key press.
    pub fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx<'_>) -> Vec<AppEvent> {
        if key.kind != KeyEventKind::Press || self.complete {
            return Vec::new();
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return vec![AppEvent::Quit];
        }
        if ctx.pause.is_none() && !matches!(self.stage, Stage::Sending(_) | Stage::Gone) {
            self.on_pauses(None);
        }
        match self.stage.clone() {
            Stage::Gone => {
                self.complete = true;
                Vec::new()
            }
            Stage::Sending(_) | Stage::Editor(_) => {
                if key.code == KeyCode::Esc {
                    self.complete = true;
                }
                Vec::new()
            }
            Stage::Choose => match key.code {
                KeyCode::Esc | KeyCode::Char('q') => {
                    self.complete = true;
                    Vec::new()
                }
                KeyCode::Char('m') => {
                    self.remember = !self.remember;
                    Vec::new()
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    self.cursor = self.cursor.saturating_sub(1);
                    Vec::new()
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    self.cursor = (self.cursor + 1).min(Action::ALL.len() - 1);
                    Vec::new()
                }
                KeyCode::Enter => self.pick(Action::ALL[self.cursor], ctx),
                KeyCode::Char(c @ '1'..='7') => {
                    let i = c as usize - '1' as usize;
                    self.pick(Action::ALL[i], ctx)
                }
                KeyCode::Char(c) => match Action::from_key(c) {
                    Some(a) => self.pick(a, ctx),
                    None => Vec::new(),
                },
                _ => Vec::new(),
            },
            Stage::Confirm { action, value } => match key.code {
                KeyCode::Enter => self.send(action, value, None, ctx),
                KeyCode::Esc => {
                    self.stage = Stage::Choose;
                    Vec::new()
                }
                KeyCode::Char('m') => {
                    self.remember = !self.remember;
                    Vec::new()
                }
                _ => Vec::new(),
            },
            Stage::Reason(mut text) => match key.code {
                KeyCode::Esc => {
                    self.stage = Stage::Choose;
                    Vec::new()
                }
                KeyCode::Enter if text.trim().is_empty() => {
                    self.say(
                        "say why the call is rejected: the caller gets it back",
                        true,
                    );
                    Vec::new()
                }
                KeyCode::Enter => {
                    self.send(Action::Reject, None, Some(text.trim().to_owned()), ctx)
                }
                KeyCode::Backspace => {
                    text.pop();
                    self.stage = Stage::Reason(text);
                    Vec::new()
                }
                KeyCode::Char(c) => {
                    text.push(c);
                    self.stage = Stage::Reason(text);
                    Vec::new()
                }
                _ => Vec::new(),
            },
            Stage::Inline { action, mut text } => match key.code {
                KeyCode::Esc => {
                    self.stage = Stage::Choose;
                    Vec::new()
                }
                KeyCode::Enter => match serde_json::from_str::<Value>(&text) {
                    Ok(v) => self.send(action, Some(v), None, ctx),
                    Err(e) => {
                        self.say(format!("not JSON ({e}): fix it, or Esc"), true);
                        Vec::new()
                    }
                },
                KeyCode::Backspace => {
                    text.pop();
                    self.stage = Stage::Inline { action, text };
                    Vec::new()
                }
                KeyCode::Char(c) => {
                    text.push(c);
                    self.stage = Stage::Inline { action, text };
                    Vec::new()
                }
                _ => Vec::new(),
            },
        }
    }
}
