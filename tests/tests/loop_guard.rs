//! The loop guard: the third identical tool call in a row holds at `before` with
//! `reason: "loop"` and a `loop` summary, even with no breakpoint set; other input breaks
//! the streak; `GRAPHMIND_ON_LOOP=off`, warn mode and the allow list turn the hold off.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use graphmind::OnLoop;
use graphmind_tests::{FakeDebugger, Frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn add(a: u64, b: u64) -> u64 {
    a + b
}

fn started_seqs(frames: &[Frame]) -> Vec<u64> {
    frames
        .iter()
        .filter(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "tool:add")
        .map(Frame::seq)
        .collect()
}

#[tokio::test]
async fn the_third_identical_call_in_a_row_holds_as_a_loop() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("loops"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("looping", async {
                let mut sum = add(1, 2).await;
                sum += add(1, 2).await;
                sum += add(2, 2).await; // other input: the streak starts over
                sum += add(2, 2).await;
                sum += add(2, 2).await; // third in a row: holds
                sum + add(2, 2).await // fourth: holds again
            })
            .await
        }
    });
    let paused = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(paused.payload()["reason"], "loop");
    assert_eq!(paused.payload()["point"], "before");
    assert_eq!(paused.payload()["nodeId"], "tool:add");
    let seqs = started_seqs(&hub.frames());
    assert_eq!(seqs.len(), 5);
    let summary = &paused.payload()["loop"];
    assert_eq!(summary["repeats"], 3);
    assert_eq!(summary["firstSeq"], seqs[2]);
    assert_eq!(summary["lastSeq"], seqs[4]);
    let fingerprint = summary["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_owned();
    assert_eq!(fingerprint.len(), 16);
    let id = paused.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.resume(paused.run_id(), &id, "continue"));

    let seen = hub.wait_count("exec.paused", 2, 2 * SECOND).await;

    assert_eq!(seen.len(), 2, "exec.paused");

    let frames = hub.frames();
    let second = frames
        .iter()
        .rfind(|f| f.kind() == "exec.paused")
        .expect("paused");
    assert_eq!(second.payload()["loop"]["repeats"], 4);
    assert_eq!(second.payload()["loop"]["firstSeq"], seqs[2]);
    assert_eq!(
        second.payload()["loop"]["fingerprint"],
        fingerprint.as_str()
    );
    let id = second.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.inject(second.run_id(), &id, json!(100)));
    assert_eq!(
        task.await.expect("joined").expect("ok"),
        3 + 3 + 4 + 4 + 4 + 100
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn the_environment_warn_mode_and_the_allow_list_keep_loops_running() {
    let hub = FakeDebugger::start().await;
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let sessions = [
        hub.config("off").env_vars([("GRAPHMIND_ON_LOOP", "off")]),
        hub.config("allowed").loop_allow(["add"]),
        hub.config("threshold")
            .env_vars([("GRAPHMIND_LOOP_THRESHOLD", "9")]),
        hub.config("warn").on_loop(OnLoop::Warn).on_warning({
            let warnings = Arc::clone(&warnings);
            move |m| warnings.lock().expect("lock").push(m.to_owned())
        }),
    ];
    for config in sessions {
        let gm = graphmind::Session::new(config);
        assert!(gm.ready(2 * SECOND).await);
        let total = tokio::time::timeout(
            2 * SECOND,
            gm.run("r", async {
                let mut total = 0;
                for _ in 0..5 {
                    total += add(1, 1).await;
                }
                total
            }),
        )
        .await
        .expect("never held")
        .expect("ok");
        assert_eq!(total, 10);
        gm.dispose().await;
    }
    assert!(hub.frames_of("exec.paused").is_empty());
    let warnings = warnings.lock().expect("lock");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("tool:add called 3 times in a row"));
}
