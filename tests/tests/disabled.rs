//! A disabled session (explicitly, by `GRAPHMIND_DISABLED=1`, or by a production
//! environment) never reaches a listening socket, starts no thread and records nothing.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use graphmind::Config;
use graphmind_tests::token_event;

fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "ws://127.0.0.1:{}/ingest",
        l.local_addr().expect("addr").port()
    );
    (l, url)
}

fn no_env() -> std::iter::Empty<(String, String)> {
    std::iter::empty()
}

fn transport_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("graphmind-tran"))
                })
                .count()
        })
        .unwrap_or(0)
}

async fn exercise_and_assert_silent(config: Config, l: &TcpListener) {
    let gm = graphmind::Session::new(config);
    assert!(!gm.is_enabled());
    assert_eq!(gm.emit("run_d", token_event("llm:step", "x")), None);
    let t = Instant::now();
    assert!(!gm.ready(Duration::from_secs(2)).await);
    assert!(
        t.elapsed() < Duration::from_millis(50),
        "ready() waited {:?}",
        t.elapsed()
    );
    let out = gm.run("disabled-run", async { 7 }).await;
    assert_eq!(out.expect("not aborted"), 7);
    let stats = gm.stats();
    assert!(!stats.enabled && !stats.attached);
    assert_eq!((stats.buffered, stats.dropped, stats.held_gates), (0, 0, 0));
    assert_eq!(stats.last_seq, None);
    gm.dispose().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    match l.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("a disabled session connected from {peer}"),
        Err(e) => panic!("accept failed: {e}"),
    }
}

// One test, so no other session in this binary can start a transport thread meanwhile.
#[tokio::test]
async fn disabled_sessions_never_connect_and_start_no_thread() {
    let (l, url) = listener();
    let cases = [
        Config::new("off")
            .url(&url)
            .enabled(false)
            .env_vars(no_env()),
        Config::new("kill-switch")
            .url(&url)
            .enabled(true)
            .env_vars([("GRAPHMIND_DISABLED", "1")]),
        Config::new("production")
            .url(&url)
            .env_vars([("APP_ENV", "production")]),
        Config::new("prod-rust")
            .url(&url)
            .env_vars([("ENVIRONMENT", ""), ("RUST_ENV", "prod")]),
    ];
    for config in cases {
        exercise_and_assert_silent(config, &l).await;
    }
    assert_eq!(
        transport_threads(),
        0,
        "a disabled session started a transport thread"
    );
}

#[test]
fn graphmind_1_overrides_the_production_rule_but_not_the_kill_switch() {
    assert!(
        Config::new("a")
            .env_vars([("NODE_ENV", "production"), ("GRAPHMIND", "1")])
            .resolved_enabled()
    );
    assert!(
        !Config::new("a")
            .env_vars([("NODE_ENV", "production")])
            .resolved_enabled()
    );
    assert!(
        !Config::new("a")
            .env_vars([("GRAPHMIND", "1"), ("GRAPHMIND_DISABLED", "1")])
            .resolved_enabled()
    );
    assert!(Config::new("a").env_vars(no_env()).resolved_enabled());
}

#[test]
fn urls_resolve_explicit_then_env_then_default() {
    let env = [("GRAPHMIND_URL", "ws://127.0.0.1:1/from-env")];
    assert_eq!(
        Config::new("a").env_vars(env).resolved_url(),
        "ws://127.0.0.1:1/from-env"
    );
    assert_eq!(
        Config::new("a")
            .url("ws://127.0.0.1:2/x")
            .env_vars(env)
            .resolved_url(),
        "ws://127.0.0.1:2/x"
    );
    assert_eq!(
        Config::new("a").env_vars(no_env()).resolved_url(),
        graphmind::DEFAULT_URL
    );
    assert_eq!(graphmind::DEFAULT_URL, "ws://127.0.0.1:4747/ingest");
}
