//! Feed frames for the tests: typed, as the hub sends them.
#![allow(dead_code)]

use graphmind_protocol::feed::{
    DebugState, FeedFrame, PauseInfo, PauseState, RunStatus, RunSummary,
};
use graphmind_protocol::{Mode, Parsed, PausePoint, PauseReason, parse_value};
use graphmind_tui::state::State;
use serde_json::{Value, json};

pub const NOW: u64 = 1_700_000_060_000;

pub fn run(id: &str, app: &str, status: RunStatus, started: u64) -> RunSummary {
    serde_json::from_value(json!({
        "runId": id, "app": app, "name": null, "status": status.as_str(),
        "live": status == RunStatus::Running, "startedAt": started,
        "endedAt": (status != RunStatus::Running).then_some(started + 1234),
        "durationMs": (status != RunStatus::Running).then_some(1234),
        "eventCount": 42, "sdk": null
    }))
    .unwrap()
}

pub fn pause(id: &str, run: &str, node: &str, point: PausePoint, since: u64) -> PauseInfo {
    let (kind, name) = node.split_once(':').unwrap_or(("tool", node));
    PauseInfo {
        pause_id: id.into(),
        run_id: run.into(),
        node_id: node.into(),
        point,
        reason: match point {
            PausePoint::Error => PauseReason::Error,
            _ => PauseReason::Breakpoint,
        },
        instance_id: Some(format!("{id}-x")),
        since,
        kind: Some(kind.into()),
        name: Some(name.into()),
        input: Some(json!({"order_id": "A-1001"})),
        output: (point == PausePoint::After).then(|| json!({"status": "shipped"})),
        error: (point == PausePoint::Error)
            .then(|| json!({"name": "LookupError", "message": "order service timed out"})),
        loop_info: None,
        actions: Some(json!(["continue", "retry", "inject", "abort", "reject"])),
        state: PauseState::Open,
        editable: true,
    }
}

pub fn hello(runs: Vec<RunSummary>, pauses: Vec<PauseInfo>, mode: Mode) -> FeedFrame {
    FeedFrame::Hello {
        version: "0.1.0".into(),
        debug: DebugState {
            breakpoints: vec![],
            mode,
        },
        runs,
        pauses,
        remembered: vec![],
    }
}

pub fn state_with(runs: Vec<RunSummary>, pauses: Vec<PauseInfo>) -> State {
    let mut s = State::new(4747);
    s.now_ms = NOW;
    s.apply(hello(runs, pauses, Mode::Run));
    s
}

pub fn env(seq: u64, ts: u64, run: &str, ty: &str, payload: Value) -> graphmind_protocol::Envelope {
    match parse_value(
        json!({"gm": 1, "seq": seq, "ts": ts, "runId": run, "type": ty, "payload": payload}),
    ) {
        Parsed::Ok(e) => e,
        other => panic!("bad test event {ty}: {other:?}"),
    }
}

/// A support-agent run: agent → llm → two parallel tools (one failed and held), a second llm
/// step streaming.
pub fn support_events(run: &str) -> Vec<graphmind_protocol::Envelope> {
    let t = NOW - 50_000;
    vec![
        env(
            1,
            t,
            run,
            "run.started",
            json!({"app": "support-agent", "sdk": {"name": "graphmind", "version": "0.1.0"}}),
        ),
        env(
            2,
            t,
            run,
            "node.started",
            json!({"nodeId": "agent:support", "kind": "agent", "name": "support", "instanceId": "i1", "input": {"question": "where is order A-1001?"}}),
        ),
        env(
            3,
            t + 10,
            run,
            "node.started",
            json!({"nodeId": "llm:plan", "kind": "llm", "name": "plan", "instanceId": "i2", "parentId": "agent:support", "input": {"messages": [{"role": "user", "content": "where is order A-1001?"}]}}),
        ),
        env(
            4,
            t + 900,
            run,
            "node.finished",
            json!({"nodeId": "llm:plan", "instanceId": "i2", "durationMs": 890.0, "status": "ok", "output": {"text": "look it up"}, "usage": {"inputTokens": 120, "outputTokens": 14}}),
        ),
        env(
            5,
            t + 910,
            run,
            "node.started",
            json!({"nodeId": "tool:lookup_order", "kind": "tool", "name": "lookup_order", "instanceId": "i3", "parentId": "agent:support", "input": {"order_id": "A-1001"}}),
        ),
        env(
            6,
            t + 911,
            run,
            "node.started",
            json!({"nodeId": "tool:customer", "kind": "tool", "name": "customer", "instanceId": "i4", "parentId": "agent:support", "input": {"id": 7}}),
        ),
        env(
            7,
            t + 960,
            run,
            "node.finished",
            json!({"nodeId": "tool:customer", "instanceId": "i4", "durationMs": 49.0, "status": "ok", "output": {"name": "Ada"}}),
        ),
        env(
            8,
            t + 1200,
            run,
            "node.error",
            json!({"nodeId": "tool:lookup_order", "instanceId": "i3", "error": {"name": "LookupError", "message": "order service timed out"}}),
        ),
        env(
            9,
            t + 1300,
            run,
            "node.started",
            json!({"nodeId": "tool:lookup_order", "kind": "tool", "name": "lookup_order", "instanceId": "i5", "parentId": "agent:support", "input": {"order_id": "A-1001"}}),
        ),
        env(
            10,
            t + 1400,
            run,
            "node.finished",
            json!({"nodeId": "tool:lookup_order", "instanceId": "i5", "durationMs": 100.0, "status": "ok", "output": {"status": "shipped", "eta": "Tue"}, "heldMs": 2500.0}),
        ),
        env(
            11,
            t + 1500,
            run,
            "node.started",
            json!({"nodeId": "llm:answer", "kind": "llm", "name": "answer", "instanceId": "i6", "parentId": "agent:support"}),
        ),
        env(
            12,
            t + 1600,
            run,
            "node.token",
            json!({"nodeId": "llm:answer", "deltas": [{"t": "reasoning", "v": "The order shipped; "}, {"t": "text", "v": "Your order A-1001 "}]}),
        ),
        env(
            13,
            t + 1700,
            run,
            "node.token",
            json!({"nodeId": "llm:answer", "deltas": [{"t": "text", "v": "shipped and arrives Tuesday."}, {"t": "tool-args", "v": "{\"notify\":"}]}),
        ),
    ]
}
