//! graphmind for [rmcp](https://docs.rs/rmcp), the Rust MCP SDK: every `tools/call` an
//! agent's MCP client makes becomes a node of the agent's run, live in the debugger and held
//! at its gates — on the agent's side, inside the run, under the model step that asked for
//! it.
//!
//! ```no_run
//! use graphmind_rmcp::GatedPeer;
//! use rmcp::model::CallToolRequestParams;
//!
//! # async fn demo(service: rmcp::service::RunningService<rmcp::RoleClient, ()>) -> Result<(), rmcp::ServiceError> {
//! let _gm = graphmind::init(graphmind::Config::new("my-agent"));
//! let mcp = GatedPeer::new(service.peer().clone());
//! mcp.list_all_tools().await?;
//! let result = mcp
//!     .call_tool(CallToolRequestParams::new("delete_file").with_arguments(
//!         serde_json::json!({"path": "/tmp/x"}).as_object().cloned().unwrap_or_default(),
//!     ))
//!     .await?;
//! # let _ = result; Ok(())
//! # }
//! ```
//!
//! # Per tool call (one execution of `tool:<name>`)
//! - `node.started`: kind `tool`, the arguments as input, `server` (the name from the
//!   server's `initialize` answer) and `method: "tools/call"` as loose fields; instanceId the
//!   model's tool-call id given to [`GatedPeer::call_tool_for`], else a generated one. Inside
//!   a run that has had a model step, the parent is `llm:step`, else the run's agent node.
//! - `before`, before the request leaves: continue; edit (GraphMind 0.6 `edit-input`) sends
//!   the edited arguments; inject answers with the value as a `CallToolResult` (a string
//!   becomes one text block, an object also its `structuredContent`, a
//!   `{"content": [...]}` object is taken as it is; anything that cannot be one is refused
//!   with `exec.refused`), and nothing is sent; reject sends nothing and answers the model
//!   with an `isError` result saying the call was rejected by a person and why; abort ends
//!   the run.
//! - `after`, when the result came: inject replaces it, retry sends the call again (from
//!   `before`), abort ends the run.
//! - `error`, when the server answered with a JSON-RPC error (`JsonRpcError(<code>)`), the
//!   transport failed (`McpTransportClosed`, …), or the result says `isError: true`
//!   (`McpToolError`): retry, inject (`recoveredFromError: true`), continue (the caller gets
//!   the error or the result as it was), abort.
//! - `node.finished`: the `CallToolResult` (or `{error}` for a JSON-RPC error) as output,
//!   `attempts` when sent more than once, `injected` and `injectedAt`.
//! - The request carries the node's W3C `traceparent` in `params._meta` (unless the app set
//!   one): the trace and span ids the hub's OTLP export gives the run and this call's node.
//! - rmcp's own request timeout never runs while a gate holds: `before` holds before the
//!   request is handed to rmcp, `after` and `error` once rmcp has returned the answer.
//! - A call whose future is dropped (at a held gate or in flight) finishes `aborted` with
//!   `cancelled: true`; rmcp itself sends `notifications/cancelled` for a request already sent.
//!
//! # Holds from the tools' annotations
//! While a debugger is attached, a tool whose server marks it `destructiveHint: true` holds
//! before it runs without a breakpoint (`exec.paused` reason `breakpoint`, with `holdReason`
//! saying so); a `readOnlyHint: true` tool never holds by default. [`Config`] (or
//! `GRAPHMIND_MCP_HOLD_DESTRUCTIVE=0`, `GRAPHMIND_MCP_HOLD_READ_ONLY=1`) switches them.
//! The tools come from [`GatedPeer::list_all_tools`] / [`GatedPeer::list_tools`]; when none
//! were listed through the wrapper, the first call made while attached lists them once. Each
//! run's first call sends a `graph.hint` of the server's tools with their annotations.
//!
//! # `resources/read` and `prompts/get`
//! Nodes `resource:<uri>` (kind `resource`) and `prompt:<name>` (kind `prompt`), gated like a
//! tool call but without edit or reject; an inject becomes a `ReadResourceResult` (one text
//! content at the read's URI) or a `GetPromptResult` (one user message).
//!
//! # Fail-open
//! With graphmind disabled the wrapper calls straight through. Detached, gates continue at
//! once. The adapter's bookkeeping runs under `catch_unwind`: should it panic, the call goes
//! on uninstrumented with a rate-limited warning.

mod cancel;
mod client;
mod holds;
mod inject;
#[cfg(feature = "proxy")]
pub mod proxy;

pub use client::{ABORTED, GatedPeer};
pub use holds::{Config, HOLD_DESTRUCTIVE_ENV, HOLD_READ_ONLY_ENV};

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Runs adapter bookkeeping fail-open ([`graphmind::node::fail_open`] under this crate's name):
/// `None` after a rate-limited warning when it panicked, and the call goes on uninstrumented.
fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    graphmind::node::fail_open(env!("CARGO_PKG_NAME"), what, f)
}
