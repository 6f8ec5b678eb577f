//! Every shape of instrumented fn, under the strictest lints a user may pick. `cargo clippy
//! -p graphmind-lint-clean` fails if an expansion trips a lint; the ui-tests prove the
//! user's own lints (`dead_code`, `unused_variables`) still fire on instrumented fns.
#![deny(warnings, clippy::pedantic)]

use futures_util::{Stream, stream};
use serde::{Deserialize, Serialize};

/// An order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Order {
    /// Id.
    pub id: String,
}

/// A tool error.
#[derive(Debug)]
pub struct NotFound(pub String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no order {}", self.0)
    }
}

/// Free fn, `Result`, `call_id`, `?`, early `return`.
///
/// # Errors
/// When the id is empty.
#[graphmind::tool(call_id = call, skip(verbose))]
pub async fn lookup(call: String, id: String, verbose: bool) -> Result<Order, NotFound> {
    let _ = (call, verbose);
    if id.is_empty() {
        return Err(NotFound(id));
    }
    let n: u32 = "1".parse().map_err(|_| NotFound(id.clone()))?;
    Ok(Order {
        id: format!("{id}-{n}"),
    })
}

/// A store.
pub struct Store {
    orders: Vec<Order>,
}

impl Store {
    /// A store.
    #[must_use]
    pub fn new() -> Self {
        Self { orders: Vec::new() }
    }

    /// `&self` method, generic, `impl Trait` argument.
    pub async fn count<T: Serialize + Clone + Sync>(
        &self,
        tag: T,
        label: impl AsRef<str> + Serialize + Clone + Send,
    ) -> usize {
        self.count_inner(tag, label).await
    }

    #[graphmind::tool(name = "count")]
    async fn count_inner<T: Serialize + Clone + Sync>(
        &self,
        tag: T,
        label: impl AsRef<str> + Serialize + Clone + Send,
    ) -> usize {
        let _ = (tag, label.as_ref());
        self.orders.len()
    }

    /// `&mut self` method (retry off) with a `mut` argument.
    #[graphmind::tool]
    pub async fn add(&mut self, mut order: Order) -> usize {
        order.id.push('!');
        self.orders.push(order);
        self.orders.len()
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

/// Streaming tool.
#[graphmind::tool]
pub async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n)
}

/// Streaming model step with a roster and an explicit invocation.
///
/// # Errors
/// Never.
#[graphmind::model_step(tools = [lookup, numbers], invocation = "ticket-1")]
pub async fn complete(prompt: String) -> Result<impl Stream<Item = String> + Send, NotFound> {
    Ok(stream::iter(vec![prompt]))
}

/// Non-streaming model step.
#[graphmind::model_step(retry = false)]
pub async fn answer(prompt: &str) -> String {
    prompt.to_owned()
}

/// An `#[async_trait]` tool.
#[async_trait::async_trait]
pub trait Search {
    /// Search.
    async fn search(&self, query: String) -> Vec<String>;
}

#[async_trait::async_trait]
impl Search for Store {
    #[graphmind::tool]
    async fn search(&self, query: String) -> Vec<String> {
        self.orders
            .iter()
            .filter(|o| o.id.contains(&query))
            .map(|o| o.id.clone())
            .collect()
    }
}

/// `run!` around all of it.
///
/// # Errors
/// When the debugger aborts the run.
pub async fn agent() -> Result<usize, graphmind::Aborted> {
    graphmind::run!("lint-clean", async {
        let mut store = Store::new();
        store.add(Order { id: "a".into() }).await;
        let _ = lookup("call_1".into(), "a".into(), true).await;
        let _ = complete("hi".into()).await;
        let _ = answer("hi").await;
        let _ = numbers(2).await;
        store.search("a".into()).await.len() + store.count(1u8, "x").await
    })
    .await
}
