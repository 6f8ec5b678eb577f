//! `model::Usage` reaches `node.finished.usage` exactly, on every path: a model step's
//! response, a model step's stream, a teed stream and a hand-finished node. The optional
//! counts are GraphMind 0.6's loose fields, each sent only when set.

use std::borrow::Cow;
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use graphmind::model::{DeltaKind, StepChunk, StepResponse, Usage};
use graphmind::node::Node;
use graphmind::protocol::{NodeKind, Status};
use graphmind_tests::FakeDebugger;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

/// OpenAI-style counts with every optional field set.
fn full() -> Usage {
    Usage::inclusive(1200, 80)
        .with_total(1280)
        .with_cache_read(1000)
        .with_cache_write(150)
        .with_reasoning(30)
}

fn full_wire() -> Value {
    json!({
        "inputTokens": 1200,
        "outputTokens": 80,
        "inclusive": true,
        "totalTokens": 1280,
        "cacheReadTokens": 1000,
        "cacheWriteTokens": 150,
        "reasoningTokens": 30,
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Reply {
    text: String,
    full: bool,
}

impl StepResponse for Reply {
    fn usage(&self) -> Option<Usage> {
        Some(if self.full { full() } else { Usage::new(5, 2) })
    }
}

#[graphmind::model_step]
async fn complete(prompt: String, full: bool) -> Reply {
    Reply { text: prompt, full }
}

struct Chunk {
    text: &'static str,
    last: bool,
}

impl StepChunk for Chunk {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        emit(DeltaKind::Text, self.text);
    }
    fn usage(&self) -> Option<Usage> {
        self.last.then(full)
    }
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        self.last.then_some(Cow::Borrowed("stop"))
    }
}

#[graphmind::model_step]
async fn streamed(prompt: String) -> impl Stream<Item = Chunk> + Send {
    let _ = prompt;
    stream::iter([
        Chunk {
            text: "he",
            last: false,
        },
        Chunk {
            text: "y",
            last: true,
        },
    ])
}

/// Runs `agent` in a run named `name` and returns the `usage` of every node.finished with
/// `node_id`, in order.
async fn usages<F: Future>(name: &str, node_id: &str, agent: F) -> Vec<Value> {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("usage-fields"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm.run(name, agent).await.expect("not aborted");
    hub.wait_for_kind("run.finished", 3 * SECOND).await;
    let frames = hub.frames();
    hub.assert_valid();
    gm.dispose().await;
    frames
        .iter()
        .filter(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == node_id)
        .map(|f| f.payload().get("usage").cloned().unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn a_model_step_response_sends_every_set_count_and_no_unset_one() {
    let got = usages("r", "llm:step", async {
        complete("a".into(), true).await;
        complete("b".into(), false).await;
    })
    .await;
    assert_eq!(
        got,
        [full_wire(), json!({"inputTokens": 5, "outputTokens": 2})]
    );
}

#[tokio::test]
async fn a_model_step_stream_sends_every_count() {
    let got = usages("s", "llm:step", async {
        let chunks: Vec<Chunk> = streamed("a".into()).await.collect().await;
        assert_eq!(chunks.len(), 2);
    })
    .await;
    assert_eq!(got, [full_wire()]);
}

#[tokio::test]
async fn a_teed_stream_and_a_hand_finished_node_send_every_count() {
    let got = usages("t", "custom:feed", async {
        let node = Node::start(NodeKind::Custom, "feed", None).expect("enabled");
        let items: Vec<u32> = node
            .tee(stream::iter([1u32]), |obs, _| obs.usage(full()))
            .collect()
            .await;
        assert_eq!(items, [1]);
        let node = Node::start(NodeKind::Custom, "feed", None).expect("enabled");
        node.finish_with(Status::Ok, None, Some(full()), Default::default());
    })
    .await;
    assert_eq!(
        got,
        [full_wire(), full_wire()],
        "inclusive and loose counts kept"
    );
}

#[test]
fn setters_leave_the_other_counts_alone() {
    let u = Usage::new(3, 4).with_reasoning(1);
    assert_eq!((u.input_tokens, u.output_tokens), (3, 4));
    assert!(!u.inclusive);
    assert_eq!(u.reasoning_tokens, Some(1));
    assert_eq!(
        (u.total_tokens, u.cache_read_tokens, u.cache_write_tokens),
        (None, None, None)
    );
}
