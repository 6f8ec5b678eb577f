//! [`Chat`]: the instrumented Chat Completions group.

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionRequest, CreateChatCompletionResponse,
};

use std::sync::Arc;

use graphmind::node::Node;

use crate::finish::Api;
use crate::step::Step;

/// async-openai's [`Chat`](async_openai::Chat) group with [`create`](Chat::create) and
/// [`create_stream`](Chat::create_stream) as model steps. Per-call request options
/// (`.header(…)`, `.query(…)`, `.path(…)` from [`RequestOptionsBuilder`]) apply as on the
/// SDK's group; every other method is the SDK's, through `Deref`.
pub struct Chat<'c, C: Config> {
    inner: async_openai::Chat<'c, C>,
}

impl<C: Config> std::fmt::Debug for Chat<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat").finish_non_exhaustive()
    }
}

impl<'c, C: Config> Chat<'c, C> {
    pub(crate) fn new(inner: async_openai::Chat<'c, C>) -> Self {
        Self { inner }
    }

    /// `chat().create(request)` as one execution of `llm:step`: gated before the request
    /// leaves, after the response arrives and when it fails; retried, injected or aborted
    /// from the debugger. Returns the SDK's response (or an injected one) or its error.
    pub async fn create(
        &self,
        request: CreateChatCompletionRequest,
    ) -> Result<CreateChatCompletionResponse, OpenAIError> {
        crate::step::create(Api::Chat, request, |r| self.inner.create(r)).await
    }

    /// `chat().create_stream(request)` as one execution of `llm:step`: gated before the
    /// request leaves (where a person may edit the request, as for [`create`](Chat::create):
    /// the edited request is what is sent) and when opening it fails (no after gate: the caller reads the chunks
    /// as they arrive, so there is nothing left to hold or replace once the stream ends);
    /// the chunks are teed into batched `node.token` deltas, unchanged for the caller.
    pub async fn create_stream(
        &self,
        request: CreateChatCompletionRequest,
    ) -> Result<ChatCompletionResponseStream, OpenAIError> {
        if !Node::enabled() {
            return self.inner.create_stream(request).await;
        }
        let request = Arc::new(request);
        match Step::begin(Api::Chat, &request) {
            None => {
                self.inner
                    .create_stream(Arc::unwrap_or_clone(request))
                    .await
            }
            Some(step) => Box::pin(step.open(request, |r| self.inner.create_stream(r))).await,
        }
    }
}

impl<'c, C: Config> std::ops::Deref for Chat<'c, C> {
    type Target = async_openai::Chat<'c, C>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<C: Config> RequestOptionsBuilder for Chat<'_, C> {
    fn options_mut(&mut self) -> &mut async_openai::RequestOptions {
        self.inner.options_mut()
    }
    fn options(&self) -> &async_openai::RequestOptions {
        self.inner.options()
    }
}
