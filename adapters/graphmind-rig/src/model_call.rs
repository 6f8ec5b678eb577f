//! One model call of a rig run as one execution of `llm:step`: started and gated (`before`)
//! when rig dispatches the completion, its streamed deltas teed, gated (`after`) when the
//! answer is in, finished with the accepted turn's content, usage and finish reason.

use graphmind::model::{Delta, DeltaKind, Grouping};
use graphmind::node::{Extras, Node};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use rig_agent::HookContext;
use rig_agent::agent::{ModelTurnAction, ModelTurnFinished, OutcomeAction};
use rig_core::completion::{CompletionRequest, CompletionResponse};
use rig_core::effect::{EffectId, Outcome};
use rig_core::error::ErrorReport;

use crate::output::{NoInject, TurnInject, has_tool_calls, reply, usage};
use crate::state::{Shared, Step};
use crate::turn_gate::{ABORTED, Gate, abort, gate_turn};
use crate::{guard, model_error};

/// What the `before` gate decided for rig.
pub(crate) enum Dispatch {
    /// Send the request.
    Send,
    /// Send this request instead (an inject: the request goes out without tools, so that
    /// its answer is a turn rig lets the inject replace).
    Patch(Box<CompletionRequest>),
    /// Stop the run (aborted outside any graphmind run).
    Stop,
}

/// Starts the step (or, for a re-issued turn, continues the open one) and holds its
/// `before` gate.
pub(crate) async fn dispatch(
    ctx: &HookContext,
    id: EffectId,
    request: &CompletionRequest,
) -> Dispatch {
    if !Node::enabled() {
        return Dispatch::Send;
    }
    let shared = Shared::of(ctx);
    let open = shared.lock().step.take();
    let mut step = match open {
        Some(mut step) if step.reissue => {
            step.reissue = false;
            step
        }
        // A step left open (rig never settled it): it ends here.
        other => {
            if let Some(stale) = other {
                if let Some(id) = stale.effect {
                    model_error::forget(id, &shared);
                }
                stale.node.finish(Status::Error, None);
            }
            match start(ctx, request) {
                Some(step) => step,
                None => return Dispatch::Send,
            }
        }
    };
    let decided = gate_turn::<TurnInject>(&mut step.node, PausePoint::Before).await;
    let out = match decided {
        Gate::Abort => {
            abort(step.node).await;
            return Dispatch::Stop;
        }
        Gate::Inject(t) => {
            step.inject = Some(t.into_content());
            let mut patched = request.clone();
            patched.tools.clear();
            patched.tool_choice = None;
            Dispatch::Patch(Box::new(patched))
        }
        Gate::Go | Gate::Retry => Dispatch::Send,
    };
    step.attempts += 1;
    if let Some(old) = step.effect.replace(id) {
        model_error::forget(old, &shared);
    }
    model_error::note(id, &shared);
    shared.lock().step = Some(step);
    out
}

/// A new execution of `llm:step` (and, on the run's first step, `graph.hint` with the agent's
/// tools).
fn start(ctx: &HookContext, request: &CompletionRequest) -> Option<Step> {
    guard("starting a model step", || {
        // Steps of one prompt call are one invocation; two prompt calls never merge. The
        // request is serialized once, straight into the recorded text.
        let node = Node::start_step_serialized(
            request,
            Grouping::explicit(format!("rig-{}", ctx.run_id())),
        )?;
        if node.instance_id().ends_with(":s1") && !request.tools.is_empty() {
            // Once per run: every prompt call of an agent offers the same tools.
            node.emit_hint(GraphHint {
                nodes: request
                    .tools
                    .iter()
                    .map(|t| GraphNodeHint {
                        node_id: format!("tool:{}", t.name),
                        kind: NodeKind::Tool,
                        name: t.name.to_string(),
                        parent_id: Some("llm:step".into()),
                        extra: Extra::new(),
                    })
                    .collect(),
                extra: Extra::new(),
            });
        }
        Some(Step {
            node,
            attempts: 0,
            inject: None,
            retry: false,
            reissue: false,
            injected: false,
            streamed: false,
            model: request.model.clone(),
            effect: None,
        })
    })
    .flatten()
}

/// A streamed delta of the open step.
pub(crate) fn delta(ctx: &HookContext, kind: DeltaKind, text: &str) {
    let Some(shared) = Shared::existing(ctx) else {
        return;
    };
    if let Some(step) = shared.lock().step.as_mut() {
        step.streamed = true;
        step.node.token(kind, text);
    }
}

/// A streamed tool-argument delta of the open step, apart per call.
pub(crate) fn tool_delta(ctx: &HookContext, index: usize, tool: &str, text: &str) {
    let Some(shared) = Shared::existing(ctx) else {
        return;
    };
    if let Some(step) = shared.lock().step.as_mut() {
        step.streamed = true;
        step.node
            .delta(&Delta::tool_args(index as u64, text).with_tool_name(tool));
    }
}

/// The answer is in (rig accepted its tool calls): the `after` gate. Inject substitutes the
/// turn's content (also an inject made at `before`), retry repeats a tool-free turn, abort
/// ends the run.
pub(crate) async fn outcome(
    ctx: &HookContext,
    result: &Result<Outcome, ErrorReport>,
) -> OutcomeAction {
    let Ok(Outcome::Completion(response)) = result else {
        return OutcomeAction::Proceed;
    };
    let Some(shared) = Shared::existing(ctx) else {
        return OutcomeAction::Proceed;
    };
    let Some(mut step) = shared.lock().step.take() else {
        return OutcomeAction::Proceed;
    };
    let calls_tools = has_tool_calls(&response.choice);
    if let Some(content) = step.inject.take() {
        if !calls_tools {
            step.injected = true;
            shared.lock().step = Some(step);
            return replace(response, content);
        }
        // The model called tools all the same: rig keeps such a turn as it is.
        step.node.error(
            "InjectNotApplied",
            "the answer called tools; rig cannot replace such a turn",
        );
    }
    let decided = if calls_tools {
        gate_turn::<NoInject>(&mut step.node, PausePoint::After).await
    } else {
        gate_turn::<TurnInject>(&mut step.node, PausePoint::After).await
    };
    let action = match decided {
        Gate::Go => OutcomeAction::Proceed,
        Gate::Retry => {
            // rig repeats only a tool-free turn (a turn's tool calls must be answered).
            step.retry = !calls_tools;
            OutcomeAction::Proceed
        }
        Gate::Inject(t) => {
            step.injected = true;
            replace(response, t.into_content())
        }
        Gate::Abort => {
            abort(step.node).await;
            return OutcomeAction::stop(ABORTED);
        }
    };
    shared.lock().step = Some(step);
    action
}

fn replace(
    response: &CompletionResponse,
    content: Vec<rig_core::completion::AssistantContent>,
) -> OutcomeAction {
    let mut r = response.clone();
    r.choice = content;
    OutcomeAction::Replace(Ok(Outcome::Completion(r)))
}

/// The turn is accepted: the step finishes (or, after a retry at `after`, rig repeats it).
pub(crate) fn turn_finished(ctx: &HookContext, event: &ModelTurnFinished<'_>) -> ModelTurnAction {
    let Some(shared) = Shared::existing(ctx) else {
        return ModelTurnAction::Continue;
    };
    let Some(mut step) = shared.lock().step.take() else {
        return ModelTurnAction::Continue;
    };
    if step.retry {
        step.retry = false;
        step.reissue = true;
        shared.lock().step = Some(step);
        return ModelTurnAction::repeat();
    }
    let Step {
        node,
        attempts,
        injected,
        streamed,
        model,
        effect,
        ..
    } = step;
    if let Some(id) = effect {
        model_error::forget(id, &shared);
    }
    let mut extras = Extras::new().api("rig").attempts(attempts);
    // The model as the request named it, else as the provider's response names it.
    let answered = event.raw.get("model").and_then(serde_json::Value::as_str);
    if let Some(m) = model.or_else(|| answered.map(str::to_owned)) {
        extras = extras.model(m);
    }
    if let Some(id) = &event.identity.response_id {
        extras = extras.response_id(id.clone());
    }
    if injected {
        extras = extras.injected();
    }
    if streamed {
        extras = extras.streamed();
    }
    let output = guard("finishing a model step", || {
        reply(event.content, event.finish_reason)
    });
    node.finish_with(Status::Ok, output, usage(&event.usage), extras.into());
    ModelTurnAction::Continue
}
