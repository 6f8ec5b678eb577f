//! The example support agent against a debugger: the planted bad order id holds at the
//! error gate (the hub's default breakpoint); continue lets the agent correct itself, abort
//! ends the run with `Err(Aborted)`, and a debugger that dies mid-hold releases the gate.

mod macro_support;

use graphmind_tests::FakeDebugger;
use macro_support::{SECOND, events, pause_id, paused, wait_count};
use serde_json::json;

/// The sequence without token batches (their number depends on timing).
fn skeleton(hub: &FakeDebugger, run_id: &str) -> Vec<String> {
    let ids: Vec<bool> = hub
        .frames()
        .iter()
        .filter(|f| f.kind() != "hello")
        .map(|f| f.run_id() == run_id)
        .collect();
    events(hub)
        .into_iter()
        .zip(ids)
        .filter(|(e, ours)| *ours && !e.starts_with("node.token"))
        .map(|(e, _)| e)
        .collect()
}

const TOOLS: &str = "graph.hint agent:handle-ticket,llm:step,tool:issue_refund,tool:lookup_order,tool:shipping_status";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_agent_holds_at_its_planted_error_and_survives_abort_and_a_dead_debugger() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"point": "error"})]);
    let gm = graphmind::init(hub.config("support-agent"));
    assert!(gm.ready(2 * SECOND).await);

    // 1. Continue at the error gate: the agent reads the error and corrects the id.
    let task = tokio::spawn(graphmind_examples::handle_ticket(
        graphmind_examples::TICKET,
    ));
    let held = paused(&hub, 1).await;
    assert_eq!(
        (
            held.payload()["nodeId"].as_str(),
            held.payload()["point"].as_str()
        ),
        (Some("tool:lookup_order"), Some("error"))
    );
    let run_id = held.run_id().to_owned();
    assert!(hub.resume(&run_id, &pause_id(&held), "continue"));
    let answer = task
        .await
        .expect("joined")
        .expect("not aborted")
        .expect("answered");
    assert!(answer.contains("refunded order ORD-1042"), "{answer}");
    wait_count(&hub, "run.finished", 1).await;
    let step = ["node.started llm:step", "node.finished llm:step ok"];
    let mut expected: Vec<&str> = vec!["run.started", "node.started agent:handle-ticket", TOOLS];
    expected.extend(step);
    expected.extend([
        "node.started tool:lookup_order",
        "node.error tool:lookup_order ToolError",
        "exec.paused tool:lookup_order error",
        "exec.resumed continue",
        "node.finished tool:lookup_order error",
    ]);
    expected.extend(step);
    expected.extend([
        "node.started tool:lookup_order",
        "node.finished tool:lookup_order ok",
    ]);
    expected.extend(step);
    expected.extend([
        "node.started tool:shipping_status",
        "node.finished tool:shipping_status ok",
    ]);
    expected.extend(step);
    expected.extend([
        "node.started tool:issue_refund",
        "node.finished tool:issue_refund ok",
    ]);
    expected.extend(step);
    expected.extend(["node.finished agent:handle-ticket ok", "run.finished ok"]);
    assert_eq!(skeleton(&hub, &run_id), expected);
    let ids: Vec<String> = hub
        .frames_of("node.started")
        .iter()
        .filter(|f| f.payload()["nodeId"] == "tool:lookup_order")
        .map(|f| {
            f.payload()["instanceId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        ids,
        ["call_1", "call_2"],
        "the model's tool-call ids are the instance ids"
    );
    // Issue 35 item 9: the streamed steps' recorded tool calls lost their name and id
    // (`toolCalls: [{"name": ""}]`); they carry both, in GraphMind 0.6's shape.
    let calls: Vec<serde_json::Value> = hub
        .frames_of("node.finished")
        .iter()
        .filter(|f| f.run_id() == run_id && f.payload()["nodeId"] == "llm:step")
        .flat_map(|f| {
            f.payload()["output"]["toolCalls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        calls,
        [
            json!({"id": "call_1", "name": "lookup_order", "input": {"order_id": "ORD-1O42"}}),
            json!({"id": "call_2", "name": "lookup_order", "input": {"order_id": "ORD-1042"}}),
            json!({"id": "call_3", "name": "shipping_status", "input": {"tracking": "TRK-1042-NL"}}),
            json!({"id": "call_4", "name": "issue_refund", "input": {"order_id": "ORD-1042", "amount_cents": 4999}}),
        ],
        "each streamed call named, with its id and parsed input"
    );

    // 2. Abort at the same gate: the run ends with Err(Aborted), nothing else runs.
    let task = tokio::spawn(graphmind_examples::handle_ticket(
        graphmind_examples::TICKET,
    ));
    let held = paused(&hub, 2).await;
    assert!(hub.resume(held.run_id(), &pause_id(&held), "abort"));
    let aborted = task.await.expect("joined").expect_err("aborted");
    assert_eq!(aborted.name(), "handle-ticket");
    wait_count(&hub, "run.finished", 2).await;
    let after_abort: Vec<String> = skeleton(&hub, held.run_id());
    assert_eq!(
        after_abort.last().map(String::as_str),
        Some("run.finished aborted")
    );
    assert!(
        !after_abort
            .iter()
            .any(|e| e.contains("shipping_status") && e.starts_with("node.started"))
    );

    // 3. The debugger dies while the gate is held: the gate continues, the agent answers.
    let task = tokio::spawn(graphmind_examples::handle_ticket(
        graphmind_examples::TICKET,
    ));
    paused(&hub, 3).await;
    hub.kill();
    let answer = tokio::time::timeout(5 * SECOND, task)
        .await
        .expect("released")
        .expect("joined");
    assert!(
        answer
            .expect("not aborted")
            .expect("answered")
            .contains("refunded")
    );
    gm.dispose().await;
}
