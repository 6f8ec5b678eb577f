//! The state applies typed feed frames and events.

mod common;

use common::*;
use graphmind_protocol::PausePoint;
use graphmind_protocol::feed::{FeedFrame, RunStatus};
use graphmind_tui::state::{ExecStatus, Link, State};

#[test]
fn a_run_becomes_a_tree_in_call_order_with_repeats_parallel_calls_and_token_tails() {
    let mut s = State::new(4747);
    s.subscribe("run_a");
    s.apply_events("run_a", support_events("run_a"));
    let r = s.run.as_ref().unwrap();
    let rows: Vec<(&str, usize, u32, bool, ExecStatus)> = r
        .execs
        .iter()
        .map(|x| (x.node_id.as_str(), x.depth, x.nth, x.parallel, x.status))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("agent:support", 0, 1, false, ExecStatus::Running),
            ("llm:plan", 1, 1, false, ExecStatus::Ok),
            ("tool:lookup_order", 1, 1, true, ExecStatus::Error),
            ("tool:customer", 1, 1, true, ExecStatus::Ok),
            ("tool:lookup_order", 1, 2, false, ExecStatus::Ok),
            ("llm:answer", 1, 1, false, ExecStatus::Running),
        ]
    );
    assert_eq!(r.execs[4].held_ms, Some(2500.0));
    assert_eq!(
        r.execs[2].error.as_ref().unwrap().message,
        "order service timed out"
    );
    let t = &r.execs[5].tokens;
    assert_eq!(t.text, "Your order A-1001 shipped and arrives Tuesday.");
    assert_eq!(t.reasoning, "The order shipped; ");
    assert_eq!(t.tool_args, "{\"notify\":");
    assert_eq!(
        r.last_ok_output("tool:lookup_order"),
        Some(&serde_json::json!({"status": "shipped", "eta": "Tue"}))
    );
    // events of another run are not mixed in
    s.apply_events("run_b", support_events("run_b"));
    assert_eq!(s.run.as_ref().unwrap().execs.len(), 6);
}

#[test]
fn frames_update_runs_pauses_and_the_link() {
    let mut s = state_with(
        vec![run("run_a", "a", RunStatus::Running, NOW - 5000)],
        vec![],
    );
    assert_eq!(s.link, Link::Live);
    s.apply(FeedFrame::Run {
        run: run("run_b", "b", RunStatus::Running, NOW - 100),
    });
    s.apply(FeedFrame::Run {
        run: run("run_a", "a", RunStatus::Ok, NOW - 5000),
    });
    let ids: Vec<&str> = s.runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["run_b", "run_a"], "newest first");
    assert_eq!(s.runs[1].status, RunStatus::Ok);
    s.apply(FeedFrame::Pauses {
        pauses: vec![
            pause("p1", "run_b", "tool:x", PausePoint::Before, NOW - 10),
            pause("p2", "run_b", "tool:y", PausePoint::Error, NOW - 5),
        ],
        remembered: vec![],
    });
    assert_eq!(s.held_in("run_b"), 2);
    assert_eq!(s.holds_newest_first()[0].pause_id, "p2");
    s.apply(FeedFrame::Removed {
        run_ids: vec!["run_a".into()],
    });
    assert_eq!(s.runs.len(), 1);
    s.lost("connection refused");
    s.lost("connection refused");
    assert_eq!(
        s.link,
        Link::Lost {
            reason: "connection refused".into(),
            attempts: 2
        }
    );
    s.apply(FeedFrame::Unauthorized {
        message: "wrong token".into(),
    });
    assert_eq!(s.link, Link::Unauthorized("wrong token".into()));
}
