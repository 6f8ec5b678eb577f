//! What `graphmind::testing::Report` says about a replay that was not whole: a call that
//! went live because the recording could not answer it, a call the recording does not have,
//! and a step whose recorded answer the app turned into an error each make
//! `assert_replayed()` fail with a message naming the step; `on_missing(Live)` lets them
//! pass. And a step answered from the recording is marked `replayed`, not `injected`.

use std::sync::atomic::{AtomicUsize, Ordering};

use graphmind::model::Grouping;
use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{PausePoint, Status};
use graphmind::testing::{OnMissing, Replay};
use serde_json::{Value, json};

/// How often each tool body below ran.
static FORECASTS: AtomicUsize = AtomicUsize::new(0);
static CHARGES: AtomicUsize = AtomicUsize::new(0);
static TIDES: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
struct ChargeError(String);

impl std::fmt::Display for ChargeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChargeError {}

#[graphmind::tool]
async fn forecast(city: String) -> String {
    FORECASTS.fetch_add(1, Ordering::SeqCst);
    format!("sunny in {city}")
}

#[graphmind::tool]
async fn tide(port: String) -> String {
    TIDES.fetch_add(1, Ordering::SeqCst);
    format!("high tide at noon in {port}")
}

/// Fails, and does not opt in to `replay_errors`: a replay cannot hand its recorded error
/// back, so the call runs live.
#[graphmind::tool]
async fn charge(amount: u64) -> Result<u64, ChargeError> {
    CHARGES.fetch_add(1, Ordering::SeqCst);
    Err(ChargeError(format!("card declined for {amount}")))
}

fn recording(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "graphmind-replay-report-{name}-{}.ndjson",
        std::process::id()
    ))
}

/// The panic message of `report.assert_replayed()`, or `None` when it passed.
fn assert_message<T>(report: &graphmind::testing::Report<T>) -> Option<String> {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        report.assert_replayed();
    }))
    .err()?;
    Some(
        caught
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| caught.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_call_the_recording_does_not_have_fails_assert_replayed_naming_it() {
    let file = recording("missing");
    let recorded = Replay::new(&file)
        .record(true)
        .run("weather", async { forecast("Lisbon".into()).await })
        .await;
    assert_eq!(
        recorded.output().map(String::as_str),
        Some("sunny in Lisbon")
    );

    let ran = FORECASTS.load(Ordering::SeqCst);
    let two = || async {
        let a = forecast("Lisbon".into()).await;
        let b = forecast("Lisbon".into()).await;
        format!("{a}; {b}")
    };
    let report = Replay::new(&file).run("weather", two()).await;
    assert_eq!(
        FORECASTS.load(Ordering::SeqCst),
        ran + 1,
        "the second call ran live"
    );
    assert_eq!(report.served(), 1);
    assert_eq!(report.unanswered(), 1);
    assert_eq!(report.went_live(), 1);
    let message = assert_message(&report).expect("assert_replayed fails");
    assert!(message.contains("the replay was not whole"), "{message}");
    assert!(
        message.contains("tool:forecast ran live: the recording has no such call"),
        "{message}"
    );

    // Asked for: the live call passes.
    let allowed = Replay::new(&file)
        .on_missing(OnMissing::Live)
        .run("weather", two())
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(allowed.unanswered(), 1);
    assert_eq!(assert_message(&allowed), None);
}

#[tokio::test]
async fn a_recorded_error_the_call_cannot_take_runs_live_and_fails_assert_replayed_naming_the_step()
{
    let file = recording("live");
    let app = || async { charge(1200).await.map_err(|e| e.to_string()) };
    let recorded = Replay::new(&file).record(true).run("pay", app()).await;
    assert_eq!(
        recorded.output().cloned(),
        Some(Err("card declined for 1200".to_owned()))
    );

    let ran = CHARGES.load(Ordering::SeqCst);
    let report = Replay::new(&file).run("pay", app()).await;
    assert_eq!(CHARGES.load(Ordering::SeqCst), ran + 1, "the call ran live");
    assert_eq!(report.served(), 0);
    assert_eq!(report.went_live(), 1);
    assert_eq!(report.unanswered(), 1);
    let message = assert_message(&report).expect("assert_replayed fails");
    assert!(
        message.contains("step 1 (tool:charge) ran live: it recorded an error"),
        "{message}"
    );

    let allowed = Replay::new(&file)
        .on_missing(OnMissing::Live)
        .run("pay", app())
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(assert_message(&allowed), None);
}

/// A model step started by hand, as an adapter starts one: the recorded answer is handed to
/// its `before` gate; the app reads a number out of it, and fails when it cannot.
async fn ask_for_a_number(reply: &'static str) -> Result<u64, String> {
    let mut node = Node::start_step(
        json!({"messages": [{"role": "user", "content": "pick a number"}]}),
        Grouping::Auto,
    )
    .expect("enabled");
    let (answer, injected) = match node.gate(PausePoint::Before).await {
        Resume::Inject(v) => (v, true),
        _ => (json!({"text": reply}), false),
    };
    let text = answer["text"].as_str().unwrap_or("").to_owned();
    match text.parse::<u64>() {
        Ok(n) => {
            let mut extras = Extras::new().api("hand");
            if injected {
                extras = extras.injected();
            }
            node.finish_with(Status::Ok, Some(answer), None, extras.into());
            Ok(n)
        }
        Err(e) => {
            node.error("ParseIntError", format!("{text:?}: {e}"));
            node.finish(Status::Error, None);
            Err(e.to_string())
        }
    }
}

#[tokio::test]
async fn a_served_answer_the_app_turns_into_an_error_fails_assert_replayed_naming_the_step() {
    let file = recording("error");
    let recorded = Replay::new(&file)
        .record(true)
        .run("number", ask_for_a_number("42"))
        .await;
    assert_eq!(recorded.output().cloned(), Some(Ok(42)));

    // The recorded answer, changed by hand into one the app cannot read.
    let text = std::fs::read_to_string(&file).expect("recorded");
    std::fs::write(
        &file,
        text.replace("\"text\":\"42\"", "\"text\":\"forty-two\""),
    )
    .expect("written");
    let report = Replay::new(&file)
        .run("number", ask_for_a_number("42"))
        .await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(report.served(), 1, "{:?}", report.outcomes());
    assert_eq!(report.went_live(), 0);
    assert_eq!(report.failed().len(), 1, "{:?}", report.failed());
    assert_eq!(report.failed()[0].step, Some(1));
    let message = assert_message(&report).expect("assert_replayed fails");
    assert!(message.contains("step 1 (llm:step "), "{message}");
    assert!(
        message.contains("finished with an error: ParseIntError: \"forty-two\""),
        "{message}"
    );
}

#[tokio::test]
async fn a_model_step_answered_by_a_replay_says_replayed_not_injected() {
    let file = recording("marked");
    Replay::new(&file)
        .record(true)
        .run("number", ask_for_a_number("7"))
        .await;
    let report = Replay::new(&file)
        .run("number", ask_for_a_number("8"))
        .await;
    let _ = std::fs::remove_file(&file);
    report.assert_replayed();
    assert_eq!(report.output().cloned(), Some(Ok(7)), "the recorded answer");
    let finished: Vec<&Value> = report
        .events()
        .iter()
        .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "llm:step")
        .map(|e| &e["payload"])
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["replayed"], true, "{}", finished[0]);
    assert_eq!(finished[0]["replayStep"], 1, "{}", finished[0]);
    assert!(finished[0].get("injected").is_none(), "{}", finished[0]);
}

#[tokio::test]
async fn a_tool_answered_by_a_replay_says_replayed_not_injected() {
    let file = recording("tool");
    Replay::new(&file)
        .record(true)
        .run("weather", async { tide("Porto".into()).await })
        .await;
    let ran = TIDES.load(Ordering::SeqCst);
    let report = Replay::new(&file)
        .run("weather", async { tide("Porto".into()).await })
        .await;
    let _ = std::fs::remove_file(&file);
    report.assert_replayed();
    assert_eq!(TIDES.load(Ordering::SeqCst), ran, "served, not run");
    let finished = report
        .events()
        .iter()
        .find(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "tool:tide")
        .map(|e| &e["payload"])
        .expect("the tool finished");
    assert_eq!(finished["replayed"], true, "{finished}");
    assert_eq!(finished["replayStep"], 1, "{finished}");
    assert!(finished.get("injected").is_none(), "{finished}");
}
