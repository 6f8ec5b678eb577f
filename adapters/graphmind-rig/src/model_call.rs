//! One model call of a rig run as one execution of `llm:step`: started and gated (`before`)
//! when rig dispatches the completion, its streamed deltas teed, gated (`after`) when the
//! answer is in, finished with the accepted turn's content, usage and finish reason.

use graphmind::model::{Delta, DeltaKind, Grouping};
use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use rig_agent::HookContext;
use rig_agent::agent::{ModelTurnAction, ModelTurnFinished, OutcomeAction};
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse};
use rig_core::effect::{EffectId, Outcome};
use rig_core::error::ErrorReport;

use crate::output::{ModelTurn, NoInject, TurnInject, has_tool_calls, reply, usage};
use crate::state::{Shared, Step};
use crate::turn_gate::{ABORTED, Gate, abort, gate_turn};
use crate::{guard, model_error};

/// What the `before` gate decided for rig.
pub(crate) enum Dispatch {
    /// Send the request (graphmind's layer answers it when the step holds its answer).
    Send,
    /// Stop the run (aborted outside any graphmind run).
    Stop,
}

/// Starts the step (or, for a re-issued turn, continues the open one) and holds its
/// `before` gate. `answers`: the agent's model is served through graphmind's layer
/// ([`gated_model`](crate::gated_model)), which can answer a non-streamed call (`stream`
/// false) without calling the provider: an inject there (a person's, or a replay's recorded
/// answer) is the call's whole answer, tool calls included. Without it rig calls the provider
/// for every model call: a replay runs the call live (and says so), and an inject at `before`
/// is refused with that reason (inject at `after` instead).
pub(crate) async fn dispatch(
    ctx: &HookContext,
    id: EffectId,
    request: &CompletionRequest,
    stream: bool,
    answers: bool,
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
    let answered = answers && !stream;
    let decided = if answered {
        gate_model_turn(&mut step.node).await
    } else {
        // The call reaches the provider whatever the gate says: a replay runs it live.
        step.node.decline_replay();
        match gate_turn::<NoBeforeInject>(&mut step.node, PausePoint::Before).await {
            // Refused at the gate; should one still come through, it is a turn's text.
            Gate::Inject(t) => Gate::Inject(t.into_content()),
            Gate::Go => Gate::Go,
            Gate::Retry => Gate::Retry,
            Gate::Abort => Gate::Abort,
        }
    };
    let out = match decided {
        Gate::Abort => {
            abort(step.node).await;
            return Dispatch::Stop;
        }
        Gate::Inject(content) => {
            step.answer = Some(content);
            Dispatch::Send
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

/// The `before` gate of a call graphmind's layer answers: an inject is a whole turn
/// ([`ModelTurn`]).
async fn gate_model_turn(node: &mut Node) -> Gate<Vec<AssistantContent>> {
    match node.gate_typed::<ModelTurn>(PausePoint::Before).await {
        Resume::Retry => Gate::Retry,
        Resume::Inject(v) => match serde_json::from_value::<ModelTurn>(v) {
            Ok(t) => Gate::Inject(t.0),
            Err(_) => Gate::Go,
        },
        Resume::Abort => Gate::Abort,
        _ => Gate::Go,
    }
}

/// The inject at the `before` gate of a call rig sends to the provider whatever the gate
/// says (the agent's model is not served through graphmind's layer, or the call streams):
/// refused with the reason, the gate stays held.
#[derive(Debug)]
pub(crate) struct NoBeforeInject;

impl<'de> serde::Deserialize<'de> for NoBeforeInject {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "rig calls the provider for this model call whatever the gate says (its answer may call tools, and rig keeps such a turn): inject at the after gate, or serve the agent's model through graphmind_rig::gated_model / gate_model_errors (not for a streamed call) to answer it here",
        ))
    }
}

/// What rig's request holds that the provider minted, not the program (see
/// [`graphmind::model::provider_minted`]): each earlier assistant turn's `origin` (the wire,
/// provider, model and response id that produced it). A replay does not compare it, so that a
/// replayed run whose answers carry other ids is not a divergence.
const PROVIDER_MINTED: &[&str] = &["$.chat_history[*].origin"];

/// A new execution of `llm:step` (and, on the run's first step, `graph.hint` with the agent's
/// tools).
fn start(ctx: &HookContext, request: &CompletionRequest) -> Option<Step> {
    guard("starting a model step", || {
        // Steps of one prompt call are one invocation; two prompt calls never merge. The
        // request is serialized once, straight into the recorded text.
        let node = graphmind::model::provider_minted(PROVIDER_MINTED, || {
            Node::start_step_serialized(
                request,
                Grouping::explicit(format!("rig-{}", ctx.run_id())),
            )
        })?;
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
            answer: None,
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
