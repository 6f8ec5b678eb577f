//! A wrong port is not silent when it matters: no debugger at the address `GRAPHMIND_URL`
//! names, or a `ready()` that failed, is said once; an app run without a debugger on purpose
//! (no `GRAPHMIND_URL`, no `ready()`) hears nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn double(n: i64) -> i64 {
    n * 2
}

/// A URL whose port refuses connections while the returned port is held (see
/// [`graphmind_tests::RefusingPort`]).
fn nothing_listens() -> (graphmind_tests::RefusingPort, String) {
    let port = graphmind_tests::RefusingPort::bind();
    let url = format!("ws://127.0.0.1:{}/ingest", port.port);
    (port, url)
}

fn collecting(config: graphmind::Config) -> (graphmind::Config, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let config = config.on_warning(move |m| sink.lock().expect("lock").push(m.to_owned()));
    (config, seen)
}

async fn settle() {
    // The transport's first attempt fails at once (connection refused); give it ample time.
    tokio::time::sleep(SECOND).await;
}

#[tokio::test]
async fn graphmind_url_naming_a_port_nobody_listens_on_is_said_once() {
    let (_refusing, url) = nothing_listens();
    let (config, seen) = collecting(
        graphmind::Config::new("wrong-port").env_vars([("GRAPHMIND_URL".to_owned(), url.clone())]),
    );
    let gm = graphmind::Session::new(config);
    gm.run("r", async { double(1).await })
        .await
        .expect("not aborted");
    graphmind_tests::eventually("the warning", 5 * SECOND, || {
        !seen.lock().expect("lock").is_empty()
    })
    .await;
    assert!(!gm.ready(Duration::from_millis(200)).await);
    gm.run("r2", async { double(2).await })
        .await
        .expect("not aborted");
    settle().await;
    let said = seen.lock().expect("lock").clone();
    assert_eq!(said.len(), 1, "once: {said:?}");
    assert!(
        said[0].contains(&format!("no debugger answered at {url}")),
        "{said:?}"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_failed_ready_is_said_once() {
    let (_refusing, url) = nothing_listens();
    let (config, seen) = collecting(
        graphmind::Config::new("ready-fails")
            .url(url.clone())
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    let said = seen.lock().expect("lock").clone();
    assert_eq!(said.len(), 1, "once: {said:?}");
    assert!(
        said[0].contains(&format!("no debugger answered at {url}")),
        "{said:?}"
    );
    assert!(said[0].contains("ready()"), "{said:?}");
    gm.dispose().await;
}

#[tokio::test]
async fn an_app_run_without_a_debugger_on_purpose_hears_nothing() {
    let (_refusing, url) = nothing_listens();
    let (config, seen) = collecting(
        graphmind::Config::new("no-debugger")
            .url(url)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let gm = graphmind::Session::new(config);
    gm.run("r", async { double(1).await })
        .await
        .expect("not aborted");
    settle().await;
    assert!(seen.lock().expect("lock").is_empty(), "{seen:?}");
    gm.dispose().await;
}
