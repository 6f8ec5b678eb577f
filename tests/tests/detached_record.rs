//! What calls that run while the session is detached leave in the replay ring: the detached
//! fast path records every shape of call exactly as a gated call would (inputs of every
//! kind, outputs small and large, `Err` results with their `node.error`, tool-call ids,
//! cancelled calls, the implicit run and a run scope's parent), and the replay on attach
//! sends it all, schema-valid, in seq order.

use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame, Handshake, any_frame, frame};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
enum Speed {
    Slow,
    Fast,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Opts {
    limit: u8,
    tags: Vec<String>,
}

#[graphmind::tool]
async fn shapes(
    text: String,
    ratio: f32,
    delta: i64,
    flag: Option<bool>,
    speed: Speed,
    opts: Opts,
) -> (f64, Speed) {
    let sum = f64::from(ratio) + delta as f64 + f64::from(opts.limit) + text.len() as f64;
    (
        sum,
        if flag == Some(true) {
            speed
        } else {
            Speed::Fast
        },
    )
}

#[graphmind::tool]
async fn big_output(n: usize) -> String {
    "x".repeat(n)
}

#[graphmind::tool]
async fn failing(code: u16) -> Result<u16, std::io::Error> {
    Err(std::io::Error::other(format!("code {code}")))
}

#[graphmind::tool(call_id = id)]
async fn with_call_id(id: String, q: &str) -> usize {
    q.len() + id.len()
}

#[graphmind::tool]
async fn never_ends(n: u8) -> u8 {
    std::future::pending::<()>().await;
    n
}

fn node_frames<'a>(frames: &'a [Frame], node_id: &str) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|f| f.payload()["nodeId"] == node_id)
        .collect()
}

fn kinds(frames: &[&Frame]) -> Vec<String> {
    frames.iter().map(|f| f.kind().to_owned()).collect()
}

#[tokio::test]
async fn detached_calls_of_every_shape_are_recorded_and_replayed_like_gated_ones() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::init(hub.config("detached-record"));

    // The first call starts the transport (the hub never acks): it and every later call run
    // while the session is detached.
    assert_eq!(big_output(3).await, "xxx");
    hub.wait_connections(1, 2 * SECOND).await;
    assert!(!gm.is_attached());

    let opts = Opts {
        limit: 3,
        tags: vec!["a".into(), "é\"\n".into()],
    };
    let out = shapes(
        "q \"quoted\"".into(),
        0.1,
        -2,
        Some(true),
        Speed::Slow,
        opts.clone(),
    )
    .await;
    assert_eq!(out.1, Speed::Slow);
    assert_eq!(big_output(5_000).await.len(), 5_000);
    assert_eq!(failing(7).await.expect_err("fails").to_string(), "code 7");
    assert_eq!(with_call_id("call_model_1".into(), "abc").await, 15);
    assert!(
        tokio::time::timeout(Duration::from_millis(20), never_ends(1))
            .await
            .is_err()
    );
    let in_run = gm.run("scoped", async { big_output(2).await }).await;
    assert_eq!(in_run.expect("ok"), "xx");
    assert!(!gm.is_attached(), "all of it ran detached");
    let recorded = gm.stats().last_seq.expect("events recorded");

    hub.set_handshake(Handshake::Ack);
    assert!(
        graphmind_tests::attach(&gm, 2 * SECOND).await,
        "attaches once the hub acks"
    );
    let frames = hub
        .wait_matches(&any_frame().seq(recorded), 1, 3 * SECOND)
        .await;
    let seqs: Vec<u64> = frames
        .iter()
        .filter(|f| f.kind() != "hello")
        .map(Frame::seq)
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq order: {seqs:?}");

    // Calls outside a run belong to the session's implicit run, announced first.
    let implicit = frames
        .iter()
        .find(|f| f.kind() == "run.started")
        .expect("implicit run.started");
    assert_eq!(implicit.payload()["meta"]["implicit"], true);
    let implicit_run = implicit.run_id().to_owned();

    let s = node_frames(&frames, "tool:shapes");
    assert_eq!(kinds(&s), ["node.started", "node.finished"]);
    assert!(s.iter().all(|f| f.run_id() == implicit_run));
    assert!(s[0].payload().get("parentId").is_none());
    assert_eq!(
        s[0].payload()["input"],
        json!({
            "text": "q \"quoted\"",
            "ratio": serde_json::to_value(0.1f32).expect("json"),
            "delta": -2,
            "flag": true,
            "speed": "Slow",
            "opts": {"limit": 3, "tags": ["a", "é\"\n"]},
        })
    );
    assert_eq!(
        s[1].payload()["output"],
        serde_json::to_value(&out).expect("json")
    );
    assert_eq!(s[1].payload()["status"], "ok");
    assert_eq!(s[1].payload()["heldMs"], 0.0);
    assert_eq!(s[0].payload()["instanceId"], s[1].payload()["instanceId"]);
    assert!(
        s[0].payload()["instanceId"]
            .as_str()
            .is_some_and(|id| id.starts_with("call_"))
    );

    let big = node_frames(&frames, "tool:big_output");
    let big_outputs: Vec<usize> = big
        .iter()
        .filter(|f| f.kind() == "node.finished")
        .map(|f| f.payload()["output"].as_str().map_or(0, str::len))
        .collect();
    assert_eq!(big_outputs, [3, 5_000, 2], "large outputs are kept whole");

    let f = node_frames(&frames, "tool:failing");
    assert_eq!(kinds(&f), ["node.started", "node.error", "node.finished"]);
    assert_eq!(f[1].payload()["error"]["message"], "code 7");
    assert_eq!(f[1].payload()["error"]["name"], "Error");
    assert_eq!(f[2].payload()["status"], "error");
    assert!(f[2].payload().get("output").is_none());
    let ids: Vec<&Value> = f.iter().map(|x| &x.payload()["instanceId"]).collect();
    assert!(ids.iter().all(|id| *id == ids[0]));

    let c = node_frames(&frames, "tool:with_call_id");
    assert_eq!(c[0].payload()["instanceId"], "call_model_1");
    assert_eq!(c[1].payload()["instanceId"], "call_model_1");
    assert_eq!(c[1].payload()["output"], 15);

    let n = node_frames(&frames, "tool:never_ends");
    assert_eq!(kinds(&n), ["node.started", "node.finished"]);
    assert_eq!(n[1].payload()["status"], "aborted");
    assert_eq!(n[1].payload()["cancelled"], true);

    // In a run scope: the run's id and its agent node as parent.
    let scoped = frames
        .iter()
        .find(|f| f.kind() == "run.started" && f.payload()["meta"]["name"] == "scoped")
        .expect("scoped run.started");
    let last_big = big.last().expect("big_output in the run");
    assert_eq!(last_big.run_id(), scoped.run_id());
    let started = big
        .iter()
        .rfind(|f| f.kind() == "node.started")
        .expect("started");
    assert_eq!(started.payload()["parentId"], "agent:scoped");
    assert!(frames.iter().all(|f| f.kind() != "exec.paused"));

    gm.dispose().await;
    let finished = hub
        .wait_matches(&frame("run.finished").run(&implicit_run), 1, 2 * SECOND)
        .await;
    assert_eq!(
        finished
            .iter()
            .filter(|f| f.kind() == "run.finished" && f.run_id() == implicit_run)
            .count(),
        1
    );
    hub.assert_valid();
}
