//! One tool call of a rig run as one execution of `tool:<name>` (instanceId = rig's tool-call
//! id): the `before` gate when rig dispatches it, `after` when it returns, `error` when it
//! fails, before rig (and the model) see the result.

use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{NodeKind, PausePoint, Status};
use rig_agent::HookContext;
use rig_agent::agent::{DispatchAction, OutcomeAction};
use rig_agent::tool::server::ToolServerHandle;
use rig_core::effect::{Outcome, ToolCallRequest};
use rig_core::error::ErrorReport;
use rig_core::message::CallId;
use rig_core::tool::ToolResult;
use serde_json::Value;

use crate::guard;
use crate::output::{args_value, output_value, tool_output};
use crate::state::{Shared, ToolRun};
use crate::turn_gate::{ABORTED, Gate, abort};

/// The reason rig's skipped result carries while the debugger's inject replaces it.
const INJECTED: &str = "graphmind: result injected by the debugger";

async fn gate(node: &mut Node, point: PausePoint) -> Gate<Value> {
    match node.gate(point).await {
        Resume::Retry => Gate::Retry,
        Resume::Inject(v) => Gate::Inject(v),
        Resume::Abort => Gate::Abort,
        _ => Gate::Go,
    }
}

/// Starts the tool's node and holds its `before` gate.
pub(crate) async fn dispatch(
    ctx: &HookContext,
    call_id: Option<&CallId>,
    name: &str,
    args: &str,
) -> DispatchAction {
    let Some(call_id) = call_id else {
        return DispatchAction::Proceed;
    };
    if !Node::enabled() {
        return DispatchAction::Proceed;
    }
    let id = call_id.to_string();
    let started = guard("starting a tool call", || {
        Node::start_with(
            NodeKind::Tool,
            name,
            &format!("tool:{name}"),
            Some(id.clone()),
            Some(args_value(args)),
        )
    })
    .flatten();
    let Some(mut node) = started else {
        return DispatchAction::Proceed;
    };
    // A person may reject the call the model asked for (GraphMind `reject`, graphmind's
    // extension): the tool does not run and the model sees why.
    node.rejectable();
    // rig's tool arguments are JSON: a person may edit an object of them (GraphMind 0.6
    // `edit-input`); rig then runs the tool with the edited arguments.
    if let Value::Object(args) = args_value(args) {
        node.editable(&args);
    }
    let (inject, action) = match node.gate(PausePoint::Before).await {
        Resume::Abort => {
            abort(node).await;
            return DispatchAction::stop(ABORTED);
        }
        // rig skips the call; its outcome (a skipped result) is replaced by the inject.
        Resume::Inject(v) => (Some(v), DispatchAction::skip(INJECTED)),
        // rig skips the call and hands the model the rejection as the call's (failed) result.
        Resume::Reject(reason) => {
            let told = graphmind::Rejection::new(reason.as_str()).to_string();
            node.reject(&reason);
            return DispatchAction::skip(told);
        }
        // Checked against the arguments' shape at the gate; rig patches a call's arguments.
        Resume::Edit { input, .. } => (
            None,
            DispatchAction::Patch(rig_core::effect::EffectKind::ToolCall {
                name: name.to_owned(),
                args: input.to_string(),
            }),
        ),
        _ => (None, DispatchAction::Proceed),
    };
    Shared::of(ctx)
        .lock()
        .tools
        .insert(id, ToolRun { node, inject });
    action
}

/// The tool returned (or failed): the `after` or `error` gate. Inject answers with a
/// successful result, retry runs the tool again, continue passes rig's result on, abort ends
/// the run.
pub(crate) async fn outcome(
    ctx: &HookContext,
    tools: Option<&ToolServerHandle>,
    call_id: Option<&CallId>,
    name: &str,
    args: &str,
    result: &Result<Outcome, ErrorReport>,
) -> OutcomeAction {
    let (Some(call_id), Some(shared)) = (call_id, Shared::existing(ctx)) else {
        return OutcomeAction::Proceed;
    };
    let Some(run) = shared.lock().tools.remove(&call_id.to_string()) else {
        return OutcomeAction::Proceed;
    };
    let ToolRun { mut node, inject } = run;
    if let Some(v) = inject {
        return injected(node, v, 0);
    }
    let mut current: Option<Result<ToolResult, ErrorReport>> = None;
    let mut attempts = 1u32;
    loop {
        let failure = match current.as_ref() {
            Some(Ok(r)) => r.error().map(ToString::to_string),
            Some(Err(report)) => Some(report.to_string()),
            None => match result {
                Ok(Outcome::ToolResult { result }) => result.error().map(ToString::to_string),
                Ok(_) => None,
                Err(report) => Some(report.to_string()),
            },
        };
        let point = match &failure {
            Some(message) => {
                node.error("ToolError", message.clone());
                PausePoint::Error
            }
            None => PausePoint::After,
        };
        match gate(&mut node, point).await {
            Gate::Go => {
                let output = match current.as_ref() {
                    Some(Ok(r)) => Some(output_value(r.output())),
                    Some(Err(_)) => None,
                    None => match result {
                        Ok(Outcome::ToolResult { result }) => Some(output_value(result.output())),
                        _ => None,
                    },
                };
                let status = if failure.is_some() {
                    Status::Error
                } else {
                    Status::Ok
                };
                node.finish_with(
                    status,
                    output,
                    None,
                    Extras::new().attempts(attempts).into(),
                );
                return match current {
                    None => OutcomeAction::Proceed,
                    Some(Ok(r)) => OutcomeAction::Replace(Ok(Outcome::ToolResult { result: r })),
                    Some(Err(report)) => OutcomeAction::Replace(Err(report)),
                };
            }
            Gate::Inject(v) => return injected(node, v, attempts),
            Gate::Abort => {
                abort(node).await;
                return OutcomeAction::stop(ABORTED);
            }
            Gate::Retry => {
                attempts += 1;
                current = Some(rerun(ctx, tools, name, args).await);
            }
        }
    }
}

/// The tool once more, through the run's bus (the call's inbound `ToolContext` is not
/// carried: rig hands it to hooks read-only).
async fn rerun(
    ctx: &HookContext,
    tools: Option<&ToolServerHandle>,
    name: &str,
    args: &str,
) -> Result<ToolResult, ErrorReport> {
    let unavailable = || {
        ErrorReport::new(
            rig_core::error::ErrorKind::HandlerUnavailable,
            format!("graphmind: cannot re-run tool `{name}` (hook built without its agent)"),
        )
    };
    let key = tools
        .and_then(|t| t.snapshot().key(name).cloned())
        .ok_or_else(unavailable)?;
    let handle = ctx.tool(key.raw())?;
    handle
        .dispatch(ToolCallRequest {
            name: name.to_owned(),
            args: args.to_owned(),
        })
        .await
}

/// Finishes the node with the injected value and answers rig with it as a success.
fn injected(node: Node, v: Value, attempts: u32) -> OutcomeAction {
    let mut extras = Extras::new().injected();
    if attempts > 0 {
        extras = extras.attempts(attempts);
    }
    node.finish_with(Status::Ok, Some(v.clone()), None, extras.into());
    OutcomeAction::Replace(Ok(Outcome::ToolResult {
        result: ToolResult::success(tool_output(v)),
    }))
}

/// Finishes every node the run still has open (rig settled without answering them).
pub(crate) fn close_all(shared: &Shared, status: Status) {
    let open: Vec<ToolRun> = shared.lock().tools.drain().map(|(_, t)| t).collect();
    for t in open {
        t.node.finish(status, None);
    }
}
