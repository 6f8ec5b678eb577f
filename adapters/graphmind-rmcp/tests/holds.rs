//! Holds from the tools' MCP annotations: a `destructiveHint: true` tool holds before it runs
//! while a debugger is attached, with no breakpoint, and says why; a `readOnlyHint: true`
//! tool never holds by default; both switch; the run's `graph.hint` shows them.

mod support;

use std::time::Duration;

use graphmind_rmcp::{Config, GatedPeer};
use serde_json::json;
use support::{call, continue_at, done, expect, first_text, join, paused, spawn_in_run, world};

#[tokio::test]
async fn a_destructive_tool_holds_before_it_runs_by_default_and_says_why() {
    let w = world(vec![], Config::default()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("delete_file", json!({"path": "/tmp/x"})))
            .await
    });
    let p = paused(&w.hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "tool:delete_file");
    assert_eq!(p.payload()["point"], "before");
    assert_eq!(p.payload()["reason"], "breakpoint");
    assert_eq!(
        p.payload()["holdReason"],
        "held before it runs: MCP server `files` marks tool `delete_file` destructive (destructiveHint: true)"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        w.files.seen.count("delete_file"),
        0,
        "held before it was sent"
    );
    continue_at(&w.hub, 1).await;
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "deleted /tmp/x");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:delete_file",
            "graph.hint tool:add,tool:delete_file,tool:echo,tool:fail,tool:boom,tool:flaky",
            "exec.paused tool:delete_file before",
            "exec.resumed continue",
            "node.finished tool:delete_file ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn the_graph_hint_shows_the_annotations_and_which_tool_holds() {
    let w = world(vec![], Config::default()).await;
    let listed = w.mcp.list_all_tools().await.expect("listed");
    assert_eq!(listed.len(), 6);
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("add", json!({"x": 1, "y": 2}))).await
    });
    join(task).await.expect("not aborted").expect("answered");
    done(&w).await;
    let hint = w.hub.frames_of("graph.hint")[0].payload().clone();
    let nodes = hint["nodes"].as_array().expect("nodes").clone();
    let node = |id: &str| nodes.iter().find(|n| n["nodeId"] == id).cloned().expect(id);
    assert_eq!(
        node("tool:add")["annotations"],
        json!({"readOnlyHint": true})
    );
    assert_eq!(node("tool:add").get("holdReason"), None);
    assert_eq!(
        node("tool:delete_file")["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true})
    );
    assert!(
        node("tool:delete_file")["holdReason"]
            .as_str()
            .is_some_and(|r| r.contains("destructiveHint: true"))
    );
    assert_eq!(node("tool:echo").get("annotations"), None);
    assert_eq!(node("tool:delete_file")["server"], "files");
    w.gm.dispose().await;
}

#[tokio::test]
async fn a_read_only_tool_never_holds_by_default() {
    let w = world(vec![], Config::default()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("add", json!({"x": 1, "y": 2}))).await
    });
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "3");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:add",
            "graph.hint tool:add,tool:delete_file,tool:echo,tool:fail,tool:boom,tool:flaky",
            "node.finished tool:add ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn read_only_tools_hold_when_switched_on() {
    let w = world(vec![], Config::default().hold_read_only(true)).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("add", json!({"x": 1, "y": 2}))).await
    });
    let p = continue_at(&w.hub, 1).await;
    assert!(
        p.payload()["holdReason"]
            .as_str()
            .is_some_and(|r| r.contains("readOnlyHint: true"))
    );
    join(task).await.expect("not aborted").expect("answered");
    done(&w).await;
    w.gm.dispose().await;
}

#[tokio::test]
async fn switched_off_a_destructive_tool_runs_without_a_hold_and_nothing_is_listed() {
    let w = world(vec![], Config::default().hold_destructive(false)).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("delete_file", json!({"path": "/tmp/x"})))
            .await
    });
    join(task).await.expect("not aborted").expect("answered");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:delete_file",
            "node.finished tool:delete_file ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn a_breakpoint_hold_on_a_destructive_tool_is_the_breakpoints_and_says_nothing_more() {
    let w = world(vec![json!({"kind": "tool"})], Config::default()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("delete_file", json!({"path": "/tmp/x"})))
            .await
    });
    let p = continue_at(&w.hub, 1).await;
    assert_eq!(p.payload()["reason"], "breakpoint");
    assert_eq!(p.payload().get("holdReason"), None);
    join(task).await.expect("not aborted").expect("answered");
    done(&w).await;
    assert_eq!(w.hub.frames_of("exec.paused").len(), 1, "one hold, not two");
    w.gm.dispose().await;
}

#[tokio::test]
async fn detached_a_destructive_tool_runs_at_once() {
    let (hub, gm) = support::detached("rmcp-tests").await;
    let (client, files) = support::connect().await;
    let mcp = GatedPeer::with_config(client.peer().clone(), Config::default());
    let task = spawn_in_run(&gm, mcp, |mcp| async move {
        mcp.call_tool(call("delete_file", json!({"path": "/tmp/x"})))
            .await
    });
    let out = join(task).await.expect("not aborted").expect("answered");
    assert_eq!(first_text(&out), "deleted /tmp/x");
    assert_eq!(files.seen.count("delete_file"), 1);
    assert!(hub.frames_of("exec.paused").is_empty());
    gm.dispose().await;
}
