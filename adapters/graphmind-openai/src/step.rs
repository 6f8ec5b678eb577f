//! One request as one execution of `llm:step`: started before anything is dispatched, gated
//! before the HTTP request leaves, after it returns (non-streaming only) and when it fails,
//! and finished with the GraphMind 0.6 output, usage, attempts and the adapter's extras.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use async_openai::error::OpenAIError;
use futures_core::Stream;
use graphmind::model::Grouping;
use graphmind::node::{Extras, Node, Resume};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, Message, NodeKind, PausePoint, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::failopen::guard;
use crate::output::{StepOut, builtin_name, request_tools};

/// The SDK's stream type (`ChatCompletionResponseStream`, `ResponseStream`).
pub(crate) type SdkStream<T> = Pin<Box<dyn Stream<Item = Result<T, OpenAIError>> + Send>>;

/// Which API of the SDK made the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `chat().create` / `create_stream`.
    Chat,
    /// `responses().create` / `create_stream`.
    Responses,
}

impl Api {
    /// The `api` extra.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat.completions",
            Api::Responses => "responses",
        }
    }

    /// Reads a whole response.
    pub(crate) fn read(self, resp: &Value) -> StepOut {
        match self {
            Api::Chat => crate::output::from_chat(resp),
            Api::Responses => crate::output::from_response(resp),
        }
    }
}

/// Responses chains: which invocation each response id belongs to, so that a request naming
/// a `previous_response_id` continues exactly that invocation. Bounded (oldest forgotten).
#[derive(Debug, Default)]
pub(crate) struct Chains {
    ids: Mutex<VecDeque<(String, String)>>,
}

/// Response ids remembered per client.
const CHAIN_IDS: usize = 1024;

impl Chains {
    /// The invocation key for a request continuing `previous` (a fresh one when unknown).
    pub(crate) fn key_for(&self, previous: Option<&str>) -> String {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(prev) = previous
            && let Some((_, key)) = ids.iter().rev().find(|(id, _)| id == prev)
        {
            return key.clone();
        }
        drop(ids);
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        format!("openai-responses-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Remembers that response `id` belongs to invocation `key`.
    pub(crate) fn remember(&self, id: &str, key: &str) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.len() >= CHAIN_IDS {
            ids.pop_front();
        }
        ids.push_back((id.to_owned(), key.to_owned()));
    }
}

/// A Responses step's place in its chain.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    pub(crate) chains: Arc<Chains>,
    pub(crate) key: String,
}

/// What a gate decided, with an injected value already deserialized.
enum Gate<R> {
    Go,
    Retry,
    Inject(R),
    Abort,
}

/// One request in flight.
pub(crate) struct Step {
    pub(crate) node: Node,
    pub(crate) api: Api,
    pub(crate) attempts: u32,
    pub(crate) chain: Option<Chain>,
}

/// The error a call returns when the debugger aborted it outside any run (inside a run the
/// run's future is dropped and the run returns `Err(Aborted)`).
fn aborted() -> OpenAIError {
    OpenAIError::InvalidArgument("graphmind: the debugger aborted this call".into())
}

/// A short name for `node.error`.
fn error_name(e: &OpenAIError) -> &'static str {
    match e {
        OpenAIError::ApiError(_) => "ApiError",
        OpenAIError::Reqwest(_) => "HttpError",
        OpenAIError::JSONDeserialize(..) => "JSONDeserialize",
        OpenAIError::StreamError(_) => "StreamError",
        OpenAIError::InvalidArgument(_) => "InvalidArgument",
        #[allow(unreachable_patterns)]
        _ => "OpenAIError",
    }
}

impl Step {
    /// Starts `llm:step` for `request` (and `graph.hint` on an invocation's first step, with
    /// the request's tools). `None`, to call straight through: instrumentation off, or the
    /// adapter failed.
    pub(crate) fn begin<Q: Serialize>(
        api: Api,
        request: &Q,
        chains: Option<&Arc<Chains>>,
    ) -> Option<Self> {
        if !Node::enabled() {
            return None;
        }
        guard("starting a model step", || {
            let input = serde_json::to_value(request).ok()?;
            let (grouping, chain) = match chains {
                Some(chains) => {
                    let prev = input.get("previous_response_id").and_then(Value::as_str);
                    let key = chains.key_for(prev);
                    (
                        Grouping::explicit(&key),
                        Some(Chain {
                            chains: Arc::clone(chains),
                            key,
                        }),
                    )
                }
                None => (Grouping::Auto, None),
            };
            let tools = input.as_object().map(request_tools).unwrap_or_default();
            let node = Node::start_step(input, grouping)?;
            if node.instance_id().ends_with(":s1") && !tools.is_empty() {
                node.emit(Message::GraphHint(GraphHint {
                    nodes: tools
                        .into_iter()
                        .map(|(name, provider)| {
                            let mut extra = Extra::new();
                            if provider {
                                extra.insert("providerExecuted".into(), true.into());
                                extra.insert("ungated".into(), true.into());
                            }
                            GraphNodeHint {
                                node_id: format!("tool:{name}"),
                                kind: NodeKind::Tool,
                                name,
                                parent_id: Some("llm:step".into()),
                                extra,
                            }
                        })
                        .collect(),
                    extra: Extra::new(),
                }));
            }
            Some(Self {
                node,
                api,
                attempts: 0,
                chain,
            })
        })
        .flatten()
    }

    async fn gate<R: DeserializeOwned>(&mut self, point: PausePoint) -> Gate<R> {
        match self.node.gate_typed::<R>(point).await {
            Resume::Retry => Gate::Retry,
            Resume::Inject(v) => match serde_json::from_value::<R>(v) {
                Ok(r) => Gate::Inject(r),
                // Validated by the gate already; should it still not fit, the call goes on.
                Err(_) => Gate::Go,
            },
            Resume::Abort => Gate::Abort,
            _ => Gate::Go,
        }
    }

    fn extras(&self) -> Extras {
        Extras::new().api(self.api.name()).attempts(self.attempts)
    }

    /// Finishes the node with a response (the call's, or an injected one).
    fn finish_response<R: Serialize>(self, resp: &R, injected: bool) {
        let Self {
            node,
            api,
            attempts,
            chain,
        } = self;
        let extras = Extras::new().api(api.name()).attempts(attempts);
        guard("finishing a model step", move || {
            let value = serde_json::to_value(resp).unwrap_or(Value::Null);
            let out = api.read(&value);
            if api == Api::Responses {
                builtin_nodes(&value);
            }
            let extra = Extra::new();
            finish_out(
                node,
                &out,
                Some(value),
                extras,
                chain.as_ref(),
                injected,
                extra,
            );
        });
    }

    fn finish_error(self) {
        let extras = self.extras();
        self.node
            .finish_with(Status::Error, None, None, extras.into());
    }

    async fn abort<T>(self) -> Result<T, OpenAIError> {
        self.node.abort_run().await;
        Err(aborted())
    }

    /// A non-streaming call: `send` issues the HTTP request (again on each retry).
    pub(crate) async fn call<R, F, Fut>(mut self, mut send: F) -> Result<R, OpenAIError>
    where
        R: Serialize + DeserializeOwned,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, OpenAIError>>,
    {
        loop {
            match self.gate::<R>(PausePoint::Before).await {
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
                Ok(_) => self.gate::<R>(PausePoint::After).await,
                Err(e) => {
                    self.node.error(error_name(e), e.to_string());
                    self.gate::<R>(PausePoint::Error).await
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

    /// A streaming call: `send` opens the stream (again on each retry). The stream is teed;
    /// an inject (before, or at the error gate) is a JSON array of chunks / events, streamed
    /// to the caller as if the server had sent them.
    pub(crate) async fn open<T, F, Fut>(mut self, mut send: F) -> Result<SdkStream<T>, OpenAIError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<SdkStream<T>, OpenAIError>>,
    {
        loop {
            match self.gate::<Vec<T>>(PausePoint::Before).await {
                Gate::Inject(items) => return Ok(crate::stream::injected(self, items)),
                Gate::Abort => return self.abort().await,
                Gate::Go | Gate::Retry => {}
            }
            self.attempts += 1;
            let err = match send().await {
                Ok(stream) => return Ok(crate::stream::observed(self, stream, false)),
                Err(e) => e,
            };
            self.node.error(error_name(&err), err.to_string());
            match self.gate::<Vec<T>>(PausePoint::Error).await {
                Gate::Go => {
                    self.finish_error();
                    return Err(err);
                }
                Gate::Retry => {}
                Gate::Inject(items) => return Ok(crate::stream::injected(self, items)),
                Gate::Abort => return self.abort().await,
            }
        }
    }
}

/// Finishes `llm:step` with `out` (output, the whole `response` when there is one, usage,
/// model, response id) and remembers the response id in its chain.
pub(crate) fn finish_out(
    node: Node,
    out: &StepOut,
    response: Option<Value>,
    mut extras: Extras,
    chain: Option<&Chain>,
    injected: bool,
    more: Extra,
) {
    if let Some(m) = &out.model {
        extras = extras.model(m.clone());
    }
    if let Some(id) = &out.response_id {
        extras = extras.response_id(id.clone());
        if let Some(chain) = chain {
            chain.chains.remember(id, &chain.key);
        }
    }
    if injected {
        extras = extras.injected();
    }
    let mut extra: Extra = extras.into();
    extra.extend(more);
    let status = if out.raw_finish.as_deref() == Some("failed") {
        Status::Error
    } else {
        Status::Ok
    };
    node.finish_with(status, Some(out.to_json(response)), out.usage, extra);
}

/// Observe-only nodes `tool:<name>` for the built-in tools a response ran (web search,
/// file search, code interpreter, image generation, MCP calls): instanceId = the output
/// item's id, `providerExecuted: true, ungated: true`.
fn builtin_nodes(resp: &Value) {
    for item in resp
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(node) = start_builtin(item) {
            finish_builtin(node, item);
        }
    }
}

/// Starts the observe-only node of a built-in tool's output item (`None` if it is not one).
pub(crate) fn start_builtin(item: &Value) -> Option<Node> {
    let name = builtin_name(item)?;
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    Node::start_with(
        NodeKind::Tool,
        name,
        &format!("tool:{name}"),
        id,
        Some(item.clone()),
    )
}

/// Finishes a built-in tool's node with its (final) output item.
pub(crate) fn finish_builtin(node: Node, item: &Value) {
    let failed = item.get("status").and_then(Value::as_str) == Some("failed");
    node.finish_with(
        if failed { Status::Error } else { Status::Ok },
        Some(item.clone()),
        None,
        Extras::new()
            .api("responses")
            .provider_executed()
            .ungated()
            .into(),
    );
}
