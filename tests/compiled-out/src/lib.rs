//! An instrumented agent built with graphmind's feature `enabled` off: the attributes return
//! their items untouched, `run!` is its block, and the API is a no-op.

use futures_util::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};

/// A tool result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Order {
    /// Order id.
    pub id: String,
    /// Amount in cents.
    pub cents: u64,
}

/// Looks an order up; fails on anything but `ORD-` and digits.
#[graphmind::tool(name = "lookup", call_id = call)]
pub async fn lookup_order(call: String, id: String) -> Result<Order, String> {
    let _ = call;
    if id
        .strip_prefix("ORD-")
        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
    {
        Ok(Order { id, cents: 4_999 })
    } else {
        Err(format!("no order {id}"))
    }
}

/// A tool with a `&mut` argument (retry off).
#[graphmind::tool(skip(log))]
pub async fn note(log: &mut Vec<String>, line: String) -> usize {
    log.push(line);
    log.len()
}

/// A streaming model step.
#[graphmind::model_step(tools = [lookup_order, note], invocation = "fixed")]
pub async fn call_model(prompt: String) -> Result<impl Stream<Item = String> + Send, String> {
    let words: Vec<String> = prompt.split(' ').map(str::to_owned).collect();
    Ok(stream::iter(words))
}

/// The agent: one model step, two lookups (one failing), a note.
pub async fn agent(prompt: &str) -> Result<(String, Vec<String>), String> {
    let words: Vec<String> = call_model(prompt.to_owned()).await?.collect().await;
    let mut log = Vec::new();
    let bad = lookup_order("call_1".into(), "ORD-1O42".into()).await;
    note(&mut log, format!("{bad:?}")).await;
    let good = lookup_order("call_2".into(), "ORD-1042".into()).await?;
    note(&mut log, format!("{}", good.cents)).await;
    Ok((words.join("+"), log))
}

/// The agent inside `graphmind::run!`.
pub async fn run_agent(
    prompt: &str,
) -> Result<Result<(String, Vec<String>), String>, graphmind::Aborted> {
    graphmind::run!("compiled-out", async { agent(prompt).await }).await
}
