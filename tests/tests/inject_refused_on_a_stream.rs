//! Inject at the before gate of a streaming model step is refused with the reason: the step
//! returns a stream, which one JSON value cannot stand in for; the gate stays held and a
//! continue then runs the step.

mod macro_support;

use futures_util::{Stream, StreamExt, stream};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, pause_id, paused, wait_count};
use serde_json::json;

#[graphmind::model_step]
async fn stream_reply(prompt: String) -> impl Stream<Item = String> + Send {
    stream::iter(
        prompt
            .split_inclusive(' ')
            .map(str::to_owned)
            .collect::<Vec<_>>(),
    )
}

#[tokio::test]
async fn inject_at_a_streaming_step_says_why_it_is_refused() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                stream_reply("hello there".into())
                    .await
                    .collect::<Vec<_>>()
                    .await
            })
            .await
        }
    });
    let held = paused(&hub, 1).await;
    let id = pause_id(&held);
    assert!(hub.inject(held.run_id(), &id, json!("canned")));
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    let message = refused[0].payload()["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("before gate of llm:step") && message.contains("returns a stream"),
        "says why: {message}"
    );
    assert!(hub.resume(held.run_id(), &id, "continue"));
    let words = task.await.expect("joined").expect("not aborted");
    assert_eq!(words, ["hello ", "there"]);
    gm.dispose().await;
}
