//! What `GatedPeer` adds to one MCP `tools/call`, detached (graphmind enabled, nothing
//! listening: the node's events land in the replay ring): a real rmcp client and server over
//! an in-process duplex pipe, `peer.call_tool(…)` bare against `GatedPeer::call_tool(…)`.
//!
//! The two cases are interleaved (each iteration runs both, in alternating order) on one
//! current-thread runtime, so drift of the machine hits both alike; the result is the
//! difference and the ratio of the medians in the same run.
//!
//! Run: `cargo bench -p graphmind-rmcp --bench rmcp_overhead` (under `cargo test` it runs a
//! few iterations only, as a smoke test).

use std::time::Instant;

use graphmind_rmcp::{Config, GatedPeer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (warmup, iterations) = match std::env::args().any(|a| a == "--bench") {
        true => (500, 5000),
        false => (5, 20),
    };
    let _gm = graphmind::init(
        graphmind::Config::new("rmcp-bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (mut bare, mut wrapped) = rt.block_on(async {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = Echo.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = ().serve(client_io).await.expect("initialized");
        let peer = client.peer().clone();
        let gated = GatedPeer::with_config(peer.clone(), Config::default());
        let params = CallToolRequestParams::new("echo");
        let (mut b, mut w) = (Vec::new(), Vec::new());
        for i in 0..warmup + iterations {
            let one = async |gated_call: bool| {
                let t = Instant::now();
                let out = match gated_call {
                    true => gated.call_tool(params.clone()).await,
                    false => peer.call_tool(params.clone()).await,
                };
                assert!(out.is_ok());
                t.elapsed().as_secs_f64() * 1e6
            };
            let first = i % 2 == 0;
            let x = one(first).await;
            let y = one(!first).await;
            let (tb, tw) = if first { (y, x) } else { (x, y) };
            if i >= warmup {
                b.push(tb);
                w.push(tw);
            }
        }
        drop(client);
        (b, w)
    });
    let (mb, mw) = (median(&mut bare), median(&mut wrapped));
    println!(
        "rmcp_overhead: one tools/call over an in-process duplex pipe, {iterations} interleaved iterations"
    );
    println!("  bare rmcp peer     median {mb:8.1} µs");
    println!("  GatedPeer detached median {mw:8.1} µs");
    println!(
        "  added              {:+8.1} µs per call   ratio {:.3}",
        mw - mb,
        mw / mb
    );
}
