//! `graphmind mcp-proxy -- <server command>`: a man-in-the-middle between any MCP client and
//! any MCP server over stdio. Each `tools/call`, `resources/read` and `prompts/get` the
//! client sends is a node of the proxy's run, gated as [`GatedPeer`](crate::GatedPeer)'s
//! calls are; every other frame, and every gated one nothing changed, is passed on byte for
//! byte. The server's stderr is the proxy's stderr.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{Extra, NodeKind, PausePoint, Status};
use rmcp::model::Tool;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::cancel::Cancel;
use crate::holds::Config;
use crate::inject::{self, PromptInject, ResourceInject, ToolInject};

/// The JSON-RPC error code a call aborted from the debugger is answered with (the
/// reference's `mcp-proxy` uses the same).
pub const ABORTED_CODE: i64 = -32099;

/// One line of JSON-RPC as it came, newline included.
type Line = Vec<u8>;

/// What the proxy runs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The server's command.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The annotation holds.
    pub holds: Config,
}

/// A gated request on its way: the node, and what answers and retries need.
struct Pending {
    node: Node,
    method: String,
    /// The request as sent to the server (sent again on retry).
    sent: Line,
    uri: String,
    attempts: u32,
}

struct Proxy {
    holds: Config,
    label: String,
    to_server: UnboundedSender<Line>,
    to_client: UnboundedSender<Line>,
    pending: Mutex<HashMap<String, Pending>>,
    tools: Mutex<HashMap<String, Tool>>,
    server: Mutex<Option<String>>,
    counter: AtomicU64,
    /// The tasks of requests held at their `before` gate, by JSON-RPC id: a client's
    /// `notifications/cancelled` for one ends it (a cancellation).
    held: Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

/// The command as a run name: the executable's and path arguments' base names.
#[must_use]
pub fn command_label(command: &str, args: &[String]) -> String {
    let base = |s: &str| -> String {
        match !s.starts_with('-') && (s.contains('/') || s.contains('\\')) {
            true => s.rsplit(['/', '\\']).next().unwrap_or(s).to_owned(),
            false => s.to_owned(),
        }
    };
    let mut words = vec![base(command)];
    words.extend(args.iter().map(|a| base(a)));
    let full = words.join(" ");
    let n = full.chars().count();
    match n > 64 {
        true => format!("…{}", full.chars().skip(n - 63).collect::<String>()),
        false => full,
    }
}

/// Runs the proxy on this process's stdin and stdout until the client closes stdin and the
/// server exits (or the server exits first); returns the server's exit code.
pub async fn run_stdio(config: ProxyConfig) -> std::io::Result<i32> {
    run(config, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`run_stdio`] with the client on `client_in` / `client_out`.
pub async fn run(
    config: ProxyConfig,
    client_in: impl AsyncRead + Unpin + Send + 'static,
    client_out: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<i32> {
    let mut child = tokio::process::Command::new(&config.command)
        .args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(server_in), Some(server_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the server's stdio was not piped"));
    };
    let (to_server, server_rx) = unbounded_channel::<Line>();
    let (to_client, client_rx) = unbounded_channel::<Line>();
    let server_writer = tokio::spawn(write_all(server_rx, server_in));
    let client_writer = tokio::spawn(write_all(client_rx, client_out));
    let label = command_label(&config.command, &config.args);
    let proxy = Arc::new(Proxy {
        holds: config.holds,
        label: label.clone(),
        to_server,
        to_client,
        pending: Mutex::new(HashMap::new()),
        tools: Mutex::new(HashMap::new()),
        server: Mutex::new(None),
        counter: AtomicU64::new(0),
        held: Mutex::new(HashMap::new()),
    });
    let relay = {
        let proxy = Arc::clone(&proxy);
        async move {
            let from_client = tokio::spawn(graphmind::in_current_run(client_loop(
                Arc::clone(&proxy),
                client_in,
            )));
            server_loop(&proxy, server_out).await;
            from_client.abort();
            proxy.server_gone();
        }
    };
    // One run per proxy session; an abort from the debugger ends a call, never the proxy.
    let _ = graphmind::run(&format!("mcp-proxy {label}"), relay).await;
    let status = child.wait().await?;
    drop(proxy);
    let _ = server_writer.await;
    let _ = client_writer.await;
    Ok(status.code().unwrap_or(1))
}

async fn write_all(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Line>,
    mut out: impl AsyncWrite + Unpin,
) {
    // An empty line is the end: the pipe closes (the client closed its side).
    while let Some(line) = rx.recv().await {
        if line.is_empty() {
            return;
        }
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

async fn client_loop(proxy: Arc<Proxy>, input: impl AsyncRead + Unpin) {
    let mut input = BufReader::new(input);
    loop {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => {
                // The client is gone: close the server's stdin, so it ends as it would
                // without the proxy.
                let _ = proxy.to_server.send(Vec::new());
                return;
            }
            Ok(_) => {}
        }
        let gated = serde_json::from_slice::<Value>(&line)
            .ok()
            .filter(|v| v.get("id").is_some() && gated_method(v).is_some());
        match gated {
            Some(request) => {
                let key = request["id"].to_string();
                let task = tokio::spawn(graphmind::in_current_run({
                    let proxy = Arc::clone(&proxy);
                    async move { proxy.request(request, line).await }
                }));
                proxy
                    .held
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, task.abort_handle());
            }
            None => {
                proxy.cancelled(&line);
                let _ = proxy.to_server.send(line);
            }
        }
    }
}

async fn server_loop(proxy: &Arc<Proxy>, output: impl AsyncRead + Unpin) {
    let mut output = BufReader::new(output);
    loop {
        let mut line = Vec::new();
        match output.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let frame = serde_json::from_slice::<Value>(&line).ok();
        let key = frame
            .as_ref()
            .filter(|v| v.get("method").is_none())
            .and_then(|v| v.get("id"))
            .map(Value::to_string);
        if let Some(v) = &frame {
            proxy.learn(v);
        }
        let pending = key.and_then(|k| {
            let p = proxy
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&k);
            p.map(|p| (k, p))
        });
        match (frame, pending) {
            (Some(response), Some((key, p))) => {
                let proxy = Arc::clone(proxy);
                tokio::spawn(graphmind::in_current_run(async move {
                    proxy.response(key, p, response, line).await;
                }));
            }
            _ => {
                let _ = proxy.to_client.send(line);
            }
        }
    }
}

/// The node kind, name and node id of a request the proxy gates.
fn gated_method(v: &Value) -> Option<(NodeKind, String, String)> {
    let params = v.get("params");
    let text = |key: &str| {
        params
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match v.get("method")?.as_str()? {
        "tools/call" => text("name").map(|n| (NodeKind::Tool, format!("tool:{n}"), n)),
        "resources/read" => text("uri").map(|u| (NodeKind::Resource, format!("resource:{u}"), u)),
        "prompts/get" => text("name").map(|n| (NodeKind::Prompt, format!("prompt:{n}"), n)),
        _ => None,
    }
}

fn line_of(v: &Value) -> Line {
    let mut line = serde_json::to_vec(v).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The injected value as the result `method` answers with (checked at the gate already).
fn coerce(method: &str, v: Value, uri: &str) -> Option<Value> {
    match method {
        "tools/call" => serde_json::to_value(inject::tool_result(v).ok()?).ok(),
        "resources/read" => serde_json::to_value(inject::resource_result(v, uri).ok()?).ok(),
        _ => serde_json::to_value(inject::prompt_result(v).ok()?).ok(),
    }
}

async fn gate(node: &mut Node, method: &str, point: PausePoint) -> Resume {
    async fn typed<I: DeserializeOwned>(node: &mut Node, point: PausePoint) -> Resume {
        node.gate_typed::<I>(point).await
    }
    match method {
        "tools/call" => typed::<ToolInject>(node, point).await,
        "resources/read" => typed::<ResourceInject>(node, point).await,
        _ => typed::<PromptInject>(node, point).await,
    }
}

fn injected_extras(at: PausePoint, attempts: u32) -> Extra {
    let mut extras = Extras::new().injected();
    if attempts > 1 {
        extras = extras.attempts(attempts);
    }
    let mut e: Extra = extras.into();
    e.insert("injectedAt".into(), Value::String(at.as_str().to_owned()));
    if at == PausePoint::Error {
        e.insert("recoveredFromError".into(), Value::Bool(true));
    }
    e
}

impl Proxy {
    fn server_name(&self) -> String {
        self.server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| self.label.clone())
    }

    /// What the proxy learns from the server's answers: its name (`initialize`) and its
    /// tools' annotations (`tools/list`).
    fn learn(&self, v: &Value) {
        let Some(result) = v.get("result") else {
            return;
        };
        if let Some(name) = result
            .get("serverInfo")
            .and_then(|s| s.get("name"))
            .and_then(Value::as_str)
        {
            *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(name.to_owned());
        }
        if let Some(tools) = result.get("tools").and_then(Value::as_array) {
            let mut known = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            for t in tools {
                if let Ok(tool) = serde_json::from_value::<Tool>(t.clone()) {
                    known.insert(tool.name.to_string(), tool);
                }
            }
        }
    }

    /// A client's `notifications/cancelled` for a request still held at its `before` gate
    /// ends that gate's task: its node finishes `aborted` with `cancelled: true`, and the
    /// server never sees the request (the notification goes on to it as it came).
    fn cancelled(&self, line: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if v.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
            return;
        }
        let Some(id) = v.get("params").and_then(|p| p.get("requestId")) else {
            return;
        };
        let task = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id.to_string());
        if let Some(task) = task {
            task.abort();
        }
    }

    fn reply(&self, id: &Value, body: Value) {
        let mut frame = json!({"jsonrpc": "2.0", "id": id});
        if let (Value::Object(f), Value::Object(b)) = (&mut frame, body) {
            f.extend(b);
        }
        let _ = self.to_client.send(line_of(&frame));
    }

    fn abort_reply(&self, id: &Value, method: &str) {
        let message = format!("{method} aborted by the graphmind debugger");
        self.reply(
            id,
            json!({"error": {"code": ABORTED_CODE, "message": message}}),
        );
    }

    /// A gated request from the client: its node and its `before` gate.
    async fn request(&self, request: Value, raw: Line) {
        let Some((kind, node_id, name)) = gated_method(&request) else {
            let _ = self.to_server.send(raw);
            return;
        };
        let method = request["method"].as_str().unwrap_or_default().to_owned();
        let id = request["id"].clone();
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let server = self.server_name();
        let input = match kind {
            NodeKind::Resource => Some(json!({"uri": name})),
            _ => params.get("arguments").cloned(),
        };
        let mut extra = Extra::new();
        extra.insert("server".into(), Value::String(server.clone()));
        extra.insert("method".into(), Value::String(method.clone()));
        extra.insert("jsonrpcId".into(), id.clone());
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let started = crate::guard("starting a proxied call", || {
            Node::start_call(
                kind,
                &name,
                &node_id,
                Some(format!("mcp_{n}")),
                input,
                extra,
            )
        })
        .flatten();
        let Some(mut node) = started else {
            let _ = self.to_server.send(raw);
            return;
        };
        let mut args = None;
        if kind == NodeKind::Tool {
            node.rejectable();
            if let Some(Value::Object(a)) = params.get("arguments") {
                node.editable(a);
                args = Some(a.clone());
            }
            let tool = self
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&name)
                .cloned();
            if let Some(why) = tool.and_then(|t| self.holds.hold_reason(&server, &t)) {
                node.hold_before(why);
            }
        }
        let uri = match kind {
            NodeKind::Resource => name.clone(),
            _ => String::new(),
        };
        let mut sent = raw;
        let mut held = Cancel(Some(node));
        let decision = gate(held.get(), &method, PausePoint::Before).await;
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id.to_string());
        let node = held.take();
        match decision {
            Resume::Inject(v) => {
                let out = coerce(&method, v, &uri);
                node.finish_with(
                    Status::Ok,
                    out.clone(),
                    None,
                    injected_extras(PausePoint::Before, 0),
                );
                self.reply(&id, json!({ "result": out }));
                return;
            }
            Resume::Reject(reason) => {
                let told = graphmind::Rejection::new(reason.as_str()).to_string();
                node.reject(&reason);
                let result = json!({"content": [{"type": "text", "text": told}], "isError": true});
                self.reply(&id, json!({ "result": result }));
                return;
            }
            Resume::Abort => {
                node.finish(Status::Aborted, None);
                self.abort_reply(&id, &method);
                return;
            }
            Resume::Edit {
                input: Value::Object(edited),
                ..
            } if args.is_some() => {
                let mut request = request;
                request["params"]["arguments"] = Value::Object(edited);
                sent = line_of(&request);
            }
            _ => {}
        }
        let key = id.to_string();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key,
                Pending {
                    node,
                    method,
                    sent: sent.clone(),
                    uri,
                    attempts: 1,
                },
            );
        let _ = self.to_server.send(sent);
    }

    /// The server's answer to a gated request: its `after` or `error` gate.
    async fn response(&self, key: String, mut p: Pending, response: Value, raw: Line) {
        let id = response["id"].clone();
        let failure = match (&response.get("error"), response.get("result")) {
            (Some(e), _) => Some((
                format!("JsonRpcError({})", e["code"].as_i64().unwrap_or(0)),
                e["message"].as_str().unwrap_or_default().to_owned(),
            )),
            (None, Some(r)) if r.get("isError") == Some(&Value::Bool(true)) => Some((
                "McpToolError".to_owned(),
                format!("{} returned isError: true", p.method),
            )),
            _ => None,
        };
        let point = match &failure {
            Some((name, message)) => {
                p.node.error(name, message.clone());
                PausePoint::Error
            }
            None => PausePoint::After,
        };
        match gate(&mut p.node, &p.method, point).await {
            Resume::Retry => {
                p.attempts += 1;
                let again = p.sent.clone();
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, p);
                let _ = self.to_server.send(again);
            }
            Resume::Inject(v) => {
                let out = coerce(&p.method, v, &p.uri);
                let extras = injected_extras(point, p.attempts);
                p.node.finish_with(Status::Ok, out.clone(), None, extras);
                self.reply(&id, json!({ "result": out }));
            }
            Resume::Abort => {
                p.node.finish(Status::Aborted, None);
                self.abort_reply(&id, &p.method);
            }
            _ => {
                let output = match response.get("error") {
                    Some(e) => Some(json!({ "error": e })),
                    None => response.get("result").cloned(),
                };
                let status = match failure {
                    Some(_) => Status::Error,
                    None => Status::Ok,
                };
                let mut extras = Extras::new();
                if p.attempts > 1 {
                    extras = extras.attempts(p.attempts);
                }
                p.node.finish_with(status, output, None, extras.into());
                let _ = self.to_client.send(raw);
            }
        }
    }

    /// The server's stdout closed: no answer will come to what is still pending.
    fn server_gone(&self) {
        let open: Vec<Pending> = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, p)| p)
            .collect();
        for p in open {
            p.node.error(
                "McpServerExited",
                format!("the MCP server exited before answering {}", p.method),
            );
            p.node.finish(Status::Error, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_label_keeps_base_names_and_flags() {
        let args = vec!["/opt/srv/server.py".to_owned(), "--root=/data".to_owned()];
        assert_eq!(
            command_label("/usr/bin/python3", &args),
            "python3 server.py --root=/data"
        );
        let long = vec!["x".repeat(100)];
        let label = command_label("srv", &long);
        assert_eq!(label.chars().count(), 64);
        assert!(label.starts_with('…'));
    }

    #[test]
    fn only_calls_reads_and_gets_are_gated() {
        let call =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}});
        assert_eq!(
            gated_method(&call),
            Some((NodeKind::Tool, "tool:add".to_owned(), "add".to_owned()))
        );
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        assert_eq!(gated_method(&list), None);
    }
}
