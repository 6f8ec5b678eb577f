//! Streaming returns: a streaming tool (gated before only, items previewed as node.token,
//! `streaming`/`chunks` on node.finished), a streaming model step (text deltas batched per
//! 34 ms), and node.finished still sent when the caller drops the stream half-way.

mod macro_support;

use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, events, finished, pause_id, paused, run_finished};
use serde_json::{Value, json};

/// Yields `burst` items at once, waits `gap`, then yields the rest.
fn bursts(n: u32, burst: u32, gap: Duration) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n).then(move |i| async move {
        if i == burst {
            tokio::time::sleep(gap).await;
        }
        i
    })
}

#[graphmind::tool]
async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    bursts(n, 3, Duration::from_millis(200))
}

#[graphmind::model_step]
async fn stream_reply(prompt: String) -> Result<impl Stream<Item = String> + Send, String> {
    let words: Vec<String> = prompt.split_inclusive(' ').map(str::to_owned).collect();
    let gap_at = u32::try_from(words.len() / 2).unwrap_or(0);
    let mut i = 0;
    Ok(stream::iter(words).then(move |w| {
        i += 1;
        async move {
            if i - 1 == gap_at {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            w
        }
    }))
}

fn texts(deltas: &[Value]) -> String {
    deltas
        .iter()
        .map(|d| d["v"].as_str().unwrap_or_default())
        .collect()
}

fn deltas(hub: &FakeDebugger, node: &str) -> Vec<Vec<Value>> {
    hub.frames_of("node.token")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node)
        .map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn streaming_tool_is_gated_before_and_items_are_previewed_and_counted() {
    let hub = FakeDebugger::start().await;
    let gm = attached(
        &hub,
        vec![
            json!({"name": "numbers"}),
            json!({"name": "numbers", "point": "after"}),
        ],
    )
    .await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async { numbers(5).await.collect::<Vec<u32>>().await })
                .await
        }
    });
    let before = paused(&hub, 1).await;
    assert_eq!(before.payload()["point"], "before");
    assert!(hub.resume(before.run_id(), &pause_id(&before), "continue"));
    assert_eq!(
        task.await.expect("joined").expect("not aborted"),
        [0, 1, 2, 3, 4],
        "items unchanged"
    );
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:r",
            "node.started tool:numbers",
            "exec.paused tool:numbers before",
            "exec.resumed continue",
            "node.token tool:numbers",
            "node.token tool:numbers",
            "node.finished tool:numbers ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ],
        "no after gate on a stream; two bursts, two token batches"
    );
    // Consecutive deltas of one kind merge inside a batch: one per 34 ms window.
    let batches: Vec<String> = deltas(&hub, "tool:numbers")
        .iter()
        .map(|b| texts(b))
        .collect();
    assert_eq!(batches, ["012", "34"]);
    let fin = &finished(&hub, "tool:numbers")[0];
    assert_eq!(
        (fin["streaming"].as_bool(), fin["chunks"].as_u64()),
        (Some(true), Some(5))
    );
    assert!(fin.get("dropped").is_none_or(|d| d == false));
    gm.dispose().await;
}

#[tokio::test]
async fn streaming_model_step_batches_text_deltas() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let text = "the parcel was lost so I refunded it";
    let out = gm
        .run("r", async {
            stream_reply(text.to_owned())
                .await
                .expect("stream")
                .collect::<String>()
                .await
        })
        .await
        .expect("not aborted");
    assert_eq!(out, text, "the caller gets every item unchanged");
    run_finished(&hub).await;
    let seq = events(&hub);
    assert_eq!(
        seq,
        [
            "run.started",
            "node.started agent:r",
            // The step names no `tools = [...]`: its hint draws no tool (the binary's
            // `numbers` is not its roster).
            "graph.hint agent:r,llm:step",
            "node.started llm:step",
            "node.token llm:step",
            "node.token llm:step",
            "node.finished llm:step ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ]
    );
    let batches = deltas(&hub, "llm:step");
    assert!(batches.iter().flatten().all(|d| d["t"] == "text"));
    let texts: Vec<String> = batches.iter().map(|b| texts(b)).collect();
    assert_eq!(
        texts,
        ["the parcel was lost ", "so I refunded it"],
        "one batch per burst"
    );
    let token = &hub.frames_of("node.token")[0];
    let started = &hub.frames_of("node.started")[1];
    assert_eq!(
        token.payload()["instanceId"],
        started.payload()["instanceId"]
    );
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(
        (fin["streaming"].as_bool(), fin["chunks"].as_u64()),
        (Some(true), Some(8))
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_dropped_half_way_still_finishes_its_node() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let got = gm
        .run("r", async {
            let mut s = Box::pin(numbers(5).await);
            let mut got = Vec::new();
            while let Some(i) = s.next().await {
                got.push(i);
                if got.len() == 2 {
                    break;
                }
            }
            got
        })
        .await
        .expect("not aborted");
    assert_eq!(got, [0, 1]);
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:r",
            "node.started tool:numbers",
            "node.token tool:numbers",
            "node.finished tool:numbers ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ]
    );
    let fin = &finished(&hub, "tool:numbers")[0];
    assert_eq!(
        (fin["chunks"].as_u64(), fin["dropped"].as_bool()),
        (Some(2), Some(true))
    );
    gm.dispose().await;
}
