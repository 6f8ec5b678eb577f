//! A two-tool travel agent over async-openai, instrumented with graphmind-openai, against
//! the local mock OpenAI server (started by the example itself; no API key, no network).
//!
//! `cargo run -p graphmind-examples --features openai --example openai_agent`
//!
//! Detached (no debugger listening) it runs as an ordinary program. With `graphmind serve`
//! running (or `GRAPHMIND_URL` set) it attaches first, so breakpoints hold from the first
//! gate: the model step `llm:step` before each request, and the two tools, dispatched in
//! parallel, each gated on its own and correlated with the model's tool-call id through
//! `#[graphmind::tool(call_id = …)]`. The agent itself is `graphmind_examples::trip_agent`.

use std::time::Duration;

use graphmind_examples::trip_agent::{self, APP, RUN};

#[tokio::main]
async fn main() {
    let gm = graphmind::init(graphmind::Config::new(APP));
    if gm.ready(Duration::from_millis(500)).await {
        eprintln!("graphmind: attached to {}", gm.url());
    } else {
        eprintln!("graphmind: detached (no debugger at {})", gm.url());
    }
    let mocked = match trip_agent::mocked().await {
        Ok(m) => m,
        Err(e) => {
            eprintln!("cannot start the mock OpenAI server: {e}");
            std::process::exit(1);
        }
    };
    match graphmind::run!(RUN, trip_agent::trip_agent(&mocked.client, "tools")).await {
        Ok(Ok(answer)) => println!("agent: {answer}"),
        Ok(Err(err)) => println!("agent failed: {err}"),
        Err(aborted) => println!("{aborted}"),
    }
    gm.dispose().await;
}
