//! The `error` gate of a stream that breaks after its first event (the mock's `…-broken`
//! models send the first piece of the answer, then cut the connection): continue passes
//! genai's error on, inject streams the injected events as the rest of the reply, abort ends
//! the run (the stream's last item is then `genai::Error::Internal`, as before the first
//! event), and retry is refused (the caller has read part of the reply already), for both
//! dialects, as exact event sequences.

mod support;

use std::time::Duration;

use graphmind_genai::Instrument;
use graphmind_tests::{FakeDebugger, Frame};
use serde_json::{Value, json};
use support::mock::Mock;
use support::{
    StreamOutcome, attached, events, finished, join, pause_id, paused, resume_with, runs_finished,
    spawn_stream, wait_count,
};

const HEAD: [&str; 6] = [
    "run.started",
    "node.started agent:a",
    "graph.hint agent:a,llm:step",
    "node.started llm:step",
    "node.error llm:step WebStream",
    "exec.paused llm:step error",
];

const MODELS: [&str; 2] = ["gpt-broken", "claude-broken"];

/// What the caller read before the connection broke.
const READ: [&str; 3] = ["start", "chunk Sunny, ", "err Web"];

/// A broken stream of one model, held at its `error` gate.
struct Held {
    model: &'static str,
    mock: Mock,
    hub: FakeDebugger,
    gm: graphmind::Session,
    task: tokio::task::JoinHandle<StreamOutcome>,
    pause: Frame,
}

/// How a held call ended: what the caller read, and the step's `node.finished`.
struct Answered {
    read: StreamOutcome,
    step: Value,
}

/// Streams `model` with an `error` breakpoint and waits for the gate where it broke.
async fn held(model: &'static str) -> Held {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = spawn_stream(&gm, mock.client().graphmind(), model);
    let pause = paused(&hub, 1).await;
    Held {
        model,
        mock,
        hub,
        gm,
        task,
        pause,
    }
}

impl Held {
    /// Answers the gate with `answer` (an `exec.resume` body), waits for the run to end and
    /// checks its events: `HEAD`, then `tail`; and that nothing was sent again.
    async fn answer(self, answer: Value, tail: &[&str]) -> Answered {
        let model = self.model;
        resume_with(&self.hub, &self.pause, answer);
        let read = join(self.task).await;
        runs_finished(&self.hub, 1).await;
        let expected: Vec<String> = HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect();
        assert_eq!(events(&self.hub), expected, "{model}");
        assert_eq!(self.mock.count(), 1, "{model}: nothing sent again");
        let step = finished(&self.hub, "llm:step").swap_remove(0);
        self.hub.assert_valid();
        self.gm.dispose().await;
        Answered { read, step }
    }
}

/// What the caller read, for a call that was not aborted and opened its stream.
fn lines(read: StreamOutcome) -> Vec<String> {
    read.expect("not aborted").expect("the stream opened")
}

#[tokio::test]
async fn a_stream_broken_midway_continued_passes_genais_error_on() {
    for model in MODELS {
        let held = held(model).await;
        assert_eq!(
            held.pause.payload()["actions"],
            json!(["continue", "inject", "abort"]),
            "{model}: no retry once the caller read part of the reply"
        );
        let done = held
            .answer(
                json!({"action": "continue"}),
                &[
                    "exec.resumed continue",
                    "node.finished llm:step error",
                    "node.finished agent:a ok",
                    "run.finished ok",
                ],
            )
            .await;
        let read = lines(done.read);
        assert_eq!(read[..3], READ, "{model}: {read:?}");
        assert_eq!(
            done.step["output"]["text"], "Sunny, ",
            "{model}: what was read"
        );
    }
}

#[tokio::test]
async fn a_stream_broken_midway_injected_streams_the_rest_of_the_reply() {
    for model in MODELS {
        let rest = json!([
            "Start",
            {"Chunk": {"content": "24 °C in Lisbon."}},
            {"End": {"captured_stop_reason": {"Completed": "stop"}}}
        ]);
        let done = held(model)
            .await
            .answer(
                json!({"action": "inject", "output": rest}),
                &[
                    "exec.resumed inject",
                    "node.finished llm:step ok",
                    "node.finished agent:a ok",
                    "run.finished ok",
                ],
            )
            .await;
        assert_eq!(
            lines(done.read),
            [
                "start",
                "chunk Sunny, ",
                "chunk 24 °C in Lisbon.",
                "end usage=false"
            ],
            "{model}: the broken stream's start and first piece, then the injected rest"
        );
        assert_eq!(
            done.step["output"]["text"], "Sunny, 24 °C in Lisbon.",
            "{model}"
        );
        assert_eq!(done.step["injected"], true, "{model}");
    }
}

#[tokio::test]
async fn a_stream_broken_midway_refuses_retry_and_stays_held() {
    let held = held("gpt-broken").await;
    let p = &held.pause;
    assert!(held.hub.resume(p.run_id(), &pause_id(p), "retry"));
    let refused = wait_count(&held.hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.task.is_finished(), "the gate stays held");
    let done = held
        .answer(
            json!({"action": "continue"}),
            &[
                "exec.refused unsupported",
                "exec.resumed continue",
                "node.finished llm:step error",
                "node.finished agent:a ok",
                "run.finished ok",
            ],
        )
        .await;
    let read = lines(done.read);
    assert_eq!(read[..3], READ, "{read:?}");
    assert_eq!(done.step["status"], "error");
}

#[tokio::test]
async fn a_stream_broken_midway_aborted_ends_the_run() {
    let done = held("claude-broken")
        .await
        .answer(
            json!({"action": "abort"}),
            &[
                "exec.resumed abort",
                "node.finished llm:step aborted",
                "node.finished agent:a aborted",
                "run.finished aborted",
            ],
        )
        .await;
    assert!(done.read.is_err(), "the run returns Err(Aborted)");
}
