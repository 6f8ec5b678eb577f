//! The `error` gate of a stream that breaks after its first event (the mock's `…-broken`
//! models send the first piece of the answer, then cut the connection): continue passes
//! genai's error on, inject streams the injected events as the rest of the reply, abort ends
//! the run (the stream's last item is then `genai::Error::Internal`, as before the first
//! event), and retry is refused (the caller has read part of the reply already), for both
//! dialects, as exact event sequences.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use genai::chat::{ChatMessage, ChatRequest, ChatStreamEvent};
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::json;
use support::mock::Mock;
use support::{attached, events, finished, pause_id, paused, runs_finished, wait_count};

fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")])
}

/// What a streamed call read: its events as short lines.
type Outcome = Result<Vec<String>, graphmind::Aborted>;

fn spawn_stream(
    gm: &graphmind::Session,
    client: graphmind_genai::Client,
    model: &'static str,
) -> tokio::task::JoinHandle<Outcome> {
    let gm = gm.clone();
    tokio::spawn(async move {
        gm.run("a", async {
            let mut s = client
                .exec_chat_stream(model, request(), None)
                .await
                .expect("opened")
                .stream;
            let mut out = Vec::new();
            while let Some(item) = s.next().await {
                out.push(match item {
                    Ok(ChatStreamEvent::Start) => "start".to_owned(),
                    Ok(ChatStreamEvent::Chunk(c)) => format!("chunk {}", c.content),
                    Ok(ChatStreamEvent::End(_)) => "end".to_owned(),
                    Ok(other) => format!("{other:?}"),
                    Err(_) => "err".to_owned(),
                });
            }
            out
        })
        .await
    })
}

async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
}

const HEAD: [&str; 6] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "node.error llm:step WebStream",
    "exec.paused llm:step error",
];

fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}

const MODELS: [&str; 2] = ["gpt-broken", "claude-broken"];

#[tokio::test]
async fn a_stream_broken_midway_continued_passes_genais_error_on() {
    for model in MODELS {
        let mock = Mock::start().await;
        let hub = FakeDebugger::start().await;
        let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
        let task = spawn_stream(&gm, mock.client().graphmind(), model);
        let p = paused(&hub, 1).await;
        assert_eq!(
            p.payload()["actions"],
            json!(["continue", "inject", "abort"]),
            "{model}: no retry once the caller read part of the reply"
        );
        assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
        let got = join(task).await.expect("not aborted");
        assert_eq!(
            got[..3],
            ["start", "chunk Sunny, ", "err"],
            "{model}: {got:?}"
        );
        runs_finished(&hub, 1).await;
        assert_eq!(
            events(&hub),
            expect(&[
                "exec.resumed continue",
                "node.finished llm:step error",
                "node.finished agent:a ok",
                "run.finished ok",
            ]),
            "{model}"
        );
        let fin = &finished(&hub, "llm:step")[0];
        assert_eq!(fin["output"]["text"], "Sunny, ", "{model}: what was read");
        assert_eq!(mock.count(), 1, "{model}");
        hub.assert_valid();
        gm.dispose().await;
    }
}

#[tokio::test]
async fn a_stream_broken_midway_injected_streams_the_rest_of_the_reply() {
    for model in MODELS {
        let mock = Mock::start().await;
        let hub = FakeDebugger::start().await;
        let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
        let task = spawn_stream(&gm, mock.client().graphmind(), model);
        let p = paused(&hub, 1).await;
        let rest = json!([
            "Start",
            {"Chunk": {"content": "24 °C in Lisbon."}},
            {"End": {"captured_stop_reason": {"Completed": "stop"}}}
        ]);
        assert!(hub.inject(p.run_id(), &pause_id(&p), rest));
        let got = join(task).await.expect("not aborted");
        assert_eq!(
            got,
            ["start", "chunk Sunny, ", "chunk 24 °C in Lisbon.", "end"],
            "{model}: the broken stream's start and first piece, then the injected rest"
        );
        runs_finished(&hub, 1).await;
        assert_eq!(
            events(&hub),
            expect(&[
                "exec.resumed inject",
                "node.finished llm:step ok",
                "node.finished agent:a ok",
                "run.finished ok",
            ]),
            "{model}"
        );
        let fin = &finished(&hub, "llm:step")[0];
        assert_eq!(fin["output"]["text"], "Sunny, 24 °C in Lisbon.", "{model}");
        assert_eq!(fin["injected"], true, "{model}");
        assert_eq!(mock.count(), 1, "{model}: nothing sent again");
        hub.assert_valid();
        gm.dispose().await;
    }
}

#[tokio::test]
async fn a_stream_broken_midway_refuses_retry_and_stays_held() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "gpt-broken");
    let p = paused(&hub, 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "retry"));
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!task.is_finished(), "the gate stays held");
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let got = join(task).await.expect("not aborted");
    assert_eq!(got[..3], ["start", "chunk Sunny, ", "err"], "{got:?}");
    assert_eq!(mock.count(), 1, "no second request");
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["status"], "error");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_broken_midway_aborted_ends_the_run() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), "claude-broken");
    let p = paused(&hub, 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "abort"));
    assert!(join(task).await.is_err(), "the run returns Err(Aborted)");
    runs_finished(&hub, 1).await;
    assert_eq!(
        events(&hub),
        expect(&[
            "exec.resumed abort",
            "node.finished llm:step aborted",
            "node.finished agent:a aborted",
            "run.finished aborted",
        ])
    );
    hub.assert_valid();
    gm.dispose().await;
}
