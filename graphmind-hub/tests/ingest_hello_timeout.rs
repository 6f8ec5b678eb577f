//! An `/ingest` socket that never sends `hello` is closed (1008) after the hello timeout
//! (hidden flag `--hello-timeout-ms`, default 10 s), also when it keeps sending other frames;
//! an app that said hello in time is never closed for it.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{App, Got, Peer, block_on, env, hub};

#[test]
fn a_silent_ingest_socket_is_closed_after_the_hello_timeout() {
    let h = hub(|c| c.hello_timeout = std::time::Duration::from_millis(300));
    block_on(async {
        let start = Instant::now();
        let mut peer = Peer::connect(h.port, "/ingest").await;
        assert_eq!(peer.close_code(5000).await, Some(1008));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(250), "closed early: {took:?}");
        assert_eq!(h.health()["stats"]["helloTimeouts"], json!(1));
        assert_eq!(h.health()["apps"], json!(0));
    });
}

#[test]
fn frames_other_than_hello_do_not_keep_a_socket_open() {
    let h = hub(|c| c.hello_timeout = std::time::Duration::from_millis(300));
    block_on(async {
        let start = Instant::now();
        let mut peer = Peer::connect(h.port, "/ingest").await;
        let mut seq = 0;
        let code = loop {
            let frame = env(seq, "run_junk", "run.started", json!({"app": "x"})).to_string();
            seq += 1;
            if !peer.try_send_text(frame).await {
                break peer.close_code(2000).await;
            }
            match peer.recv(50).await {
                Got::Closed(c) => break c,
                Got::Json(v) => panic!("no frame before hello: {v}"),
                Got::Timeout => {}
            }
            assert!(start.elapsed() < Duration::from_secs(5), "never closed");
        };
        assert_eq!(code, Some(1008));
        let health = h.health();
        assert_eq!(health["stats"]["helloTimeouts"], json!(1));
        assert!(
            health["stats"]["ignoredBeforeHello"].as_u64().unwrap() >= 1,
            "{health}"
        );
        assert_eq!(
            h.runs(),
            Vec::<serde_json::Value>::new(),
            "nothing before hello is stored"
        );
    });
}

#[test]
fn an_app_that_said_hello_outlives_the_hello_timeout() {
    let h = hub(|c| c.hello_timeout = std::time::Duration::from_millis(200));
    block_on(async {
        let mut app = App::connect(h.port).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        app.start_run("run_after", "late").await;
        assert!(
            matches!(app.peer.recv(300).await, Got::Timeout),
            "the app was closed"
        );
        assert_eq!(h.health()["stats"]["helloTimeouts"], json!(0));
        assert_eq!(h.seqs("run_after"), [1]);
    });
}
