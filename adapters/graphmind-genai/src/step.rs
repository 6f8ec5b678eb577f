//! One `exec_chat` / `exec_chat_stream` as one execution of `llm:step`: started before the
//! request is resolved, gated before it leaves, after it returns (non-streaming only) and
//! when it fails, and finished with the GraphMind 0.6 output, usage and attempts.

use std::future::Future;
use std::sync::Arc;

use genai::chat::{ChatRequest, ChatResponse};
use graphmind::model::Grouping;
use graphmind::node::{Extras, Moment, Node, Resume, poll_once_then};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use serde::de::DeserializeOwned;

use crate::guard;
use crate::output::{StepOut, from_response, request_tools, usage_of};

/// The `api` extra of every step.
pub(crate) const API: &str = "genai.chat";

/// What a gate decided, with an injected value already deserialized.
pub(crate) enum Gate<R> {
    Go,
    Retry,
    Inject(R),
    Abort,
}

/// A step's recorded input: genai's request with the model it is sent to (last, as
/// `"model"`). Captured lazily: serialized only when a debugger reads it.
#[derive(Clone, serde::Serialize)]
pub(crate) struct Recorded {
    #[serde(flatten)]
    pub(crate) request: ChatRequest,
    pub(crate) model: String,
}

/// The invocation a request's step belongs to: the one that answered its
/// `previous_response_id`, else its conversation (first message and length, as graphmind's
/// automatic grouping reads them from the recorded JSON).
fn grouping(request: &ChatRequest) -> Grouping {
    match &request.previous_response_id {
        Some(prev) => Grouping::after(prev),
        None => {
            let first = request
                .messages
                .first()
                .and_then(|m| serde_json::to_string(m).ok());
            Grouping::conversation(first.as_deref(), request.messages.len())
        }
    }
}

/// A response captured lazily as the GraphMind 0.6 output, built when it is written: the
/// text the eager path records.
struct LazyOutput(ChatResponse);

impl serde::Serialize for LazyOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        from_response(&self.0)
            .to_json(crate::output::response_json(&self.0))
            .serialize(s)
    }
}

/// One request in flight.
pub(crate) struct Step {
    pub(crate) node: Node,
    pub(crate) attempts: u32,
}

/// The error a call returns when the debugger aborted it outside any run (inside a run the
/// run's future is dropped and the run returns `Err(Aborted)`).
pub(crate) fn aborted() -> genai::Error {
    genai::Error::Internal("graphmind: the debugger aborted this call".into())
}

/// A short name for `node.error`: the variant of genai's error.
pub(crate) fn error_name(e: &genai::Error) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("GenaiError")
        .to_owned()
}

/// Holds `node` at `point`; an inject that does not deserialize into `R` was refused by
/// the gate already (it stays held), so one that still does not fit goes on.
pub(crate) async fn gate<R: DeserializeOwned>(node: &mut Node, point: PausePoint) -> Gate<R> {
    match node.gate_typed::<R>(point).await {
        Resume::Retry => Gate::Retry,
        // From `&Value`, as the gate validated it: genai's `ModelName` only deserializes
        // from a borrowed string.
        Resume::Inject(v) => match R::deserialize(&v) {
            Ok(r) => Gate::Inject(r),
            Err(_) => Gate::Go,
        },
        Resume::Abort => Gate::Abort,
        _ => Gate::Go,
    }
}

/// The `before` gate of a call whose request a person may edit (GraphMind 0.6 `edit-input`;
/// genai's `ChatRequest` is serde): the gate's decision, and the edited request when the
/// gate took an edit (checked against `ChatRequest` at the gate; the call goes on with it).
pub(crate) async fn gate_before<R: DeserializeOwned>(
    node: &mut Node,
    request: &ChatRequest,
) -> (Gate<R>, Option<ChatRequest>) {
    node.editable(request);
    match node.gate_typed::<R>(PausePoint::Before).await {
        Resume::Edit { input, .. } => (Gate::Go, serde_json::from_value::<ChatRequest>(input).ok()),
        Resume::Retry => (Gate::Retry, None),
        Resume::Inject(v) => match R::deserialize(&v) {
            Ok(r) => (Gate::Inject(r), None),
            Err(_) => (Gate::Go, None),
        },
        Resume::Abort => (Gate::Abort, None),
        _ => (Gate::Go, None),
    }
}

/// The extras every finished step carries.
pub(crate) fn extras(attempts: u32, out: &StepOut, injected: bool) -> Extras {
    let mut extras = Extras::new().api(API).attempts(attempts);
    if let Some(m) = &out.model {
        extras = extras.model(m.clone());
    }
    if let Some(id) = &out.response_id {
        extras = extras.response_id(id.clone());
    }
    if injected {
        extras = extras.injected();
    }
    extras
}

/// The `graph.hint` of an invocation's first step: one tool node per tool its request offers.
fn hint(tools: Vec<String>) -> GraphHint {
    GraphHint {
        nodes: tools
            .into_iter()
            .map(|name| GraphNodeHint {
                node_id: format!("tool:{name}"),
                kind: NodeKind::Tool,
                name,
                parent_id: Some("llm:step".into()),
                extra: Extra::new(),
            })
            .collect(),
        extra: Extra::new(),
    }
}

impl Step {
    /// Starts `llm:step` for `request` (and `graph.hint` on an invocation's first step, with
    /// the request's tools). Its callers have checked [`Node::enabled`] already (once per
    /// wrapped call). `None`, to call straight through: the adapter failed, or the node did
    /// not start.
    pub(crate) fn begin(recorded: &Arc<Recorded>) -> Option<Self> {
        Self::begin_since(recorded, Moment::now())
    }

    /// [`Step::begin`] for a request that went out at `since`.
    fn begin_since(recorded: &Arc<Recorded>, since: Moment) -> Option<Self> {
        guard("starting a model step", || {
            let request = &recorded.request;
            // The run's invocation goes on while `messages` keep their first message and
            // grow; a `previous_response_id` continues exactly the invocation that answered it.
            let node = Node::start_step_lazy_since(Arc::clone(recorded), grouping(request), since)?;
            // The tools are read on an invocation's first step only: once per run, a
            // conversation's steps offer the same tools.
            if node.instance_id().ends_with(":s1") {
                let tools = request_tools(request);
                if !tools.is_empty() {
                    node.emit_hint(hint(tools));
                }
            }
            Some(Self { node, attempts: 0 })
        })
        .flatten()
    }

    /// Finishes the node with a response (the call's, or an injected one).
    fn finish_response(self, resp: &ChatResponse, injected: bool) {
        let Self { node, attempts } = self;
        guard("finishing a model step", move || {
            let head = StepOut {
                model: Some(resp.provider_model_iden.model_name.to_string()),
                response_id: resp.response_id.clone(),
                ..StepOut::default()
            };
            let extras = extras(attempts, &head, injected);
            let usage = usage_of(&resp.usage);
            match graphmind::node::json_len(resp) {
                // The response itself, its texts and tool calls again, the fields around.
                Some(len) => node.finish_lazy_within(
                    Status::Ok,
                    Arc::new(LazyOutput(resp.clone())),
                    len.saturating_mul(2).saturating_add(256),
                    usage,
                    extras,
                ),
                None => {
                    let out = from_response(resp);
                    let value = crate::output::response_json(resp);
                    node.finish_serialized(Status::Ok, &out.to_json(value), usage, extras.into());
                }
            }
        });
    }

    /// Finishes the node `error`, without output (the caller gets genai's error).
    pub(crate) fn finish_error(self) {
        let extra: Extra = Extras::new().api(API).attempts(self.attempts).into();
        self.node.finish_with(Status::Error, None, None, extra);
    }

    async fn abort<T>(self) -> genai::Result<T> {
        self.node.abort_run().await;
        Err(aborted())
    }

    /// A non-streaming call: `send` issues `request` (again on each retry). At the before
    /// gate a person may edit the request: the edited request is what is sent from then on.
    pub(crate) async fn call<F, Fut>(
        mut self,
        mut request: ChatRequest,
        mut send: F,
    ) -> genai::Result<ChatResponse>
    where
        F: FnMut(ChatRequest) -> Fut,
        Fut: Future<Output = genai::Result<ChatResponse>>,
    {
        loop {
            let (decided, edited) = gate_before::<ChatResponse>(&mut self.node, &request).await;
            if let Some(edited) = edited {
                request = edited;
            }
            match decided {
                Gate::Inject(r) => {
                    self.finish_response(&r, true);
                    return Ok(r);
                }
                Gate::Abort => return self.abort().await,
                Gate::Go | Gate::Retry => {}
            }
            self.attempts += 1;
            let result = send(request.clone()).await;
            match self.settle(result).await {
                Ok(out) => return out,
                Err(again) => self = again,
            }
        }
    }

    /// One attempt's result through the after gate (a response) or the error gate (an
    /// error): what the call returns, or `Err(self)` to send the request again.
    async fn settle(
        mut self,
        result: genai::Result<ChatResponse>,
    ) -> Result<genai::Result<ChatResponse>, Self> {
        let decided = match &result {
            Ok(_) => gate::<ChatResponse>(&mut self.node, PausePoint::After).await,
            Err(e) => {
                self.node.error(&error_name(e), e.to_string());
                gate::<ChatResponse>(&mut self.node, PausePoint::Error).await
            }
        };
        match decided {
            Gate::Go => {
                match &result {
                    Ok(r) => self.finish_response(r, false),
                    Err(_) => self.finish_error(),
                }
                Ok(result)
            }
            Gate::Retry => Err(self),
            Gate::Inject(r) => {
                self.finish_response(&r, true);
                Ok(Ok(r))
            }
            Gate::Abort => Ok(self.abort().await),
        }
    }
}

/// `exec_chat` while [`Node::detached_now`]: the request is sent first and the step started
/// while it is in flight (after the first poll of `send`'s future: [`poll_once_then`]),
/// stamped at the call's start, so that recording it is not added to the request's latency.
/// The before gate this skips could not have held; the after and error gates, and a retry
/// from them, are [`Step::call`]'s.
pub(crate) async fn call_detached<F, Fut>(
    recorded: &Arc<Recorded>,
    mut send: F,
) -> genai::Result<ChatResponse>
where
    F: FnMut(ChatRequest) -> Fut,
    Fut: Future<Output = genai::Result<ChatResponse>>,
{
    let since = Moment::now();
    let (step, result) = poll_once_then(send(recorded.request.clone()), || {
        Step::begin_since(recorded, since)
    })
    .await;
    let Some(mut step) = step else {
        return result;
    };
    step.attempts = 1;
    match step.settle(result).await {
        Ok(out) => out,
        Err(again) => again.call(recorded.request.clone(), send).await,
    }
}
