//! The MCP tools: each one a request or two to the hub's HTTP API (`docs/http-api.md`), made
//! with the blocking client of `graphmind-connect` on the blocking pool.
//!
//! Arguments that do not fit (wrong types, unknown fields, out of range, too large or too deep)
//! are JSON-RPC `invalid params` errors; what the hub refuses or does not know (an unknown
//! run, a pause already released, a level that forbids the action) is a tool result with
//! `isError` and one line saying why and what to do.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use graphmind_connect::{Hub, HubError};
use graphmind_protocol::control::{ResumeAnswer, ResumeRequest, operator_label};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::view;

/// How long plain reads may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// A resume waits up to 5 s for the app on the hub's side; allow for that.
const RESUME_TIMEOUT: Duration = Duration::from_secs(15);
/// One long poll of `wait_for_pause` (progress is reported between polls).
const WAIT_CHUNK: f64 = 2.0;
/// The longest `wait_for_pause`.
const MAX_WAIT_SECS: f64 = 300.0;
/// Events read for one run (pages of 10,000).
const MAX_EVENTS: usize = 50_000;
/// The longest id (run, pause, execution) taken.
const MAX_ID_CHARS: usize = 256;
/// The largest `output` or `input` sent with a resume (JSON bytes; the hub forwards at most
/// 1 MiB to the app).
const MAX_RESUME_BYTES: usize = 900 * 1024;
/// The deepest `output` or `input` sent with a resume (the hub refuses deeper ones).
const MAX_RESUME_DEPTH: usize = graphmind_protocol::MAX_DEPTH - 2;
/// The runs listed as resources (newest first).
const RESOURCE_RUNS: usize = 100;
/// The URI of a run resource, before its id.
const RUN_URI: &str = "graphmind://runs/";
/// The longest breakpoint name (the hub's limit is 4 KiB).
const MAX_NAME_BYTES: usize = 4096;

/// Why a tool did not do what it was asked.
enum Fail {
    /// The arguments do not fit: a JSON-RPC `invalid params` error.
    Params(String),
    /// The hub refused, or knows no such thing: a tool result with `isError`.
    Tool(String),
}

impl From<HubError> for Fail {
    fn from(e: HubError) -> Self {
        Fail::Tool(e.message)
    }
}

type Out = Result<CallToolResult, ErrorData>;

fn finish(r: Result<String, Fail>) -> Out {
    match r {
        Ok(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)])),
        Err(Fail::Tool(msg)) => Ok(CallToolResult::error(vec![ContentBlock::text(msg)])),
        Err(Fail::Params(msg)) => Err(ErrorData::invalid_params(msg, None)),
    }
}

/// Runs `f` (blocking HTTP to the hub) on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Fail> + Send + 'static,
) -> Result<T, Fail> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Fail::Tool(format!("the request to the hub failed: {e}")))?
}

/// Percent-encodes a path segment or query value.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn check_id(what: &str, id: &str) -> Result<(), Fail> {
    if id.trim().is_empty() {
        return Err(Fail::Params(format!("{what} is empty")));
    }
    if id.chars().count() > MAX_ID_CHARS {
        return Err(Fail::Params(format!(
            "{what} is longer than {MAX_ID_CHARS} characters: no such id exists"
        )));
    }
    Ok(())
}

/// The depth of `v` (a scalar is 0), counted without recursion.
fn depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

fn check_payload(what: &str, v: &Value) -> Result<(), Fail> {
    let d = depth(v);
    if d > MAX_RESUME_DEPTH {
        return Err(Fail::Params(format!(
            "{what} is nested {d} levels deep; the hub takes at most {MAX_RESUME_DEPTH}"
        )));
    }
    let n = v.to_string().len();
    if n > MAX_RESUME_BYTES {
        return Err(Fail::Params(format!(
            "{what} is {n} bytes of JSON; a resume takes at most {MAX_RESUME_BYTES}"
        )));
    }
    Ok(())
}

/// The `--allow-control` levels, weakest first.
const LEVELS: [&str; 4] = ["off", "resume", "inject", "edit"];

fn rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// Whether the hub's level (from its run file) allows `need`; `Err` naming the level
/// needed when it does not. A hub whose run file names no level is asked anyway (it answers
/// `403` naming the level itself).
fn require(h: &Hub, need: &str, what: &str) -> Result<(), Fail> {
    if let Some(problem) = h.token_problem() {
        return Err(Fail::Tool(format!(
            "cannot {what}: no agent token for the hub on port {} ({problem})",
            h.port
        )));
    }
    let (Some(have), Some(needed)) = (h.allow_control.as_deref().and_then(rank), rank(need)) else {
        return Ok(());
    };
    if have >= needed {
        return Ok(());
    }
    Err(Fail::Tool(format!(
        "forbidden: to {what} needs --allow-control {need}; the hub on port {} runs with \
         --allow-control {} (a person can do it in the viewer, or start the hub again with \
         `graphmind {} --allow-control {need}`)",
        h.port, LEVELS[have], h.started_by
    )))
}

/// The resume actions the hub lets the agent token take at pause `p` (and whether it may
/// edit the input), with a note naming what more a higher level would allow.
fn allowed_actions(h: &Hub, p: &Value) -> (Vec<&'static str>, Option<String>) {
    let level = h.allow_control.as_deref().and_then(rank).unwrap_or(3);
    let gate: Option<Vec<&str>> = p
        .get("actions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect());
    let takes = |a: &str| match &gate {
        Some(list) => list.contains(&a) || (a == "step" && list.contains(&"continue")),
        None => a != "reject",
    };
    let mut out: Vec<&'static str> = Vec::new();
    if level >= 1 {
        for a in ["continue", "step", "retry", "abort", "reject"] {
            if takes(a) {
                out.push(a);
            }
        }
    }
    if level >= 2 && takes("inject") {
        out.push("inject");
    }
    let editable = p.get("editable") == Some(&Value::Bool(true));
    if level >= 3 && editable {
        out.push("continue or retry with input (edit)");
    }
    let note = match level {
        0 => Some(format!(
            "the hub on port {} runs with --allow-control off: resuming needs --allow-control \
             resume (or resume it in the viewer)",
            h.port
        )),
        1 => Some("inject needs --allow-control inject".to_owned()),
        2 if editable => Some("editing the input needs --allow-control edit".to_owned()),
        _ => None,
    };
    (out, note)
}

/// `GET path`: the JSON of a `200`, else the hub's reason as a tool error.
fn get_json(h: &Hub, path: &str, timeout: Duration) -> Result<Value, Fail> {
    let a = h.get(path, timeout)?;
    if a.status == 200 {
        let v = a.json();
        if v.is_null() {
            return Err(Fail::Tool("the hub's answer is not JSON".into()));
        }
        return Ok(v);
    }
    Err(Fail::Tool(format!(
        "the hub answered {}: {}",
        a.status,
        a.reason()
    )))
}

/// `POST path` with `body`: the JSON of a `200`, else the hub's reason as a tool error.
fn post_json(h: &Hub, path: &str, body: &Value) -> Result<Value, Fail> {
    let a = h.post(path, body, READ_TIMEOUT)?;
    if a.status == 200 {
        return Ok(a.json());
    }
    if a.status == 404 && path.starts_with("/api/debug") {
        return Err(Fail::Tool(format!(
            "the hub on port {} has no /api/debug (a GraphMind 0.6 hub?): set breakpoints and \
             the mode in its viewer",
            h.port
        )));
    }
    Err(Fail::Tool(format!(
        "the hub answered {}: {}",
        a.status,
        a.reason()
    )))
}

fn locate(port: Option<u16>) -> Result<Hub, Fail> {
    Ok(Hub::locate(port)?)
}

/// The run summary of `run`, or a tool error naming how to find runs.
fn run_summary(h: &Hub, run: &str) -> Result<Value, Fail> {
    let a = h.get(&format!("/api/runs/{}", enc(run)), READ_TIMEOUT)?;
    match a.status {
        200 => Ok(a.json()),
        404 => Err(Fail::Tool(format!(
            "no run {} on the hub (list_runs shows the runs)",
            view::one_line(run)
        ))),
        s => Err(Fail::Tool(format!("the hub answered {s}: {}", a.reason()))),
    }
}

/// The stored envelopes of `run` (at most [`MAX_EVENTS`]), and whether there are more.
fn run_events(h: &Hub, run: &str) -> Result<(Vec<Value>, bool), Fail> {
    let mut out = Vec::new();
    let mut after: Option<u64> = None;
    loop {
        let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
        let path = format!("/api/runs/{}/events?limit=10000&lean=true{q}", enc(run));
        let page = get_json(h, &path, READ_TIMEOUT)?;
        if let Some(events) = page.get("events").and_then(Value::as_array) {
            out.extend(events.iter().cloned());
        }
        let more = page.get("more") == Some(&Value::Bool(true));
        match page.get("nextAfterSeq").and_then(Value::as_u64) {
            Some(s) if more && after.is_none_or(|a| s > a) => {
                if out.len() >= MAX_EVENTS {
                    return Ok((out, true));
                }
                after = Some(s);
            }
            _ => return Ok((out, false)),
        }
    }
}

fn open_pauses(h: &Hub, run: Option<&str>, wait: Option<f64>) -> Result<Vec<Value>, Fail> {
    let mut q = Vec::new();
    if let Some(r) = run {
        q.push(format!("runId={}", enc(r)));
    }
    if let Some(w) = wait {
        q.push(format!("wait={w:.3}"));
    }
    let path = if q.is_empty() {
        "/api/pauses".to_owned()
    } else {
        format!("/api/pauses?{}", q.join("&"))
    };
    let timeout = READ_TIMEOUT + Duration::from_secs_f64(wait.unwrap_or(0.0));
    let v = get_json(h, &path, timeout)?;
    Ok(v.get("pauses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

// ---- arguments ------------------------------------------------------------------------

/// `list_runs` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListRunsArgs {
    /// How many runs to list, newest first (1 to 200; default 20).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only runs with this status: running, ok, error, aborted or abandoned.
    #[serde(default)]
    pub status: Option<RunStatusArg>,
    /// Only runs of this app (exact name, as the app reported it).
    #[serde(default)]
    pub app: Option<String>,
    /// Only runs whose name contains this text.
    #[serde(default)]
    pub name: Option<String>,
}

/// A run status to filter on.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunStatusArg {
    /// Not finished.
    Running,
    /// Finished without error.
    Ok,
    /// Finished with an error.
    Error,
    /// Aborted from the debugger.
    Aborted,
    /// Its app went away unfinished.
    Abandoned,
}

impl RunStatusArg {
    fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Aborted => "aborted",
            Self::Abandoned => "abandoned",
        }
    }
}

/// `get_run` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetRunArgs {
    /// The run (`runId` from list_runs or a pause).
    pub run_id: String,
    /// The first execution listed (0-based; default 0).
    #[serde(default)]
    pub offset: Option<u32>,
    /// How many executions to list (1 to 500; default 100).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `get_execution` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetExecutionArgs {
    /// The run.
    pub run_id: String,
    /// The execution: its `exec=` id from get_run, or its step number (`3` or `#3`).
    pub execution_id: String,
    /// Read one field whole instead of the summary: input, output, error or usage (16,000
    /// characters of its JSON from `offset`).
    #[serde(default)]
    pub field: Option<FieldArg>,
    /// Where to start reading `field` (characters of its JSON; default 0).
    #[serde(default)]
    pub offset: Option<u64>,
}

/// A field of an execution.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldArg {
    /// The input it started with.
    Input,
    /// What it returned.
    Output,
    /// What it failed with.
    Error,
    /// Token usage.
    Usage,
}

/// `list_pauses` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListPausesArgs {
    /// Only this run's pauses.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// `wait_for_pause` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitArgs {
    /// Only this run's pauses.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Give up after this many seconds (0 to 300; default 30). Progress is reported every 2 s
    /// to a client that asked for it.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
}

/// `resume_pause` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeArgs {
    /// The pause (`pauseId` from wait_for_pause or list_pauses).
    pub pause_id: String,
    /// Its run (default: the run of the one open pause with this id).
    #[serde(default)]
    pub run_id: Option<String>,
    /// What to do with the held call.
    pub action: ActionArg,
    /// The result to hand the caller instead of running the call (inject only; any JSON, of
    /// the shape the call returns).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Value>")]
    pub output: Option<Value>,
    /// Run the held call with this input instead (continue or retry at an editable gate;
    /// needs --allow-control edit).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Value>")]
    pub input: Option<Value>,
    /// Why the call is rejected (reject only): the caller gets it back as its error.
    #[serde(default)]
    pub reason: Option<String>,
    /// Apply the same decision to further holds of this node in this run (continue, inject or
    /// reject; not with input).
    #[serde(default)]
    pub remember: Option<bool>,
}

/// A JSON value that is present, `null` included (`Some(Null)`, unlike a missing one).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What to do with a held call.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ActionArg {
    /// Let the call run (with `input`: with that input).
    Continue,
    /// Switch the hub to step mode and let the call run: the next call holds again
    /// (set_mode run leaves step mode).
    Step,
    /// Run the call again (at an after or error gate; with `input`: with that input).
    Retry,
    /// Do not run the call: the caller gets `output` as its result.
    Inject,
    /// Abort the whole run.
    Abort,
    /// Do not run the call: the caller gets an error carrying `reason`.
    Reject,
}

impl ActionArg {
    fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Step => "step",
            Self::Retry => "retry",
            Self::Inject => "inject",
            Self::Abort => "abort",
            Self::Reject => "reject",
        }
    }
}

/// A breakpoint matcher.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatcherArgs {
    /// Node kind: tool, llm, agent, … (any when absent).
    #[serde(default)]
    pub kind: Option<String>,
    /// Node name, e.g. the tool's function name (any when absent).
    #[serde(default)]
    pub name: Option<String>,
    /// Where to hold: before the call (default), after it returned, or when it failed.
    #[serde(default)]
    pub point: Option<PointArg>,
}

/// `clear_breakpoints` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClearArgs {
    /// Node kind of the breakpoint to clear.
    #[serde(default)]
    pub kind: Option<String>,
    /// Node name of the breakpoint to clear.
    #[serde(default)]
    pub name: Option<String>,
    /// Point of the breakpoint to clear (absent counts as before).
    #[serde(default)]
    pub point: Option<PointArg>,
    /// Clear every breakpoint (instead of a matcher).
    #[serde(default)]
    pub all: Option<bool>,
}

/// A gate.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PointArg {
    /// Before the call runs.
    Before,
    /// After it returned.
    After,
    /// When it failed.
    Error,
}

impl PointArg {
    fn as_str(self) -> &'static str {
        match self {
            Self::Before => "before",
            Self::After => "after",
            Self::Error => "error",
        }
    }
}

/// `set_mode` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModeArgs {
    /// run: hold only at breakpoints; step: hold before every call.
    pub mode: ModeArg,
}

/// The debugger mode.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeArg {
    /// Hold only at breakpoints.
    Run,
    /// Hold before every call.
    Step,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

fn matcher(
    kind: Option<String>,
    name: Option<String>,
    point: Option<PointArg>,
) -> Result<Value, Fail> {
    let mut m = serde_json::Map::new();
    if let Some(k) = kind {
        if k.trim().is_empty() || k.len() > 64 {
            return Err(Fail::Params("kind must be 1 to 64 characters".into()));
        }
        m.insert("kind".into(), Value::String(k));
    }
    if let Some(n) = name {
        if n.is_empty() || n.len() > MAX_NAME_BYTES {
            return Err(Fail::Params(format!(
                "name must be 1 to {MAX_NAME_BYTES} bytes"
            )));
        }
        m.insert("name".into(), Value::String(n));
    }
    if let Some(p) = point {
        m.insert("point".into(), Value::String(p.as_str().into()));
    }
    Ok(Value::Object(m))
}

// ---- the server -----------------------------------------------------------------------

/// The graphmind MCP server: the tools over the hub on `port`.
#[derive(Clone)]
pub struct GraphmindMcp {
    port: Option<u16>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for GraphmindMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphmindMcp")
            .field("port", &self.port)
            .finish()
    }
}

impl GraphmindMcp {
    /// A server for the hub on `port` (`None`: found as the control commands find it, on
    /// every call, so a hub started or restarted later is found).
    #[must_use]
    pub fn new(port: Option<u16>) -> Self {
        Self {
            port,
            tool_router: Self::tool_router(),
        }
    }
}

/// The operator label of the client: `mcp:<client name>`.
fn operator_of(ctx: &RequestContext<RoleServer>) -> String {
    let name = ctx
        .peer
        .peer_info()
        .map(|i| i.client_info.name.clone())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "unknown-client".to_owned());
    operator_label(&format!("mcp:{name}"))
}

#[tool_router]
impl GraphmindMcp {
    #[tool(
        description = "List the runs the graphmind hub knows, newest first: id, status, app, \
                       name, start time, event and error counts. Filter by status, app or name. \
                       Drill into one with get_run."
    )]
    async fn list_runs(&self, Parameters(a): Parameters<ListRunsArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                let limit = a.limit.unwrap_or(20);
                if !(1..=200).contains(&limit) {
                    return Err(Fail::Params("limit must be 1 to 200".into()));
                }
                let filtered = a.status.is_some() || a.app.is_some() || a.name.is_some();
                let h = locate(port)?;
                let fetch = if filtered { 1000 } else { limit };
                let v = get_json(&h, &format!("/api/runs?limit={fetch}"), READ_TIMEOUT)?;
                let all = v
                    .get("runs")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let runs: Vec<&Value> = all
                    .iter()
                    .filter(|r| {
                        a.status
                            .is_none_or(|s| r["status"].as_str() == Some(s.as_str()))
                            && a.app
                                .as_deref()
                                .is_none_or(|x| r["app"].as_str() == Some(x))
                            && a.name
                                .as_deref()
                                .is_none_or(|x| r["name"].as_str().is_some_and(|n| n.contains(x)))
                    })
                    .take(limit as usize)
                    .collect();
                if runs.is_empty() {
                    return Ok(if all.is_empty() {
                        format!(
                            "no runs yet on the hub on port {}: run an instrumented app while \
                             the hub serves",
                            h.port
                        )
                    } else {
                        "no run matches".to_owned()
                    });
                }
                let mut out = format!("{} runs (newest first; get_run shows one):\n", runs.len());
                for r in runs {
                    let _ = writeln!(out, "{}", view::run_line(r));
                }
                Ok(out)
            })
            .await,
        )
    }

    #[tool(
        description = "One run: its summary, its open pauses, its errors, then its executions in \
                       the order they started (step number, node, status, execution id, a \
                       preview of the result or error). Read one execution whole with \
                       get_execution."
    )]
    async fn get_run(&self, Parameters(a): Parameters<GetRunArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                check_id("runId", &a.run_id)?;
                let limit = a.limit.unwrap_or(100);
                if !(1..=500).contains(&limit) {
                    return Err(Fail::Params("limit must be 1 to 500".into()));
                }
                run_text(
                    port,
                    &a.run_id,
                    a.offset.unwrap_or(0) as usize,
                    limit as usize,
                )
            })
            .await,
        )
    }

    #[tool(
        description = "One execution of a run: node, kind, status, duration, parent, the chat \
                       messages of a model step, input, output, error and token usage (payloads \
                       over 4,000 characters are cut; pass `field` and `offset` to read one \
                       whole, 16,000 characters at a time)."
    )]
    async fn get_execution(&self, Parameters(a): Parameters<GetExecutionArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                check_id("runId", &a.run_id)?;
                check_id("executionId", &a.execution_id)?;
                let offset = usize::try_from(a.offset.unwrap_or(0)).unwrap_or(usize::MAX);
                let h = locate(port)?;
                run_summary(&h, &a.run_id)?;
                let (events, _) = run_events(&h, &a.run_id)?;
                let execs = view::executions(&events);
                let wanted = a.execution_id.trim();
                let step: Option<usize> = wanted.trim_start_matches('#').parse().ok();
                let x = execs
                    .iter()
                    .find(|x| x.id == wanted)
                    .or_else(|| step.and_then(|s| execs.iter().find(|x| x.step == s)))
                    .ok_or_else(|| {
                        Fail::Tool(format!(
                            "no execution {} in run {} ({} executions; get_run lists them)",
                            view::one_line(wanted),
                            view::one_line(&a.run_id),
                            execs.len()
                        ))
                    })?;
                Ok(match a.field {
                    None => view::execution_details(x, &a.run_id),
                    Some(f) => {
                        let (name, v) = match f {
                            FieldArg::Input => ("input", x.input.as_ref()),
                            FieldArg::Output => ("output", x.output.as_ref()),
                            FieldArg::Error => ("error", x.error.as_ref()),
                            FieldArg::Usage => ("usage", x.usage.as_ref()),
                        };
                        view::field_slice(v, name, offset)
                    }
                })
            })
            .await,
        )
    }

    #[tool(
        description = "The open pauses (held calls waiting for a decision), oldest first: pause \
                       id, run, node, point, reason, whether its input is editable. Resume one \
                       with resume_pause."
    )]
    async fn list_pauses(&self, Parameters(a): Parameters<ListPausesArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                if let Some(r) = &a.run_id {
                    check_id("runId", r)?;
                }
                let h = locate(port)?;
                let list = open_pauses(&h, a.run_id.as_deref(), None)?;
                if list.is_empty() {
                    return Ok("no open pauses".into());
                }
                let mut out = format!("{} open pauses:\n", list.len());
                for p in &list {
                    let _ = writeln!(out, "{}", view::pause_line(p));
                }
                Ok(out)
            })
            .await,
        )
    }

    #[tool(
        description = "Wait until a call is held at a pause (a breakpoint, step mode, an error \
                       gate, a loop), at most timeoutSeconds (default 30, at most 300), and show \
                       it: the node, its input, output or error, and the resume_pause actions the \
                       hub allows. Reports progress every 2 s to a client that asks for it."
    )]
    async fn wait_for_pause(
        &self,
        Parameters(a): Parameters<WaitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Out {
        let timeout = a.timeout_seconds.unwrap_or(30.0);
        if !(timeout.is_finite() && (0.0..=MAX_WAIT_SECS).contains(&timeout)) {
            return finish(Err(Fail::Params(format!(
                "timeoutSeconds must be 0 to {MAX_WAIT_SECS}"
            ))));
        }
        if let Some(r) = &a.run_id
            && let Err(e) = check_id("runId", r)
        {
            return finish(Err(e));
        }
        let port = self.port;
        let h = match blocking(move || locate(port)).await {
            Ok(h) => h,
            Err(e) => return finish(Err(e)),
        };
        let progress = ctx.meta.get_progress_token();
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(timeout);
        loop {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .as_secs_f64();
            let chunk = left.min(WAIT_CHUNK);
            let (hub, run) = (h.clone(), a.run_id.clone());
            let poll = blocking(move || {
                open_pauses(&hub, run.as_deref(), (chunk >= 0.001).then_some(chunk))
            });
            let found = tokio::select! {
                r = poll => r,
                () = ctx.ct.cancelled() => {
                    return finish(Err(Fail::Tool("cancelled".into())));
                }
            };
            let found = match found {
                Ok(f) => f,
                Err(e) => return finish(Err(e)),
            };
            if let Some(p) = found.into_iter().next() {
                let (actions, note) = allowed_actions(&h, &p);
                return finish(Ok(view::pause_details(&p, &actions, note.as_deref())));
            }
            if Instant::now() >= deadline {
                return finish(Ok(format!(
                    "no pause opened within {timeout} s (set a breakpoint with set_breakpoint, \
                     run the app, then wait again)"
                )));
            }
            if let Some(token) = &progress {
                let _ = ctx
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(
                            token.clone(),
                            start.elapsed().as_secs_f64().min(timeout),
                        )
                        .with_total(timeout)
                        .with_message("waiting for a pause"),
                    )
                    .await;
            }
        }
    }

    #[tool(
        description = "Release a held call. action: continue (let it run), step (switch to step \
                       mode and continue: the next call holds), retry (run it again), inject \
                       (skip it: the caller gets `output`), abort (end the run), reject (skip it: \
                       the caller gets an error with `reason`). `input` runs the call with \
                       another input (continue or retry at an editable gate). `remember` applies \
                       the decision to further holds of the node in this run. Needs the hub's \
                       --allow-control resume (inject: inject; input: edit). Stamped by the hub \
                       as principal agent, operator mcp:<client name>."
    )]
    async fn resume_pause(
        &self,
        Parameters(a): Parameters<ResumeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Out {
        let operator = operator_of(&ctx);
        let port = self.port;
        finish(blocking(move || resume(port, a, operator)).await)
    }

    #[tool(
        description = "Add a breakpoint: calls matching kind and/or name hold at point (before, \
                       after or error; default before) in every connected app until it is \
                       cleared. Needs the hub's --allow-control resume. Answers the breakpoints \
                       and mode now in force."
    )]
    async fn set_breakpoint(&self, Parameters(a): Parameters<MatcherArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                if a.kind.is_none() && a.name.is_none() && a.point.is_none() {
                    return Err(Fail::Params(
                        "a breakpoint needs kind, name and/or point".into(),
                    ));
                }
                let m = matcher(a.kind, a.name, a.point)?;
                let h = locate(port)?;
                require(&h, "resume", "set a breakpoint")?;
                let state = post_json(&h, "/api/debug/breakpoints/set", &json!({"matcher": m}))?;
                Ok(format!("breakpoint set\n{}", view::debug_state(&state)))
            })
            .await,
        )
    }

    #[tool(description = "The breakpoints in force and the debugger mode (run or step).")]
    async fn list_breakpoints(&self, Parameters(_a): Parameters<NoArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                let h = locate(port)?;
                let a = h.get("/api/debug", READ_TIMEOUT)?;
                if a.status == 404 {
                    return Err(Fail::Tool(format!(
                        "the hub on port {} has no /api/debug (a GraphMind 0.6 hub?): its \
                         breakpoints are shown in its viewer",
                        h.port
                    )));
                }
                if a.status != 200 {
                    return Err(Fail::Tool(format!(
                        "the hub answered {}: {}",
                        a.status,
                        a.reason()
                    )));
                }
                Ok(view::debug_state(&a.json()))
            })
            .await,
        )
    }

    #[tool(
        description = "Remove the breakpoints equal to a matcher (kind, name, point), or every \
                       breakpoint with all: true. Needs the hub's --allow-control resume."
    )]
    async fn clear_breakpoints(&self, Parameters(a): Parameters<ClearArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                let all = a.all == Some(true);
                let has_matcher = a.kind.is_some() || a.name.is_some() || a.point.is_some();
                let body = match (all, has_matcher) {
                    (true, true) => {
                        return Err(Fail::Params(
                            "pass either all: true or a matcher, not both".into(),
                        ));
                    }
                    (true, false) => json!({"all": true}),
                    (false, true) => json!({"matcher": matcher(a.kind, a.name, a.point)?}),
                    (false, false) => {
                        return Err(Fail::Params(
                            "name the breakpoint (kind, name, point) or pass all: true".into(),
                        ));
                    }
                };
                let h = locate(port)?;
                require(&h, "resume", "clear breakpoints")?;
                let state = post_json(&h, "/api/debug/breakpoints/clear", &body)?;
                Ok(format!("cleared\n{}", view::debug_state(&state)))
            })
            .await,
        )
    }

    #[tool(
        description = "Set the debugger mode: run (hold only at breakpoints) or step (hold \
                       before every call). Needs the hub's --allow-control resume."
    )]
    async fn set_mode(&self, Parameters(a): Parameters<ModeArgs>) -> Out {
        let port = self.port;
        finish(
            blocking(move || {
                let mode = match a.mode {
                    ModeArg::Run => "run",
                    ModeArg::Step => "step",
                };
                let h = locate(port)?;
                require(&h, "resume", "set the mode")?;
                let state = post_json(&h, "/api/debug/mode", &json!({"mode": mode}))?;
                Ok(view::debug_state(&state))
            })
            .await,
        )
    }
}

/// A run as text: its summary, open pauses, errors, then executions `offset..offset+limit`.
fn run_text(port: Option<u16>, run: &str, offset: usize, limit: usize) -> Result<String, Fail> {
    let h = locate(port)?;
    let summary = run_summary(&h, run)?;
    let (events, more) = run_events(&h, run)?;
    let execs = view::executions(&events);
    let pauses = open_pauses(&h, Some(run), None)?;
    let mut out = format!("run {}\n", view::run_line(&summary));
    if more {
        let _ = writeln!(
            out,
            "(only the first {} events are read here: a very long run)",
            events.len()
        );
    }
    if let Some(err) = events
        .iter()
        .rev()
        .find(|e| e["type"] == "run.finished")
        .and_then(|e| e["payload"].get("error"))
        .filter(|e| !e.is_null())
    {
        let _ = writeln!(out, "run error: {}", view::error_message(err));
    }
    if !pauses.is_empty() {
        let _ = writeln!(out, "open pauses ({}):", pauses.len());
        for p in &pauses {
            let _ = writeln!(out, "  {}", view::pause_line(p));
        }
    }
    let errors: Vec<&view::Execution> = execs.iter().filter(|x| x.error.is_some()).collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "errors ({}):", errors.len());
        for x in errors.iter().take(20) {
            let _ = writeln!(out, "  {}", view::execution_line(x));
        }
    }
    let shown: Vec<&view::Execution> = execs.iter().skip(offset).take(limit).collect();
    let _ = writeln!(
        out,
        "executions {}..{} of {}:",
        (offset + 1).min(execs.len()),
        offset + shown.len(),
        execs.len()
    );
    for x in &shown {
        let _ = writeln!(out, "  {}", view::execution_line(x));
    }
    if offset + shown.len() < execs.len() {
        let _ = writeln!(out, "(more: get_run with offset {})", offset + shown.len());
    }
    Ok(out)
}

/// The request `a` makes, or why it does not fit.
fn resume_request(a: &ResumeArgs, operator: String) -> Result<ResumeRequest, Fail> {
    let action = a.action;
    let p = |m: &str| Err(Fail::Params(m.to_owned()));
    let remember = a.remember == Some(true);
    let mut req = ResumeRequest {
        action: match action {
            ActionArg::Step => "continue".to_owned(),
            other => other.as_str().to_owned(),
        },
        remember,
        operator: Some(operator),
        ..ResumeRequest::default()
    };
    match (action, &a.output) {
        (ActionArg::Inject, None) => {
            return p("inject needs output: the result the caller gets (JSON; null is allowed)");
        }
        (ActionArg::Inject, Some(o)) => {
            check_payload("output", o)?;
            req.output = Some(o.clone());
        }
        (_, Some(_)) => return p("output goes only with action inject"),
        _ => {}
    }
    match (action, &a.reason) {
        (ActionArg::Reject, None) => return p("reject needs reason: the caller gets it back"),
        (ActionArg::Reject, Some(r)) if r.trim().is_empty() => {
            return p("reason is empty: say why the call is rejected");
        }
        (ActionArg::Reject, Some(r)) if r.chars().count() > 2000 => {
            return p("reason is longer than 2000 characters");
        }
        (ActionArg::Reject, Some(r)) => req.reason = Some(r.clone()),
        (_, Some(_)) => return p("reason goes only with action reject"),
        _ => {}
    }
    if let Some(i) = &a.input {
        if !matches!(action, ActionArg::Continue | ActionArg::Retry) {
            return p("input goes with action continue or retry");
        }
        if remember {
            return p("input is for this call only: it does not go with remember");
        }
        check_payload("input", i)?;
        req.input = Some(i.clone());
    }
    if remember
        && !matches!(
            action,
            ActionArg::Continue | ActionArg::Inject | ActionArg::Reject
        )
    {
        return p("remember goes with action continue, inject or reject");
    }
    Ok(req)
}

fn resume(port: Option<u16>, a: ResumeArgs, operator: String) -> Result<String, Fail> {
    check_id("pauseId", &a.pause_id)?;
    if let Some(r) = &a.run_id {
        check_id("runId", r)?;
    }
    let req = resume_request(&a, operator.clone())?;
    let h = locate(port)?;
    let (need, what) = match (a.action, a.input.is_some()) {
        (_, true) => ("edit", "run a held call with an edited input"),
        (ActionArg::Inject, false) => ("inject", "inject a result"),
        _ => ("resume", "resume a pause"),
    };
    require(&h, need, what)?;
    let run = match &a.run_id {
        Some(r) => r.clone(),
        None => {
            let mut runs: Vec<String> = open_pauses(&h, None, None)?
                .iter()
                .filter(|p| p["pauseId"].as_str() == Some(a.pause_id.as_str()))
                .filter_map(|p| p["runId"].as_str().map(str::to_owned))
                .collect();
            runs.dedup();
            match runs.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(Fail::Tool(format!(
                        "no open pause {} (list_pauses shows the open ones)",
                        view::one_line(&a.pause_id)
                    )));
                }
                several => {
                    return Err(Fail::Params(format!(
                        "pause {} is open in runs {}: pass runId",
                        view::one_line(&a.pause_id),
                        several.join(", ")
                    )));
                }
            }
        }
    };
    if a.action == ActionArg::Step {
        post_json(&h, "/api/debug/mode", &json!({"mode": "step"}))?;
    }
    let path = format!("/api/runs/{}/pauses/{}/resume", enc(&run), enc(&a.pause_id));
    let body = serde_json::to_value(&req).map_err(|e| Fail::Params(e.to_string()))?;
    let answer = h.post(&path, &body, RESUME_TIMEOUT)?;
    let v = answer.json();
    let action = a.action.as_str();
    if answer.status == 200 {
        let ra = serde_json::from_value::<ResumeAnswer>(v).ok();
        let mut out = format!("resumed {} of run {run} ({action}", a.pause_id);
        if a.input.is_some() {
            out.push_str(", edited input");
        }
        out.push(')');
        let principal = ra
            .as_ref()
            .and_then(|r| r.principal)
            .map_or("agent", |p| p.as_str());
        let _ = write!(out, "\nstamped: principal {principal}, operator {operator}");
        if let Some(e) = ra.as_ref().and_then(|r| r.edited.as_ref()) {
            let _ = write!(
                out,
                "\nran with input {}",
                view::preview(e, view::PREVIEW_CHARS)
            );
        }
        if ra.as_ref().is_some_and(|r| r.remembered) {
            out.push_str(
                "\nremembered: further holds of this node in the run get the same decision",
            );
        }
        if a.action == ActionArg::Step {
            out.push_str(
                "\nthe hub is in step mode: the next call holds (set_mode run to leave it)",
            );
        }
        return Ok(out);
    }
    let reason = answer.reason();
    Err(Fail::Tool(match answer.status {
        202 => format!(
            "sent {action} to the app, but it did not confirm within 5 s: the gate may still be \
             held (list_pauses shows it)"
        ),
        422 => format!(
            "the {} refused {action}{}: {reason} (the gate stays held: fix the request and \
             resume again)",
            if v.get("refusedBy").and_then(Value::as_str) == Some("hub") {
                "hub"
            } else {
                "app"
            },
            v.get("code")
                .and_then(Value::as_str)
                .map_or_else(String::new, |c| format!(" ({c})")),
        ),
        409 => format!("{} is taken: {reason}", a.pause_id),
        404 | 410 => format!(
            "{} is gone: {reason} (list_pauses shows the open ones)",
            a.pause_id
        ),
        403 => format!("forbidden: {reason}"),
        s => format!("the hub answered {s}: {reason}"),
    }))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for GraphmindMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("graphmind", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "graphmind is a live debugger for AI agents. The loop: set_breakpoint on the \
                 call to inspect (or set_mode step), run the agent, wait_for_pause, read the \
                 held call (get_execution, get_run), then resume_pause: continue, inject a \
                 fixed result, edit the input, reject or abort. list_runs and get_run read \
                 finished runs. What may be changed is the hub's --allow-control level.",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let port = self.port;
        let runs = blocking(move || {
            let h = locate(port)?;
            let v = get_json(
                &h,
                &format!("/api/runs?limit={RESOURCE_RUNS}"),
                READ_TIMEOUT,
            )?;
            Ok(v.get("runs")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default())
        })
        .await
        .map_err(|e| match e {
            Fail::Params(m) | Fail::Tool(m) => ErrorData::internal_error(m, None),
        })?;
        let items = runs
            .iter()
            .filter_map(|r| {
                let id = r.get("runId").or_else(|| r.get("id"))?.as_str()?;
                let name = r.get("name").and_then(Value::as_str).unwrap_or(id);
                Some(
                    Resource::new(format!("{RUN_URI}{id}"), id)
                        .with_title(view::one_line(name))
                        .with_description(view::run_line(r))
                        .with_mime_type("text/plain"),
                )
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(items))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some(run) = uri.strip_prefix(RUN_URI).map(str::to_owned) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}: runs are {RUN_URI}<runId>",
                    view::one_line(&uri)
                ),
                None,
            ));
        };
        if let Err(Fail::Params(m) | Fail::Tool(m)) = check_id("runId", &run) {
            return Err(ErrorData::invalid_params(m, None));
        }
        let port = self.port;
        let text = blocking(move || run_text(port, &run, 0, 500))
            .await
            .map_err(|e| match e {
                Fail::Params(m) => ErrorData::invalid_params(m, None),
                Fail::Tool(m) => ErrorData::resource_not_found(m, None),
            })?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/plain"),
        ])
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> ResumeArgs {
        serde_json::from_value(v).expect("args")
    }

    #[test]
    fn resume_arguments_that_do_not_fit_the_action_are_refused() {
        for (a, says) in [
            (
                json!({"pauseId":"p","action":"inject"}),
                "inject needs output",
            ),
            (
                json!({"pauseId":"p","action":"continue","output":1}),
                "output goes only",
            ),
            (
                json!({"pauseId":"p","action":"reject"}),
                "reject needs reason",
            ),
            (
                json!({"pauseId":"p","action":"reject","reason":" "}),
                "reason is empty",
            ),
            (
                json!({"pauseId":"p","action":"abort","input":{}}),
                "input goes with",
            ),
            (
                json!({"pauseId":"p","action":"continue","input":{},"remember":true}),
                "does not go with remember",
            ),
            (
                json!({"pauseId":"p","action":"abort","remember":true}),
                "remember goes with",
            ),
        ] {
            match resume_request(&args(a.clone()), "mcp:t".into()) {
                Err(Fail::Params(m)) => assert!(m.contains(says), "{a}: {m}"),
                _ => panic!("{a}: not refused"),
            }
        }
    }

    #[test]
    fn an_injected_null_is_an_output() {
        let r = resume_request(
            &args(json!({"pauseId":"p","action":"inject","output":null})),
            "mcp:t".into(),
        )
        .ok()
        .expect("null is an output");
        assert_eq!(r.output, Some(Value::Null));
        assert_eq!(r.operator.as_deref(), Some("mcp:t"));
    }

    #[test]
    fn step_continues_and_deep_or_huge_payloads_are_refused() {
        let r = resume_request(&args(json!({"pauseId":"p","action":"step"})), "o".into())
            .ok()
            .expect("step");
        assert_eq!(r.action, "continue");
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        assert_eq!(depth(&deep), 120);
        assert!(
            matches!(check_payload("output", &deep), Err(Fail::Params(m)) if m.contains("120 levels"))
        );
        let huge = json!("x".repeat(MAX_RESUME_BYTES + 1));
        assert!(
            matches!(check_payload("output", &huge), Err(Fail::Params(m)) if m.contains("bytes"))
        );
    }
}
