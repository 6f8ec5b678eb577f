//! [`Client`]: genai's client with `exec_chat` and `exec_chat_stream` instrumented.

use genai::ModelSpec;
use genai::adapter::AdapterKind;
use genai::chat::{ChatOptions, ChatRequest, ChatResponse, ChatStreamEvent};
use graphmind::protocol::PausePoint;

use std::sync::Arc;

use graphmind::node::{Node, Recording};

use crate::step::{Gate, Recorded, Step, aborted, error_name, gate, gate_before};
use crate::stream::{ChatStream, ChatStreamResponse, Reopen, observed};

/// genai's [`Client`](genai::Client) with [`exec_chat`](Client::exec_chat) and
/// [`exec_chat_stream`](Client::exec_chat_stream) as model steps; every other method is
/// genai's own, reached through `Deref`, uninstrumented.
///
/// Wrapping clones nothing but an `Arc`; the original client stays usable. Wrapping a
/// wrapped client returns it as it is ([`Instrument`]).
#[derive(Clone, Debug)]
pub struct Client {
    inner: genai::Client,
    client_captures_usage: bool,
}

/// The model's name as the step's input records it.
fn model_name(spec: &ModelSpec) -> String {
    match spec {
        ModelSpec::Name(n) => n.to_string(),
        ModelSpec::Iden(i) => i.model_name.to_string(),
        ModelSpec::Target(t) => t.model.model_name.to_string(),
    }
}

impl Client {
    /// Wraps a genai client.
    #[must_use]
    pub fn new(inner: genai::Client) -> Self {
        Self {
            inner,
            client_captures_usage: false,
        }
    }

    /// Tells the adapter that the genai client was built with `ChatOptions` that set
    /// `capture_usage` (genai keeps a client's options private, so the adapter cannot read
    /// them). Without it, a stream whose call options do not ask for usage has
    /// `captured_usage` taken off its end event, as genai would have sent it.
    #[must_use]
    pub fn client_captures_usage(mut self, yes: bool) -> Self {
        self.client_captures_usage = yes;
        self
    }

    /// The genai client inside (uninstrumented).
    #[must_use]
    pub fn inner(&self) -> &genai::Client {
        &self.inner
    }

    /// Unwraps into the genai client.
    #[must_use]
    pub fn into_inner(self) -> genai::Client {
        self.inner
    }

    /// `exec_chat(model, request, options)` as one execution of `llm:step`: gated before the
    /// request leaves, after the response arrives and when it fails; retried, injected or
    /// aborted from the debugger. Returns genai's response (or an injected one) or its error.
    pub async fn exec_chat(
        &self,
        model: impl Into<ModelSpec>,
        chat_req: ChatRequest,
        options: Option<&ChatOptions>,
    ) -> genai::Result<ChatResponse> {
        let model = model.into();
        let detached = match Node::recording() {
            Recording::Off => return self.inner.exec_chat(model, chat_req, options).await,
            Recording::Detached => true,
            Recording::Attached => false,
        };
        let recorded = Arc::new(Recorded {
            model: model_name(&model),
            request: chat_req,
        });
        if detached {
            // Boxed: the instrumented call's state stays off the caller's future.
            return Box::pin(crate::step::call_detached(&recorded, |req| {
                self.inner.exec_chat(model.clone(), req, options)
            }))
            .await;
        }
        match Step::begin(&recorded) {
            None => {
                let chat_req = Arc::unwrap_or_clone(recorded).request;
                self.inner.exec_chat(model, chat_req, options).await
            }
            // Boxed: the instrumented call's state stays off the caller's future.
            Some(step) => {
                Box::pin(step.call(recorded.request.clone(), |req| {
                    self.inner.exec_chat(model.clone(), req, options)
                }))
                .await
            }
        }
    }

    /// `exec_chat_stream(model, request, options)` as one execution of `llm:step`: gated
    /// before the request leaves and when it fails before its first event (no after gate:
    /// the caller reads the events as they arrive). The events are genai's, teed into
    /// batched `node.token` deltas. Usage is captured for the debugger even when the call
    /// does not ask for it; the caller's end event then carries none, as without the adapter.
    pub async fn exec_chat_stream(
        &self,
        model: impl Into<ModelSpec>,
        chat_req: ChatRequest,
        options: Option<&ChatOptions>,
    ) -> genai::Result<ChatStreamResponse> {
        let model = model.into();
        if !Node::enabled() {
            return self.bare_stream(model, chat_req, options).await;
        }
        let recorded = Arc::new(Recorded {
            model: model_name(&model),
            request: chat_req,
        });
        let Some(mut step) = Step::begin(&recorded) else {
            let chat_req = Arc::unwrap_or_clone(recorded).request;
            return self.bare_stream(model, chat_req, options).await;
        };
        let asked = options
            .and_then(|o| o.capture_usage)
            .unwrap_or(self.client_captures_usage);
        let mut forced = options.cloned().unwrap_or_default();
        forced.capture_usage = Some(true);
        let reopen = Reopen {
            client: self.inner.clone(),
            model,
            request: recorded,
            options: forced,
        };
        let (decided, edited) =
            gate_before::<Vec<ChatStreamEvent>>(&mut step.node, &reopen.request.request).await;
        let mut reopen = reopen;
        if let Some(request) = edited {
            reopen.request = Arc::new(Recorded {
                request,
                model: reopen.request.model.clone(),
            });
        }
        match decided {
            Gate::Inject(items) => return Ok(self.injected(step, items, reopen, !asked).await),
            Gate::Abort => {
                step.node.abort_run().await;
                return Err(aborted());
            }
            Gate::Go | Gate::Retry => {}
        }
        loop {
            step.attempts += 1;
            let opened = self
                .inner
                .exec_chat_stream(
                    reopen.model.clone(),
                    reopen.request.request.clone(),
                    Some(&reopen.options),
                )
                .await;
            // Preparing the request failed (the target did not resolve, no API key, a
            // request the provider's adapter cannot express): nothing was sent yet.
            let e = match opened {
                Ok(r) => {
                    return Ok(ChatStreamResponse {
                        stream: observed(step, Ok(r.stream), reopen, !asked),
                        model_iden: r.model_iden,
                    });
                }
                Err(e) => e,
            };
            step.node.error(&error_name(&e), e.to_string());
            match gate::<Vec<ChatStreamEvent>>(&mut step.node, PausePoint::Error).await {
                Gate::Go => {
                    step.finish_error();
                    return Err(e);
                }
                Gate::Retry => {}
                Gate::Inject(items) => return Ok(self.injected(step, items, reopen, !asked).await),
                Gate::Abort => {
                    step.node.abort_run().await;
                    return Err(aborted());
                }
            }
        }
    }

    /// `exec_chat_stream` uninstrumented.
    async fn bare_stream(
        &self,
        model: ModelSpec,
        chat_req: ChatRequest,
        options: Option<&ChatOptions>,
    ) -> genai::Result<ChatStreamResponse> {
        let r = self
            .inner
            .exec_chat_stream(model, chat_req, options)
            .await?;
        Ok(ChatStreamResponse {
            stream: ChatStream::bare(r.stream),
            model_iden: r.model_iden,
        })
    }

    /// A stream of injected events, observed like the provider's.
    async fn injected(
        &self,
        step: Step,
        items: Vec<ChatStreamEvent>,
        reopen: Reopen,
        strip_usage: bool,
    ) -> ChatStreamResponse {
        let model_iden = match self
            .inner
            .resolve_service_target(reopen.model.clone())
            .await
        {
            Ok(t) => t.model,
            Err(_) => genai::ModelIden::new(AdapterKind::OpenAI, model_name(&reopen.model)),
        };
        ChatStreamResponse {
            stream: observed(step, Err(items), reopen, strip_usage),
            model_iden,
        }
    }
}

impl std::ops::Deref for Client {
    type Target = genai::Client;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl From<genai::Client> for Client {
    fn from(inner: genai::Client) -> Self {
        Self::new(inner)
    }
}

/// `.graphmind()` on a client: wraps a genai client, and returns an already wrapped one
/// unchanged (wrapping is idempotent).
///
/// ```
/// use graphmind_genai::Instrument;
///
/// let client = genai::Client::new().expect("a genai client").graphmind();
/// let again = client.clone().graphmind(); // still one layer
/// let _kind = again.adapter_kind(); // any other method: genai's own, through Deref
/// ```
pub trait Instrument {
    /// The instrumented client.
    fn graphmind(self) -> Client;
}

impl Instrument for genai::Client {
    fn graphmind(self) -> Client {
        Client::new(self)
    }
}

impl Instrument for Client {
    fn graphmind(self) -> Client {
        self
    }
}
