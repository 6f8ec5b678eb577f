//! The handshake: what `hello` carries, when the client counts as attached, and that
//! `ready()` is shared and instant once attached.

use std::time::Duration;

use graphmind_tests::FakeDebugger;

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn hello_announces_versions_capabilities_app_and_sdk() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("handshake-app").sdk("rust", "9.9.9"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    let hello = hub.wait_for_kind("hello", SECOND).await;
    let p = hello.payload();
    assert_eq!(hello.run_id(), "*");
    assert_eq!(
        hello.seq(),
        0,
        "hello takes the first seq of the session counter"
    );
    assert_eq!(p["versions"]["protocol"], 1);
    assert_eq!(p["versions"]["client"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        p["capabilities"],
        serde_json::json!([
            "pause",
            "step",
            "inject",
            "retry",
            "abort",
            "run-claim",
            "request-id",
            "hub-ack",
            "reject",
            "edit-input"
        ]),
        "request-id is announced: exec.resumed echoes an exec.resume's requestId"
    );
    assert_eq!(p["app"], "handshake-app");
    assert_eq!(
        p["sdk"],
        serde_json::json!({"name": "rust", "version": "9.9.9"})
    );
    assert!(p.get("resumeToken").is_none(), "no token before any ack");
    assert_eq!(hub.connections(), 1);
    assert!(gm.stats().attached);
    gm.dispose().await;
}

#[tokio::test]
async fn default_sdk_is_rust_with_the_crate_version() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("sdk-default"));
    assert!(gm.ready(2 * SECOND).await);
    let hello = hub.wait_for_kind("hello", SECOND).await;
    assert_eq!(hello.payload()["sdk"]["name"], "rust");
    assert_eq!(hello.payload()["sdk"]["version"], env!("CARGO_PKG_VERSION"));
    gm.dispose().await;
}

#[tokio::test]
async fn concurrent_ready_calls_share_one_connection_and_later_calls_are_instant() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("shared-ready"));
    let waiters: Vec<_> = (0..16)
        .map(|_| {
            let gm = gm.clone();
            tokio::spawn(async move { gm.ready(2 * SECOND).await })
        })
        .collect();
    for w in waiters {
        assert!(w.await.expect("joined"));
    }
    assert_eq!(
        hub.connections(),
        1,
        "16 concurrent ready() calls made one connection"
    );
    assert_eq!(hub.frames_of("hello").len(), 1);

    let t = std::time::Instant::now();
    for _ in 0..1000 {
        assert!(gm.ready(2 * SECOND).await);
    }
    assert!(
        t.elapsed() < Duration::from_millis(50),
        "1000 ready() calls while attached took {:?}",
        t.elapsed()
    );
    assert_eq!(hub.connections(), 1);
    gm.dispose().await;
}

#[tokio::test]
async fn ready_returns_false_at_once_when_nothing_listens() {
    // Bind and drop a listener to get a port nobody listens on: the connection is refused,
    // so the attempt ready() shares fails and ready() must not idle out its timeout.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let gm = graphmind::Session::new(
        graphmind::Config::new("nobody-home")
            .url(format!("ws://127.0.0.1:{port}/ingest"))
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let t = std::time::Instant::now();
    assert!(!gm.ready(Duration::from_secs(2)).await);
    let took = t.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "ready(2s) with nothing listening took {took:?}"
    );
    assert!(!gm.stats().attached);
    gm.dispose().await;
}

#[tokio::test]
async fn ready_a_second_time_after_a_refusal_attaches_to_a_debugger_that_came_up() {
    let hub = FakeDebugger::start().await;
    let url = hub.url();
    hub.kill();
    let gm = graphmind::Session::new(
        graphmind::Config::new("late-hub")
            .url(url)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!gm.ready(Duration::from_secs(2)).await);
    hub.restart().await;
    assert!(
        gm.ready(Duration::from_secs(2)).await,
        "ready kicks a fresh attempt"
    );
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_hello_ack_is_named_as_such_not_as_no_debugger() {
    // Breakpoints whose names add up past the client's 16 MiB frame limit.
    let hub = FakeDebugger::start().await;
    let name = "n".repeat(2 * 1024 * 1024);
    hub.set_breakpoints(
        (0..9)
            .map(|_| serde_json::json!({"kind": "tool", "name": name}))
            .collect(),
    );
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = std::sync::Arc::clone(&warnings);
    let gm = graphmind::Session::new(
        hub.config("oversized-ack")
            // Building an 18 MB ack takes the fake (a debug build) longer than the 1 s default.
            .handshake_timeout(10 * SECOND)
            .on_warning(move |m| sink.lock().expect("lock").push(m.to_owned())),
    );
    assert!(
        !gm.ready(2 * SECOND).await,
        "an ack over the limit cannot attach"
    );
    let warned = warnings.lock().expect("lock").clone();
    assert_eq!(
        warned.len(),
        1,
        "one warning, not also 'no debugger answered': {warned:?}"
    );
    assert!(
        warned[0].contains("hello.ack over this client's 16 MiB frame limit")
            && warned[0].contains("graphmind break list"),
        "{}",
        warned[0]
    );
    gm.dispose().await;
}
