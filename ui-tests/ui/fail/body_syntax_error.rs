//! A half-typed body: the only error is the body's own syntax error, where it is; the function
//! (its name, signature and the rest of the crate that calls it) stays known.

#[graphmind::tool]
async fn lookup(order_id: u32) -> u32 {
    let doubled = order_id * ;
    doubled
}

#[graphmind::model_step]
async fn plan(prompt: String) -> String {
    prompt.
}

#[tokio::main]
async fn main() {
    // Still resolves: the item was not dropped.
    let _: u32 = lookup(1).await;
    let _: String = plan(String::new()).await;
}
