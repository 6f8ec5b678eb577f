//! [`Responses`]: the instrumented Responses group.

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::responses::{CreateResponse, Response, ResponseStream};

use std::sync::Arc;

use graphmind::node::Node;

use crate::finish::Api;
use crate::step::Step;

/// async-openai's [`Responses`](async_openai::Responses) group with
/// [`create`](Responses::create) and [`create_stream`](Responses::create_stream) as model
/// steps. A request naming a `previous_response_id` continues the invocation whose latest
/// step answered with that response. Per-call request options apply as on the SDK's group; every other method
/// is the SDK's, through `Deref`.
pub struct Responses<'c, C: Config> {
    inner: async_openai::Responses<'c, C>,
}

impl<C: Config> std::fmt::Debug for Responses<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responses").finish_non_exhaustive()
    }
}

impl<'c, C: Config> Responses<'c, C> {
    pub(crate) fn new(inner: async_openai::Responses<'c, C>) -> Self {
        Self { inner }
    }

    /// `responses().create(request)` as one execution of `llm:step` (gates as
    /// [`Chat::create`](crate::Chat::create)); the built-in tools the response ran become
    /// observe-only `tool:<name>` nodes.
    pub async fn create(&self, request: CreateResponse) -> Result<Response, OpenAIError> {
        crate::step::create(Api::Responses, request, |r| self.inner.create(r)).await
    }

    /// `responses().create_stream(request)` as one execution of `llm:step` (gates as
    /// [`Chat::create_stream`](crate::Chat::create_stream)); text, refusal, reasoning and
    /// tool-argument deltas are teed into `node.token`, built-in tool calls become
    /// observe-only `tool:<name>` nodes, and event types this async-openai does not know
    /// reach the caller as the SDK yields them (an `Err` item) without ending the stream.
    pub async fn create_stream(
        &self,
        request: CreateResponse,
    ) -> Result<ResponseStream, OpenAIError> {
        if !Node::enabled() {
            return self.inner.create_stream(request).await;
        }
        let request = Arc::new(request);
        match Step::begin(Api::Responses, &request) {
            None => {
                self.inner
                    .create_stream(Arc::unwrap_or_clone(request))
                    .await
            }
            Some(step) => Box::pin(step.open(request, |r| self.inner.create_stream(r))).await,
        }
    }
}

impl<'c, C: Config> std::ops::Deref for Responses<'c, C> {
    type Target = async_openai::Responses<'c, C>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<C: Config> RequestOptionsBuilder for Responses<'_, C> {
    fn options_mut(&mut self) -> &mut async_openai::RequestOptions {
        self.inner.options_mut()
    }
    fn options(&self) -> &async_openai::RequestOptions {
        self.inner.options()
    }
}
