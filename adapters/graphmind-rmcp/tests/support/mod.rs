//! Shared by the adapter's integration tests: a real rmcp server (`files`, hand-written
//! `ServerHandler`) and a real rmcp client talking over an in-process duplex pipe, the
//! client's calls made inside the graphmind run `a` on a session attached to the fake
//! debugger (the rest is `graphmind_tests::adapter`).
#![allow(dead_code, unused_imports)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use graphmind_rmcp::{Config, GatedPeer};
use graphmind_tests::FakeDebugger;
pub use graphmind_tests::adapter::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListToolsResult, PaginatedRequestParams,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// What the server saw: each tool call's name and arguments, in order.
#[derive(Clone, Default)]
pub struct Seen(Arc<Mutex<Vec<(String, Value)>>>);

impl Seen {
    /// The calls so far.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.0.lock().expect("not poisoned").clone()
    }

    /// How many calls of `tool` reached the server.
    pub fn count(&self, tool: &str) -> usize {
        self.calls().iter().filter(|(n, _)| n == tool).count()
    }
}

/// The test server `files`: `add` (read-only), `delete_file` (destructive), `echo` (no
/// annotations), `fail` (answers `isError`), `boom` (answers a JSON-RPC error), `flaky`
/// (a JSON-RPC error on its first call, then fine), the resource `mem://note` and the
/// prompt `greet`.
#[derive(Clone, Default)]
pub struct Files {
    /// What reached it.
    pub seen: Seen,
    /// The `traceparent` each tool call carried in its `_meta` (`None` when it had none).
    pub traceparents: Arc<Mutex<Vec<Option<String>>>>,
    flaky: Arc<AtomicUsize>,
}

fn annotated(name: &'static str, read_only: Option<bool>, destructive: Option<bool>) -> Tool {
    let mut t = Tool::new(name, name, Map::new());
    if read_only.is_some() || destructive.is_some() {
        let mut a = ToolAnnotations::default();
        a.read_only_hint = read_only;
        a.destructive_hint = destructive;
        t.annotations = Some(a);
    }
    t
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

impl ServerHandler for Files {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("files", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            annotated("add", Some(true), None),
            annotated("delete_file", Some(false), Some(true)),
            annotated("echo", None, None),
            annotated("fail", None, None),
            annotated("boom", None, None),
            annotated("flaky", None, None),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        let tp = context.meta.0.get_traceparent().map(str::to_owned);
        self.traceparents.lock().expect("not poisoned").push(tp);
        self.seen
            .0
            .lock()
            .expect("not poisoned")
            .push((request.name.to_string(), Value::Object(args.clone())));
        let n = |k: &str| args.get(k).and_then(Value::as_i64).unwrap_or(0);
        let result = match &*request.name {
            "add" => text((n("x") + n("y")).to_string()),
            "delete_file" => text(format!(
                "deleted {}",
                args.get("path").and_then(Value::as_str).unwrap_or("?")
            )),
            "echo" => text(Value::Object(args).to_string()),
            "fail" => CallToolResult::error(vec![ContentBlock::text("disk full")]),
            "boom" => return Err(McpError::invalid_params("no such path", None)),
            "flaky" if self.flaky.fetch_add(1, Ordering::SeqCst) == 0 => {
                return Err(McpError::internal_error("try again", None));
            }
            "flaky" => text("fine"),
            _ => return Err(McpError::invalid_params("unknown tool", None)),
        };
        Ok(result.into())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Ok(ReadResourceResult::new(vec![ResourceContents::text("a note", request.uri)]).into())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let who = request
            .arguments
            .and_then(|a| a.get("name").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Hello {who}"),
        )])
        .into())
    }
}

/// A client connected to a fresh [`Files`] server over an in-process duplex pipe.
pub async fn connect() -> (RunningService<RoleClient, ()>, Files) {
    let files = Files::default();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = files.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("client initialized");
    (client, files)
}

/// Arguments as rmcp takes them.
pub fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// A tool call of `name` with `arguments`.
pub fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(args(arguments))
}

/// A session attached to `hub`, which sent `breakpoints` in its ack.
pub async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    graphmind_tests::adapter::attached(hub, "rmcp-tests", breakpoints).await
}

/// Runs `f` with the wrapped client inside the graphmind run `a` on `gm`, on a task of its
/// own.
pub fn spawn_in_run<T, F, Fut>(
    gm: &graphmind::Session,
    mcp: GatedPeer,
    f: F,
) -> tokio::task::JoinHandle<Result<T, graphmind::Aborted>>
where
    T: Send + 'static,
    F: FnOnce(GatedPeer) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let gm = gm.clone();
    tokio::spawn(async move { gm.run("a", f(mcp)).await })
}

/// Everything one test needs: the fake debugger, a session attached to it with
/// `breakpoints`, a server and a wrapped client with `config`.
pub struct World {
    /// The fake debugger.
    pub hub: FakeDebugger,
    /// The session attached to it.
    pub gm: graphmind::Session,
    /// The wrapped client.
    pub mcp: GatedPeer,
    /// The server's record.
    pub files: Files,
    /// Keeps the client's service running.
    pub client: RunningService<RoleClient, ()>,
}

/// A [`World`] whose hub set `breakpoints`, with the annotation holds of `config`.
pub async fn world(breakpoints: Vec<Value>, config: Config) -> World {
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, breakpoints).await;
    let (client, files) = connect().await;
    let mcp = GatedPeer::with_config(client.peer().clone(), config);
    World {
        hub,
        gm,
        mcp,
        files,
        client,
    }
}

/// The text of a tool result's first block.
pub fn first_text(r: &CallToolResult) -> String {
    r.content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// The events of the run `a`, each schema-checked, once it has finished.
pub async fn done(w: &World) -> Vec<String> {
    runs_finished(&w.hub, 1).await;
    w.hub.assert_valid();
    events(&w.hub)
}

/// The head every test's run shares.
pub const HEAD: [&str; 2] = ["run.started", "node.started agent:a"];

/// [`HEAD`] then `tail`.
pub fn expect(tail: &[&str]) -> Vec<String> {
    HEAD.iter().chain(tail).map(|s| (*s).to_owned()).collect()
}
