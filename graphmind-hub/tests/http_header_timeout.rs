//! A connection that does not send a request's headers in time is closed (hidden flag
//! `--header-timeout-ms`, default 10 s): silent, or a byte at a time. Requests that are slow
//! to answer (a long poll) and upgraded WebSockets that stay quiet are not cut.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Got, Peer, block_on, hub};

/// Reads until the hub closes the connection; returns how long that took from `start`.
fn closed_after(mut s: TcpStream, start: Instant) -> Duration {
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return start.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return start.elapsed(),
            Err(e) => panic!("not closed within 5 s: {e}"),
        }
    }
}

#[test]
fn a_connection_that_sends_nothing_is_closed() {
    let h = hub(|c| {
        c.header_timeout = std::time::Duration::from_millis(300);
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let start = Instant::now();
    let s = TcpStream::connect(("127.0.0.1", h.port)).expect("connect");
    let took = closed_after(s, start);
    assert!(took >= Duration::from_millis(250), "closed early: {took:?}");
    // The hub still answers.
    assert_eq!(h.health()["ok"], json!(true));
}

#[test]
fn headers_sent_a_byte_at_a_time_do_not_keep_a_connection_open() {
    let h = hub(|c| {
        c.header_timeout = std::time::Duration::from_millis(300);
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let mut s = TcpStream::connect(("127.0.0.1", h.port)).expect("connect");
    let start = Instant::now();
    let head = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Slow: ",
        h.port
    );
    let mut closed = false;
    for b in head.bytes().chain(std::iter::repeat(b'a')).take(200) {
        if s.write_all(&[b]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let took = if closed {
        start.elapsed()
    } else {
        closed_after(s, start)
    };
    assert!(took < Duration::from_secs(3), "kept open for {took:?}");
}

#[test]
fn slow_answers_and_quiet_websockets_are_not_cut() {
    let h = hub(|c| {
        c.header_timeout = std::time::Duration::from_millis(300);
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    // A long poll that outlasts the header timeout answers normally.
    let start = Instant::now();
    let r = h.get("/api/pauses?wait=1");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(start.elapsed() >= Duration::from_millis(900));
    block_on(async {
        let mut viewer = Peer::viewer(h.port).await;
        let hello = viewer.next_json(2000).await;
        assert_eq!(hello["type"], json!("hello"));
        assert!(matches!(viewer.recv(800).await, Got::Timeout));
        h.control()
            .post_async("/api/debug/mode", json!({"mode": "step"}))
            .await;
        let debug = viewer.until(2000, |v| v["type"] == "debug").await;
        assert_eq!(
            debug["mode"],
            json!("step"),
            "the quiet viewer still gets updates"
        );
    });
}
