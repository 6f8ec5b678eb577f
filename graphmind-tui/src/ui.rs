//! The views' own state (screen, selections, filter, the open overlay) and the key handling
//! around the overlay. Reads [`State`], emits [`AppEvent`]s; no I/O.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use graphmind_protocol::feed::{PauseInfo, RunSummary};
use graphmind_protocol::{BreakpointMatcher, Mode, PausePoint};
use serde_json::Value;

use crate::access::Access;
use crate::event::{AppEvent, Outcome, ResumeResult};
use crate::overlay::{Ctx, HoldOverlay};
use crate::state::State;

/// Which screen is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// The run list.
    Runs,
    /// One run: its executions and the inspector.
    Run(String),
}

/// The views' state.
#[derive(Debug, Clone)]
pub struct Ui {
    /// The screen.
    pub screen: Screen,
    /// Selected row of the run list (of the filtered rows).
    pub run_cursor: usize,
    /// Selected execution of the run view.
    pub exec_cursor: usize,
    /// The run list's filter.
    pub filter: String,
    /// The filter is being typed.
    pub filtering: bool,
    /// The selected hold (pause id), newest by default.
    pub hold: Option<String>,
    /// Holds seen so far (a new one takes the selection).
    seen_holds: Vec<String>,
    /// The open hold overlay.
    pub overlay: Option<HoldOverlay>,
    /// The help is up.
    pub help: bool,
    /// The last status line.
    pub status: Option<(String, bool)>,
    /// The agent token's rights.
    pub access: Access,
    /// `$EDITOR` is set.
    pub has_editor: bool,
    /// Output shapes looked up for holds without an output (pause id → shape).
    examples: std::collections::HashMap<String, Value>,
}

impl Ui {
    /// The run list, nothing selected.
    #[must_use]
    pub fn new(access: Access, has_editor: bool) -> Self {
        Self {
            screen: Screen::Runs,
            run_cursor: 0,
            exec_cursor: 0,
            filter: String::new(),
            filtering: false,
            hold: None,
            seen_holds: Vec::new(),
            overlay: None,
            help: false,
            status: None,
            access,
            has_editor,
            examples: std::collections::HashMap::new(),
        }
    }

    /// The run list after the filter (app, name, id or status contains it).
    #[must_use]
    pub fn visible_runs<'a>(&self, s: &'a State) -> Vec<&'a RunSummary> {
        let f = self.filter.to_lowercase();
        s.runs
            .iter()
            .filter(|r| {
                f.is_empty()
                    || r.run_id.to_lowercase().contains(&f)
                    || r.app.as_deref().unwrap_or("").to_lowercase().contains(&f)
                    || r.name.as_deref().unwrap_or("").to_lowercase().contains(&f)
                    || r.status.as_str().contains(&f)
            })
            .collect()
    }

    /// The selected hold, if it is still open (else the newest).
    #[must_use]
    pub fn selected_hold<'a>(&self, s: &'a State) -> Option<&'a PauseInfo> {
        let holds = s.holds_newest_first();
        self.hold
            .as_ref()
            .and_then(|id| holds.iter().find(|p| p.pause_id == *id).copied())
            .or_else(|| holds.first().copied())
    }

    /// The feed changed the pauses: a new hold takes the selection; the overlay learns
    /// whether its hold is still open. Asks for the output shape of each new hold that has
    /// no output of its own.
    pub fn on_pauses(&mut self, s: &State) -> Vec<AppEvent> {
        let holds = s.holds_newest_first();
        let fetch: Vec<AppEvent> = s
            .pauses
            .iter()
            .filter(|p| !self.seen_holds.contains(&p.pause_id))
            .filter(|p| p.output.as_ref().is_none_or(Value::is_null))
            .map(|p| AppEvent::FetchExample {
                run_id: p.run_id.clone(),
                pause_id: p.pause_id.clone(),
                node_id: p.node_id.clone(),
            })
            .collect();
        if let Some(newest) = holds
            .iter()
            .find(|p| !self.seen_holds.contains(&p.pause_id))
        {
            self.hold = Some(newest.pause_id.clone());
        }
        self.seen_holds = s.pauses.iter().map(|p| p.pause_id.clone()).collect();
        if self
            .hold
            .as_ref()
            .is_some_and(|h| !holds.iter().any(|p| p.pause_id == *h))
        {
            self.hold = holds.first().map(|p| p.pause_id.clone());
        }
        self.examples
            .retain(|id, _| s.pauses.iter().any(|p| p.pause_id == *id));
        if let Some(o) = self.overlay.as_mut() {
            o.on_pauses(s.pause(&o.run_id, &o.pause_id));
            if o.is_complete() {
                self.overlay = None;
            }
        }
        fetch
    }

    /// An answer from the app.
    pub fn on_outcome(&mut self, o: &Outcome) {
        match o {
            Outcome::Resume { pause_id, result } => {
                self.status = Some(match result {
                    ResumeResult::Resumed => (format!("released {pause_id}"), false),
                    ResumeResult::Sent => (
                        format!("sent to the app for {pause_id}; it did not confirm in time"),
                        true,
                    ),
                    ResumeResult::Refused(w) => (format!("refused: {w}"), true),
                    ResumeResult::Gone(w) | ResumeResult::Failed(w) => (w.clone(), true),
                });
            }
            Outcome::Debug(r) => {
                self.status = Some(match r {
                    Ok(m) => (m.clone(), false),
                    Err(m) => (m.clone(), true),
                });
            }
            Outcome::Example { pause_id, value } => {
                if let Some(v) = value {
                    self.examples.insert(pause_id.clone(), v.clone());
                }
            }
            Outcome::Editor { .. } => {}
        }
        if let Some(ov) = self.overlay.as_mut() {
            ov.on_outcome(o);
            if ov.is_complete() {
                self.overlay = None;
            }
        }
    }

    /// What an inject at `p` starts from: its output, the node's last ok output in the run
    /// shown, the shape of an output it returned before (looked up from the hub), else `{}`.
    #[must_use]
    pub fn inject_prefill(&self, s: &State, p: &PauseInfo) -> Value {
        p.output
            .clone()
            .filter(|o| !o.is_null())
            .or_else(|| {
                s.run
                    .as_ref()
                    .filter(|r| r.run_id == p.run_id)
                    .and_then(|r| r.last_ok_output(&p.node_id).cloned())
            })
            .or_else(|| self.examples.get(&p.pause_id).cloned())
            .unwrap_or_else(|| Value::Object(Default::default()))
    }

    fn overlay_key(&mut self, s: &State, key: KeyEvent) -> Vec<AppEvent> {
        let Some((run_id, pause_id)) = self
            .overlay
            .as_ref()
            .map(|o| (o.run_id.clone(), o.pause_id.clone()))
        else {
            return Vec::new();
        };
        let pause = s.pause(&run_id, &pause_id);
        let inject_prefill = pause.map_or(Value::Null, |p| self.inject_prefill(s, p));
        let Some(o) = self.overlay.as_mut() else {
            return Vec::new();
        };
        let ctx = Ctx {
            pause,
            access: &self.access,
            inject_prefill,
            has_editor: self.has_editor,
        };
        let out = o.handle_key(key, &ctx);
        if o.is_complete() {
            self.overlay = None;
        }
        out
    }

    fn debug_change(&mut self, e: AppEvent) -> Vec<AppEvent> {
        if let Some(why) = self.access.forbids_debug() {
            self.status = Some((format!("breakpoints and mode are unavailable: {why}"), true));
            return Vec::new();
        }
        vec![e]
    }

    /// One key press.
    pub fn handle_key(&mut self, s: &State, key: KeyEvent) -> Vec<AppEvent> {
        if key.kind != KeyEventKind::Press {
            return Vec::new();
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return vec![AppEvent::Quit];
        }
        self.status = None;
        if self.overlay.is_some() {
            return self.overlay_key(s, key);
        }
        if self.help {
            self.help = false;
            return Vec::new();
        }
        if self.filtering {
            match key.code {
                KeyCode::Enter | KeyCode::Esc => self.filtering = false,
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) => self.filter.push(c),
                _ => {}
            }
            self.run_cursor = 0;
            return Vec::new();
        }
        match key.code {
            KeyCode::Char('q') => return vec![AppEvent::Quit],
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('h') | KeyCode::Char('H') => {
                if let Some(p) = self.selected_hold(s) {
                    self.overlay = Some(HoldOverlay::new(p));
                } else {
                    self.status = Some(("nothing is held".into(), false));
                }
            }
            KeyCode::Tab | KeyCode::Char(']') => self.cycle_hold(s, 1),
            KeyCode::BackTab | KeyCode::Char('[') => self.cycle_hold(s, -1),
            KeyCode::Char('t') => {
                let mode = match s.debug.mode {
                    Mode::Run => Mode::Step,
                    Mode::Step => Mode::Run,
                };
                return self.debug_change(AppEvent::SetMode(mode));
            }
            KeyCode::Char('E') => {
                let m = BreakpointMatcher::at(PausePoint::Error);
                return self.debug_change(if s.pause_on_error() {
                    AppEvent::BreakpointClear(Some(m))
                } else {
                    AppEvent::BreakpointSet(m)
                });
            }
            KeyCode::Char('B') => return self.debug_change(AppEvent::BreakpointClear(None)),
            _ => return self.screen_key(s, key),
        }
        Vec::new()
    }

    fn cycle_hold(&mut self, s: &State, by: isize) {
        let holds = s.holds_newest_first();
        if holds.is_empty() {
            return;
        }
        let at = self
            .selected_hold(s)
            .and_then(|h| holds.iter().position(|p| p.pause_id == h.pause_id))
            .unwrap_or(0) as isize;
        let n = holds.len() as isize;
        self.hold = Some(
            holds[((at + by) % n + n) as usize % holds.len()]
                .pause_id
                .clone(),
        );
    }

    fn screen_key(&mut self, s: &State, key: KeyEvent) -> Vec<AppEvent> {
        match self.screen.clone() {
            Screen::Runs => {
                let n = self.visible_runs(s).len();
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.run_cursor = self.run_cursor.saturating_sub(1)
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.run_cursor = (self.run_cursor + 1).min(n.saturating_sub(1));
                    }
                    KeyCode::Char('/') => self.filtering = true,
                    KeyCode::Enter => {
                        if let Some(r) = self.visible_runs(s).get(self.run_cursor) {
                            let id = r.run_id.clone();
                            self.screen = Screen::Run(id.clone());
                            self.exec_cursor = 0;
                            return vec![AppEvent::Subscribe(id)];
                        }
                    }
                    _ => {}
                }
            }
            Screen::Run(_) => {
                let n = s.run.as_ref().map_or(0, |r| r.execs.len());
                match key.code {
                    KeyCode::Esc | KeyCode::Backspace | KeyCode::Left => {
                        self.screen = Screen::Runs;
                        return vec![AppEvent::Unsubscribe];
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.exec_cursor = self.exec_cursor.saturating_sub(1)
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.exec_cursor = (self.exec_cursor + 1).min(n.saturating_sub(1));
                    }
                    KeyCode::End | KeyCode::Char('G') => self.exec_cursor = n.saturating_sub(1),
                    KeyCode::Home | KeyCode::Char('g') => self.exec_cursor = 0,
                    KeyCode::Char('b') => {
                        if let Some(x) = s.run.as_ref().and_then(|r| r.execs.get(self.exec_cursor))
                        {
                            let m = BreakpointMatcher {
                                kind: Some(x.kind),
                                name: Some(x.name.clone()),
                                point: Some(PausePoint::Before),
                                ..BreakpointMatcher::default()
                            };
                            return self.debug_change(AppEvent::BreakpointSet(m));
                        }
                    }
                    _ => {}
                }
            }
        }
        Vec::new()
    }
}
