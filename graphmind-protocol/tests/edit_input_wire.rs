//! The wire shape of editing and rejecting a held call: GraphMind 0.6's `edit-input`
//! fields and graphmind's `reject` action parse into typed fields and round-trip unchanged.

use graphmind_protocol::{Message, Parsed, ResumeAction, parse};

fn round_trip(frame: &str) -> Message {
    let Parsed::Ok(env) = parse(frame) else {
        panic!("not ok: {frame}")
    };
    assert_eq!(env.to_json(), frame, "a round trip keeps every field");
    env.message
}

#[test]
fn exec_resumed_carries_edited_after_and_request_id_typed() {
    let frame = r#"{"gm":1,"seq":4,"ts":1,"runId":"run_1","type":"exec.resumed","payload":{"pauseId":"p1","action":"continue","edited":{"after":{"q":"b"}},"requestId":"req-1","principal":"viewer"}}"#;
    let Message::ExecResumed(r) = round_trip(frame) else {
        panic!("not exec.resumed")
    };
    assert_eq!(r.request_id.as_deref(), Some("req-1"));
    assert_eq!(
        r.edited.and_then(|e| e.after),
        Some(serde_json::json!({"q": "b"}))
    );
    assert_eq!(r.extra["principal"], "viewer", "hub stamps stay loose");
}

#[test]
fn exec_resume_reject_with_a_reason_parses() {
    let frame = r#"{"gm":1,"seq":5,"ts":1,"runId":"run_1","type":"exec.resume","payload":{"pauseId":"p1","action":"reject","requestId":"r","reason":"wrong account"}}"#;
    let Message::ExecResume(r) = round_trip(frame) else {
        panic!("not exec.resume")
    };
    assert_eq!(r.action, ResumeAction::Reject);
    assert_eq!(r.reason.as_deref(), Some("wrong account"));
}

#[test]
fn exec_paused_editable_is_sent_only_when_true() {
    let frame = r#"{"gm":1,"seq":6,"ts":1,"runId":"run_1","type":"exec.paused","payload":{"pauseId":"p1","nodeId":"tool:t","point":"before","editable":true}}"#;
    let Message::ExecPaused(mut p) = round_trip(frame) else {
        panic!("not exec.paused")
    };
    assert!(p.editable);
    p.editable = false;
    let v = serde_json::to_value(&p).expect("serialize");
    assert!(v.get("editable").is_none(), "absent unless true: {v}");
}

#[test]
fn exec_refused_echoes_the_request_id_typed() {
    let frame = r#"{"gm":1,"seq":7,"ts":1,"runId":"run_1","type":"exec.refused","payload":{"pauseId":"p1","code":"shape","message":"no argument named `x`","requestId":"req-9"}}"#;
    let Message::ExecRefused(r) = round_trip(frame) else {
        panic!("not exec.refused")
    };
    assert_eq!(r.request_id.as_deref(), Some("req-9"));
}
