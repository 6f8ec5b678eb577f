//! `graphmind mcp`: an MCP server (over stdio) through which a coding agent debugs a running
//! agent — it reads the runs of a graphmind hub, waits for a pause, reads the held call and
//! resumes it (continue, step, retry, inject, edit the input, reject, abort), and sets the
//! breakpoints and the mode. The newest runs are also resources (`graphmind://runs/<runId>`).
//!
//! The server finds the hub as the `graphmind` control commands do
//! ([`graphmind_connect::Hub::locate`]: `--port`, else `GRAPHMIND_PORT`, else 4747, else the
//! one live hub of the run files) and acts with the agent token of its run file, so what the
//! tools may do is the hub's `--allow-control` level, exactly as for the CLI: a tool the level
//! forbids answers with the level it needs. Every resume is stamped by the hub with principal
//! `agent`, and carries the operator label `mcp:<client name>`.
//!
//! [`SKILL`] is the skill file (`SKILL.md`) `graphmind skill` writes for coding agents.

mod server;
mod stdio;
pub mod view;

use std::time::Duration;

pub use server::GraphmindMcp;

/// The skill file for coding agents (`SKILL.md`, with front matter): when to use graphmind,
/// its commands and MCP tools, and the debugging loop.
pub const SKILL: &str = include_str!("../SKILL.md");

/// Serves MCP over stdin/stdout until the client closes stdin, talking to the hub on `port`
/// (found as the control commands find it when `None`). Blocks; builds its own runtime.
///
/// # Errors
/// When the runtime cannot start or the MCP session fails to initialize.
pub fn serve_stdio(port: Option<u16>) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let out = rt.block_on(async move {
        use rmcp::ServiceExt as _;
        let (session_end, bridge_end) = tokio::io::duplex(1 << 20);
        let bridge = tokio::spawn(stdio::bridge(
            tokio::io::stdin(),
            tokio::io::stdout(),
            bridge_end,
        ));
        let service = GraphmindMcp::new(port)
            .serve(session_end)
            .await
            .map_err(|e| format!("the MCP session did not start: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| format!("the MCP session failed: {e}"))?;
        // Its last answers out (the client closed stdin, or the session ended on its own).
        let _ = tokio::time::timeout(Duration::from_secs(2), bridge).await;
        Ok(())
    });
    // A read of stdin still pending cannot be cancelled: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    out
}
