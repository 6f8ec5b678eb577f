//! `mcp-proxy` in front of an MCP server written with the Python `mcp` SDK: with nothing
//! held or changed, the client gets the server's answers byte for byte.

#[path = "support/proxy.rs"]
mod proxy_support;

use std::process::Stdio;

use graphmind_tests::FakeDebugger;
use proxy_support::{conversation, converse, proxied, server_script};

const CALL_ADD: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"x":2,"y":3}}}"#;
const CALL_FAIL: &str =
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","arguments":{}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_pass_through_byte_for_byte_when_nothing_changes() {
    let lines = conversation(&[CALL_ADD, CALL_FAIL]);
    // The server on its own.
    let mut bare = tokio::process::Command::new("python3")
        .arg(server_script())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs the server");
    let direct = converse(
        &lines,
        bare.stdin.take().expect("stdin"),
        bare.stdout.take().expect("stdout"),
    )
    .await;
    // The same conversation through the proxy, attached to a debugger that holds nothing.
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![]);
    let gm = graphmind::init(hub.config("mcp-proxy-tests"));
    assert!(
        gm.ready(graphmind_tests::adapter::SECOND * 5).await,
        "attached"
    );
    let (task, to, from) = proxied();
    let through = converse(&lines, to, from).await;
    assert_eq!(direct.len(), 4);
    for (a, b) in direct.iter().zip(&through) {
        assert_eq!(String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    }
    assert!(String::from_utf8_lossy(&through[3]).contains(r#""isError":true"#));
    // The calls were observed all the same.
    hub.wait_count("node.finished", 2, graphmind_tests::adapter::SECOND * 10)
        .await;
    let lines = graphmind_tests::adapter::events(&hub);
    for expected in [
        "node.started tool:add",
        "node.finished tool:add ok",
        "node.started tool:fail",
        "node.error tool:fail McpToolError",
        "node.finished tool:fail error",
    ] {
        assert!(
            lines.contains(&expected.to_owned()),
            "{expected} in {lines:?}"
        );
    }
    let started = &graphmind_tests::adapter::started(&hub, "tool:add")[0];
    assert_eq!(started["server"], "py-files");
    assert_eq!(started["method"], "tools/call");
    assert_eq!(started["input"], serde_json::json!({"x": 2, "y": 3}));
    hub.assert_valid();
    drop(task);
    gm.dispose().await;
}
