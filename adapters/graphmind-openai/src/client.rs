//! [`Client`]: async-openai's client with `chat()` and `responses()` instrumented.

use async_openai::config::Config;

/// async-openai's [`Client`](async_openai::Client) with its `chat()` and `responses()` API
/// groups instrumented; every other group (and every other method) is the SDK's own,
/// reached through `Deref`, uninstrumented.
///
/// Wrapping clones the SDK client (cheap: it is a handful of `Arc`s); the original stays
/// untouched and usable. Wrapping a wrapped client returns it as it is ([`Instrument`]).
#[derive(Clone, Debug)]
pub struct Client<C: Config> {
    inner: async_openai::Client<C>,
}

impl<C: Config> Client<C> {
    /// Wraps an SDK client.
    #[must_use]
    pub fn new(inner: async_openai::Client<C>) -> Self {
        Self { inner }
    }

    /// The SDK client inside (uninstrumented).
    #[must_use]
    pub fn inner(&self) -> &async_openai::Client<C> {
        &self.inner
    }

    /// Unwraps into the SDK client.
    #[must_use]
    pub fn into_inner(self) -> async_openai::Client<C> {
        self.inner
    }

    /// The Chat Completions group: `create` and `create_stream` are model steps; the rest
    /// is the SDK's.
    #[must_use]
    pub fn chat(&self) -> crate::Chat<'_, C> {
        crate::Chat::new(self.inner.chat())
    }

    /// The Responses group: `create` and `create_stream` are model steps; the rest is the
    /// SDK's.
    #[must_use]
    pub fn responses(&self) -> crate::Responses<'_, C> {
        crate::Responses::new(self.inner.responses())
    }
}

impl<C: Config> std::ops::Deref for Client<C> {
    type Target = async_openai::Client<C>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<C: Config> From<async_openai::Client<C>> for Client<C> {
    fn from(inner: async_openai::Client<C>) -> Self {
        Self::new(inner)
    }
}

/// `.graphmind()` on a client: wraps an SDK client, and returns an already wrapped one
/// unchanged (wrapping is idempotent).
///
/// ```
/// use graphmind_openai::Instrument;
///
/// let sdk = async_openai::Client::new();
/// let client = sdk.clone().graphmind();
/// let again = client.clone().graphmind(); // still one layer
/// let _config = again.config(); // any other method: the SDK's own, through Deref
/// ```
pub trait Instrument<C: Config> {
    /// The instrumented client.
    fn graphmind(self) -> Client<C>;
}

impl<C: Config> Instrument<C> for async_openai::Client<C> {
    fn graphmind(self) -> Client<C> {
        Client::new(self)
    }
}

impl<C: Config> Instrument<C> for Client<C> {
    fn graphmind(self) -> Client<C> {
        self
    }
}
