//! The support agent against a committed recording of one of its runs: no hub, no network,
//! no model, no tool side effect. Re-record (after an intended change) with
//! `GRAPHMIND_RECORD=1 cargo test -p graphmind-examples --test replay_regression`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use graphmind::testing::Replay;
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
    // Every model step and tool call was answered from the recording, the one whose
    // recorded outcome is an error included: the tools are `replay_errors`, so the misread
    // order id fails as `Err(ToolError)` rebuilt from the recording, without running.
    let ran = calls().since(before);
    assert_eq!(ran.total(), 0, "{ran:?}");
    let live: Vec<_> = report.live().collect();
    assert!(live.is_empty(), "{:?}", report.outcomes());
    assert_eq!(report.served(), 9, "{:?}", report.outcomes());
    let error = report
        .events()
        .iter()
        .find(|e| e["type"] == "node.error")
        .expect("the replayed error is reported");
    assert_eq!(
        (
            &error["payload"]["nodeId"],
            &error["payload"]["error"]["name"],
            &error["payload"]["error"]["message"]
        ),
        (
            &serde_json::json!("tool:lookup_order"),
            &serde_json::json!("ToolError"),
            &serde_json::json!("no order ORD-1O42: ids are ORD- and four digits")
        )
    );
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

static DELIVERY_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A streaming tool: the parcel's tracking events, one item each.
#[graphmind::tool]
async fn tracking_events(
    tracking: String,
) -> impl futures_util::Stream<Item = serde_json::Value> + Send {
    DELIVERY_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    futures_util::stream::iter(
        ["picked up", "in transit", "lost"]
            .map(|status| serde_json::json!({"tracking": tracking, "status": status})),
    )
}

/// Two lookups at once, the one started second finishing first.
#[graphmind::tool(replay_errors)]
async fn parcel(tracking: String, delay_ms: u64) -> Result<String, graphmind_examples::ToolError> {
    DELIVERY_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    match tracking.as_str() {
        "TRK-1" => Ok("delivered".into()),
        other => Err(graphmind_examples::ToolError(format!(
            "unknown parcel {other}"
        ))),
    }
}

async fn deliveries(swap: bool) -> (Vec<serde_json::Value>, Vec<Result<String, String>>) {
    use futures_util::StreamExt;
    let items = tracking_events("TRK-1042".into()).await.collect().await;
    let (a, b) = (parcel("TRK-1".into(), 30), parcel("TRK-2".into(), 1));
    let (a, b) = if swap {
        let (b, a) = tokio::join!(b, a);
        (a, b)
    } else {
        tokio::join!(a, b)
    };
    let show = |r: Result<String, graphmind_examples::ToolError>| r.map_err(|e| e.0);
    (items, vec![show(a), show(b)])
}

#[tokio::test]
async fn a_streaming_tool_replays_its_recorded_items_and_parallel_calls_pair_by_input() {
    let dir = std::env::temp_dir().join(format!("gm-replay-stream-{}", std::process::id()));
    let path = dir.join("deliveries.ndjson");
    let recorded = Replay::new(&path)
        .record(true)
        .run("deliveries", deliveries(false))
        .await;
    let want = recorded.output().cloned().expect("recorded");
    assert_eq!(want.0.len(), 3);
    assert_eq!(
        want.1,
        vec![Ok("delivered".into()), Err("unknown parcel TRK-2".into())]
    );
    let before = DELIVERY_CALLS.load(std::sync::atomic::Ordering::SeqCst);
    // Replayed with the two parallel lookups started in the other order: each is paired with
    // its own recorded call by input (not reported as a divergence), the error included.
    let report = Replay::new(&path)
        .record(false)
        .run("deliveries", deliveries(true))
        .await;
    report.assert_replayed();
    assert_eq!(
        DELIVERY_CALLS.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "no body ran: {:?}",
        report.outcomes()
    );
    assert_eq!(report.served(), 3, "{:?}", report.outcomes());
    assert_eq!(report.output(), Some(&want));
    let stream = report
        .events()
        .iter()
        .find(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == "tool:tracking_events")
        .expect("the stream finished");
    assert_eq!(stream["payload"]["chunks"], 3);
    assert_eq!(stream["payload"]["replayed"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
