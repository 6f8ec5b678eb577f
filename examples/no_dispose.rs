//! A short program that never calls `dispose`: it binds the guard of `graphmind::init` and
//! lets it go at the end of `main`, inside the tokio runtime. Dropping the guard flushes the
//! run to the debugger and closes the session, so the whole run is stored.
//!
//! `GRAPHMIND_URL=ws://127.0.0.1:4747/ingest cargo run -p graphmind-examples --example no_dispose`
//!
//! `--current-thread` runs it on a single-threaded runtime (the guard then drops on the only
//! thread the runtime has). Ways of ending without dropping the guard, each of which still
//! delivers the run: `--exit` calls `std::process::exit(0)` on the main thread (the session
//! closes as the main thread's thread-locals are destroyed), `--forget` leaks the guard
//! with `mem::forget` (the same, when `main` returns), and `--exit-from-thread` calls
//! `graphmind::shutdown()` and then `std::process::exit(0)` on another thread (where only the
//! explicit shutdown can close the session).

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
    let gm = graphmind::init(graphmind::Config::new("no-dispose"));
    match graphmind::run!("twenty-calls", twenty_calls()).await {
        Ok(total) => println!("total: {total}"),
        Err(aborted) => println!("{aborted}"),
    }
    let flag = |name: &str| std::env::args().any(|a| a == name);
    if flag("--exit") {
        std::process::exit(0);
    }
    if flag("--forget") {
        std::mem::forget(gm);
        return;
    }
    if flag("--exit-from-thread") {
        std::thread::spawn(|| {
            graphmind::shutdown();
            std::process::exit(0);
        });
        std::future::pending::<()>().await;
    }
    drop(gm);
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
