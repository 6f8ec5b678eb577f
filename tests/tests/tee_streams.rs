//! Streaming tools and model steps: items pass through unchanged, are counted and previewed
//! as token batches, and node.finished comes at the end — also when the consumer drops the
//! stream half-way.

use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use graphmind_tests::{FakeDebugger, frame};
use serde_json::Value;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n)
}

#[graphmind::model_step]
async fn talk(prompt: String) -> impl Stream<Item = String> + Send {
    let words: Vec<String> = prompt.split(' ').map(|w| format!("{w} ")).collect();
    // Two bursts with a pause longer than the 34 ms batch window between them.
    stream::iter(words.into_iter().enumerate()).then(|(i, w)| async move {
        if i == 15 {
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
        w
    })
}

async fn session(hub: &FakeDebugger) -> graphmind::Session {
    let gm = graphmind::Session::new(hub.config("tee"));
    assert!(gm.ready(2 * SECOND).await);
    gm
}

fn finished_of(hub: &FakeDebugger, node: &str) -> Option<Value> {
    hub.frames_of("node.finished")
        .into_iter()
        .find(|f| f.payload()["nodeId"] == node)
        .map(|f| f.payload().clone())
}

#[tokio::test]
async fn streaming_tool_counts_chunks_and_finishes_at_the_end() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let items: Vec<u32> = gm
        .run("s", async { numbers(5).await.collect::<Vec<_>>().await })
        .await
        .expect("ok");
    assert_eq!(items, [0, 1, 2, 3, 4]);
    hub.wait_for_kind("run.finished", SECOND).await;
    let fin = finished_of(&hub, "tool:numbers").expect("finished");
    assert_eq!(fin["streaming"], true);
    assert_eq!(fin["chunks"], 5);
    assert_eq!(fin["status"], "ok");
    assert!(fin.get("dropped").is_none());
    let tokens: String = hub
        .frames_of("node.token")
        .iter()
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tokens, "01234");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn dropped_stream_still_finishes_the_node() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let first_two: Vec<u32> = gm
        .run("s", async {
            numbers(100).await.take(2).collect::<Vec<_>>().await
        })
        .await
        .expect("ok");
    assert_eq!(first_two, [0, 1]);
    hub.wait_for_kind("run.finished", SECOND).await;
    let fin = finished_of(&hub, "tool:numbers").expect("finished after drop");
    assert_eq!(fin["chunks"], 2);
    assert_eq!(fin["dropped"], true);
    gm.dispose().await;
}

#[tokio::test]
async fn model_stream_tokens_are_batched_with_instance_id_before_finished() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let prompt = (0..30)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let text: String = gm
        .run("m", async {
            talk(prompt.clone())
                .await
                .collect::<Vec<_>>()
                .await
                .concat()
        })
        .await
        .expect("ok");
    assert_eq!(text, format!("{prompt} "));
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let step_started = frames
        .iter()
        .find(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "llm:step")
        .expect("llm:step");
    let instance = step_started.payload()["instanceId"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(instance.ends_with(":s1"), "{instance}");
    let tokens: Vec<_> = frames.iter().filter(|f| f.kind() == "node.token").collect();
    // 30 chunks in two bursts: a batch per burst (a late timer may merge them), never one
    // event per chunk.
    assert!(
        (1..=3).contains(&tokens.len()),
        "{} batches for 30 chunks",
        tokens.len()
    );
    assert!(
        tokens
            .iter()
            .all(|t| t.payload()["instanceId"] == instance.as_str())
    );
    let joined: String = tokens
        .iter()
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(joined, text);
    let fin_pos = frames
        .iter()
        .position(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "llm:step")
        .expect("finished");
    let last_token = frames
        .iter()
        .rposition(|f| f.kind() == "node.token")
        .expect("token");
    assert!(
        last_token < fin_pos,
        "tokens are flushed before node.finished"
    );
    assert_eq!(frames[fin_pos].payload()["chunks"], 30);
    gm.dispose().await;
}

/// A streamed chunk in the shape of an SDK's: text, reasoning, and usage on the last one.
#[derive(Clone)]
struct Chunk {
    text: &'static str,
    thinking: &'static str,
    last: bool,
}

impl graphmind::model::StepChunk for Chunk {
    // `DeltaKind` from `graphmind::model`, beside the trait that needs it.
    fn deltas(&self, emit: &mut dyn FnMut(graphmind::model::DeltaKind, &str)) {
        emit(graphmind::model::DeltaKind::Reasoning, self.thinking);
        emit(graphmind::model::DeltaKind::Text, self.text);
    }
    fn usage(&self) -> Option<graphmind::model::Usage> {
        self.last.then_some(graphmind::model::Usage::new(7, 2))
    }
    fn finish_reason(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.last.then_some(std::borrow::Cow::Borrowed("stop"))
    }
}

#[graphmind::model_step]
async fn sdk_stream(prompt: String) -> impl Stream<Item = Chunk> + Send {
    let _ = prompt;
    stream::iter([
        Chunk {
            text: "Hel",
            thinking: "hmm",
            last: false,
        },
        Chunk {
            text: "lo",
            thinking: "",
            last: false,
        },
        Chunk {
            text: "!",
            thinking: "",
            last: true,
        },
    ])
}

#[tokio::test]
async fn model_stream_reports_usage_and_finish_reason_or_dropped() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let whole: Vec<Chunk> = gm
        .run("m", async { sdk_stream("a".into()).await.collect().await })
        .await
        .expect("ok");
    assert_eq!(whole.len(), 3);
    let half: Vec<Chunk> = gm
        .run("m2", async {
            sdk_stream("b".into()).await.take(1).collect().await
        })
        .await
        .expect("ok");
    assert_eq!(half.len(), 1);
    let seen = hub.wait_count("run.finished", 2, SECOND).await;
    assert_eq!(seen.len(), 2, "run.finished");
    let frames = hub.frames();
    let fins: Vec<&Value> = frames
        .iter()
        .filter(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "llm:step")
        .map(|f| f.payload())
        .collect();
    assert_eq!(fins.len(), 2);
    assert_eq!(
        fins[0]["usage"],
        serde_json::json!({"inputTokens": 7, "outputTokens": 2})
    );
    assert!(
        fins[0].get("finishReason").is_none(),
        "one finish reason, in the output: {:?}",
        fins[0]
    );
    assert_eq!(fins[0]["output"]["rawFinishReason"], "stop");
    assert_eq!(fins[0]["chunks"], 3);
    assert!(fins[0].get("dropped").is_none());
    assert_eq!(fins[1]["chunks"], 1);
    assert_eq!(fins[1]["dropped"], true);
    assert!(fins[1].get("usage").is_none());
    let kinds: Vec<String> = frames
        .iter()
        .filter(|f| f.kind() == "node.token")
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d| d["t"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(kinds.iter().any(|k| k == "reasoning") && kinds.iter().any(|k| k == "text"));
    gm.dispose().await;
}

#[tokio::test]
async fn a_hand_made_node_tees_model_chunks_like_a_model_step() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let got: Vec<Chunk> = gm
        .run("hand", async {
            let node = graphmind::node::Node::start(
                graphmind::protocol::NodeKind::Llm,
                "bridge",
                Some(serde_json::json!({"prompt": "hi"})),
            )
            .expect("enabled");
            let chunks = stream::iter([
                Chunk {
                    text: "Hi",
                    thinking: "",
                    last: false,
                },
                Chunk {
                    text: "!",
                    thinking: "",
                    last: true,
                },
            ]);
            node.tee_chunks(chunks).collect().await
        })
        .await
        .expect("ok");
    assert_eq!(got.len(), 2, "the caller gets every chunk");
    let fin = hub
        .wait_match(&frame("node.finished").with("nodeId", "llm:bridge"), SECOND)
        .await;
    let fin = fin.payload();
    assert_eq!(fin["status"], "ok");
    assert_eq!(fin["chunks"], 2);
    assert!(
        fin.get("finishReason").is_none(),
        "one finish reason, in the output: {fin:?}"
    );
    assert_eq!(fin["output"]["finishReason"], "stop");
    assert_eq!(
        fin["usage"],
        serde_json::json!({"inputTokens": 7, "outputTokens": 2})
    );
    let text: String = hub
        .frames_of("node.token")
        .iter()
        .filter(|f| f.payload()["nodeId"] == "llm:bridge")
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|d| d["t"] == "text")
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(text, "Hi!");
    gm.dispose().await;
}
