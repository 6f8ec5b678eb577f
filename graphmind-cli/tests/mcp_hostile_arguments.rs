//! Hostile arguments to `graphmind mcp` (wrong types, unknown fields, out-of-range numbers,
//! huge and deeply nested JSON, unknown ids), sent by the Python MCP SDK's stdio client: each
//! is answered with an MCP error within the client's timeout — never a panic, never a hang —
//! and the server goes on answering afterwards.

mod mcp_client;
mod support;

use mcp_client::{Answer, McpClient};
use serde_json::{Value, json};
use support::*;

fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = json!([v]);
    }
    v
}

#[test]
fn hostile_arguments_are_answered_with_mcp_errors_and_the_server_keeps_serving() {
    let dir = TempDir::new("mcp-hostile");
    let hub = SpawnedHub::start_in(&dir.0, &["--allow-control", "edit"]);
    let mut mcp = McpClient::start(&dir.0, hub.port, "hostile-test");

    // Wrong types, unknown fields, values out of range, a missing required argument.
    for (tool, args, says) in [
        ("list_runs", json!({"limit": "ten"}), "invalid type"),
        ("list_runs", json!({"limit": 0}), "limit must be 1 to 200"),
        ("list_runs", json!({"limit": -5}), "invalid value"),
        (
            "list_runs",
            json!({"status": "sideways"}),
            "unknown variant",
        ),
        ("get_run", json!({"runId": 5}), "invalid type"),
        ("get_run", json!({}), "missing field `runId`"),
        (
            "get_run",
            json!({"runId": "r", "bogus": 1}),
            "unknown field `bogus`",
        ),
        ("get_run", json!({"runId": "   "}), "runId is empty"),
        (
            "get_execution",
            json!({"runId": "r", "executionId": "1", "field": "secrets"}),
            "unknown variant",
        ),
        (
            "resume_pause",
            json!({"pauseId": "p", "action": "explode"}),
            "unknown variant",
        ),
        (
            "resume_pause",
            json!({"pauseId": ["p"], "action": "continue"}),
            "invalid type",
        ),
        (
            "wait_for_pause",
            json!({"timeoutSeconds": 1e12}),
            "timeoutSeconds must be 0 to 300",
        ),
        (
            "wait_for_pause",
            json!({"timeoutSeconds": -1}),
            "timeoutSeconds",
        ),
        ("set_mode", json!({"mode": "warp"}), "unknown variant"),
        ("set_breakpoint", json!({}), "needs kind, name and/or point"),
        ("clear_breakpoints", json!({}), "or pass all: true"),
        (
            "set_breakpoint",
            json!({"name": "n".repeat(5000)}),
            "name must be 1 to 4096 bytes",
        ),
    ] {
        let text = mcp.call(tool, args.clone()).err();
        assert!(text.contains(says), "{tool} {args}: {text}");
    }

    // Huge: a 2 MB injected output, a 100,000-character id.
    let text = mcp
        .call(
            "resume_pause",
            json!({"pauseId": "p", "runId": "r", "action": "inject", "output": "x".repeat(2_000_000)}),
        )
        .err();
    assert!(
        text.contains("bytes of JSON; a resume takes at most"),
        "{text}"
    );
    let text = mcp
        .call("get_run", json!({"runId": "r".repeat(100_000)}))
        .err();
    assert!(text.contains("longer than 256 characters"), "{text}");

    // Deep: deeper than the hub takes, and deeper than the JSON parser reads at all.
    match mcp.call(
        "resume_pause",
        json!({"pauseId": "p", "runId": "r", "action": "inject", "output": nested(110)}),
    ) {
        Answer::Error { code, message } => {
            assert_eq!(code, -32602, "{message}");
            assert!(message.contains("nested 110 levels deep"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match mcp.call(
        "resume_pause",
        json!({"pauseId": "p", "runId": "r", "action": "inject", "output": nested(200)}),
    ) {
        Answer::Error { code, message } => {
            assert_eq!(code, -32600, "{message}");
            assert!(
                message.contains("nested deeper than 128 levels"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }

    // Unknown ids: said plainly, with where to look.
    let text = mcp.call("get_run", json!({"runId": "run_nope"})).err();
    assert_eq!(
        text,
        "no run run_nope on the hub (list_runs shows the runs)"
    );
    let text = mcp
        .call(
            "get_execution",
            json!({"runId": "run_nope", "executionId": "#1"}),
        )
        .err();
    assert!(text.starts_with("no run run_nope"), "{text}");
    let text = mcp
        .call(
            "resume_pause",
            json!({"pauseId": "pause_nope", "action": "continue"}),
        )
        .err();
    assert_eq!(
        text,
        "no open pause pause_nope (list_pauses shows the open ones)"
    );
    let text = mcp
        .call(
            "resume_pause",
            json!({"pauseId": "pause_nope", "runId": "run_nope", "action": "abort"}),
        )
        .err();
    assert!(text.starts_with("pause_nope is gone:"), "{text}");
    match mcp.call("no_such_tool", json!({})) {
        Answer::Error { .. } | Answer::Result { is_error: true, .. } => {}
        other => panic!("{other:?}"),
    }

    // Still serving, and the hub untouched.
    assert!(
        mcp.call("list_runs", json!({}))
            .ok()
            .starts_with("no runs yet")
    );
    let debug = hub.get_json("/api/debug");
    assert_eq!(debug["mode"], json!("run"));
}
