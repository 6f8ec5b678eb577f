//! A request's body had no time limit: a token holder (or, before the token was checked first,
//! anyone) could hold a connection by sending a declared body a byte at a time. Now the body
//! must arrive within the body timeout (10 s; `GRAPHMIND_BODY_TIMEOUT_MS`), or the request is
//! answered `408` naming it.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::hub;

#[test]
fn a_body_that_trickles_past_the_body_timeout_is_answered_408() {
    let h = hub(|c| {
        c.body_timeout = Duration::from_millis(300);
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    for path in [
        "/api/runs/run_x/pauses/pause_x/resume",
        "/api/debug/breakpoints/set",
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", h.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{\"action\"",
            h.port, h.agent_token
        );
        let start = Instant::now();
        s.write_all(head.as_bytes()).expect("write");
        let mut got = String::new();
        let _ = s.read_to_string(&mut got);
        assert!(got.starts_with("HTTP/1.1 408"), "{path}: {got}");
        assert!(got.contains("300 ms"), "names the limit: {got}");
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
    }
}
