//! Detached (graphmind enabled, no debugger): every wrapped call returns exactly what the
//! bare client returns, and its step still reaches the replay ring.

mod support;

use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequest;
use async_openai::types::responses::CreateResponse;
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use graphmind_tests::adapter::{assert_same_steps, attach_late, detached};
use serde_json::json;
use support::mock::Mock;
use support::{attached, sdk};

fn request(model: &str, stream: bool) -> CreateChatCompletionRequest {
    sdk(json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}))
}

#[tokio::test]
async fn detached_the_wrapper_returns_what_the_bare_client_returns() {
    let mock = Mock::start().await;
    // Nothing listens on port 9 (discard).
    let gm = graphmind::Session::new(
        graphmind::Config::new("detached")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let bare = mock.client();
    let client = mock.client().graphmind();
    let (wrapped, plain) = gm
        .run("a", async {
            let w = client
                .chat()
                .create(request("tools", false))
                .await
                .expect("ok");
            let p = bare
                .chat()
                .create(request("tools", false))
                .await
                .expect("ok");
            let mut ws = Vec::new();
            let mut s = client
                .chat()
                .create_stream(request("tools", true))
                .await
                .expect("ok");
            while let Some(c) = s.next().await {
                ws.push(serde_json::to_value(c.expect("chunk")).expect("json"));
            }
            let mut ps = Vec::new();
            let mut s = bare
                .chat()
                .create_stream(request("tools", true))
                .await
                .expect("ok");
            while let Some(c) = s.next().await {
                ps.push(serde_json::to_value(c.expect("chunk")).expect("json"));
            }
            (
                (serde_json::to_value(w).expect("json"), ws),
                (serde_json::to_value(p).expect("json"), ps),
            )
        })
        .await
        .expect("not aborted");
    assert_eq!(wrapped, plain);
    assert!(!gm.is_attached());
    assert!(gm.stats().buffered > 0, "the steps reached the replay ring");
    gm.dispose().await;
}

/// One chat request and one Responses request, non-streaming, inside run `a`.
async fn two_requests(gm: &graphmind::Session, mock: &Mock) {
    let client = mock.client().graphmind();
    gm.run("a", async {
        client
            .chat()
            .create(request("tools", false))
            .await
            .expect("chat ok");
        let r: CreateResponse = sdk(json!({"model": "web-search", "input": "hi"}));
        client.responses().create(r).await.expect("responses ok");
    })
    .await
    .expect("not aborted");
}

#[tokio::test]
async fn a_detached_request_sent_before_its_step_is_recorded_leaves_the_frames_of_an_attached_one()
{
    let mock = Mock::start().await;

    // Detached: the hub never acks, so the requests go out before their steps are recorded
    // (`Node::detached_now`); the ring's replay on attach sends the steps.
    let (late, gm) = detached("openai-detached").await;
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    two_requests(&gm, &mock).await;
    assert!(!gm.is_attached(), "both requests ran detached");
    attach_late(&late, &gm).await;

    // Attached, no breakpoint: the usual order (step recorded, gate, request).
    let hub = FakeDebugger::start().await;
    let on = attached(&hub, vec![]).await;
    two_requests(&on, &mock).await;
    hub.wait_count("run.finished", 1, Duration::from_secs(3))
        .await;

    assert_eq!(
        assert_same_steps(&late, &hub),
        [
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "node.finished llm:step ok",
            "node.started llm:step",
            "node.finished llm:step ok",
            "run.finished ok"
        ]
    );
    // Stamped at the call's start, finished after it.
    let of_step = |kind: &str| -> Vec<graphmind_tests::Frame> {
        late.frames_of(kind)
            .into_iter()
            .filter(|f| f.payload()["nodeId"] == "llm:step")
            .collect()
    };
    let (starts, ends) = (of_step("node.started"), of_step("node.finished"));
    assert_eq!((starts.len(), ends.len()), (2, 2));
    for (s, f) in starts.iter().zip(&ends) {
        let (ts, end) = (s.json["ts"].as_u64(), f.json["ts"].as_u64());
        // The runtime's clock maps to wall time once, at its start: allow it a second.
        assert!(ts.is_some_and(|t| t + 1000 >= since), "{}", s.text);
        assert!(ts <= end, "{} / {}", s.text, f.text);
        assert!(s.seq() < f.seq(), "{} / {}", s.text, f.text);
    }
    gm.dispose().await;
    on.dispose().await;
}
