//! The `hide_*` switches and `GRAPHMIND_HIDE_*`: hidden inputs, outputs and deltas never
//! reach the debugger — not live, not held at a gate, not in the replay of events recorded
//! while detached, not as a loop hold's input fingerprint — and every redacted payload says
//! what was hidden.

use std::time::Duration;

use graphmind::node::Node;
use graphmind::protocol::{DeltaKind, NodeKind, Status};
use graphmind_tests::{FakeDebugger, Frame, Handshake, frame};
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);
const HIDDEN: &str = "__REDACTED__";

#[graphmind::tool]
async fn lookup_card(holder: String) -> String {
    format!("4111-{}", holder.len())
}

fn of<'a>(frames: &'a [Frame], kind: &str, node_id: &str) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|f| f.kind() == kind && f.payload()["nodeId"] == node_id)
        .collect()
}

#[tokio::test]
async fn hidden_tool_arguments_and_outputs_never_reach_the_debugger() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "lookup_card", "point": "after"})]);
    // Tool arguments hidden by code, every output by the environment.
    let gm = graphmind::init(
        hub.config("redaction")
            .env_vars([("GRAPHMIND_HIDE_OUTPUTS", "true")])
            .hide_tool_args(true)
            .hide_outputs(false),
    );
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn(async {
        graphmind::run("pay", async {
            let card = lookup_card("Ada Lovelace".into()).await;
            let mut node = Node::start(NodeKind::Llm, "writer", Some(json!({"prompt": "say hi"})))
                .expect("enabled");
            node.token(DeltaKind::Text, "héllo");
            node.finish(Status::Ok, Some(json!({"text": "héllo"})));
            card
        })
        .await
    });
    let paused = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(
        paused.payload()["output"],
        HIDDEN,
        "the held output is hidden"
    );
    assert_eq!(
        paused.payload()["redaction"],
        json!({"count": 1, "keys": ["output"]})
    );
    let id = paused.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.resume(paused.run_id(), &id, "continue"));
    // The app itself still gets the real value.
    assert_eq!(task.await.expect("joined").expect("ok"), "4111-12");

    hub.wait_match(
        &frame("node.finished").with("nodeId", "llm:writer"),
        2 * SECOND,
    )
    .await;

    let frames = hub.frames();
    let started = of(&frames, "node.started", "tool:lookup_card");
    assert_eq!(started[0].payload()["input"], HIDDEN);
    assert_eq!(
        started[0].payload()["redaction"],
        json!({"count": 1, "keys": ["input"]})
    );
    let finished = of(&frames, "node.finished", "tool:lookup_card");
    assert_eq!(finished[0].payload()["output"], HIDDEN);
    // Inputs of other kinds stay (only tool arguments are hidden); outputs and deltas go.
    let writer = of(&frames, "node.started", "llm:writer");
    assert_eq!(writer[0].payload()["input"], json!({"prompt": "say hi"}));
    assert!(writer[0].payload().get("redaction").is_none());
    let tokens = of(&frames, "node.token", "llm:writer");
    assert_eq!(
        tokens[0].payload()["deltas"],
        json!([{"t": "text", "v": "", "chars": 5}])
    );
    assert_eq!(
        of(&frames, "node.finished", "llm:writer")[0].payload()["output"],
        HIDDEN
    );
    let all = serde_json::to_string(&frames.iter().map(Frame::payload).collect::<Vec<_>>())
        .expect("json");
    assert!(!all.contains("Ada") && !all.contains("4111") && !all.contains("llo\""));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn events_recorded_while_detached_are_redacted_in_the_replay() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::Session::new(hub.config("redaction-replay").hide_inputs(true));
    let out = gm
        .run("offline", async {
            // The first call starts the transport; the hub never acks, so both run detached.
            lookup_card("Grace Hopper".into()).await;
            lookup_card("Ada Lovelace".into()).await
        })
        .await
        .expect("ok");
    assert_eq!(out, "4111-12");
    assert!(!gm.is_attached());
    hub.set_handshake(Handshake::Ack);
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await);
    let frames = hub
        .wait_matches(
            &frame("node.finished").with("nodeId", "tool:lookup_card"),
            2,
            2 * SECOND,
        )
        .await;
    let started = of(&frames, "node.started", "tool:lookup_card");
    assert_eq!(started.len(), 2);
    for s in &started {
        assert_eq!(s.payload()["input"], HIDDEN);
        assert_eq!(s.payload()["redaction"]["keys"], json!(["input"]));
    }
    // Outputs were not hidden.
    let outputs: Vec<&Value> = of(&frames, "node.finished", "tool:lookup_card")
        .iter()
        .map(|f| &f.payload()["output"])
        .collect();
    assert_eq!(outputs, [&json!("4111-12"), &json!("4111-12")]);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_loop_hold_does_not_give_away_hidden_arguments_by_their_fingerprint() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("redaction-loop").hide_tool_args(true));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("retrying", async {
                let mut last = String::new();
                for _ in 0..3 {
                    last = lookup_card("Ada Lovelace".into()).await;
                }
                last
            })
            .await
        }
    });
    let paused = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(paused.payload()["reason"], "loop");
    let summary = &paused.payload()["loop"];
    assert_eq!(summary["repeats"], 3, "the hold still says how often");
    assert_eq!(summary["fingerprint"], HIDDEN);
    let id = paused.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.resume(paused.run_id(), &id, "continue"));
    assert_eq!(task.await.expect("joined").expect("ok"), "4111-12");
    hub.assert_valid();
    gm.dispose().await;
}
