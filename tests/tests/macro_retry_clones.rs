//! Retry re-runs a tool's body with fresh clones of its by-value arguments; a tool with a
//! `&mut` argument refuses retry (`exec.refused`, code unsupported) and stays held.

mod macro_support;

use graphmind_tests::FakeDebugger;
use macro_support::{attached, events, finished, pause_id, paused, run_finished, wait_count};
use serde_json::json;

/// Mutates its by-value argument: a retry must start again from the caller's value.
#[graphmind::tool]
async fn append_word(mut words: Vec<String>, word: String) -> Vec<String> {
    words.push(word);
    words
}

/// Takes `&mut`: retry is turned off.
#[graphmind::tool]
async fn bump(counter: &mut u32, by: u32) -> u32 {
    *counter += by;
    *counter
}

#[tokio::test]
async fn retry_at_after_reruns_the_body_with_fresh_clones() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "append_word", "point": "after"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", append_word(vec!["a".into()], "b".into())).await }
    });
    let first = paused(&hub, 1).await;
    assert!(hub.resume(first.run_id(), &pause_id(&first), "retry"));
    let second = paused(&hub, 2).await;
    assert_eq!(second.payload()["point"], "after");
    assert!(hub.resume(second.run_id(), &pause_id(&second), "continue"));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        ["a", "b"],
        "the second attempt started from a fresh clone"
    );
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:r",
            "node.started tool:append_word",
            "exec.paused tool:append_word after",
            "exec.resumed retry",
            "exec.paused tool:append_word after",
            "exec.resumed continue",
            "node.finished tool:append_word ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ]
    );
    let fin = &finished(&hub, "tool:append_word")[0];
    assert_eq!(fin["attempts"], 2);
    assert_eq!(fin["output"], json!(["a", "b"]));
    let started = &hub.frames_of("node.started")[1];
    assert_eq!(
        started.payload()["input"],
        json!({"words": ["a"], "word": "b"})
    );
    gm.dispose().await;
}

#[tokio::test]
async fn retry_of_a_mut_argument_tool_is_refused_and_the_gate_stays_held() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "bump", "point": "after"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            let mut counter = 10;
            let out = gm.run("r", bump(&mut counter, 5)).await;
            (out, counter)
        }
    });
    let held = paused(&hub, 1).await;
    let id = pause_id(&held);
    assert!(hub.resume(held.run_id(), &id, "retry"));
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["pauseId"], id.as_str());
    assert_eq!(refused[0].payload()["code"], "unsupported");
    assert!(!task.is_finished(), "a refused retry leaves the gate held");
    assert!(hub.resume(held.run_id(), &id, "continue"));
    let (out, counter) = task.await.expect("joined");
    assert_eq!(
        (out.expect("not aborted"), counter),
        (15, 15),
        "the body ran once"
    );
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:r",
            "node.started tool:bump",
            "exec.paused tool:bump after",
            "exec.refused unsupported",
            "exec.resumed continue",
            "node.finished tool:bump ok",
            "node.finished agent:r ok",
            "run.finished ok",
        ]
    );
    gm.dispose().await;
}
