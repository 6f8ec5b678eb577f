//! A run of the wrapped client recorded against the local mock and replayed with
//! `graphmind::testing`: `exec_chat` returns the recorded response and `exec_chat_stream`
//! yields the recorded events, as many and the same, with no request to the mock; every
//! model step says `replayed: true` (and not `injected`). A recording whose answers were
//! changed is answered with the changed answers: nothing went to the mock.

mod support;

use genai::chat::{ChatMessage, ChatRequest};
use graphmind::testing::Replay;
use graphmind_genai::Instrument;
use serde_json::Value;
use support::drain;
use support::mock::{Mock, TEXT};

fn ask(city: &str) -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user(format!("Weather in {city}?"))])
}

/// One plain call and one streamed: the answer's text and response id, and every event of
/// the stream as a line.
async fn chat_then_stream(
    client: graphmind_genai::Client,
) -> (String, Option<String>, Vec<String>) {
    let resp = client
        .exec_chat("gpt-text", ask("Lisbon"), None)
        .await
        .expect("exec_chat");
    let opened = client
        .exec_chat_stream("gpt-text", ask("Porto"), None)
        .await
        .expect("exec_chat_stream");
    let lines = drain(opened.stream).await;
    (resp.content.texts().concat(), resp.response_id, lines)
}

fn recording(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "graphmind-genai-replay-{name}-{}.ndjson",
        std::process::id()
    ))
}

/// The `node.finished` payloads of the model steps.
fn steps(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "llm:step")
        .map(|e| &e["payload"])
        .collect()
}

#[tokio::test]
async fn a_recorded_chat_and_stream_replay_with_no_request_and_the_same_answers() {
    let mock = Mock::start().await;
    let file = recording("same");
    let recorded = Replay::new(&file)
        .record(true)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    let original = recorded.into_output().expect("recorded run finished");
    assert_eq!(mock.count(), 2);
    assert_eq!(original.0, TEXT);
    assert!(original.2.len() > 3, "{:?}", original.2);
    assert!(
        original.2.iter().all(|l| !l.starts_with("err")),
        "{:?}",
        original.2
    );

    let replayed = Replay::new(&file)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(mock.count(), 2, "the replay sent no request");
    assert_eq!(replayed.served(), 2, "{:?}", replayed.outcomes());
    assert_eq!(replayed.went_live(), 0);
    let finished = steps(replayed.events());
    assert_eq!(finished.len(), 2);
    for step in &finished {
        assert_eq!(step["status"], "ok", "{step}");
        assert_eq!(step["replayed"], true, "{step}");
        assert!(step["replayStep"].is_u64(), "{step}");
        assert!(step.get("injected").is_none(), "{step}");
    }
    let again = replayed.into_output().expect("replayed run finished");
    assert_eq!(again, original);
}

#[tokio::test]
async fn a_replay_answers_from_the_recording_even_where_the_mock_would_answer_otherwise() {
    let mock = Mock::start().await;
    let file = recording("changed");
    Replay::new(&file)
        .record(true)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    assert_eq!(mock.count(), 2);
    // The recorded answers, changed: the mock still answers "Sunny".
    let text = std::fs::read_to_string(&file).expect("recorded");
    assert!(text.contains("Sunny"));
    std::fs::write(&file, text.replace("Sunny", "Foggy")).expect("written");

    let replayed = Replay::new(&file)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    replayed.assert_replayed();
    assert_eq!(mock.count(), 2, "nothing went to the mock");
    let (chat, _, stream) = replayed.into_output().expect("replayed run finished");
    assert_eq!(chat, TEXT.replace("Sunny", "Foggy"));
    assert!(stream.contains(&"chunk Foggy, ".to_owned()), "{stream:?}");
    assert!(!stream.iter().any(|l| l.contains("Sunny")), "{stream:?}");
}

#[tokio::test]
async fn a_stream_replayed_without_recorded_events_runs_live_and_fails_the_check() {
    let mock = Mock::start().await;
    let file = recording("no-events");
    Replay::new(&file)
        .record(true)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    // A recording made before streams kept their events: the stream step has none.
    let text = std::fs::read_to_string(&file).expect("recorded");
    let stripped: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("json");
            if let Some(p) = v["payload"].as_object_mut() {
                p.remove("recordedChunks");
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&file, stripped.join("\n")).expect("written");

    let replayed = Replay::new(&file)
        .run("weather", chat_then_stream(mock.client().graphmind()))
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(mock.count(), 3, "the stream went to the mock");
    assert_eq!(replayed.served(), 1);
    assert_eq!(replayed.unanswered(), 1);
    let message = replayed.check().expect_err("not whole");
    assert!(
        message.contains("step 2 (llm:step) ran live: its recorded answer cannot be used"),
        "{message}"
    );
}
