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
        error: None,
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
        matches!(r.take("tool:a", "a", Some(&json!({"x": 1})), &[]), Decision::Serve(s) if s.output == json!(10))
    );
    assert!(matches!(
        r.take("tool:b", "b", Some(&json!({"y": 1})), &[]),
        Decision::Live
    ));
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 2})), &[]), Decision::Serve(s) if s.step == 3)
    );
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 3})), &[]),
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
    let Decision::Stop(d) = r.take("tool:a", "a", Some(&json!({"x": 5})), &[]) else {
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
            r.take("tool:a", "a", Some(&json!({"x": 2})), &[]),
            Decision::Live
        ),
        "live after a divergence"
    );
}

#[test]
fn the_fork_point_goes_live_and_stays_live() {
    let r = Replayer::new(rec(), Until::Step(3), OnDiverge::Stop, true);
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 1})), &[]),
        Decision::Serve(_)
    ));
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 2})), &[]),
        Decision::Fork { hold: true }
    ));
    assert_eq!(r.forked_at(), Some(3));
    let r = Replayer::new(rec(), Until::parse("b"), OnDiverge::Stop, false);
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 1})), &[]),
        Decision::Serve(_)
    ));
    assert!(matches!(
        r.take("tool:b", "b", None, &[]),
        Decision::Fork { hold: false }
    ));
    assert_eq!(Until::parse("step 4"), Until::Step(4));
}

#[test]
fn a_recorded_error_with_its_node_error_is_served_as_that_error() {
    let mut recording = rec();
    recording.steps[1].error = Some(graphmind_protocol::ErrorInfo {
        name: "ToolError".into(),
        message: "no order ORD-1O42".into(),
        stack: None,
        extra: graphmind_protocol::Extra::new(),
    });
    let r = Replayer::new(recording, Until::End, OnDiverge::Stop, false);
    let _ = r.take("tool:a", "a", Some(&json!({"x": 1})), &[]);
    let Decision::ServeError(served) = r.take("tool:b", "b", Some(&json!({"y": 1})), &[]) else {
        panic!("expected the recorded error");
    };
    assert_eq!(served.step, 2);
    assert_eq!(
        served.error,
        crate::RecordedError::new("ToolError", "no order ORD-1O42")
    );
    assert_eq!(
        r.outcomes()[1],
        Outcome::Served {
            step: 2,
            node_id: "tool:b".into()
        }
    );
    // A call whose error type is not built from it runs live, and the report says why.
    r.unserved(2, LiveReason::RecordedError);
    assert!(matches!(
        r.outcomes()[1],
        Outcome::Live {
            step: Some(2),
            reason: LiveReason::RecordedError,
            ..
        }
    ));
}

#[test]
fn concurrent_calls_in_another_order_are_paired_by_input_not_reported_as_diverged() {
    let r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    // The second recorded call of tool:a starts first, then the first one.
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 2})), &[]), Decision::Serve(s) if s.step == 3 && s.output == json!(20))
    );
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 1})), &[]), Decision::Serve(s) if s.step == 1 && s.output == json!(10))
    );
    assert!(
        r.outcomes()
            .iter()
            .all(|o| matches!(o, Outcome::Served { .. }))
    );
    // An input no recorded call has is checked against the first one not yet taken.
    let r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    let _ = r.take("tool:a", "a", Some(&json!({"x": 1})), &[]);
    let Decision::Stop(d) = r.take("tool:a", "a", Some(&json!({"x": 9})), &[]) else {
        panic!("expected a divergence");
    };
    assert_eq!((d.step, d.path.as_str()), (3, "$.x"));
}

#[test]
fn a_divergence_in_a_20_mb_input_is_one_short_line_with_the_path_and_both_lengths() {
    let mut recording = rec();
    let recorded = "r".repeat(20 * 1024 * 1024);
    recording.steps[0].input = Some(json!({"x": 1, "doc": recorded}));
    let r = Replayer::new(recording, Until::End, OnDiverge::Stop, false);
    let live = format!("{}!", "r".repeat(20 * 1024 * 1024 - 1));
    let Decision::Stop(d) = r.take("tool:a", "a", Some(&json!({"x": 1, "doc": live})), &[]) else {
        panic!("expected a divergence");
    };
    // The values themselves stay whole for `graphmind::testing`'s report.
    assert_eq!(
        d.recorded.as_ref().and_then(Value::as_str).map(str::len),
        Some(20 * 1024 * 1024)
    );
    let line = d.to_string();
    assert!(line.len() < 1_000, "{} bytes", line.len());
    let head = format!("\"{}…", "r".repeat(SHOWN - 1));
    assert_eq!(
        line,
        format!(
            "replay diverged at step 1 (tool:a `a`): input field $.doc was recorded as {head} but is {head} live (values cut to {SHOWN} bytes of JSON; recorded 20971522 bytes, live 20971522 bytes)"
        )
    );
    // A short live value next to a long recorded one: both lengths, the short one whole.
    let r = Replayer::new(
        {
            let mut recording = rec();
            recording.steps[0].input = Some(json!({"x": "r".repeat(5_000)}));
            recording
        },
        Until::End,
        OnDiverge::Stop,
        false,
    );
    let Decision::Stop(d) = r.take("tool:a", "a", Some(&json!({"x": 7})), &[]) else {
        panic!("expected a divergence");
    };
    let line = d.to_string();
    assert!(
        line.ends_with(
            " but is 7 live (values cut to 300 bytes of JSON; recorded 5002 bytes, live 1 bytes)"
        ),
        "{line}"
    );
}

const SHOWN: usize = graphmind_protocol::recording::SHOWN_JSON_BYTES;

#[test]
fn two_hundred_thousand_calls_of_one_node_are_answered_in_linear_time() {
    let n = 200_000;
    let steps = (0..n)
        .map(|i| Step {
            index: i + 1,
            node_id: "tool:fetch".into(),
            name: "fetch".into(),
            input: Some(json!({"page": i})),
            status: "ok".into(),
            output: Some(json!(i * 10)),
            chunks: None,
            streaming: false,
            error: None,
        })
        .collect();
    let r = Replayer::new(
        Recording {
            run_id: "run_p".into(),
            steps,
        },
        Until::End,
        OnDiverge::Stop,
        false,
    );
    let start = std::time::Instant::now();
    for i in 0..n {
        let Decision::Serve(s) = r.take("tool:fetch", "fetch", Some(&json!({"page": i})), &[])
        else {
            panic!("call {i} not served");
        };
        assert_eq!(s.output, json!(i * 10));
    }
    let took = start.elapsed();
    // Measured at ~1 s in a debug build; skipping every taken call again took minutes.
    assert!(
        took < std::time::Duration::from_secs(20),
        "answering {n} calls took {took:?}"
    );
    // Out of order still pairs by input.
    let r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 2})), &[]), Decision::Serve(s) if s.step == 3)
    );
    assert!(
        matches!(r.take("tool:a", "a", Some(&json!({"x": 1})), &[]), Decision::Serve(s) if s.step == 1)
    );
}

#[test]
fn the_summary_counts_served_live_unanswered_and_failed_calls_naming_their_steps() {
    let dir = std::env::temp_dir().join(format!("graphmind-summary-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("summary.json");
    let mut r = Replayer::new(rec(), Until::End, OnDiverge::Stop, false);
    r.summary = Some(path.clone());
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("json")
    };
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 1})), &[]),
        Decision::Serve(_)
    ));
    let s = read();
    assert_eq!(
        (s["served"].as_u64(), s["live"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(s["recordedRun"], "run_a");
    assert_eq!(s["recordedSteps"], 3);
    // Recorded as an error no call type here is built from: it runs live, unanswered.
    assert!(matches!(
        r.take("tool:b", "b", Some(&json!({"y": 1})), &[]),
        Decision::Live
    ));
    // Served, then the app failed on the answer.
    assert!(matches!(
        r.take("tool:a", "a", Some(&json!({"x": 2})), &[]),
        Decision::Serve(_)
    ));
    r.finished_with_error(3, "tool:a");
    // A recorded error served back is as recorded: not a failure.
    r.finished_with_error(2, "tool:b");
    let s = read();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(s["served"], 2);
    assert_eq!(s["live"], 1);
    assert_eq!(s["unanswered"], 1);
    assert_eq!(s["diverged"], 0);
    assert_eq!(s["failed"], 1);
    assert_eq!(
        s["problems"],
        json!([
            "step 2 (tool:b) ran live: it recorded an error its error type is not built from (see #[graphmind::tool(replay_errors)])",
            "step 3 (tool:a) was answered from the recording but finished with an error"
        ])
    );
}

#[test]
fn a_provider_minted_field_is_not_a_divergence_but_what_the_program_sent_is() {
    let recorded = Recording {
        run_id: "run_m".into(),
        steps: vec![Step {
            index: 1,
            node_id: "llm:step".into(),
            name: "step".into(),
            input: Some(json!({"history": [{"text": "hi", "origin": {"id": "chatcmpl-69"}}]})),
            status: "ok".into(),
            output: Some(json!({"text": "ok"})),
            chunks: None,
            streaming: false,
            error: None,
        }],
    };
    const MINTED: &[&str] = &["$.history[*].origin"];
    let live = json!({"history": [{"text": "hi", "origin": {"id": "chatcmpl-92"}}]});
    let r = Replayer::new(recorded.clone(), Until::End, OnDiverge::Stop, false);
    assert!(matches!(
        r.take("llm:step", "step", Some(&live), MINTED),
        Decision::Serve(_)
    ));
    // Not named as minted: the same difference is a divergence at the id.
    let r = Replayer::new(recorded.clone(), Until::End, OnDiverge::Stop, false);
    let Decision::Stop(d) = r.take("llm:step", "step", Some(&live), &[]) else {
        panic!("expected a divergence");
    };
    assert_eq!(d.path, "$.history[0].origin.id");
    // What the program sent still diverges with the minted paths named.
    let r = Replayer::new(recorded, Until::End, OnDiverge::Stop, false);
    let changed = json!({"history": [{"text": "hello", "origin": {"id": "chatcmpl-92"}}]});
    let Decision::Stop(d) = r.take("llm:step", "step", Some(&changed), MINTED) else {
        panic!("expected a divergence");
    };
    assert_eq!(d.path, "$.history[0].text");
}
