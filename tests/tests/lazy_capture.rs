//! Lazy captures (`Node::start_step_lazy`, `Node::finish_lazy`): a step recorded this way
//! reaches the wire exactly as one recorded with `start_step_serialized` /
//! `finish_serialized`, attached, and replayed from the ring after running detached; a
//! request too large to keep lazily is recorded the way large values are; redaction hides
//! lazy captures like any other.

use std::sync::Arc;
use std::time::Duration;

use graphmind::model::Grouping;
use graphmind::node::Node;
use graphmind::protocol::Status;
use graphmind_tests::{FakeDebugger, Frame, Handshake};
use serde::Serialize;
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Serialize)]
struct Request {
    model: String,
    temperature: f32,
    messages: Vec<Message>,
}

#[derive(Debug, Clone, Serialize)]
struct Message {
    role: &'static str,
    content: String,
}

fn request(content: &str) -> Request {
    Request {
        model: "gpt-test".into(),
        temperature: 0.1,
        messages: vec![
            Message {
                role: "system",
                content: "You answer \"briefly\".\n".into(),
            },
            Message {
                role: "user",
                content: content.into(),
            },
        ],
    }
}

fn response() -> Value {
    json!({"text": "Sunny ☀", "finishReason": "stop", "toolCalls": [], "n": [1, -2, 2.5]})
}

/// One step of each kind, in that order: serialized, then lazy.
fn both_steps(content: &str) {
    let req = request(content);
    let node = Node::start_step_serialized(&req, Grouping::explicit("a")).expect("enabled");
    node.finish_serialized(Status::Ok, &response(), None, Default::default());
    let node = Node::start_step_lazy(Arc::new(req), Grouping::explicit("b")).expect("enabled");
    node.finish_lazy(Status::Ok, Arc::new(response()), None, Default::default());
}

/// The `node.started` inputs and `node.finished` outputs of `llm:step`, in order.
fn step_payloads(frames: &[Frame]) -> (Vec<Value>, Vec<Value>) {
    let step = |kind: &str, key: &str| -> Vec<Value> {
        frames
            .iter()
            .filter(|f| f.kind() == kind && f.payload()["nodeId"] == "llm:step")
            .map(|f| f.payload()[key].clone())
            .collect()
    };
    (
        step("node.started", "input"),
        step("node.finished", "output"),
    )
}

#[tokio::test]
async fn a_lazy_step_sends_what_a_serialized_one_sends() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("lazy-attached"));
    assert!(gm.ready(2 * SECOND).await);
    gm.run("r", async { both_steps("Weather in Lisbon?") })
        .await
        .expect("ok");
    hub.wait_for_kind("run.finished", 2 * SECOND).await;
    let (inputs, outputs) = step_payloads(&hub.frames());
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0], inputs[1]);
    // The f32 written as itself, as a text capture writes it.
    assert_eq!(inputs[1]["temperature"].to_string(), "0.1");
    assert_eq!(
        inputs[1]["messages"][0]["content"],
        "You answer \"briefly\".\n"
    );
    assert_eq!(outputs, [response(), response()]);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn lazy_steps_recorded_detached_are_replayed_on_attach() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::Session::new(hub.config("lazy-detached"));
    gm.run("r", async { both_steps("Weather in Porto?") })
        .await
        .expect("ok");
    hub.wait_connections(1, 2 * SECOND).await;
    assert!(!gm.is_attached(), "ran detached");
    hub.set_handshake(Handshake::Ack);
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await);
    hub.wait_for_kind("run.finished", 3 * SECOND).await;
    let frames = hub.frames();
    let (inputs, outputs) = step_payloads(&frames);
    assert_eq!(inputs.len(), 2, "both steps replayed");
    assert_eq!(inputs[0], inputs[1]);
    assert_eq!(inputs[1]["messages"][1]["content"], "Weather in Porto?");
    assert_eq!(outputs, [response(), response()]);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_lazy_request_too_large_to_keep_is_recorded_like_a_large_serialized_one() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("lazy-large"));
    assert!(gm.ready(2 * SECOND).await);
    // Beyond the payload budget: shrunk on the way, the same way for both.
    let huge = "é".repeat(400_000);
    gm.run("r", async { both_steps(&huge) }).await.expect("ok");
    hub.wait_for_kind("run.finished", 2 * SECOND).await;
    let (inputs, _) = step_payloads(&hub.frames());
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0], inputs[1]);
    let started: Vec<Frame> = hub
        .frames()
        .into_iter()
        .filter(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "llm:step")
        .collect();
    assert!(
        started
            .iter()
            .all(|f| f.payload()["__graphmindTruncated"] == true),
        "both shrunk to the budget"
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn redaction_hides_lazy_captures() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(
        hub.config("lazy-redacted")
            .hide_inputs(true)
            .hide_outputs(true),
    );
    assert!(gm.ready(2 * SECOND).await);
    gm.run("r", async { both_steps("secret question") })
        .await
        .expect("ok");
    hub.wait_for_kind("run.finished", 2 * SECOND).await;
    let frames = hub.frames();
    let (inputs, outputs) = step_payloads(&frames);
    assert_eq!(inputs, [json!("__REDACTED__"), json!("__REDACTED__")]);
    assert_eq!(outputs, [json!("__REDACTED__"), json!("__REDACTED__")]);
    assert!(
        frames
            .iter()
            .all(|f| !f.payload().to_string().contains("secret question")),
        "the request reaches the wire nowhere"
    );
    hub.assert_valid();
    gm.dispose().await;
}

/// A request that counts how often it is serialized.
struct Counted(&'static std::sync::atomic::AtomicUsize);

impl Serialize for Counted {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        request("counted").serialize(s)
    }
}

#[tokio::test]
async fn a_detached_lazy_step_is_serialized_only_once_a_debugger_reads_it() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static WALKS: AtomicUsize = AtomicUsize::new(0);
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Never);
    let gm = graphmind::Session::new(hub.config("lazy-count"));
    gm.run("r", async {
        let req = Arc::new(Counted(&WALKS));
        let node = Node::start_step_lazy(req, Grouping::explicit("c")).expect("enabled");
        node.finish_lazy(Status::Ok, Arc::new(response()), None, Default::default());
    })
    .await
    .expect("ok");
    hub.wait_connections(1, 2 * SECOND).await;
    assert!(!gm.is_attached());
    // Walked once to count its length; not written.
    assert_eq!(WALKS.load(Ordering::SeqCst), 1);
    hub.set_handshake(Handshake::Ack);
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await);
    hub.wait_for_kind("run.finished", 3 * SECOND).await;
    let (inputs, _) = step_payloads(&hub.frames());
    assert_eq!(inputs[0]["messages"][1]["content"], "counted");
    assert_eq!(WALKS.load(Ordering::SeqCst), 2, "written once, when sent");
    gm.dispose().await;
}
