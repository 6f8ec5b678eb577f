//! The `error` gate of a failed model call. rig returns a failed completion dispatch from the
//! run's loop before any `AgentHook` sees it, so the gate sits one level down, in a
//! `rig_core::serve::Intercept` layer around the agent's model handler on its bus
//! ([`gated_model`], [`GateModelErrors::gate_model_errors`]): the layer's verdict is what the
//! loop receives. The hook's `on_dispatch` notes which run's step a completion dispatch
//! belongs to (by its effect id); the layer finds the step there when the dispatch failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use graphmind::node::Node;
use graphmind::protocol::{PausePoint, Status};
use rig_agent::AgentBuilder;
use rig_core::DynModel;
use rig_core::completion::ModelRef;
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse};
use rig_core::effect::{EffectId, EffectKind, Outcome};
use rig_core::error::{ErrorKind, ErrorReport};
use rig_core::operation::Completion;
use rig_core::serve::adapters::ModelAdapter;
use rig_core::serve::{Decision, Dispatch, ErasedHandler, Intercept, Reply, Serve, Verdict};

use crate::output::TurnInject;
use crate::state::{Shared, Step};
use crate::turn_gate::{ABORTED, Gate, abort, gate_turn};

/// A completion dispatch in flight: its effect id, the graphmind run it was dispatched in,
/// and the run state of its step.
type InFlight = (EffectId, Option<String>, Shared);

/// Completion dispatches in flight. Effect ids are unique per bus only (every agent's bus
/// counts from 1), so one id may stand for dispatches of several agents at once; the
/// graphmind run the layer's answer is polled in then tells them apart. When it cannot, the
/// layer lets the error pass ungated.
static IN_FLIGHT: Mutex<Vec<InFlight>> = Mutex::new(Vec::new());

/// Whether any agent of the process was built with the `error` gate's layer: until one is,
/// nothing reads [`IN_FLIGHT`], and model calls skip it (no lock, no run lookup).
static LAYERED: AtomicBool = AtomicBool::new(false);

fn in_flight() -> MutexGuard<'static, Vec<InFlight>> {
    IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The completion dispatch `id` serves the open step of `shared`.
pub(crate) fn note(id: EffectId, shared: &Shared) {
    if !LAYERED.load(Ordering::Relaxed) {
        return;
    }
    let run = graphmind::current_run_id();
    in_flight().push((id, run, shared.clone()));
}

/// The dispatch `id` of `shared` is over (answered, or its run settled).
pub(crate) fn forget(id: EffectId, shared: &Shared) {
    if !LAYERED.load(Ordering::Relaxed) {
        return;
    }
    in_flight().retain(|(i, _, s)| !(*i == id && s.same(shared)));
}

/// The run state of the one dispatch in flight under `id` (and, if several agents have one
/// under that id, in the current graphmind run), taken off the list.
fn claim(id: EffectId) -> Option<Shared> {
    find(id, true)
}

/// [`claim`], taking the entry off the list only when `take`.
fn find(id: EffectId, take: bool) -> Option<Shared> {
    let mut all = in_flight();
    let with_id: Vec<usize> = (0..all.len()).filter(|&at| all[at].0 == id).collect();
    let at = match with_id.as_slice() {
        [] => return None,
        [one] => *one,
        several => {
            let run = graphmind::current_run_id()?;
            let mut same_run = several
                .iter()
                .filter(|&&at| all[at].1.as_deref() == Some(run.as_str()));
            let one = *same_run.next()?;
            if same_run.next().is_some() {
                return None;
            }
            one
        }
    };
    if take {
        Some(all.swap_remove(at).2)
    } else {
        Some(all[at].2.clone())
    }
}

/// rig's handler for `model` under `label` (rig's `ModelAdapter`), with graphmind's `error`
/// gate around it: a failed (non-streamed) model call holds at `error`, where retry calls the
/// model again, inject answers with the injected turn (`"text"` or `{text}`), continue passes
/// rig's error on and abort ends the run. Register it as the agent's model with
/// `builder.model_route_handler(label, gated_model(label, model))`, or use
/// [`GateModelErrors::gate_model_errors`] for an agent built with `AgentBuilder::new`.
///
/// ```
/// use rig_agent::AgentBuilder;
/// use rig_core::test_utils::MockCompletionModel;
///
/// let model = MockCompletionModel::text("hi");
/// let agent = AgentBuilder::named_model("fast", model.clone())
///     .model_route_handler("fast", graphmind_rig::gated_model("fast", model))
///     .build();
/// # drop(agent);
/// ```
pub fn gated_model(
    label: impl Into<ModelRef>,
    model: impl Into<DynModel<Completion>>,
) -> ErasedHandler {
    let label = label.into();
    let model = model.into();
    LAYERED.store(true, Ordering::Relaxed);
    let gated = ErasedHandler::new(ModelAdapter::new(label, model.clone()))
        .layered(ModelErrorGate { model });
    ErasedHandler::new(Answering { inner: gated })
}

/// Whether `agent`'s default model is served through [`gated_model`] (its handler's layers
/// name graphmind's): then a model call's answer can be given without calling the provider.
pub(crate) fn answers(agent: &rig_agent::Agent) -> bool {
    agent
        .model_descriptor()
        .is_some_and(|d| d.layers.iter().any(|l| l == LAYER))
}

/// The name of graphmind's layer on a model's handler.
const LAYER: &str = "graphmind";

/// The outermost part of [`gated_model`]'s handler: a non-streamed completion dispatch whose
/// step already has its answer (injected at the `before` gate, or a replay's recorded answer)
/// is answered with it, and the provider is not called; every other dispatch goes on to the
/// model (through the `error` gate's layer).
struct Answering {
    inner: ErasedHandler,
}

impl Serve for Answering {
    type Family = rig_core::effect::family::Dynamic;

    fn descriptor(&self) -> rig_core::effect::HandlerDescriptor {
        self.inner.descriptor()
    }

    async fn serve(&self, kind: EffectKind, dispatch: Dispatch) -> Reply {
        if let EffectKind::Completion {
            request,
            stream: false,
        } = &kind
            && let Some(content) = answer_of(dispatch.id())
            && let Some(response) = injected(content, request, "answered by graphmind")
        {
            return Reply::Outcome(Ok(Outcome::Completion(response)));
        }
        self.inner.handle(kind, dispatch).await
    }
}

/// The answer the step of dispatch `id` holds for it, taken.
fn answer_of(id: EffectId) -> Option<Vec<AssistantContent>> {
    let shared = find(id, false)?;
    let mut state = shared.lock();
    let step = state.step.as_mut()?;
    let content = step.answer.take()?;
    step.injected = true;
    Some(content)
}

/// `.gate_model_errors(model)` on rig's `AgentBuilder`: the agent's default model (the one
/// `AgentBuilder::new(model)` registered, label `default`) served through [`gated_model`], so
/// that its failed calls hold at the `error` gate.
///
/// ```
/// use graphmind_rig::GateModelErrors;
/// use rig_agent::AgentBuilder;
/// use rig_core::test_utils::MockCompletionModel;
///
/// let model = MockCompletionModel::text("hi");
/// let agent = AgentBuilder::new(model.clone()).gate_model_errors(model).build();
/// # drop(agent);
/// ```
pub trait GateModelErrors: Sized {
    /// Serves the default model (pass the same model `AgentBuilder::new` got) through
    /// [`gated_model`].
    #[must_use]
    fn gate_model_errors(self, model: impl Into<DynModel<Completion>>) -> Self;
}

impl<T> GateModelErrors for AgentBuilder<T> {
    fn gate_model_errors(self, model: impl Into<DynModel<Completion>>) -> Self {
        self.model_route_handler("default", gated_model("default", model))
    }
}

/// The layer: passes everything through, except a failed non-streamed completion of a step
/// it knows, which it holds at `error`.
struct ModelErrorGate {
    model: DynModel<Completion>,
}

impl Intercept for ModelErrorGate {
    fn name(&self) -> String {
        "graphmind".into()
    }

    async fn before(&self, _id: EffectId, _kind: &EffectKind) -> Decision {
        Decision::Proceed
    }

    async fn after(
        &self,
        id: EffectId,
        kind: &EffectKind,
        outcome: &Result<Outcome, ErrorReport>,
    ) -> Verdict {
        let (Err(report), EffectKind::Completion { request, stream }) = (outcome, kind) else {
            return Verdict::Keep;
        };
        // A streamed answer was delivered as it came: rig lets a layer replace only its error.
        if *stream || !Node::enabled() {
            return Verdict::Keep;
        }
        let Some(shared) = claim(id) else {
            return Verdict::Keep;
        };
        let Some(step) = shared.lock().step.take() else {
            return Verdict::Keep;
        };
        self.hold(&shared, step, request, report).await
    }
}

impl ModelErrorGate {
    /// Holds `step` at `error` until the debugger decides; a retry that fails again holds
    /// again.
    async fn hold(
        &self,
        shared: &Shared,
        mut step: Step,
        request: &CompletionRequest,
        first: &ErrorReport,
    ) -> Verdict {
        let mut error = first.to_string();
        loop {
            step.node.error("PromptError", error.clone());
            match gate_turn::<TurnInject>(&mut step.node, PausePoint::Error).await {
                Gate::Go => {
                    // rig's error goes on: the run ends with it, the step is done.
                    step.node.finish_with(
                        Status::Error,
                        None,
                        None,
                        graphmind::node::Extras::new()
                            .api("rig")
                            .attempts(step.attempts)
                            .into(),
                    );
                    return Verdict::Keep;
                }
                Gate::Abort => {
                    abort(step.node).await;
                    return Verdict::Replace(Err(ErrorReport::new(ErrorKind::Cancelled, ABORTED)));
                }
                Gate::Inject(turn) => {
                    let Some(response) =
                        injected(turn.into_content(), request, "injected at the error gate")
                    else {
                        shared.lock().step = Some(step);
                        return Verdict::Keep;
                    };
                    step.injected = true;
                    shared.lock().step = Some(step);
                    return Verdict::Replace(Ok(Outcome::Completion(response)));
                }
                Gate::Retry => {
                    step.attempts += 1;
                    match self.model.call(request.clone()).await {
                        Ok(response) => {
                            shared.lock().step = Some(step);
                            return Verdict::Replace(Ok(Outcome::Completion(response)));
                        }
                        Err(e) => error = e.to_string(),
                    }
                }
            }
        }
    }
}

/// A completion answering with `content` (what the debugger injected, or a replay's recorded
/// answer), for rig 0.43 and 0.44 alike (their constructors differ; their serialized shapes
/// share these fields). `how` goes into its `raw`.
fn injected(
    content: Vec<AssistantContent>,
    request: &CompletionRequest,
    how: &str,
) -> Option<CompletionResponse> {
    let model = request.model.clone().unwrap_or_else(|| "graphmind".into());
    serde_json::from_value(serde_json::json!({
        "choice": content,
        "usage": rig_core::completion::Usage::default(),
        "provider": "graphmind",
        "model": model,
        "origin": {"api": "graphmind", "provider": "graphmind", "model": model},
        "raw": {"graphmind": how},
    }))
    .ok()
}
