//! One request as one execution of `llm:step`: started before anything is dispatched, gated
//! before the HTTP request leaves, after it returns (non-streaming only) and when it fails,
//! and finished with the GraphMind 0.6 output, usage, attempts and the adapter's extras.

use std::future::Future;
use std::sync::Arc;

use async_openai::error::OpenAIError;
use graphmind::node::{Extras, Moment, Node, Recording, Resume, poll_once_then};
use graphmind::protocol::{Extra, GraphHint, GraphNodeHint, NodeKind, PausePoint, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::finish::{Api, SdkStream, builtin_nodes, finish_lazy, finish_out};
use crate::guard;
use crate::output::request_tools;
use crate::stream::Parts;
use crate::typed::{LazyOutput, Reply, Request};

/// What a gate decided, with an injected value already deserialized.
enum Gate<R> {
    Go,
    Retry,
    Inject(R),
    Abort,
    /// Run with this edited request (the whole request, checked at the gate).
    Edit(Value),
}

/// `graph.hint` with a request's tools, each under `llm:step` (built-in ones marked as run
/// by the provider, ungated).
fn hint(tools: Vec<(String, bool)>) -> GraphHint {
    GraphHint {
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
    }
}

/// One non-streaming `create` of `api`, `send` issuing the SDK's request: straight through
/// while nothing records, the request first while detached ([`call_detached`]), else the
/// node and its before gate first ([`Step::call`]). The instrumented call's state is boxed,
/// off the caller's future.
pub(crate) async fn create<Q, R, F, Fut>(
    api: Api,
    request: Q,
    mut send: F,
) -> Result<R, OpenAIError>
where
    Q: Request,
    R: Reply,
    F: FnMut(Q) -> Fut,
    Fut: Future<Output = Result<R, OpenAIError>>,
{
    match Node::recording() {
        Recording::Off => send(request).await,
        Recording::Detached => Box::pin(call_detached(api, request, send)).await,
        Recording::Attached => {
            let request = Arc::new(request);
            match Step::begin(api, &request) {
                None => send(Arc::unwrap_or_clone(request)).await,
                Some(step) => Box::pin(step.call(request, send)).await,
            }
        }
    }
}

/// A non-streaming call while [`Node::detached_now`]: the request is sent first and the step
/// started while it is in flight (after the first poll of `send`'s future, which hands the
/// request to the HTTP client: [`poll_once_then`]), stamped at the call's start, so that
/// recording it is not added to the request's latency. The before gate this skips could not
/// have held (no debugger that may control the app was attached); the after and error gates,
/// and a retry from them, are [`Step::call`]'s.
pub(crate) async fn call_detached<Q, R, F, Fut>(
    api: Api,
    request: Q,
    mut send: F,
) -> Result<R, OpenAIError>
where
    Q: Request,
    R: Reply,
    F: FnMut(Q) -> Fut,
    Fut: Future<Output = Result<R, OpenAIError>>,
{
    let since = Moment::now();
    let request = Arc::new(request);
    let (step, result) = poll_once_then(send(Q::clone(&request)), || {
        Step::begin_since(api, &request, since)
    })
    .await;
    let Some(mut step) = step else {
        return result;
    };
    step.attempts = 1;
    match step.settle(result).await {
        Ok(out) => out,
        Err(again) => again.call(request, send).await,
    }
}

/// One request in flight.
pub(crate) struct Step {
    pub(crate) node: Node,
    pub(crate) api: Api,
    pub(crate) attempts: u32,
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
    /// the request's tools). The request is captured lazily: serialized into the frames only
    /// when a debugger reads them. Its callers have checked [`Node::enabled`] already (once
    /// per wrapped call). `None`, to call straight through: the adapter failed, or the node
    /// did not start.
    pub(crate) fn begin<Q: Request>(api: Api, request: &Arc<Q>) -> Option<Self> {
        Self::begin_since(api, request, Moment::now())
    }

    /// [`Step::begin`] for a request that went out at `since`.
    fn begin_since<Q: Request>(api: Api, request: &Arc<Q>, since: Moment) -> Option<Self> {
        guard("starting a model step", || {
            let node = Node::start_step_lazy_since(Arc::clone(request), request.grouping(), since)?;
            if node.instance_id().ends_with(":s1") {
                let tools = request_tools(&request.tools());
                if !tools.is_empty() {
                    // Once per run: a conversation's steps offer the same tools.
                    node.emit_hint(hint(tools));
                }
            }
            Some(Self {
                node,
                api,
                attempts: 0,
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
            Resume::Edit { input, .. } => Gate::Edit(input),
            _ => Gate::Go,
        }
    }

    fn into_parts(self) -> Parts {
        Parts {
            node: self.node,
            api: self.api,
            attempts: self.attempts,
        }
    }

    fn extras(&self) -> Extras {
        Extras::new().api(self.api.name()).attempts(self.attempts)
    }

    /// Finishes the node with a response (the call's, or an injected one): captured lazily
    /// where the response type allows it ([`Reply::head`]), else read from its JSON now.
    fn finish_response<R: Reply>(self, resp: &R, injected: bool) {
        let Self {
            node,
            api,
            attempts,
        } = self;
        let extras = Extras::new().api(api.name()).attempts(attempts);
        guard("finishing a model step", move || {
            if let Some(head) = resp.head()
                && let Some(len) = graphmind::node::json_len(resp)
            {
                let output = LazyOutput {
                    api,
                    response: resp.clone(),
                };
                finish_lazy(
                    node,
                    &head,
                    Arc::new(output),
                    LazyOutput::<R>::bound(len),
                    extras,
                    injected,
                );
                return;
            }
            let value = serde_json::to_value(resp).unwrap_or(Value::Null);
            let out = api.read(&value);
            if api == Api::Responses {
                builtin_nodes(&value, injected);
            }
            let extra = Extra::new();
            finish_out(node, &out, Some(value), extras, injected, extra);
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

    /// A non-streaming call: `send` issues the HTTP request for `request` (again on each
    /// retry). At the before gate a person may edit the request (GraphMind 0.6
    /// `edit-input`): the edit, merged over the request, is what is sent from then on.
    pub(crate) async fn call<Q, R, F, Fut>(
        mut self,
        mut request: Arc<Q>,
        mut send: F,
    ) -> Result<R, OpenAIError>
    where
        Q: Request,
        R: Reply,
        F: FnMut(Q) -> Fut,
        Fut: Future<Output = Result<R, OpenAIError>>,
    {
        loop {
            self.node.editable(&*request);
            match self.gate::<R>(PausePoint::Before).await {
                Gate::Inject(r) => {
                    self.finish_response(&r, true);
                    return Ok(r);
                }
                Gate::Abort => return self.abort().await,
                Gate::Edit(v) => {
                    // Checked against the request type at the gate.
                    if let Ok(edited) = serde_json::from_value::<Q>(v) {
                        request = Arc::new(edited);
                    }
                }
                Gate::Go | Gate::Retry => {}
            }
            self.attempts += 1;
            let result = send(Q::clone(&request)).await;
            match self.settle(result).await {
                Ok(out) => return out,
                Err(again) => self = again,
            }
        }
    }

    /// One attempt's result through the after gate (a response) or the error gate (an
    /// error): what the call returns, or `Err(self)` to send the request again.
    async fn settle<R: Reply>(
        mut self,
        result: Result<R, OpenAIError>,
    ) -> Result<Result<R, OpenAIError>, Self> {
        let decided = match &result {
            Ok(_) => self.gate::<R>(PausePoint::After).await,
            Err(e) => {
                self.node.error(error_name(e), e.to_string());
                self.gate::<R>(PausePoint::Error).await
            }
        };
        match decided {
            Gate::Retry => Err(self),
            Gate::Inject(r) => {
                self.finish_response(&r, true);
                Ok(Ok(r))
            }
            Gate::Abort => Ok(self.abort().await),
            // Edits are offered at the before gate only.
            Gate::Go | Gate::Edit(_) => {
                match &result {
                    Ok(r) => self.finish_response(r, false),
                    Err(_) => self.finish_error(),
                }
                Ok(result)
            }
        }
    }

    /// A streaming call: `send` opens the stream for `request` (again on each retry). The
    /// stream is teed; an inject (before, or at the error gate) is a JSON array of chunks /
    /// events, streamed to the caller as if the server had sent them. At the before gate a
    /// person may edit the request, as for [`Step::call`]: the edited request is what is sent.
    pub(crate) async fn open<Q, T, F, Fut>(
        mut self,
        mut request: Arc<Q>,
        mut send: F,
    ) -> Result<SdkStream<T>, OpenAIError>
    where
        Q: Request,
        T: Serialize + DeserializeOwned + Send + 'static,
        F: FnMut(Q) -> Fut,
        Fut: Future<Output = Result<SdkStream<T>, OpenAIError>>,
    {
        loop {
            self.node.editable(&*request);
            match self.gate::<Vec<T>>(PausePoint::Before).await {
                Gate::Inject(items) => {
                    return Ok(crate::stream::injected(self.into_parts(), items));
                }
                Gate::Abort => return self.abort().await,
                Gate::Edit(v) => {
                    // Checked against the request type at the gate.
                    if let Ok(edited) = serde_json::from_value::<Q>(v) {
                        request = Arc::new(edited);
                    }
                }
                Gate::Go | Gate::Retry => {}
            }
            self.attempts += 1;
            let err = match send(Q::clone(&request)).await {
                Ok(stream) => return Ok(crate::stream::observed(self.into_parts(), stream, false)),
                Err(e) => e,
            };
            self.node.error(error_name(&err), err.to_string());
            match self.gate::<Vec<T>>(PausePoint::Error).await {
                Gate::Go | Gate::Edit(_) => {
                    self.finish_error();
                    return Err(err);
                }
                Gate::Retry => {}
                Gate::Inject(items) => {
                    return Ok(crate::stream::injected(self.into_parts(), items));
                }
                Gate::Abort => return self.abort().await,
            }
        }
    }
}
