//! `graphmind mcp-proxy -- python3 files_server.py` as an MCP client launches it: the Python
//! `mcp` SDK's server answers through the proxy, and the proxy exits with the server once the
//! client closes stdin (here with graphmind disabled: a plain relay).

#![cfg(feature = "mcp-proxy")]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_proxy_relays_a_python_servers_answers_and_exits_with_it() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../adapters/graphmind-rmcp/tests/python/files_server.py"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["mcp-proxy", "--", "python3", script])
        .env("GRAPHMIND_DISABLED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("graphmind runs");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"x":2,"y":3}}}"#,
    ] {
        writeln!(stdin, "{line}").expect("sent");
    }
    stdin.flush().expect("flushed");
    // The answers come before the client goes (a server may stop at once on EOF).
    std::thread::sleep(Duration::from_secs(3));
    drop(stdin);
    let started = Instant::now();
    let out = child.wait_with_output().expect("exited");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "exited with the server"
    );
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].contains(r#""serverInfo":{"name":"py-files""#),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with(r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"5""#),
        "{stdout}"
    );
}
