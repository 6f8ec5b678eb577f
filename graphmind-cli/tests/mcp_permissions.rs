//! `graphmind mcp` under every `--allow-control` level of a real `graphmind serve`, driven by
//! the Python MCP SDK's stdio client: reads work at every level; breakpoints, the mode and
//! resumes need `resume`, an injected result `inject`, an edited input `edit` — exactly as for
//! the CLI — and a forbidden call answers with the level it needs. At an allowed level the
//! request reaches the hub (which answers that no such pause is open).

mod mcp_client;
mod support;

use mcp_client::McpClient;
use serde_json::json;
use support::*;

/// The levels, weakest first.
const LEVELS: [&str; 4] = ["off", "resume", "inject", "edit"];

fn allowed(have: &str, need: &str) -> bool {
    let rank = |l| LEVELS.iter().position(|x| *x == l).expect("a level");
    rank(have) >= rank(need)
}

#[test]
fn every_allow_control_level_lets_the_mcp_tools_do_exactly_what_it_lets_the_cli_do() {
    for level in LEVELS {
        let dir = TempDir::new("mcp-perm");
        let hub = SpawnedHub::start_in(&dir.0, &["--allow-control", level]);
        let mut mcp = McpClient::start(&dir.0, hub.port, "perm-test");

        // Reads at every level.
        let runs = mcp.call("list_runs", json!({})).ok();
        assert!(runs.starts_with("no runs yet"), "{level}: {runs}");
        let state = mcp.call("list_breakpoints", json!({})).ok();
        assert!(state.starts_with("mode: run"), "{level}: {state}");
        assert_eq!(
            mcp.call("list_pauses", json!({})).ok(),
            "no open pauses",
            "{level}"
        );

        let forbidden = |text: &str, need: &str| {
            assert!(
                text.starts_with("forbidden: ")
                    && text.contains(&format!("needs --allow-control {need}"))
                    && text.contains(&format!("runs with --allow-control {level}")),
                "{level}: {text}"
            );
        };

        // Breakpoints and the mode: resume.
        for (tool, args) in [
            (
                "set_breakpoint",
                json!({"kind": "tool", "name": "lookup_order"}),
            ),
            ("set_mode", json!({"mode": "step"})),
            ("set_mode", json!({"mode": "run"})),
            (
                "clear_breakpoints",
                json!({"kind": "tool", "name": "lookup_order"}),
            ),
        ] {
            let a = mcp.call(tool, args);
            if allowed(level, "resume") {
                let text = a.ok();
                assert!(text.contains("mode: "), "{level} {tool}: {text}");
            } else {
                forbidden(&a.err(), "resume");
            }
        }
        // The hub's state changed only where allowed: a breakpoint set through MCP is there.
        if allowed(level, "resume") {
            mcp.call("set_breakpoint", json!({"kind": "llm"})).ok();
            let debug = hub.get_json("/api/debug");
            assert!(
                debug["breakpoints"]
                    .as_array()
                    .expect("list")
                    .iter()
                    .any(|b| b["kind"] == "llm"),
                "{level}: {debug}"
            );
        } else {
            let debug = hub.get_json("/api/debug");
            assert_eq!(debug["mode"], json!("run"), "{level}");
        }

        // Resumes: continue needs resume, inject needs inject, an edited input needs edit.
        for (args, need) in [
            (json!({"action": "continue"}), "resume"),
            (json!({"action": "reject", "reason": "no"}), "resume"),
            (json!({"action": "abort"}), "resume"),
            (
                json!({"action": "inject", "output": {"ok": true}}),
                "inject",
            ),
            (json!({"action": "continue", "input": {"a": 1}}), "edit"),
        ] {
            let mut args = args;
            args["pauseId"] = json!("pause_none_1");
            args["runId"] = json!("run_none");
            let text = mcp.call("resume_pause", args.clone()).err();
            if allowed(level, need) {
                assert!(
                    text.starts_with("pause_none_1 is gone:"),
                    "{level} {args}: {text}"
                );
            } else {
                forbidden(&text, need);
            }
        }
    }
}
