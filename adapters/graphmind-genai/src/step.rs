//! One `exec_chat` / `exec_chat_stream` as one execution of `llm:step`: started before the
//! request is resolved, gated before it leaves, after it returns (non-streaming only) and
//! when it fails, and finished with the GraphMind 0.6 output, usage and attempts.

use std::future::Future;

use genai::chat::{ChatRequest, ChatResponse};
use graphmind::model::Grouping;
use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use serde::de::DeserializeOwned;

use crate::guard;
use crate::output::{StepOut, from_response, request_tools};

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
/// `"model"`).
#[derive(serde::Serialize)]
struct Recorded<'a> {
    #[serde(flatten)]
    request: &'a ChatRequest,
    model: &'a str,
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

impl Step {
    /// Starts `llm:step` for `request` (and `graph.hint` on an invocation's first step, with
    /// the request's tools). `None`, to call straight through: instrumentation off, or the
    /// adapter failed.
    pub(crate) fn begin(model: &str, request: &ChatRequest) -> Option<Self> {
        if !Node::enabled() {
            return None;
        }
        guard("starting a model step", || {
            // The run's invocation goes on while `messages` keep their first message and
            // grow; a `previous_response_id` continues exactly the invocation that answered it.
            let grouping = match &request.previous_response_id {
                Some(prev) => Grouping::after(prev),
                None => Grouping::Auto,
            };
            // The request and the model name, serialized once into the recorded text.
            let node = Node::start_step_serialized(&Recorded { request, model }, grouping)?;
            let tools = request_tools(request);
            if node.instance_id().ends_with(":s1") && !tools.is_empty() {
                // Once per run: a conversation's steps offer the same tools.
                node.emit_hint(GraphHint {
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
                });
            }
            Some(Self { node, attempts: 0 })
        })
        .flatten()
    }

    /// Finishes the node with a response (the call's, or an injected one).
    fn finish_response(self, resp: &ChatResponse, injected: bool) {
        let Self { node, attempts } = self;
        guard("finishing a model step", move || {
            let out = from_response(resp);
            let value = crate::output::response_json(resp);
            let extra: Extra = extras(attempts, &out, injected).into();
            // Recorded as its JSON text: sized by its length, dropped with one free.
            node.finish_serialized(Status::Ok, &out.to_json(value), out.usage, extra);
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

    /// A non-streaming call: `send` issues the request (again on each retry).
    pub(crate) async fn call<F, Fut>(mut self, mut send: F) -> genai::Result<ChatResponse>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = genai::Result<ChatResponse>>,
    {
        loop {
            match gate::<ChatResponse>(&mut self.node, PausePoint::Before).await {
                Gate::Inject(r) => {
                    self.finish_response(&r, true);
                    return Ok(r);
                }
                Gate::Abort => return self.abort().await,
                Gate::Go | Gate::Retry => {}
            }
            self.attempts += 1;
            let result = send().await;
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
                    return result;
                }
                Gate::Retry => {}
                Gate::Inject(r) => {
                    self.finish_response(&r, true);
                    return Ok(r);
                }
                Gate::Abort => return self.abort().await,
            }
        }
    }
}
