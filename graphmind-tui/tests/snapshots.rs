//! Snapshots of every screen at 40, 80 and 120 columns, drawn from typed feed frames over
//! ratatui's `TestBackend` (no colour: the text and layout are what is reviewed).

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use graphmind_protocol::feed::{FeedFrame, RunStatus};
use graphmind_protocol::{Mode, PausePoint};
use graphmind_tui::access::Access;
use graphmind_tui::event::{Outcome, ResumeResult};
use graphmind_tui::state::State;
use graphmind_tui::ui::Ui;
use graphmind_tui::views::{Theme, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const WIDTHS: [u16; 3] = [40, 80, 120];

fn keys(ui: &mut Ui, s: &State, ks: &[KeyCode]) {
    for k in ks {
        ui.handle_key(s, KeyEvent::new(*k, KeyModifiers::NONE));
    }
}

fn check(name: &str, s: &State, ui: &Ui) {
    for w in WIDTHS {
        let h = if w == 40 { 30 } else { 24 };
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| draw(f, s, ui, Theme { color: false }))
            .unwrap();
        insta::assert_snapshot!(format!("{name}_{w}"), term.backend());
    }
}

fn runs() -> Vec<graphmind_protocol::feed::RunSummary> {
    vec![
        run(
            "run_8f2c01a9e3",
            "support-agent",
            RunStatus::Running,
            NOW - 20_000,
        ),
        run(
            "run_77d1b0c4aa",
            "billing-bot",
            RunStatus::Error,
            NOW - 300_000,
        ),
        run(
            "run_5a0e99f1c2",
            "support-agent",
            RunStatus::Ok,
            NOW - 900_000,
        ),
    ]
}

fn ui() -> Ui {
    Ui::new(Access::level("inject"), true)
}

#[test]
fn empty() {
    let mut s = State::new(4747);
    s.apply(hello(vec![], vec![], Mode::Run));
    check("empty", &s, &ui());
}

#[test]
fn run_list() {
    let s = state_with(runs(), vec![]);
    let mut u = ui();
    keys(&mut u, &s, &[KeyCode::Down]);
    check("run_list", &s, &u);
}

#[test]
fn streaming_model_step() {
    let mut s = state_with(runs(), vec![]);
    s.subscribe("run_8f2c01a9e3");
    s.apply_events("run_8f2c01a9e3", support_events("run_8f2c01a9e3"));
    let mut u = ui();
    keys(&mut u, &s, &[KeyCode::Enter, KeyCode::End]);
    check("streaming_model_step", &s, &u);
}

#[test]
fn one_held_tool() {
    let s = state_with(
        runs(),
        vec![pause(
            "p_1",
            "run_8f2c01a9e3",
            "tool:lookup_order",
            PausePoint::Before,
            NOW - 4_200,
        )],
    );
    let mut u = ui();
    u.on_pauses(&s);
    keys(&mut u, &s, &[KeyCode::Char('h')]);
    check("one_held_tool", &s, &u);
}

#[test]
fn three_concurrent_holds() {
    let s = state_with(
        runs(),
        vec![
            pause(
                "p_1",
                "run_8f2c01a9e3",
                "tool:lookup_order",
                PausePoint::Before,
                NOW - 9_000,
            ),
            pause(
                "p_2",
                "run_8f2c01a9e3",
                "tool:customer",
                PausePoint::Before,
                NOW - 8_500,
            ),
            pause(
                "p_3",
                "run_77d1b0c4aa",
                "tool:refund",
                PausePoint::Error,
                NOW - 1_000,
            ),
        ],
    );
    let mut u = ui();
    u.on_pauses(&s);
    check("three_concurrent_holds", &s, &u);
}

#[test]
fn error_gate() {
    let s = state_with(
        runs(),
        vec![pause(
            "p_9",
            "run_8f2c01a9e3",
            "tool:lookup_order",
            PausePoint::Error,
            NOW - 2_000,
        )],
    );
    let mut u = ui();
    u.on_pauses(&s);
    keys(&mut u, &s, &[KeyCode::Char('h')]);
    check("error_gate", &s, &u);
}

#[test]
fn inject_refused_by_the_app() {
    let s = state_with(
        runs(),
        vec![pause(
            "p_9",
            "run_8f2c01a9e3",
            "tool:lookup_order",
            PausePoint::Error,
            NOW - 2_000,
        )],
    );
    let mut u = ui();
    u.on_pauses(&s);
    keys(&mut u, &s, &[KeyCode::Char('h'), KeyCode::Char('i')]);
    u.on_outcome(&Outcome::Editor {
        pause_id: "p_9".into(),
        text: Some("\"shipped\"".into()),
    });
    keys(&mut u, &s, &[KeyCode::Enter]);
    u.on_outcome(&Outcome::Resume {
        pause_id: "p_9".into(),
        result: ResumeResult::Refused(
            "the app refused inject (schema): expected an object with status".into(),
        ),
    });
    check("inject_refused", &s, &u);
}

#[test]
fn step_mode() {
    let mut s = state_with(
        runs(),
        vec![pause(
            "p_4",
            "run_8f2c01a9e3",
            "llm:answer",
            PausePoint::Before,
            NOW - 700,
        )],
    );
    let mut f = match hello(runs(), s.pauses.clone(), Mode::Step) {
        FeedFrame::Hello { debug, .. } => debug,
        _ => unreachable!(),
    };
    f.breakpoints
        .push(graphmind_protocol::BreakpointMatcher::at(PausePoint::Error));
    s.apply(FeedFrame::Debug(f));
    let mut u = ui();
    u.on_pauses(&s);
    keys(&mut u, &s, &[KeyCode::Char('h')]);
    check("step_mode", &s, &u);
}

#[test]
fn disconnected_hub() {
    let mut s = state_with(runs(), vec![]);
    s.lost("connection refused (os error 111)");
    s.lost("connection refused (os error 111)");
    check("disconnected_hub", &s, &ui());
}
