//! The viewer page and its modules are served from the binary with their media types and a
//! strict content security policy; nothing outside the embedded set is reachable.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::hub;

/// (status, lower-cased headers, body)
fn get(port: u16, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[test]
fn page_and_modules_are_served_with_types_and_a_strict_csp() {
    let h = hub(|_| {});
    let (status, head, body) = get(h.port, "/");
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(head.contains("frame-ancestors 'none'"), "{head}");
    assert!(body.contains(r#"<script type="module" src="/assets/main.js">"#));
    assert!(body.contains(r#"<script src="/assets/early.js">"#));
    for (path, mime, needle) in [
        ("/assets/early.js", "text/javascript", "/api/runs/"),
        ("/assets/main.js", "text/javascript", "/ws/ui"),
        (
            "/assets/model.js",
            "text/javascript",
            "export class RunModel",
        ),
        ("/assets/viewer.css", "text/css", ".gate"),
        ("/assets/favicon.svg", "image/svg+xml", "<svg"),
    ] {
        let (status, head, body) = get(h.port, path);
        assert_eq!(status, 200, "{path}");
        assert!(
            head.contains(&format!("content-type: {mime}")),
            "{path}: {head}"
        );
        assert!(
            head.contains("x-content-type-options: nosniff"),
            "{path}: {head}"
        );
        assert!(body.contains(needle), "{path}");
    }
}

#[test]
fn nothing_outside_the_embedded_assets_is_served() {
    let h = hub(|_| {});
    for path in [
        "/assets/nope.js",
        "/assets/..%2FCargo.toml",
        "/assets/../src/main.rs",
        "/assets/%2e%2e/Cargo.toml",
    ] {
        let (status, _, body) = get(h.port, path);
        assert_eq!(status, 404, "{path} answered {status}: {body}");
    }
}
