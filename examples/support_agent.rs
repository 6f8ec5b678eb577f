//! A customer-support agent, instrumented with graphmind, driven by a scripted model.
//!
//! `cargo run -p graphmind-examples --example support_agent`
//!
//! Without a debugger it runs as an ordinary program. With one listening (`graphmind serve`,
//! or `GRAPHMIND_URL`) it waits up to half a second for attachment so that breakpoints hold from
//! the first gate (`--attach-wait-ms N` waits longer, as the browser tests do on a busy
//! machine), and exits 0 also when the debugger aborts the run or goes away.

use std::time::Duration;

/// `--attach-wait-ms N`, else 500 ms.
fn attach_wait() -> Duration {
    let args: Vec<String> = std::env::args().collect();
    let ms = args
        .iter()
        .position(|a| a == "--attach-wait-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(500);
    Duration::from_millis(ms)
}

#[tokio::main]
async fn main() {
    let gm = graphmind::init(graphmind::Config::new("support-agent"));
    if gm.ready(attach_wait()).await {
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
