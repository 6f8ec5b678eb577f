//! What one rig run has open on the wire: its model step (one at a time: rig's loop issues
//! model calls one after another) and its tool calls (several at once under
//! `tool_concurrency`), kept in the run's own [`Scratchpad`](rig_agent::agent::hook::Scratchpad)
//! so that two concurrent prompt calls never share anything.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use graphmind::node::Node;
use rig_agent::HookContext;
use rig_core::completion::AssistantContent;
use serde_json::Value;

/// The open `llm:step` of a run.
pub(crate) struct Step {
    pub(crate) node: Node,
    /// Dispatches of this execution (a gate retry is one more).
    pub(crate) attempts: u32,
    /// The answer graphmind's model layer gives the dispatch instead of calling the provider
    /// (an inject at the before gate, or a replay's recorded answer; see `gated_model`).
    pub(crate) answer: Option<Vec<AssistantContent>>,
    /// The after gate asked for a retry: the turn is repeated.
    pub(crate) retry: bool,
    /// The next dispatch re-issues this execution.
    pub(crate) reissue: bool,
    pub(crate) injected: bool,
    pub(crate) streamed: bool,
    pub(crate) model: Option<String>,
    /// The completion dispatch in flight for this step (for the model-error layer).
    pub(crate) effect: Option<rig_core::effect::EffectId>,
}

/// An open `tool:<name>` execution.
pub(crate) struct ToolRun {
    pub(crate) node: Node,
    /// A result injected at the before gate: the call is skipped and this is its result.
    pub(crate) inject: Option<Value>,
}

/// Everything a run has open.
#[derive(Default)]
pub(crate) struct RunState {
    pub(crate) step: Option<Step>,
    /// By rig's tool-call id (the nodes' instance ids).
    pub(crate) tools: HashMap<String, ToolRun>,
}

/// The run's state, shared by the hook's events.
#[derive(Clone, Default)]
pub(crate) struct Shared(Arc<Mutex<RunState>>);

impl Shared {
    /// The run's state (created on first use).
    pub(crate) fn of(ctx: &HookContext) -> Self {
        let pad = ctx.scratchpad();
        if let Some(s) = pad.get::<Shared>() {
            return s;
        }
        let s = Shared::default();
        pad.insert(s.clone());
        s
    }

    /// Only existing state (for events that open nothing).
    pub(crate) fn existing(ctx: &HookContext) -> Option<Self> {
        ctx.scratchpad().get::<Shared>()
    }

    /// Whether `self` and `other` are the same run's state.
    pub(crate) fn same(&self, other: &Shared) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, RunState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
