//! The whole debugging loop through `graphmind mcp`, driven by the Python MCP SDK's stdio
//! client against a real `graphmind serve` and the support example agent: a breakpoint set
//! through MCP holds the agent's order lookup, the held call is read through MCP, a fixed
//! result is injected through MCP, and the run finishes ok with what the fix made the agent
//! do — the lookup never ran, the refund was issued. The hub stamps the release with principal
//! `agent` and operator `mcp:<client name>`. A `step` resume continues the held call and holds
//! the next one; `abort` ends the run; the run is an MCP resource; waiting reports progress and ends at its timeout.

mod mcp_client;
mod support;

use std::time::{Duration, Instant};

use mcp_client::McpClient;
use serde_json::{Value, json};
use support::*;

/// The support agent's call counters are per process: its tests take turns.
static AGENT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The value after `key` on its line of `text` (`pauseId: pause_…`).
fn field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .trim()
        .to_owned()
}

#[test]
fn a_breakpoint_set_through_mcp_holds_the_support_agent_and_an_injected_fix_finishes_the_run() {
    let _turn = AGENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = TempDir::new("mcp-loop");
    let hub = SpawnedHub::start_in(&dir.0, &["--allow-control", "inject"]);
    let port = hub.port;
    let mut mcp = McpClient::start(&dir.0, port, "claude-code-test");

    let set = mcp
        .call(
            "set_breakpoint",
            json!({"kind": "tool", "name": "lookup_order"}),
        )
        .ok();
    assert!(
        set.contains("kind=tool name=lookup_order (point before)"),
        "{set}"
    );

    let before = graphmind_examples::calls();
    let (mut mcp, answer, run_id) = block_on(async move {
        let gm = attached(port, "support-agent").await;
        let agent = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run_result(
                    "handle-ticket",
                    graphmind_examples::support_agent(graphmind_examples::TICKET),
                )
                .await
            }
        });
        let (mcp, run, held, inject) = tokio::task::spawn_blocking(move || {
            let pause = mcp
                .call_within("wait_for_pause", json!({"timeoutSeconds": 60}), 90, true)
                .ok();
            assert!(
                pause.starts_with("paused: tool:lookup_order at before (breakpoint)"),
                "{pause}"
            );
            assert!(pause.contains("ORD-1O42"), "the held input: {pause}");
            let allowed = field(&pause, "resume_pause actions allowed here:");
            assert!(allowed.contains("inject"), "{pause}");
            assert!(!allowed.contains("edit"), "inject level, no edit: {pause}");
            let run = pause
                .lines()
                .next()
                .and_then(|l| l.rsplit(' ').next())
                .expect("run id")
                .to_owned();
            let pause_id = field(&pause, "pauseId:");
            let exec = field(&pause, "executionId:");
            // The held call read through MCP: its execution, with its input.
            let held = mcp
                .call("get_execution", json!({"runId": run, "executionId": exec}))
                .ok();
            let inject = mcp
                .call(
                    "resume_pause",
                    json!({"pauseId": pause_id, "runId": run, "action": "inject",
                           "output": {"order_id": "ORD-1042", "amount_cents": 4999,
                                      "tracking": "TRK-1042-NL"}}),
                )
                .ok();
            (mcp, run, held, inject)
        })
        .await
        .expect("the MCP side");
        assert!(
            held.contains("tool:lookup_order (tool lookup_order), running"),
            "{held}"
        );
        assert!(held.contains(r#""order_id":"ORD-1O42""#), "{held}");
        assert!(
            inject.starts_with("resumed ") && inject.contains("(inject)"),
            "{inject}"
        );
        assert!(
            inject.contains("stamped: principal agent, operator mcp:claude-code-test"),
            "{inject}"
        );
        let answer = tokio::time::timeout(Duration::from_secs(60), agent)
            .await
            .expect("the agent finished in time")
            .expect("joined")
            .expect("not aborted")
            .expect("the agent answered");
        gm.dispose().await;
        (mcp, answer, run)
    });

    // What the fix made the agent do: the injected order was used, the lookup body never
    // ran, the parcel was checked and the refund issued.
    assert!(answer.contains("reference RF-1042"), "{answer}");
    let calls = graphmind_examples::calls().since(before);
    assert_eq!(
        calls.lookup_order, 0,
        "the injected result stood in for the lookup"
    );
    assert_eq!(calls.shipping_status, 1);
    assert_eq!(calls.issue_refund, 1);

    // The run as MCP reads it once stored: finished ok, its executions in order, no errors.
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        let text = mcp.call("get_run", json!({"runId": run_id})).ok();
        if text.lines().next().is_some_and(|l| l.contains("  ok  ")) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the run is not ok in 30 s: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!run.contains("errors ("), "{run}");
    let order: Vec<&str> = run
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|n| n.starts_with("tool:"))
        .collect();
    assert_eq!(
        order,
        [
            "tool:lookup_order",
            "tool:shipping_status",
            "tool:issue_refund"
        ],
        "{run}"
    );
    assert!(
        run.contains("RF-1042"),
        "the refund's result previewed: {run}"
    );

    // The run as an MCP resource: listed, and read as the same text.
    let uri = format!("graphmind://runs/{run_id}");
    let listed = mcp.resources();
    let r = listed
        .iter()
        .find(|r| r["uri"] == json!(uri))
        .unwrap_or_else(|| panic!("{uri} not in {listed:?}"));
    assert_eq!(r["title"], json!("handle-ticket"), "{r}");
    let read = mcp.read(&uri);
    let text = read["contents"][0]["text"].as_str().expect("text");
    assert!(
        text.lines().next().is_some_and(|l| l.contains("  ok  ")),
        "{text}"
    );
    assert!(text.contains("tool:issue_refund"), "{text}");
    let missing = mcp.read("graphmind://runs/run_nope");
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("no run run_nope")),
        "{missing}"
    );

    // The release as the hub stored it: credited to the agent token, labelled with the client.
    let events = hub.events(&run_id);
    let resumed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "exec.resumed")
        .collect();
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0]["payload"]["principal"], json!("agent"));
    assert_eq!(
        resumed[0]["payload"]["operator"],
        json!("mcp:claude-code-test")
    );
    assert_eq!(resumed[0]["payload"]["action"], json!("inject"));
}

#[test]
fn waiting_for_a_pause_reports_progress_and_ends_at_its_timeout() {
    let dir = TempDir::new("mcp-wait");
    let hub = SpawnedHub::start_in(&dir.0, &["--allow-control", "resume"]);
    let mut mcp = McpClient::start(&dir.0, hub.port, "wait-test");
    let started = Instant::now();
    let answer = mcp.call_within("wait_for_pause", json!({"timeoutSeconds": 5}), 60, true);
    let took = started.elapsed();
    let mcp_client::Answer::Result {
        is_error: false,
        text,
        progress,
    } = answer
    else {
        panic!("{answer:?}");
    };
    assert!(text.starts_with("no pause opened within 5 s"), "{text}");
    assert!(took >= Duration::from_secs(5), "{took:?}");
    assert!(took < Duration::from_secs(40), "{took:?}");
    assert!(!progress.is_empty(), "no progress notification");
    assert!(
        progress.windows(2).all(|w| w[0] <= w[1]) && progress.iter().all(|p| *p <= 5.0),
        "{progress:?}"
    );
}

#[test]
fn step_through_mcp_continues_the_held_call_and_holds_the_next_one_then_abort_ends_the_run() {
    let _turn = AGENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = TempDir::new("mcp-step");
    let hub = SpawnedHub::start_in(&dir.0, &["--allow-control", "resume"]);
    let port = hub.port;
    let mut mcp = McpClient::start(&dir.0, port, "step-test");
    mcp.call(
        "set_breakpoint",
        json!({"kind": "tool", "name": "lookup_order"}),
    )
    .ok();
    let (outcome, run, first, second) = block_on(async move {
        let gm = attached(port, "support-agent").await;
        let agent = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run_result(
                    "handle-ticket",
                    graphmind_examples::support_agent(graphmind_examples::TICKET),
                )
                .await
            }
        });
        let (run, first, second) = tokio::task::spawn_blocking(move || {
            let pause = mcp
                .call_within("wait_for_pause", json!({"timeoutSeconds": 60}), 90, false)
                .ok();
            let run = pause
                .lines()
                .next()
                .and_then(|l| l.rsplit(' ').next())
                .expect("run id")
                .to_owned();
            let first = field(&pause, "pauseId:");
            let step = mcp
                .call(
                    "resume_pause",
                    json!({"pauseId": first, "runId": run, "action": "step"}),
                )
                .ok();
            assert!(step.contains("(step)"), "{step}");
            assert!(
                step.contains("the hub is in step mode: the next call holds"),
                "{step}"
            );
            let next = mcp
                .call_within(
                    "wait_for_pause",
                    json!({"timeoutSeconds": 60, "runId": run}),
                    90,
                    false,
                )
                .ok();
            let second = field(&next, "pauseId:");
            assert_ne!(second, first, "{next}");
            let abort = mcp
                .call(
                    "resume_pause",
                    json!({"pauseId": second, "runId": run, "action": "abort"}),
                )
                .ok();
            assert!(abort.contains("(abort)"), "{abort}");
            mcp.call("set_mode", json!({"mode": "run"})).ok();
            (run, first, second)
        })
        .await
        .expect("the MCP side");
        let outcome = tokio::time::timeout(Duration::from_secs(60), agent)
            .await
            .expect("the agent finished in time")
            .expect("joined");
        gm.dispose().await;
        (outcome.is_err(), run, first, second)
    });
    assert!(outcome, "the run was aborted");
    let events = hub.events(&run);
    let resumed: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "exec.resumed")
        .map(|e| {
            (
                e["payload"]["pauseId"].as_str().unwrap_or(""),
                e["payload"]["action"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        resumed,
        [(first.as_str(), "continue"), (second.as_str(), "abort")]
    );
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "exec.resumed")
            .all(|e| e["payload"]["operator"] == json!("mcp:step-test"))
    );
}
