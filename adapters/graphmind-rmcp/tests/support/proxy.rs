//! The mcp-proxy tests' MCP client: raw JSON-RPC lines to a server (the Python `mcp` SDK's,
//! `tests/python/files_server.py`), run bare or behind `graphmind_rmcp::proxy`.
#![allow(dead_code)]

use std::time::Duration;

use graphmind_rmcp::proxy::{ProxyConfig, run};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The Python server's path.
pub fn server_script() -> String {
    format!(
        "{}/tests/python/files_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The MCP handshake then `calls` (each a `tools/call` line's JSON), as the client sends them.
pub fn conversation(calls: &[&str]) -> Vec<String> {
    let mut lines = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_owned(),
    ];
    lines.extend(calls.iter().map(|c| (*c).to_owned()));
    lines
}

/// Sends each line and, for a request, reads its one answer line (bytes as they came).
pub async fn converse(
    lines: &[String],
    to: impl AsyncWrite + Unpin,
    from: impl AsyncRead + Unpin,
) -> Vec<Vec<u8>> {
    converse_on(lines, &mut { to }, &mut BufReader::new(from)).await
}

/// [`converse`] on streams the caller keeps.
pub async fn converse_on(
    lines: &[String],
    to: &mut (impl AsyncWrite + Unpin),
    from: &mut (impl AsyncBufReadExt + Unpin),
) -> Vec<Vec<u8>> {
    let mut answers = Vec::new();
    for line in lines {
        to.write_all(format!("{line}\n").as_bytes())
            .await
            .expect("sent");
        to.flush().await.expect("flushed");
        if line.contains(r#""id":"#) {
            let mut answer = Vec::new();
            tokio::time::timeout(Duration::from_secs(30), from.read_until(b'\n', &mut answer))
                .await
                .expect("answered in time")
                .expect("read");
            answers.push(answer);
        }
    }
    answers
}

/// The server behind the proxy, the client on an in-process pipe: the proxy's task and the
/// client's two ends.
pub fn proxied() -> (
    tokio::task::JoinHandle<std::io::Result<i32>>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
) {
    let (client, proxy_side) = tokio::io::duplex(256 * 1024);
    let (proxy_in, proxy_out) = tokio::io::split(proxy_side);
    let config = ProxyConfig {
        command: "python3".into(),
        args: vec![server_script()],
        holds: graphmind_rmcp::Config::default(),
    };
    let task = tokio::spawn(run(config, proxy_in, proxy_out));
    let (from, to) = tokio::io::split(client);
    (task, to, from)
}
