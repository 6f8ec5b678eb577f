//! `stream = true`: a stream returned under an alias (as SDKs name theirs, e.g.
//! `ChatCompletionResponseStream`) is teed like `impl Stream` — tokens reach the debugger and
//! the caller gets every item unchanged, in the alias's own type.

mod macro_support;

use std::pin::Pin;

use futures_util::{Stream, StreamExt, stream};
use macro_support::{attached, events, finished, run_finished};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
struct ChatError(String);

impl std::fmt::Display for ChatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type ChatStream = Pin<Box<dyn Stream<Item = Result<String, ChatError>> + Send>>;
type Numbers = Pin<Box<dyn Stream<Item = u32> + Send>>;

#[graphmind::model_step(stream = true)]
async fn chat(prompt: String) -> Result<ChatStream, ChatError> {
    let words: Vec<Result<String, ChatError>> = prompt
        .split_inclusive(' ')
        .map(|w| Ok(w.to_owned()))
        .collect();
    Ok(Box::pin(stream::iter(words)))
}

#[graphmind::tool(stream = true)]
async fn numbers(n: u32) -> Numbers {
    Box::pin(stream::iter(0..n))
}

fn token_text(hub: &graphmind_tests::FakeDebugger, node: &str) -> String {
    hub.frames_of("node.token")
        .iter()
        .filter(|f| f.payload()["nodeId"] == node)
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|d: Value| d["v"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn an_aliased_model_step_stream_is_teed_and_items_reach_the_caller_unchanged() {
    let hub = graphmind_tests::FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let text = "the parcel was lost so I refunded it";
    let items = gm
        .run("r", async {
            let s: ChatStream = chat(text.to_owned()).await.expect("stream");
            s.collect::<Vec<_>>().await
        })
        .await
        .expect("not aborted");
    let want: Vec<Result<String, ChatError>> = text
        .split_inclusive(' ')
        .map(|w| Ok(w.to_owned()))
        .collect();
    assert_eq!(items, want, "every item, unchanged and in order");
    run_finished(&hub).await;
    assert!(
        events(&hub).contains(&"node.token llm:step".to_owned()),
        "tokens sent: {:?}",
        events(&hub)
    );
    assert_eq!(token_text(&hub, "llm:step"), text);
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(
        (fin["streaming"].as_bool(), fin["chunks"].as_u64()),
        (Some(true), Some(8))
    );
    gm.dispose().await;
}

#[tokio::test]
async fn an_aliased_tool_stream_is_teed_and_counted() {
    let hub = graphmind_tests::FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let got = gm
        .run("r", async { numbers(4).await.collect::<Vec<u32>>().await })
        .await
        .expect("not aborted");
    assert_eq!(got, [0, 1, 2, 3]);
    run_finished(&hub).await;
    assert_eq!(token_text(&hub, "tool:numbers"), "0123");
    let fin = &finished(&hub, "tool:numbers")[0];
    assert_eq!(
        (fin["streaming"].as_bool(), fin["chunks"].as_u64()),
        (Some(true), Some(4))
    );
    gm.dispose().await;
}
