//! Every action at every gate of an MCP `tools/call` made through `GatedPeer`, as exact event
//! sequences against the fake debugger, with a real rmcp server telling what reached it.

mod support;

use std::time::Duration;

use graphmind_rmcp::Config;
use rmcp::ServiceError;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use support::{
    abort_at, call, continue_at, done, expect, finished, first_text, inject_at, join, pause_id,
    paused, reject_at, resume_with, retry_at, runs_finished, spawn_in_run, started, wait_count,
    world,
};

/// No annotation holds: only the breakpoints hold.
fn plain() -> Config {
    Config::default().hold_destructive(false)
}

type Called = Result<Result<CallToolResult, ServiceError>, graphmind::Aborted>;

async fn calling(
    breakpoint: Value,
    name: &'static str,
    arguments: Value,
) -> (support::World, tokio::task::JoinHandle<Called>) {
    let w = world(vec![breakpoint], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), move |mcp| async move {
        mcp.call_tool(call(name, arguments)).await
    });
    (w, task)
}

#[tokio::test]
async fn before_holds_with_nothing_sent_then_continue_sends_it() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "add",
        json!({"x": 2, "y": 3}),
    )
    .await;
    let p = paused(&w.hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "tool:add");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        w.files.seen.count("add"),
        0,
        "nothing leaves while before holds"
    );
    assert!(w.hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "5");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:add",
            "exec.paused tool:add before",
            "exec.resumed continue",
            "node.finished tool:add ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let s = &started(&w.hub, "tool:add")[0];
    assert_eq!(s["kind"], "tool");
    assert_eq!(s["name"], "add");
    assert_eq!(s["input"], json!({"x": 2, "y": 3}));
    assert_eq!(s["server"], "files");
    assert_eq!(s["method"], "tools/call");
    assert_eq!(s["parentId"], "agent:a");
    let f = &finished(&w.hub, "tool:add")[0];
    assert_eq!(f["output"]["content"][0]["text"], "5");
    assert_eq!(f.get("attempts"), None);
    w.gm.dispose().await;
}

#[tokio::test]
async fn before_edit_sends_the_edited_arguments() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "add",
        json!({"x": 2, "y": 3}),
    )
    .await;
    let p = paused(&w.hub, 1).await;
    assert_eq!(p.payload()["editable"], true, "{:?}", p.payload());
    resume_with(
        &w.hub,
        &p,
        json!({"action": "continue", "input": {"x": 40, "y": 2}}),
    );
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "42");
    assert_eq!(
        w.files.seen.calls(),
        vec![("add".to_owned(), json!({"x": 40, "y": 2}))]
    );
    done(&w).await;
    let f = &finished(&w.hub, "tool:add")[0];
    assert_eq!(f["edited"]["after"], json!({"x": 40, "y": 2}));
    w.gm.dispose().await;
}

#[tokio::test]
async fn before_inject_answers_with_a_valid_result_and_sends_nothing() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "delete_file",
        json!({"path": "/etc"}),
    )
    .await;
    inject_at(&w.hub, 1, json!({"deleted": false})).await;
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(out.structured_content, Some(json!({"deleted": false})));
    assert_eq!(first_text(&out), r#"{"deleted":false}"#);
    assert_eq!(out.is_error, Some(false));
    assert_eq!(w.files.seen.count("delete_file"), 0);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:delete_file",
            "exec.paused tool:delete_file before",
            "exec.resumed inject",
            "node.finished tool:delete_file ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let f = &finished(&w.hub, "tool:delete_file")[0];
    assert_eq!(f["injected"], true);
    assert_eq!(f["injectedAt"], "before");
    assert_eq!(f["output"]["structuredContent"], json!({"deleted": false}));
    w.gm.dispose().await;
}

#[tokio::test]
async fn before_inject_of_a_broken_result_is_refused_and_the_gate_stays_held() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "add",
        json!({"x": 1, "y": 1}),
    )
    .await;
    let p = inject_at(&w.hub, 1, json!({"content": 3})).await;
    wait_count(&w.hub, "exec.refused", 1).await;
    assert!(w.hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "2");
    let events = done(&w).await;
    assert!(
        events.contains(&"exec.refused schema".to_owned()),
        "{events:?}"
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn before_reject_answers_the_model_with_the_reason_as_the_tools_error() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "delete_file",
        json!({"path": "/"}),
    )
    .await;
    let p = reject_at(&w.hub, 1, "not the root").await;
    let actions = p.payload()["actions"].to_string();
    assert!(actions.contains("reject"), "{actions}");
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(out.is_error, Some(true));
    assert_eq!(
        first_text(&out),
        "the call was rejected by a person: not the root"
    );
    assert_eq!(w.files.seen.count("delete_file"), 0);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:delete_file",
            "exec.paused tool:delete_file before",
            "exec.resumed reject",
            "node.error tool:delete_file Rejected",
            "node.finished tool:delete_file error",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(
        finished(&w.hub, "tool:delete_file")[0]["rejected"]["reason"],
        "not the root"
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn before_abort_ends_the_run_with_nothing_sent() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "before"}),
        "delete_file",
        json!({"path": "/"}),
    )
    .await;
    abort_at(&w.hub, 1).await;
    assert!(join(task).await.is_err(), "the run was aborted");
    assert_eq!(w.files.seen.count("delete_file"), 0);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:delete_file",
            "exec.paused tool:delete_file before",
            "exec.resumed abort",
            "node.finished tool:delete_file aborted",
            "node.finished agent:a aborted",
            "run.finished aborted",
        ])
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn after_inject_replaces_the_result() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "after"}),
        "add",
        json!({"x": 2, "y": 3}),
    )
    .await;
    let p = inject_at(&w.hub, 1, json!("six")).await;
    assert_eq!(p.payload()["point"], "after");
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "six");
    assert_eq!(w.files.seen.count("add"), 1);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:add",
            "exec.paused tool:add after",
            "exec.resumed inject",
            "node.finished tool:add ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let f = &finished(&w.hub, "tool:add")[0];
    assert_eq!(f["injected"], true);
    assert_eq!(f["injectedAt"], "after");
    w.gm.dispose().await;
}

#[tokio::test]
async fn after_retry_sends_the_call_again_as_one_execution() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "after"}),
        "add",
        json!({"x": 2, "y": 3}),
    )
    .await;
    retry_at(&w.hub, 1).await;
    continue_at(&w.hub, 2).await;
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "5");
    assert_eq!(w.files.seen.count("add"), 2);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:add",
            "exec.paused tool:add after",
            "exec.resumed retry",
            "exec.paused tool:add after",
            "exec.resumed continue",
            "node.finished tool:add ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&w.hub, "tool:add")[0]["attempts"], 2);
    w.gm.dispose().await;
}

#[tokio::test]
async fn after_abort_ends_the_run() {
    let (w, task) = calling(
        json!({"kind": "tool", "point": "after"}),
        "add",
        json!({"x": 2, "y": 3}),
    )
    .await;
    abort_at(&w.hub, 1).await;
    assert!(join(task).await.is_err(), "the run was aborted");
    let events = done(&w).await;
    assert!(
        events.ends_with(&support::lines(&[
            "exec.paused tool:add after",
            "exec.resumed abort",
            "node.finished tool:add aborted",
            "node.finished agent:a aborted",
            "run.finished aborted",
        ])),
        "{events:?}"
    );
    assert_eq!(w.files.seen.count("add"), 1);
    w.gm.dispose().await;
}

#[tokio::test]
async fn error_gate_holds_an_is_error_result_and_continue_passes_it_on() {
    let (w, task) = calling(json!({"point": "error"}), "fail", json!({})).await;
    let p = paused(&w.hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(w.hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(out.is_error, Some(true));
    assert_eq!(first_text(&out), "disk full");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:fail",
            "node.error tool:fail McpToolError",
            "exec.paused tool:fail error",
            "exec.resumed continue",
            "node.finished tool:fail error",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let e = &w.hub.frames_of("node.error")[0];
    assert_eq!(
        e.payload()["error"]["message"],
        "tools/call returned isError: true — disk full"
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn error_gate_inject_recovers_a_json_rpc_error() {
    let (w, task) = calling(json!({"point": "error"}), "boom", json!({})).await;
    inject_at(&w.hub, 1, json!("recovered")).await;
    let out = join(task).await.expect("not aborted").expect("recovered");
    assert_eq!(first_text(&out), "recovered");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:boom",
            "node.error tool:boom JsonRpcError(-32602)",
            "exec.paused tool:boom error",
            "exec.resumed inject",
            "node.finished tool:boom ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let f = &finished(&w.hub, "tool:boom")[0];
    assert_eq!(f["recoveredFromError"], true);
    assert_eq!(f["injectedAt"], "error");
    w.gm.dispose().await;
}

#[tokio::test]
async fn error_gate_continue_hands_the_caller_the_json_rpc_error() {
    let (w, task) = calling(json!({"point": "error"}), "boom", json!({})).await;
    continue_at(&w.hub, 1).await;
    let out = join(task).await.expect("not aborted");
    assert!(
        matches!(out, Err(ServiceError::McpError(ref e)) if e.message == "no such path"),
        "{out:?}"
    );
    done(&w).await;
    let f = &finished(&w.hub, "tool:boom")[0];
    assert_eq!(f["status"], "error");
    assert_eq!(f["output"]["error"]["code"], -32602);
    w.gm.dispose().await;
}

#[tokio::test]
async fn error_gate_retry_calls_again_and_the_second_answer_stands() {
    let (w, task) = calling(json!({"point": "error"}), "flaky", json!({})).await;
    retry_at(&w.hub, 1).await;
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "fine");
    assert_eq!(w.files.seen.count("flaky"), 2);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:flaky",
            "node.error tool:flaky JsonRpcError(-32603)",
            "exec.paused tool:flaky error",
            "exec.resumed retry",
            "node.finished tool:flaky ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    assert_eq!(finished(&w.hub, "tool:flaky")[0]["attempts"], 2);
    w.gm.dispose().await;
}

#[tokio::test]
async fn error_gate_abort_ends_the_run() {
    let (w, task) = calling(json!({"point": "error"}), "fail", json!({})).await;
    abort_at(&w.hub, 1).await;
    assert!(join(task).await.is_err(), "the run was aborted");
    let events = done(&w).await;
    assert!(
        events.ends_with(&support::lines(&[
            "exec.resumed abort",
            "node.finished tool:fail aborted",
            "node.finished agent:a aborted",
            "run.finished aborted",
        ])),
        "{events:?}"
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn a_transport_error_is_held_at_the_error_gate() {
    let w = world(vec![json!({"point": "error"})], plain()).await;
    let client = w.client;
    let peer = w.mcp.clone();
    // The client's service ends: the transport is closed under the wrapped peer.
    client.cancel().await.expect("cancelled");
    let task = spawn_in_run(&w.gm, peer, |mcp| async move {
        mcp.call_tool(call("add", json!({}))).await
    });
    let p = paused(&w.hub, 1).await;
    assert_eq!(p.payload()["point"], "error");
    assert!(w.hub.resume(p.run_id(), &pause_id(&p), "continue"));
    let out = join(task).await.expect("not aborted");
    assert!(matches!(out, Err(ServiceError::TransportClosed)), "{out:?}");
    runs_finished(&w.hub, 1).await;
    w.hub.assert_valid();
    let e = &w.hub.frames_of("node.error")[0];
    assert_eq!(e.payload()["error"]["name"], "McpTransportClosed");
    w.gm.dispose().await;
}
