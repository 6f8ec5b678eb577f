//! A short program that never calls `dispose`: it binds the guard of `graphmind::init` and
//! lets it go at the end of `main`, inside the tokio runtime. Dropping the guard flushes the
//! run to the debugger and closes the session, so the whole run is stored.
//!
//! `GRAPHMIND_URL=ws://127.0.0.1:4747/ingest cargo run -p graphmind-examples --example no_dispose`
//!
//! `--current-thread` runs it on a single-threaded runtime (the guard then drops on the only
//! thread the runtime has).

#[graphmind::tool]
async fn add(total: i64, n: i64) -> i64 {
    total + n
}

async fn twenty_calls() -> i64 {
    let mut total = 0;
    for n in 1..=20 {
        total = add(total, n).await;
    }
    total
}

async fn agent() {
    let _gm = graphmind::init(graphmind::Config::new("no-dispose"));
    match graphmind::run!("twenty-calls", twenty_calls()).await {
        Ok(total) => println!("total: {total}"),
        Err(aborted) => println!("{aborted}"),
    }
}

fn main() {
    let mut builder = if std::env::args().any(|a| a == "--current-thread") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let rt = builder.enable_all().build().expect("a tokio runtime");
    rt.block_on(agent());
}
