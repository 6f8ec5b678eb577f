//! With feature `enabled` off the instrumented agent runs as plain code: same results, no
//! session, no connection attempt even with a debugger listening.

use std::time::Duration;

#[tokio::test]
async fn instrumented_agent_runs_untouched_and_never_connects() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ingest", listener.local_addr().unwrap());
    let gm = graphmind::init(graphmind::Config::new("compiled-out").url(url));

    assert!(
        !gm.ready(Duration::from_millis(300)).await,
        "compiled out: never attached"
    );
    let (words, log) = graphmind_compiled_out::run_agent("refund my order")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(words, "refund+my+order");
    assert_eq!(log, ["Err(\"no order ORD-1O42\")", "4999"]);

    let stats = gm.stats();
    assert!(!stats.enabled && !stats.attached);
    assert_eq!(
        (
            stats.buffered,
            stats.dropped,
            stats.held_gates,
            stats.last_seq
        ),
        (0, 0, 0, None)
    );
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "a compiled-out build opened a connection"
    );
    gm.dispose().await;
}
