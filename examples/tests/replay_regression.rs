//! The support agent against a committed recording of one of its runs: no hub, no network,
//! no model, no tool side effect. Re-record (after an intended change) with
//! `GRAPHMIND_RECORD=1 cargo test -p graphmind-examples --test replay_regression`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use graphmind::testing::{LiveReason, Replay};
use graphmind_examples::{TICKET, calls, support_agent, support_agent_with};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/support_agent.ndjson"
);

/// The sockets this process has open (Linux: `/proc/self/fd` links to `socket:[inode]`), by
/// inode. Compared as sets, not counted: in a workspace build tokio has its signal driver, whose
/// one socketpair every runtime dups and closes again, so the other test's runtime coming and
/// going changes the count (a CI run saw 4 at the start, 3 at the end) but never the inodes;
/// only a new inode is a socket the replay opened.
fn open_sockets() -> Option<BTreeSet<String>> {
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        dir.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .map(|l| l.to_string_lossy().into_owned())
            .filter(|l| l.starts_with("socket:"))
            .collect(),
    )
}

/// `(node, status, output, chunks)` of every `node.finished`, in order.
fn finished(events: &[serde_json::Value]) -> Vec<(String, String, serde_json::Value, u64)> {
    events
        .iter()
        .filter(|e| e["type"] == "node.finished")
        .map(|e| {
            let p = &e["payload"];
            (
                p["nodeId"].as_str().unwrap_or("").to_owned(),
                p["status"].as_str().unwrap_or("").to_owned(),
                p["output"].clone(),
                p["chunks"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_recorded_support_run_replays_with_no_hub_no_network_and_no_model_call() {
    let sockets = open_sockets();
    let before = calls();
    let started = Instant::now();
    let report = Replay::new(RECORDING)
        .run("handle-ticket", support_agent(TICKET))
        .await;
    let took = started.elapsed();
    if report.was_recorded() {
        return;
    }
    report.assert_replayed();
    let answer = report.output().expect("the run finished");
    assert_eq!(
        answer.as_deref(),
        Ok(
            "I'm sorry your parcel went missing. I have refunded order ORD-1042 in full (reference RF-1042); the money is back on your card within 3 working days."
        )
    );
    // Every model step and tool call was answered from the recording but the one whose
    // recorded outcome is an error (error values are not rebuilt): that one ran live.
    let ran = calls().since(before);
    assert_eq!(
        (ran.model, ran.shipping_status, ran.issue_refund),
        (0, 0, 0),
        "{ran:?}"
    );
    let live: Vec<_> = report.live().collect();
    assert_eq!(
        live,
        vec![(Some(2), "tool:lookup_order", LiveReason::RecordedError)],
        "{:?}",
        report.outcomes()
    );
    assert_eq!(report.served(), 8, "{:?}", report.outcomes());
    // Outputs, statuses, and (streamed steps) chunk counts and text are those recorded.
    let recorded: Vec<serde_json::Value> = std::fs::read_to_string(RECORDING)
        .expect("recording")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let (want, got) = (finished(&recorded), finished(report.events()));
    assert_eq!(want.len(), 10, "9 steps and the agent node");
    assert_eq!(got, want);
    let streamed: Vec<_> = got.iter().filter(|f| f.3 > 0).collect();
    assert_eq!(
        streamed.len(),
        5,
        "every model step streamed its recorded chunks"
    );
    if let (Some(before), Some(after)) = (&sockets, open_sockets()) {
        let opened: Vec<_> = after.difference(before).collect();
        assert!(
            opened.is_empty(),
            "a socket was opened during the replay: {opened:?}"
        );
    }
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

#[tokio::test]
async fn a_one_word_prompt_change_is_reported_as_a_divergence_naming_step_node_and_field() {
    let report = Replay::new(RECORDING)
        .record(false)
        .run(
            "handle-ticket",
            support_agent_with("You are a support bot. Use the tools; be brief.", TICKET),
        )
        .await;
    assert!(
        report.output().is_none(),
        "the replay stops at the divergence"
    );
    let d = report.divergence().expect("diverged");
    assert_eq!(
        (d.step, d.node_id.as_str(), d.path.as_str()),
        (1, "llm:step", "$.request.messages[0].content")
    );
    let message = report.check().expect_err("the check fails");
    assert!(
        message.starts_with(
            "replay diverged at step 1 (llm:step `step`): input field $.request.messages[0].content was recorded as \"You are a support agent. Use the tools; be brief.\" but is \"You are a support bot. Use the tools; be brief.\" live"
        ),
        "{message}"
    );
    assert!(message.contains("GRAPHMIND_RECORD=1"), "{message}");
}
