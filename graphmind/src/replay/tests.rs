use serde_json::json;

use super::*;

fn rec() -> Recording {
    let step = |index: usize, node: &str, input: Value, status: &str, output: Value| Step {
        index,
        node_id: node.into(),
        name: node.trim_start_matches("tool:").into(),
        input: Some(input),
        status: status.into(),
        output: Some(output),
        chunks: None,
        streaming: false,
    };
    Recording {
        run_id: "run_a".into(),
        steps: vec![
            step(1, "tool:a", json!({"x": 1}), "ok", json!(10)),
            step(2, "tool:b", json!({"y": 1}), "error", Value::Null),
            step(3, "tool:a", json!({"x": 2}), "ok", json!(20)),
        ],
    }
}

#[test]
fn calls_are_matched_by_node_and_order_and_served() {
    let r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 1}))), Decision::Serve(s) if s.output == json!(10))
    );
    assert!(matches!(
        r.take("tool:b", "b", Some(&json!({"y": 1}))),
        Decision::Live
    ));
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 2}))), Decision::Serve(s) if s.step == 3)
    );
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 3}))),
        Decision::Live
    ));
    let o = r.outcomes();
    assert!(matches!(
        o[1],
        Outcome::Live {
            reason: LiveReason::RecordedError,
            ..
        }
    ));
    assert!(matches!(
        o[3],
        Outcome::Live {
            reason: LiveReason::NotRecorded,
            ..
        }
    ));
}

#[test]
fn a_changed_input_stops_with_the_step_node_and_path() {
    let r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    let Decision::Stop(d) = r.take("tool:a", "a", Some(&json!({"x": 5}))) else {
        panic!("expected a divergence");
    };
    assert_eq!(
        (d.step, d.node_id.as_str(), d.path.as_str()),
        (1, "tool:a", "$.x")
    );
    assert_eq!(
        d.to_string(),
        "replay diverged at step 1 (tool:a `a`): input field $.x was recorded as 1 but is 5 live"
    );
    assert!(
        matches!(
            r.take("tool:a", "a", Some(&json!({"x": 2}))),
            Decision::Live
        ),
        "live after a divergence"
    );
}

#[test]
fn the_fork_point_goes_live_and_stays_live() {
    let r = Replayer::new(rec(), Until::Step(3), OnDiverge::Stop, true);
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 1}))),
        Decision::Serve(_)
    ));
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 2}))),
        Decision::Fork { hold: true }
    ));
    assert_eq!(r.forked_at(), Some(3));
    let r = Replayer::new(rec(), Until::parse("b"), OnDiverge::Stop, false);
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 1}))),
        Decision::Serve(_)
    ));
    assert!(matches!(
        r.take("tool:b", "b", None),
        Decision::Fork { hold: false }
    ));
    assert_eq!(Until::parse("step 4"), Until::Step(4));
}
