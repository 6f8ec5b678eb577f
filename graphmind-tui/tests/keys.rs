//! The key handling as a state machine, without a terminal: keys in, `AppEvent`s out.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use graphmind_protocol::feed::{FeedFrame, PauseState, RunStatus};
use graphmind_protocol::{Mode, PausePoint};
use graphmind_tui::access::{Access, Action};
use graphmind_tui::event::{AppEvent, Outcome, ResumeResult};
use graphmind_tui::overlay::Stage;
use graphmind_tui::state::State;
use graphmind_tui::ui::{Screen, Ui};
use serde_json::json;

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

fn press(ui: &mut Ui, s: &State, keys: &[KeyEvent]) -> Vec<AppEvent> {
    keys.iter().flat_map(|k| ui.handle_key(s, *k)).collect()
}

fn held(point: PausePoint) -> State {
    state_with(
        vec![run(
            "run_a",
            "support-agent",
            RunStatus::Running,
            NOW - 60_000,
        )],
        vec![pause(
            "p1",
            "run_a",
            "tool:lookup_order",
            point,
            NOW - 5_000,
        )],
    )
}

const POINTS: [PausePoint; 3] = [PausePoint::Before, PausePoint::After, PausePoint::Error];

fn resume_of(events: &[AppEvent]) -> (Action, graphmind_protocol::control::ResumeRequest) {
    match events {
        [
            AppEvent::Resume {
                run_id,
                pause_id,
                action,
                request,
            },
        ] => {
            assert_eq!((run_id.as_str(), pause_id.as_str()), ("run_a", "p1"));
            (*action, request.clone())
        }
        other => panic!("expected one resume, got {other:?}"),
    }
}

#[test]
fn continue_step_retry_abort_send_on_enter_at_every_point() {
    for point in POINTS {
        for (k, wire) in [
            ('c', "continue"),
            ('s', "continue"),
            ('r', "retry"),
            ('a', "abort"),
        ] {
            let s = held(point);
            let mut ui = Ui::new(Access::edit(), true);
            assert!(
                press(&mut ui, &s, &[ch('h'), ch(k)]).is_empty(),
                "{k} alone sends nothing"
            );
            assert!(matches!(
                ui.overlay.as_ref().unwrap().stage,
                Stage::Confirm { .. }
            ));
            let (action, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
            assert_eq!(action, Action::from_key(k).unwrap(), "{point:?} {k}");
            assert_eq!(req.action, wire, "{point:?} {k}");
            assert!(req.output.is_none() && req.input.is_none() && req.reason.is_none());
            assert!(!req.remember);
            assert!(matches!(
                ui.overlay.as_ref().unwrap().stage,
                Stage::Sending(_)
            ));
            // Locked until the hub answers: a second Enter or key never resumes twice.
            assert!(
                press(
                    &mut ui,
                    &s,
                    &[key(KeyCode::Enter), ch('c'), key(KeyCode::Enter)]
                )
                .is_empty()
            );
        }
    }
}

#[test]
fn inject_opens_the_editor_prefilled_then_sends_its_json_at_every_point() {
    for point in POINTS {
        let s = held(point);
        let mut ui = Ui::new(Access::edit(), true);
        let ev = press(&mut ui, &s, &[ch('h'), ch('i')]);
        let prefill = match ev.as_slice() {
            [
                AppEvent::OpenEditor {
                    pause_id,
                    action: Action::Inject,
                    prefill,
                },
            ] if pause_id == "p1" => prefill.clone(),
            other => panic!("{other:?}"),
        };
        // after: the gate's own output; before/error: no output known, an empty object
        let want = if point == PausePoint::After {
            r#"{"status":"shipped"}"#
        } else {
            "{}"
        };
        assert_eq!(prefill, want, "{point:?}");
        ui.on_outcome(&Outcome::Editor {
            pause_id: "p1".into(),
            text: Some(r#"{"status":"delayed"}"#.into()),
        });
        let (action, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
        assert_eq!((action, req.action.as_str()), (Action::Inject, "inject"));
        assert_eq!(req.output, Some(json!({"status": "delayed"})));
    }
}

#[test]
fn edit_sends_the_edited_input_with_continue_before_and_retry_after_or_on_error() {
    for (point, wire) in [
        (PausePoint::Before, "continue"),
        (PausePoint::After, "retry"),
        (PausePoint::Error, "retry"),
    ] {
        let s = held(point);
        let mut ui = Ui::new(Access::edit(), true);
        let ev = press(&mut ui, &s, &[ch('h'), ch('e')]);
        assert!(
            matches!(ev.as_slice(), [AppEvent::OpenEditor { action: Action::Edit, prefill, .. }] if prefill == r#"{"order_id":"A-1001"}"#),
            "{ev:?}"
        );
        ui.on_outcome(&Outcome::Editor {
            pause_id: "p1".into(),
            text: Some(r#"{"order_id":"A-1002"}"#.into()),
        });
        let (_, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
        assert_eq!(req.action, wire, "{point:?}");
        assert_eq!(req.input, Some(json!({"order_id": "A-1002"})));
        assert_eq!(req.output, None);
    }
}

#[test]
fn reject_takes_a_reason_inline_and_refuses_an_empty_one_at_every_point() {
    for point in POINTS {
        let s = held(point);
        let mut ui = Ui::new(Access::edit(), true);
        press(&mut ui, &s, &[ch('h'), ch('x')]);
        assert_eq!(
            ui.overlay.as_ref().unwrap().stage,
            Stage::Reason(String::new())
        );
        assert!(press(&mut ui, &s, &[key(KeyCode::Enter)]).is_empty());
        assert!(
            ui.overlay
                .as_ref()
                .unwrap()
                .note
                .as_ref()
                .unwrap()
                .text
                .contains("say why")
        );
        let typed: Vec<KeyEvent> = "no refunds".chars().map(ch).collect();
        press(&mut ui, &s, &typed);
        let (_, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
        assert_eq!(
            (req.action.as_str(), req.reason.as_deref()),
            ("reject", Some("no refunds"))
        );
    }
}

#[test]
fn the_inline_editor_is_used_without_editor_and_checks_json_before_sending() {
    let s = held(PausePoint::Error);
    let mut ui = Ui::new(Access::edit(), false);
    assert!(press(&mut ui, &s, &[ch('h'), ch('i')]).is_empty());
    assert!(
        matches!(&ui.overlay.as_ref().unwrap().stage, Stage::Inline { action: Action::Inject, text } if text == "{}")
    );
    // `{}` → `{` (backspace), then a bad value: refused locally, nothing sent
    press(&mut ui, &s, &[key(KeyCode::Backspace), ch('x')]);
    assert!(press(&mut ui, &s, &[key(KeyCode::Enter)]).is_empty());
    assert!(
        ui.overlay
            .as_ref()
            .unwrap()
            .note
            .as_ref()
            .unwrap()
            .text
            .starts_with("not JSON")
    );
    press(&mut ui, &s, &[key(KeyCode::Backspace)]);
    let typed: Vec<KeyEvent> = r#""ok":1}"#.chars().map(ch).collect();
    press(&mut ui, &s, &typed);
    let (_, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
    assert_eq!(req.output, Some(json!({"ok": 1})));
}

#[test]
fn remember_goes_with_continue_inject_and_reject_only() {
    let s = held(PausePoint::Before);
    let mut ui = Ui::new(Access::edit(), true);
    press(&mut ui, &s, &[ch('h'), ch('m'), ch('c')]);
    let (_, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
    assert!(req.remember);
    let mut ui = Ui::new(Access::edit(), true);
    press(&mut ui, &s, &[ch('h'), ch('m'), ch('r')]);
    let (_, req) = resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
    assert!(!req.remember, "retry is never remembered");
}

#[test]
fn esc_goes_back_one_stage_then_closes_and_sends_nothing() {
    for point in POINTS {
        let s = held(point);
        let mut ui = Ui::new(Access::edit(), true);
        for k in ['c', 's', 'r', 'a', 'x'] {
            press(&mut ui, &s, &[ch('h'), ch(k)]);
            assert!(press(&mut ui, &s, &[key(KeyCode::Esc)]).is_empty());
            assert_eq!(ui.overlay.as_ref().unwrap().stage, Stage::Choose, "{k}");
            assert!(press(&mut ui, &s, &[key(KeyCode::Esc)]).is_empty());
            assert!(ui.overlay.is_none(), "{k}");
        }
        // the editor answered, the confirm cancelled: nothing sent
        press(&mut ui, &s, &[ch('h'), ch('i')]);
        ui.on_outcome(&Outcome::Editor {
            pause_id: "p1".into(),
            text: Some("1".into()),
        });
        assert!(press(&mut ui, &s, &[key(KeyCode::Esc), key(KeyCode::Esc)]).is_empty());
        assert!(ui.overlay.is_none());
    }
}

#[test]
fn what_the_allow_control_level_forbids_is_unavailable_with_why() {
    let s = held(PausePoint::Error);
    for (level, forbidden) in [
        ("off", vec!['c', 's', 'r', 'i', 'e', 'x', 'a']),
        ("resume", vec!['i', 'e']),
        ("inject", vec!['e']),
    ] {
        for k in forbidden {
            let mut ui = Ui::new(Access::level(level), true);
            let ev = press(&mut ui, &s, &[ch('h'), ch(k), key(KeyCode::Enter)]);
            assert!(
                !ev.iter()
                    .any(|e| matches!(e, AppEvent::Resume { .. } | AppEvent::OpenEditor { .. })),
                "{level} {k}"
            );
            let note = ui.overlay.as_ref().unwrap().note.clone().unwrap();
            assert!(
                note.error
                    && note.text.contains("unavailable")
                    && note.text.contains("--allow-control"),
                "{level} {k}: {}",
                note.text
            );
        }
    }
    // the gate's own limits: not editable, reject not listed
    let mut p = pause("p1", "run_a", "tool:lookup_order", PausePoint::Error, NOW);
    p.editable = false;
    p.actions = Some(json!(["continue", "retry", "inject", "abort"]));
    let s = state_with(vec![], vec![p]);
    let mut ui = Ui::new(Access::edit(), true);
    assert!(press(&mut ui, &s, &[ch('h'), ch('e')]).is_empty());
    assert!(
        ui.overlay
            .as_ref()
            .unwrap()
            .note
            .as_ref()
            .unwrap()
            .text
            .contains("did not offer")
    );
    assert!(press(&mut ui, &s, &[ch('x'), key(KeyCode::Enter)]).is_empty());
    assert!(
        ui.overlay
            .as_ref()
            .unwrap()
            .note
            .as_ref()
            .unwrap()
            .text
            .contains("does not take reject")
    );
}

#[test]
fn a_hold_that_closes_while_its_overlay_is_open_is_never_resumed() {
    for k in ['c', 'r', 'a', 'x'] {
        let mut s = held(PausePoint::Error);
        let mut ui = Ui::new(Access::edit(), true);
        press(&mut ui, &s, &[ch('h'), ch(k)]);
        s.apply(FeedFrame::Pauses {
            pauses: vec![],
            remembered: vec![],
        });
        ui.on_pauses(&s);
        let ov = ui.overlay.as_ref().expect("stays open to say why");
        assert_eq!(ov.stage, Stage::Gone);
        assert!(ov.note.as_ref().unwrap().text.contains("this hold closed"));
        assert!(press(&mut ui, &s, &[key(KeyCode::Enter)]).is_empty(), "{k}");
        assert!(ui.overlay.is_none());
    }
    // closed before the next key arrived, without a pauses frame seen by the overlay
    let s0 = held(PausePoint::Error);
    let mut ui = Ui::new(Access::edit(), true);
    press(&mut ui, &s0, &[ch('h'), ch('c')]);
    let s1 = state_with(vec![], vec![]);
    assert!(press(&mut ui, &s1, &[key(KeyCode::Enter)]).is_empty());
}

#[test]
fn the_apps_refusal_is_shown_and_the_hold_kept_for_another_try() {
    let s = held(PausePoint::Error);
    let mut ui = Ui::new(Access::edit(), true);
    press(&mut ui, &s, &[ch('h'), ch('i')]);
    ui.on_outcome(&Outcome::Editor {
        pause_id: "p1".into(),
        text: Some(r#""oops""#.into()),
    });
    resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
    ui.on_outcome(&Outcome::Resume {
        pause_id: "p1".into(),
        result: ResumeResult::Refused("the app refused inject (schema): expected an object".into()),
    });
    let ov = ui.overlay.as_ref().expect("the overlay stays");
    assert_eq!(ov.stage, Stage::Choose);
    let note = ov.note.as_ref().unwrap();
    assert!(
        note.error && note.text.contains("schema") && note.text.contains("stays held"),
        "{}",
        note.text
    );
    // a second try goes out
    press(&mut ui, &s, &[ch('c')]);
    resume_of(&press(&mut ui, &s, &[key(KeyCode::Enter)]));
    ui.on_outcome(&Outcome::Resume {
        pause_id: "p1".into(),
        result: ResumeResult::Resumed,
    });
    assert!(ui.overlay.is_none());
}

#[test]
fn a_hold_already_resuming_is_not_resumed_again() {
    let mut p = pause("p1", "run_a", "tool:lookup_order", PausePoint::Before, NOW);
    p.state = PauseState::Resuming;
    let s = state_with(vec![], vec![p]);
    let mut ui = Ui::new(Access::edit(), true);
    assert!(press(&mut ui, &s, &[ch('h'), ch('c'), key(KeyCode::Enter)]).is_empty());
    assert!(
        ui.overlay
            .as_ref()
            .unwrap()
            .note
            .as_ref()
            .unwrap()
            .text
            .contains("already in flight")
    );
}

#[test]
fn the_newest_hold_is_selected_and_tab_cycles() {
    let mut s = state_with(
        vec![],
        vec![pause(
            "p1",
            "run_a",
            "tool:a",
            PausePoint::Before,
            NOW - 3000,
        )],
    );
    let mut ui = Ui::new(Access::edit(), true);
    ui.on_pauses(&s);
    assert_eq!(ui.selected_hold(&s).unwrap().pause_id, "p1");
    s.apply(FeedFrame::Pauses {
        pauses: vec![
            pause("p1", "run_a", "tool:a", PausePoint::Before, NOW - 3000),
            pause("p2", "run_b", "tool:b", PausePoint::Error, NOW - 1000),
            pause("p3", "run_c", "tool:c", PausePoint::After, NOW - 2000),
        ],
        remembered: vec![],
    });
    ui.on_pauses(&s);
    assert_eq!(ui.hold.as_deref(), Some("p2"), "the newest");
    press(&mut ui, &s, &[key(KeyCode::Tab)]);
    assert_eq!(ui.hold.as_deref(), Some("p3"));
    press(&mut ui, &s, &[key(KeyCode::Tab), key(KeyCode::Tab)]);
    assert_eq!(ui.hold.as_deref(), Some("p2"));
    press(&mut ui, &s, &[ch('h')]);
    assert_eq!(ui.overlay.as_ref().unwrap().pause_id, "p2");
}

#[test]
fn ctrl_c_quits_from_anywhere_and_release_events_are_ignored() {
    let s = held(PausePoint::Before);
    let mut ui = Ui::new(Access::edit(), true);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(ui.handle_key(&s, ctrl_c), vec![AppEvent::Quit]);
    press(&mut ui, &s, &[ch('h')]);
    assert_eq!(
        ui.handle_key(&s, ctrl_c),
        vec![AppEvent::Quit],
        "also in the overlay"
    );
    let mut release = ch('c');
    release.kind = KeyEventKind::Release;
    assert!(ui.handle_key(&s, release).is_empty());
    assert_eq!(
        ui.overlay.as_ref().unwrap().stage,
        Stage::Choose,
        "a release is no press"
    );
}

#[test]
fn the_run_list_filters_opens_a_run_and_goes_back() {
    let s = state_with(
        vec![
            run("run_b", "billing", RunStatus::Error, NOW - 1000),
            run("run_a", "support-agent", RunStatus::Ok, NOW - 9000),
        ],
        vec![],
    );
    let mut ui = Ui::new(Access::edit(), true);
    let mut keys = vec![ch('/')];
    keys.extend("supp".chars().map(ch));
    keys.push(key(KeyCode::Enter));
    press(&mut ui, &s, &keys);
    assert_eq!(ui.visible_runs(&s).len(), 1);
    assert_eq!(
        press(&mut ui, &s, &[key(KeyCode::Enter)]),
        vec![AppEvent::Subscribe("run_a".into())]
    );
    assert_eq!(ui.screen, Screen::Run("run_a".into()));
    assert_eq!(
        press(&mut ui, &s, &[key(KeyCode::Esc)]),
        vec![AppEvent::Unsubscribe]
    );
    assert_eq!(ui.screen, Screen::Runs);
}

#[test]
fn mode_and_breakpoints_emit_changes_or_say_why_not() {
    let s = held(PausePoint::Before);
    let mut ui = Ui::new(Access::edit(), true);
    assert_eq!(
        press(&mut ui, &s, &[ch('t')]),
        vec![AppEvent::SetMode(Mode::Step)]
    );
    assert!(
        matches!(press(&mut ui, &s, &[ch('E')]).as_slice(), [AppEvent::BreakpointSet(m)] if m.point == Some(PausePoint::Error))
    );
    assert_eq!(
        press(&mut ui, &s, &[ch('B')]),
        vec![AppEvent::BreakpointClear(None)]
    );
    let mut ui = Ui::new(Access::level("off"), true);
    assert!(press(&mut ui, &s, &[ch('t'), ch('E')]).is_empty());
    assert!(
        ui.status
            .as_ref()
            .unwrap()
            .0
            .contains("--allow-control off")
    );
}

#[test]
fn a_new_hold_without_output_asks_for_the_output_shape_and_inject_starts_from_it() {
    let s = held(PausePoint::Error);
    let mut ui = Ui::new(Access::edit(), true);
    assert_eq!(
        ui.on_pauses(&s),
        vec![AppEvent::FetchExample {
            run_id: "run_a".into(),
            pause_id: "p1".into(),
            node_id: "tool:lookup_order".into()
        }]
    );
    assert!(ui.on_pauses(&s).is_empty(), "asked once per hold");
    ui.on_outcome(&Outcome::Example {
        pause_id: "p1".into(),
        value: Some(json!({"order_id": "", "amount_cents": 0})),
    });
    let ev = press(&mut ui, &s, &[ch('h'), ch('i')]);
    assert!(
        matches!(ev.as_slice(), [AppEvent::OpenEditor { prefill, .. }] if prefill == r#"{"order_id":"","amount_cents":0}"#),
        "{ev:?}"
    );
    // a hold with an output of its own needs no look-up
    let after = held(PausePoint::After);
    assert!(Ui::new(Access::edit(), true).on_pauses(&after).is_empty());
}
