//! [`GatedPeer`]: an rmcp client's peer whose `tools/call`, `resources/read` and
//! `prompts/get` are node executions of the running task's graphmind run, gated before the
//! request leaves, after its result and on its error.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use graphmind::node::{Extras, Node, Recording, Resume};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResult,
    JsonObject, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResult, RequestMetaObject, Tool,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cancel::Cancel;
use crate::guard;
use crate::holds::{Config, annotations_value};
use crate::inject::{self, PromptInject, ResourceInject, ToolInject};

/// What the caller gets when the debugger aborts a call outside any graphmind run (inside
/// one, the run itself ends with [`graphmind::Aborted`]).
pub const ABORTED: &str = "graphmind: the debugger aborted this MCP call";

/// An rmcp client's [`Peer`] with graphmind at its calls. Each `tools/call` is one execution
/// of node `tool:<name>` (kind `tool`; the server's name and `method` on its `node.started`,
/// the arguments as its input, the `CallToolResult` as its output); `resources/read` is
/// `resource:<uri>` and `prompts/get` is `prompt:<name>`. Calls made inside a
/// `#[graphmind::model_step]`'s run hang under its `llm:step`, as `#[graphmind::tool]` calls
/// do. Clone it freely: clones share the tool list it learnt (for the annotation holds).
///
/// ```no_run
/// use graphmind_rmcp::GatedPeer;
/// use rmcp::model::CallToolRequestParams;
///
/// # async fn demo(service: rmcp::service::RunningService<rmcp::RoleClient, ()>) -> Result<(), rmcp::ServiceError> {
/// let mcp = GatedPeer::new(service.peer().clone());
/// let tools = mcp.list_all_tools().await?; // remembered: their annotations decide holds
/// let result = mcp.call_tool(CallToolRequestParams::new("search")).await?;
/// # let _ = (tools, result); Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct GatedPeer {
    peer: Peer<RoleClient>,
    state: Arc<State>,
}

impl std::fmt::Debug for GatedPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedPeer")
            .field("config", &self.state.config)
            .finish_non_exhaustive()
    }
}

struct State {
    config: Config,
    /// The server's tools, once listed (through this peer, or fetched once for the holds).
    tools: Mutex<Option<Arc<Vec<Tool>>>>,
}

/// One call's method, as the gate loop needs it.
struct Method<O> {
    kind: NodeKind,
    method: &'static str,
    /// A result that is a failure the server reported in the result itself (`isError`).
    failed: fn(&O) -> Option<String>,
    /// The checked injected value as this method's result.
    inject: fn(Value, &str) -> Result<O, String>,
    /// The result a rejected call answers with, where a person may reject it.
    reject: Option<fn(&str) -> O>,
}

const TOOL: Method<CallToolResult> = Method {
    kind: NodeKind::Tool,
    method: "tools/call",
    failed: tool_failed,
    inject: |v, _| inject::tool_result(v),
    reject: Some(|reason| {
        let told = graphmind::Rejection::new(reason).to_string();
        CallToolResult::error(vec![ContentBlock::text(told)])
    }),
};

const RESOURCE: Method<ReadResourceResult> = Method {
    kind: NodeKind::Resource,
    method: "resources/read",
    failed: |_| None,
    inject: inject::resource_result,
    reject: None,
};

const PROMPT: Method<GetPromptResult> = Method {
    kind: NodeKind::Prompt,
    method: "prompts/get",
    failed: |_| None,
    inject: |v, _| inject::prompt_result(v),
    reject: None,
};

fn tool_failed(r: &CallToolResult) -> Option<String> {
    if r.is_error != Some(true) {
        return None;
    }
    let detail: Vec<&str> = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    let detail = detail.join("\n");
    Some(match detail.is_empty() {
        true => "tools/call returned isError: true".to_owned(),
        false => format!(
            "tools/call returned isError: true — {}",
            detail.chars().take(500).collect::<String>()
        ),
    })
}

/// `node.error`'s `{name, message}` of a failed call.
fn service_error(e: &ServiceError) -> (String, String) {
    let name = match e {
        ServiceError::McpError(data) => format!("JsonRpcError({})", data.code.0),
        ServiceError::TransportSend(_) => "McpTransportSendError".into(),
        ServiceError::TransportClosed => "McpTransportClosed".into(),
        ServiceError::Timeout { .. } => "McpTimeout".into(),
        ServiceError::Cancelled { .. } => "McpCancelled".into(),
        _ => "McpServiceError".into(),
    };
    let message = match e {
        ServiceError::McpError(data) => data.message.to_string(),
        other => other.to_string(),
    };
    (name, message)
}

impl GatedPeer {
    /// Wraps `peer` with the annotation holds of [`Config::from_env`].
    #[must_use]
    pub fn new(peer: Peer<RoleClient>) -> Self {
        Self::with_config(peer, Config::from_env())
    }

    /// Wraps `peer` with the annotation holds of `config`.
    #[must_use]
    pub fn with_config(peer: Peer<RoleClient>, config: Config) -> Self {
        Self {
            peer,
            state: Arc::new(State {
                config,
                tools: Mutex::new(None),
            }),
        }
    }

    /// The wrapped peer, for everything graphmind does not observe.
    #[must_use]
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The server's name, from its `initialize` answer (`mcp` when it gave none).
    fn server(&self) -> String {
        self.peer
            .peer_info()
            .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()))
            .unwrap_or_else(|| "mcp".to_owned())
    }

    /// `tools/list` through every page ([`Peer::list_all_tools`]); the tools and their
    /// annotations are remembered for the holds and the graph hint.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ServiceError> {
        let tools = self.peer.list_all_tools().await?;
        self.remember(tools.clone());
        Ok(tools)
    }

    /// One page of `tools/list` ([`Peer::list_tools`]); its tools are remembered with those
    /// of earlier pages.
    pub async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, ServiceError> {
        let first = params.as_ref().is_none_or(|p| p.cursor.is_none());
        let page = self.peer.list_tools(params).await?;
        let mut known = match first {
            true => Vec::new(),
            false => self.known().map(|t| (*t).clone()).unwrap_or_default(),
        };
        known.retain(|t| page.tools.iter().all(|n| n.name != t.name));
        known.extend(page.tools.iter().cloned());
        self.remember(known);
        Ok(page)
    }

    fn remember(&self, tools: Vec<Tool>) {
        *self
            .state
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(tools));
    }

    fn known(&self) -> Option<Arc<Vec<Tool>>> {
        self.state
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The server's tools for the holds: those listed already, else (only while a debugger
    /// is attached and some annotation holds) listed once now.
    async fn tools_for_holds(&self) -> Option<Arc<Vec<Tool>>> {
        if let Some(known) = self.known() {
            return Some(known);
        }
        if !self.state.config.holds_any() || Node::recording() != Recording::Attached {
            return None;
        }
        self.list_all_tools().await.ok()?;
        self.known()
    }

    /// `tools/call`, gated: `before` (continue, edit the arguments, inject a result,
    /// reject — the model reads the reason as the tool's error result —, abort), `after`
    /// (inject, retry) and `error` (a JSON-RPC error, a transport error, or a result with
    /// `isError: true`: retry, inject, continue, abort).
    pub async fn call_tool(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, ServiceError> {
        self.call_tool_inner(None, params).await
    }

    /// [`GatedPeer::call_tool`] for the model's tool call `call_id`: the node's instanceId
    /// is that id, so the call lines up with the model step that asked for it.
    pub async fn call_tool_for(
        &self,
        call_id: &str,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, ServiceError> {
        self.call_tool_inner(Some(call_id.to_owned()), params).await
    }

    async fn call_tool_inner(
        &self,
        call_id: Option<String>,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, ServiceError> {
        if !Node::enabled() {
            return self.peer.call_tool(params).await;
        }
        let tools = self.tools_for_holds().await;
        let server = self.server();
        let name = params.name.to_string();
        let args = params.arguments.clone().unwrap_or_default();
        let prepared = guard("starting a tool call", || {
            let mut node = start(
                &TOOL,
                &name,
                &format!("tool:{name}"),
                call_id,
                Some(Value::Object(args.clone())),
                &server,
            )?;
            node.rejectable();
            node.editable(&args);
            if let Some(tools) = &tools {
                node.emit_hint(hint(&server, tools, &self.state.config));
                let why = tools
                    .iter()
                    .find(|t| t.name == name)
                    .and_then(|t| self.state.config.hold_reason(&server, t));
                if let Some(why) = why {
                    node.hold_before(why);
                }
            }
            Some(node)
        })
        .flatten();
        let Some(node) = prepared else {
            return self.peer.call_tool(params).await;
        };
        let mut params = params;
        params.meta = with_traceparent(params.meta.take(), &node);
        let peer = &self.peer;
        run_gated::<_, ToolInject, _, _>(node, &TOOL, "", |edited| {
            let mut p = params.clone();
            if let Some(args) = edited {
                p.arguments = Some(args);
            }
            async move { peer.call_tool(p).await }
        })
        .await
    }

    /// `resources/read`, observed as node `resource:<uri>` (kind `resource`) and gated
    /// before, after and on error like a tool call (no edit or reject).
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ServiceError> {
        if !Node::enabled() {
            return self.peer.read_resource(params).await;
        }
        let uri = params.uri.clone();
        let server = self.server();
        let input = serde_json::json!({ "uri": uri });
        let started = guard("starting a resource read", || {
            start(
                &RESOURCE,
                &uri,
                &format!("resource:{uri}"),
                None,
                Some(input),
                &server,
            )
        })
        .flatten();
        let Some(node) = started else {
            return self.peer.read_resource(params).await;
        };
        let mut params = params;
        params.meta = with_traceparent(params.meta.take(), &node);
        let peer = &self.peer;
        run_gated::<_, ResourceInject, _, _>(node, &RESOURCE, &uri, |_| {
            let p = params.clone();
            async move { peer.read_resource(p).await }
        })
        .await
    }

    /// `prompts/get`, observed as node `prompt:<name>` (kind `prompt`, the arguments as its
    /// input) and gated before, after and on error like a tool call (no edit or reject).
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ServiceError> {
        if !Node::enabled() {
            return self.peer.get_prompt(params).await;
        }
        let name = params.name.clone();
        let server = self.server();
        let input = params.arguments.clone().map(Value::Object);
        let started = guard("starting a prompt get", || {
            start(
                &PROMPT,
                &name,
                &format!("prompt:{name}"),
                None,
                input,
                &server,
            )
        })
        .flatten();
        let Some(node) = started else {
            return self.peer.get_prompt(params).await;
        };
        let mut params = params;
        params.meta = with_traceparent(params.meta.take(), &node);
        let peer = &self.peer;
        run_gated::<_, PromptInject, _, _>(node, &PROMPT, "", |_| {
            let p = params.clone();
            async move { peer.get_prompt(p).await }
        })
        .await
    }
}

/// The request's `_meta` with the node's `traceparent` (W3C trace context, as MCP servers
/// instrumented with OpenTelemetry read it), unless the app set one itself.
fn with_traceparent(meta: Option<RequestMetaObject>, node: &Node) -> Option<RequestMetaObject> {
    let mut meta = meta.unwrap_or_default();
    if meta.0.get_traceparent().is_none() {
        meta.0.set_traceparent(node.traceparent());
    }
    Some(meta)
}

/// Starts one call's node: the reference's identity, with the server and the method as
/// loose fields of its `node.started`.
fn start<O>(
    m: &Method<O>,
    name: &str,
    node_id: &str,
    instance_id: Option<String>,
    input: Option<Value>,
    server: &str,
) -> Option<Node> {
    let mut extra = Extra::new();
    extra.insert("server".into(), Value::String(server.to_owned()));
    extra.insert("method".into(), Value::String(m.method.to_owned()));
    Node::start_call(m.kind, name, node_id, instance_id, input, extra)
}

/// The server's tools as a `graph.hint` (each with its annotations, and `holdReason` on
/// those that hold before they run by default).
fn hint(server: &str, tools: &[Tool], config: &Config) -> GraphHint {
    let nodes = tools
        .iter()
        .map(|t| {
            let mut extra = Extra::new();
            extra.insert("server".into(), Value::String(server.to_owned()));
            if let Some(a) = &t.annotations {
                extra.insert("annotations".into(), annotations_value(a));
            }
            if let Some(why) = config.hold_reason(server, t) {
                extra.insert("holdReason".into(), Value::String(why));
            }
            GraphNodeHint {
                node_id: format!("tool:{}", t.name),
                kind: NodeKind::Tool,
                name: t.name.to_string(),
                parent_id: None,
                extra,
            }
        })
        .collect();
    GraphHint {
        nodes,
        extra: Extra::new(),
    }
}

/// The output a node records for a call's outcome.
fn recorded<O: Serialize>(out: &Result<O, ServiceError>) -> Option<Value> {
    match out {
        Ok(o) => serde_json::to_value(o).ok(),
        Err(ServiceError::McpError(data)) => Some(serde_json::json!({ "error": data })),
        Err(_) => None,
    }
}

/// The gate loop of one call: `before`, the request, then `after` or `error`; retry goes
/// round again from `before`. `I` checks an injected value at the gate (refused when it
/// cannot become the method's result). Dropping the returned future while a gate holds
/// releases it and finishes the node `aborted` with `cancelled: true` (rmcp's own
/// cancel-on-drop sends `notifications/cancelled` for a request already sent).
async fn run_gated<O, I, F, Fut>(
    node: Node,
    m: &Method<O>,
    uri: &str,
    mut send: F,
) -> Result<O, ServiceError>
where
    O: Serialize,
    I: DeserializeOwned,
    F: FnMut(Option<JsonObject>) -> Fut,
    Fut: Future<Output = Result<O, ServiceError>>,
{
    let mut node = Cancel(Some(node));
    let mut edited: Option<JsonObject> = None;
    let mut attempts = 0u32;
    loop {
        let n = node.get();
        match n.gate_typed::<I>(PausePoint::Before).await {
            Resume::Abort => return aborted(node.take()).await,
            Resume::Inject(v) => {
                let out = (m.inject)(v, uri).map_err(|_| ServiceError::UnexpectedResponse)?;
                let value = serde_json::to_value(&out).ok();
                let extras = with_attempts(Extras::new().injected(), attempts);
                node.take()
                    .finish_with(Status::Ok, value, None, injected_at(extras, "before"));
                return Ok(out);
            }
            // Offered only where the method has a rejected answer (a tool call).
            Resume::Reject(reason) => {
                if let Some(answer) = m.reject {
                    node.take().reject(&reason);
                    return Ok(answer(&reason));
                }
            }
            Resume::Edit {
                input: Value::Object(args),
                ..
            } => edited = Some(args),
            _ => {}
        }
        attempts += 1;
        let out = send(edited.clone()).await;
        let n = node.get();
        let failure = match &out {
            Ok(o) => (m.failed)(o).map(|msg| ("McpToolError".to_owned(), msg)),
            Err(e) => Some(service_error(e)),
        };
        let point = match &failure {
            Some((name, message)) => {
                n.error(name, message.clone());
                PausePoint::Error
            }
            None => PausePoint::After,
        };
        match n.gate_typed::<I>(point).await {
            Resume::Retry => continue,
            Resume::Abort => return aborted(node.take()).await,
            Resume::Inject(v) => {
                let Ok(injected) = (m.inject)(v, uri) else {
                    // Checked at the gate: cannot fail; keep the real outcome if it does.
                    node.take().finish(Status::Error, recorded(&out));
                    return out;
                };
                let value = serde_json::to_value(&injected).ok();
                let mut extras: Extra = with_attempts(Extras::new().injected(), attempts).into();
                if point == PausePoint::Error {
                    extras.insert("recoveredFromError".into(), Value::Bool(true));
                }
                node.take().finish_with(
                    Status::Ok,
                    value,
                    None,
                    injected_at(extras, point.as_str()),
                );
                return Ok(injected);
            }
            _ => {
                let status = match failure {
                    Some(_) => Status::Error,
                    None => Status::Ok,
                };
                let extras: Extra = with_attempts(Extras::new(), attempts).into();
                // A result is written straight into the recorded JSON text (no Value tree).
                match &out {
                    Ok(result) => node.take().finish_serialized(status, result, None, extras),
                    Err(_) => node
                        .take()
                        .finish_with(status, recorded(&out), None, extras),
                }
                return out;
            }
        }
    }
}

fn with_attempts(extras: Extras, attempts: u32) -> Extras {
    match attempts > 1 {
        true => extras.attempts(attempts),
        false => extras,
    }
}

fn injected_at(extras: impl Into<Extra>, at: &str) -> Extra {
    let mut e: Extra = extras.into();
    e.insert("injectedAt".into(), Value::String(at.to_owned()));
    e
}

/// Ends the run (inside one the run's future is dropped here); outside any run the caller
/// gets a cancellation with [`ABORTED`].
async fn aborted<O>(node: Node) -> Result<O, ServiceError> {
    node.abort_run().await;
    Err(ServiceError::Cancelled {
        reason: Some(ABORTED.to_owned()),
    })
}
