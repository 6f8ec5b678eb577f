//! [`GraphmindHook`]: rig's `AgentHook` that turns an agent run's model calls and tool calls
//! into gated graphmind nodes.

use graphmind::model::DeltaKind;
use graphmind::protocol::Status;
use rig_agent::agent::{
    DispatchAction, DispatchEvent, ModelTurnAction, ModelTurnFinished, ObservationAction,
    OutcomeAction, OutcomeEvent, ReasoningDelta, RunSettled, SettledOutcome, TextDelta,
    ToolCallDelta,
};
use rig_agent::tool::server::ToolServerHandle;
use rig_agent::{Agent, AgentHook, HookContext};
use rig_core::effect::EffectKind;

use crate::state::Shared;
use crate::{model_call, tool_call};

/// rig's [`AgentHook`] for graphmind: every model call of the run it is added to is an
/// execution of `llm:step`, every tool call one of `tool:<name>`, each held at its gates.
///
/// [`Instrument::graphmind`](crate::Instrument::graphmind) adds it and makes the prompt call
/// a graphmind run; add it yourself for a streamed run, or to every run of an agent:
///
/// ```
/// use rig_agent::AgentBuilder;
/// use rig_core::test_utils::MockCompletionModel;
///
/// let agent = AgentBuilder::new(MockCompletionModel::text("hi")).name("helper").build();
/// let runner = agent.prompt("Hello").add_hook(graphmind_rig::GraphmindHook::for_agent(&agent));
/// # drop(runner);
/// ```
///
/// A hook made with [`GraphmindHook::new`] (without the agent) gates everything the same,
/// except that a `retry` at a tool's gate cannot re-run the tool: the tool's result goes on
/// as it was.
#[derive(Clone, Default)]
pub struct GraphmindHook {
    tools: Option<ToolServerHandle>,
    /// The agent's model is served through graphmind's layer ([`gated_model`](crate::gated_model)):
    /// a model call's answer can be given without calling the provider.
    answers: bool,
}

impl std::fmt::Debug for GraphmindHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphmindHook")
            .field("can_rerun_tools", &self.tools.is_some())
            .field("answers_model_calls", &self.answers)
            .finish()
    }
}

impl GraphmindHook {
    /// A hook that does not know the agent's tools (a tool `retry` continues).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A hook for `agent`'s runs: a `retry` at a tool's gate re-runs the tool on the run's bus,
    /// and, when the agent's model is served through [`gated_model`](crate::gated_model), a
    /// model call injected at its `before` gate (or answered by a replay) is answered without
    /// calling the provider.
    #[must_use]
    pub fn for_agent(agent: &Agent) -> Self {
        Self {
            tools: Some(agent.tool_server_handle().clone()),
            answers: crate::model_error::answers(agent),
        }
    }
}

impl AgentHook for GraphmindHook {
    fn name(&self) -> Option<String> {
        Some("graphmind".into())
    }

    async fn on_dispatch(&self, ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        match event.kind {
            EffectKind::Completion { request, stream } => {
                match model_call::dispatch(ctx, event.id, request, *stream, self.answers).await {
                    model_call::Dispatch::Send => DispatchAction::Proceed,
                    model_call::Dispatch::Stop => DispatchAction::stop(crate::turn_gate::ABORTED),
                }
            }
            EffectKind::ToolCall { name, args } => {
                tool_call::dispatch(ctx, event.call_id, name, args).await
            }
            _ => DispatchAction::Proceed,
        }
    }

    async fn on_outcome(&self, ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        match event.kind {
            EffectKind::Completion { .. } => model_call::outcome(ctx, event.outcome).await,
            EffectKind::ToolCall { name, args } => {
                tool_call::outcome(
                    ctx,
                    self.tools.as_ref(),
                    event.call_id,
                    name,
                    args,
                    event.outcome,
                )
                .await
            }
            _ => OutcomeAction::Proceed,
        }
    }

    async fn on_model_turn_finished(
        &self,
        ctx: &HookContext,
        event: ModelTurnFinished<'_>,
    ) -> ModelTurnAction {
        model_call::turn_finished(ctx, &event)
    }

    async fn on_text_delta(&self, ctx: &HookContext, event: TextDelta<'_>) -> ObservationAction {
        model_call::delta(ctx, DeltaKind::Text, event.delta);
        ObservationAction::Continue
    }

    async fn on_reasoning_delta(
        &self,
        ctx: &HookContext,
        event: ReasoningDelta<'_>,
    ) -> ObservationAction {
        model_call::delta(ctx, DeltaKind::Reasoning, event.delta);
        ObservationAction::Continue
    }

    async fn on_tool_call_delta(
        &self,
        ctx: &HookContext,
        event: ToolCallDelta<'_>,
    ) -> ObservationAction {
        model_call::tool_delta(ctx, event.part.index(), event.tool_name, event.delta);
        ObservationAction::Continue
    }

    /// The run ended: whatever it left open finishes. A failed model call (rig passes a
    /// provider error straight to the caller, past every hook) finishes its step `error`
    /// with the error; a cancelled run's nodes finish `aborted`.
    async fn on_run_settled(&self, ctx: &HookContext, event: RunSettled<'_>) {
        let Some(shared) = Shared::existing(ctx) else {
            return;
        };
        let (status, message) = match event.outcome {
            SettledOutcome::Response(_) => (Status::Aborted, None),
            SettledOutcome::Error(message) if cancelled(message) => {
                (Status::Aborted, Some(message))
            }
            SettledOutcome::Error(message) => (Status::Error, Some(message)),
        };
        let step = shared.lock().step.take();
        if let Some(step) = step {
            if let Some(id) = step.effect {
                crate::model_error::forget(id, &shared);
            }
            if let Some(m) = message {
                step.node.error("PromptError", m.to_owned());
            }
            step.node.finish_with(
                status,
                None,
                None,
                graphmind::node::Extras::new()
                    .api("rig")
                    .attempts(step.attempts)
                    .into(),
            );
        }
        tool_call::close_all(&shared, Status::Aborted);
    }
}

/// Whether rig's settled error is a cancellation (rig 0.44: "the run was cancelled: …",
/// rig 0.43: "PromptCancelled: …").
fn cancelled(message: &str) -> bool {
    message.starts_with("the run was cancelled") || message.starts_with("PromptCancelled")
}
