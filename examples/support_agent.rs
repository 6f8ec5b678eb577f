//! A customer-support agent, instrumented with graphmind, driven by a scripted model.
//!
//! `cargo run -p graphmind-examples --example support_agent`
//!
//! Without a debugger it runs as an ordinary program. With one listening (`graphmind serve`,
//! or `GRAPHMIND_URL`) it waits up to half a second for attachment so that breakpoints hold from
//! the first gate, and exits 0 also when the debugger aborts the run or goes away.

use std::time::Duration;

#[tokio::main]
async fn main() {
    let gm = graphmind::init(graphmind::Config::new("support-agent"));
    if gm.ready(Duration::from_millis(500)).await {
        eprintln!("graphmind: attached to {}", gm.url());
    }
    println!("ticket: {}", graphmind_examples::TICKET);
    match graphmind_examples::handle_ticket(graphmind_examples::TICKET).await {
        Ok(Ok(answer)) => println!("agent: {answer}"),
        Ok(Err(err)) => println!("agent gave up: {err}"),
        Err(aborted) => println!("{aborted}"),
    }
    gm.dispose().await;
}
