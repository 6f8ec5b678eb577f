//! The loop: one task owns the state and the views; it selects over keys, feed messages and
//! answers, updates, then draws when something changed. Requests to the hub run off the loop
//! (blocking HTTP in `spawn_blocking`) and come back as [`Outcome`]s.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use graphmind_connect::example::enc;
use graphmind_connect::{Answer, Hub};
use graphmind_protocol::{BreakpointMatcher, Mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::access::{Access, Action};
use crate::conn::{self, FeedCmd, FeedMsg};
use crate::event::{AppEvent, Outcome, ResumeResult};
use crate::state::{Link, RunData, State};
use crate::term;
use crate::ui::Ui;
use crate::views::{self, Theme};

/// How long a resume may take (the hub waits up to 5 s for the app's answer).
const RESUME_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a breakpoint or mode change may take.
const DEBUG_TIMEOUT: Duration = Duration::from_secs(5);

/// What `graphmind tui` is started with.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The hub's port (`--port`); else found as the other commands find it.
    pub port: Option<u16>,
    /// Draw without colours (also when `NO_COLOR` is set).
    pub no_color: bool,
}

/// The hub's answer to a resume, as the overlay shows it.
#[must_use]
pub fn resume_result(a: &Answer, action: Action, pause_id: &str) -> ResumeResult {
    let v = a.json();
    let msg = a.reason();
    match a.status {
        200 => ResumeResult::Resumed,
        202 => ResumeResult::Sent,
        422 => {
            let by = if v.get("refusedBy").and_then(Value::as_str) == Some("hub") {
                "hub"
            } else {
                "app"
            };
            let code = v
                .get("code")
                .and_then(Value::as_str)
                .map_or_else(String::new, |c| format!(" ({c})"));
            ResumeResult::Refused(format!("the {by} refused {}{code}: {msg}", action.label()))
        }
        409 => ResumeResult::Gone(format!("{pause_id} is taken: {msg}")),
        404 | 410 => ResumeResult::Gone(format!("{pause_id} is gone: {msg}")),
        _ => ResumeResult::Failed(msg),
    }
}

fn resume(hub: &Hub, ev: &AppEvent, mode: Mode) -> Outcome {
    let AppEvent::Resume {
        run_id,
        pause_id,
        action,
        request,
    } = ev
    else {
        unreachable!("only resumes");
    };
    let result = (|| {
        if *action == Action::Step && mode != Mode::Step {
            let a = hub
                .post("/api/debug/mode", &json!({"mode": "step"}), DEBUG_TIMEOUT)
                .map_err(|e| ResumeResult::Failed(e.message))?;
            if a.status != 200 {
                return Err(ResumeResult::Failed(format!(
                    "could not turn step mode on: {}",
                    a.reason()
                )));
            }
        }
        let path = format!("/api/runs/{}/pauses/{}/resume", enc(run_id), enc(pause_id));
        let body = serde_json::to_value(request).unwrap_or(Value::Null);
        let a = hub
            .post(&path, &body, RESUME_TIMEOUT)
            .map_err(|e| ResumeResult::Failed(e.message))?;
        Ok(resume_result(&a, *action, pause_id))
    })();
    Outcome::Resume {
        pause_id: pause_id.clone(),
        result: result.unwrap_or_else(|e| e),
    }
}

fn matcher_text(m: &BreakpointMatcher) -> String {
    let mut parts = Vec::new();
    if let Some(k) = m.kind {
        parts.push(format!("kind={k}"));
    }
    if let Some(n) = &m.name {
        parts.push(format!("name={n}"));
    }
    parts.push(format!(
        "point={}",
        m.point.unwrap_or(graphmind_protocol::PausePoint::Before)
    ));
    parts.join(" ")
}

fn debug_change(hub: &Hub, ev: &AppEvent) -> Outcome {
    let (path, body, done) = match ev {
        AppEvent::SetMode(m) => ("/api/debug/mode", json!({"mode": m}), format!("mode {m}")),
        AppEvent::BreakpointSet(m) => (
            "/api/debug/breakpoints/set",
            json!({"matcher": m}),
            format!("breakpoint set: {}", matcher_text(m)),
        ),
        AppEvent::BreakpointClear(Some(m)) => (
            "/api/debug/breakpoints/clear",
            json!({"matcher": m}),
            format!("breakpoint cleared: {}", matcher_text(m)),
        ),
        AppEvent::BreakpointClear(None) => (
            "/api/debug/breakpoints/clear",
            json!({"all": true}),
            "every breakpoint cleared".to_owned(),
        ),
        _ => unreachable!("only debug changes"),
    };
    Outcome::Debug(match hub.post(path, &body, DEBUG_TIMEOUT) {
        Ok(a) if a.status == 200 => Ok(done),
        Ok(a) => Err(a.reason()),
        Err(e) => Err(e.message),
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs the terminal UI until the user quits.
///
/// # Errors
/// When no hub can be located or the terminal cannot be set up.
pub fn run(opts: Options) -> Result<(), String> {
    let hub = Hub::locate(opts.port).map_err(|e| e.message)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start: {e}"))?;
    let theme = if opts.no_color {
        Theme { color: false }
    } else {
        Theme::from_env()
    };
    let out = rt.block_on(app(hub, theme));
    rt.shutdown_timeout(Duration::from_millis(200));
    out
}

async fn app(hub: Hub, theme: Theme) -> Result<(), String> {
    let access = Access {
        level: hub.allow_control.clone(),
        token_problem: hub.token_problem().map(str::to_owned),
        started_by: hub.started_by.clone(),
    };
    let editor = term::editor();
    term::install_panic_hook();
    term::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let _guard = term::Guard;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))
        .map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let _ = terminal.clear();

    let port = hub.port;
    let (feed_tx, mut feed_rx) = mpsc::unbounded_channel();
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    tokio::spawn(conn::feed_task(port, feed_tx, cmd_rx));
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Outcome>();
    let mut keys = EventStream::new();
    let mut state = State::new(port);
    let mut ui = Ui::new(access, editor.is_some());
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut dirty = true;
    let mut was_lost = false;

    loop {
        if dirty {
            state.now_ms = now_ms();
            terminal
                .draw(|f| views::draw(f, &state, &ui, theme))
                .map_err(|e| format!("cannot draw: {e}"))?;
            dirty = false;
        }
        let mut events = Vec::new();
        tokio::select! {
            k = keys.next() => match k {
                Some(Ok(Event::Key(k))) => {
                    events = ui.handle_key(&state, k);
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => {
                    let _ = terminal.autoresize();
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Ok(()),
            },
            m = feed_rx.recv() => {
                let Some(m) = m else { return Ok(()) };
                // A burst of frames costs one frame drawn.
                let mut batch = vec![m];
                while let Ok(m) = feed_rx.try_recv() {
                    batch.push(m);
                    if batch.len() >= 4096 {
                        break;
                    }
                }
                for m in batch {
                    match m {
                        FeedMsg::Connected => {
                            if let Some(r) = state.run.as_mut() {
                                // The feed replays the subscribed run again from its start.
                                *r = RunData::new(&r.run_id.clone());
                            }
                            if was_lost {
                                ui.status = Some((format!("reconnected to the hub on port {port}"), false));
                                was_lost = false;
                            }
                        }
                        FeedMsg::Frame(f) => {
                            let pauses = matches!(
                                f,
                                graphmind_protocol::feed::FeedFrame::Hello { .. }
                                    | graphmind_protocol::feed::FeedFrame::Pauses { .. }
                            );
                            state.apply(f);
                            if pauses {
                                events.extend(ui.on_pauses(&state));
                            }
                        }
                        FeedMsg::Events { run_id, events } => state.apply_events(&run_id, events),
                        FeedMsg::Lost(why) => {
                            if !matches!(state.link, Link::Unauthorized(_)) {
                                state.lost(why);
                            }
                            was_lost = true;
                        }
                    }
                }
                dirty = true;
            },
            o = out_rx.recv() => {
                if let Some(o) = o {
                    ui.on_outcome(&o);
                    dirty = true;
                }
            },
            _ = tick.tick() => {
                // held times and the reconnect attempt count move on
                dirty = !state.pauses.is_empty() || state.link != Link::Live;
            },
        }
        for ev in events {
            match ev {
                AppEvent::Quit => return Ok(()),
                AppEvent::Subscribe(id) => {
                    state.subscribe(&id);
                    let _ = cmd_tx.send(FeedCmd::Subscribe(id));
                }
                AppEvent::Unsubscribe => {
                    state.run = None;
                    let _ = cmd_tx.send(FeedCmd::Unsubscribe);
                }
                AppEvent::OpenEditor {
                    pause_id, prefill, ..
                } => {
                    let text = editor.as_deref().and_then(|e| term::edit(e, &prefill));
                    let _ = terminal.clear();
                    ui.on_outcome(&Outcome::Editor { pause_id, text });
                    dirty = true;
                }
                AppEvent::FetchExample {
                    run_id,
                    pause_id,
                    node_id,
                } => {
                    let (hub, tx) = (hub.clone(), out_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let value = graphmind_connect::example::output_example(
                            &hub,
                            &run_id,
                            &node_id,
                            DEBUG_TIMEOUT,
                        );
                        let _ = tx.send(Outcome::Example { pause_id, value });
                    });
                }
                ev @ AppEvent::Resume { .. } => {
                    let (hub, tx, mode) = (hub.clone(), out_tx.clone(), state.debug.mode);
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(resume(&hub, &ev, mode));
                    });
                }
                ev => {
                    let (hub, tx) = (hub.clone(), out_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(debug_change(&hub, &ev));
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body: body.to_string(),
        }
    }

    #[test]
    fn the_hubs_resume_answers_read_as_the_overlay_shows_them() {
        assert_eq!(
            resume_result(
                &answer(200, json!({"outcome": "resumed"})),
                Action::Inject,
                "p"
            ),
            ResumeResult::Resumed
        );
        assert_eq!(
            resume_result(
                &answer(
                    422,
                    json!({"outcome": "refused", "code": "schema", "error": "expected an object"})
                ),
                Action::Inject,
                "p"
            ),
            ResumeResult::Refused("the app refused inject (schema): expected an object".into())
        );
        assert_eq!(
            resume_result(
                &answer(422, json!({"refusedBy": "hub", "error": "inject is off"})),
                Action::Inject,
                "p"
            ),
            ResumeResult::Refused("the hub refused inject: inject is off".into())
        );
        assert!(matches!(
            resume_result(&answer(410, json!({"error": "no such open pause"})), Action::Continue, "p1"),
            ResumeResult::Gone(m) if m == "p1 is gone: no such open pause"
        ));
        assert_eq!(
            resume_result(&answer(202, json!({})), Action::Continue, "p"),
            ResumeResult::Sent
        );
        assert!(matches!(
            resume_result(&answer(403, json!({"error": "forbidden"})), Action::Continue, "p"),
            ResumeResult::Failed(m) if m == "forbidden"
        ));
    }
}
