//! Host and Origin are checked on every request and upgrade (DNS rebinding, cross-site pages);
//! answers carry anti-framing and no-sniff headers and never CORS headers.

mod support;

use support::*;

#[test]
fn foreign_host_is_refused_with_a_plain_explanation() {
    let h = hub(|_| {});
    let p = h.port;
    for host in [
        "evil.test",
        "evil.test:80",
        &format!("evil.test:{p}"),
        &format!("localhost.evil.test:{p}"),
        &format!("127.0.0.1.nip.io:{p}"),
        "127.0.0.1:port",
        "",
    ] {
        for path in ["/health", "/api/runs", "/"] {
            let r = http(p, "GET", path, &[("Host", host)], None);
            assert_eq!(r.status, 403, "Host {host:?} {path}");
            assert!(
                r.body.contains("not allowed") || r.body.contains("required"),
                "{}",
                r.body
            );
            assert!(
                r.header("content-type")
                    .unwrap_or_default()
                    .starts_with("text/plain")
            );
        }
    }
    // the loopback names, with the hub's port or any other (a tunnel), or none
    for host in [
        format!("127.0.0.1:{p}"),
        format!("localhost:{p}"),
        format!("[::1]:{p}"),
        format!("127.0.0.1:{}", p.wrapping_add(1)),
        "localhost".to_owned(),
    ] {
        assert_eq!(
            http(p, "GET", "/health", &[("Host", &host)], None).status,
            200,
            "{host}"
        );
    }
}

#[test]
fn foreign_or_null_origin_is_refused_own_origin_allowed() {
    let h = hub(|_| {});
    let p = h.port;
    for origin in [
        "null",
        "http://evil.test",
        &format!("http://evil.test:{p}"),
        &format!("https://127.0.0.1:{p}"),
        // a page of another local server (another port) is not one of the hub's pages
        &format!("http://127.0.0.1:{}", p.wrapping_add(1)),
        "http://localhost:3000",
        "file://",
    ] {
        let r = http(p, "GET", "/api/runs", &[("Origin", origin)], None);
        assert_eq!(r.status, 403, "Origin {origin}");
        assert!(r.body.contains("Origin"), "{}", r.body);
        let post = http(
            p,
            "POST",
            "/api/debug/mode",
            &[
                ("Origin", origin),
                ("Content-Type", "application/json"),
                ("Authorization", &format!("Bearer {}", h.agent_token)),
            ],
            Some(r#"{"mode":"step"}"#),
        );
        assert_eq!(post.status, 403, "POST with Origin {origin}");
    }
    assert_eq!(
        h.get_json("/api/debug")["mode"],
        "run",
        "a refused request changed state"
    );
    for origin in [
        format!("http://127.0.0.1:{p}"),
        format!("http://localhost:{p}"),
    ] {
        let auth = format!("Bearer {}", h.agent_token);
        assert_eq!(
            http(
                p,
                "GET",
                "/api/runs",
                &[("Origin", &origin), ("Authorization", &auth)],
                None
            )
            .status,
            200
        );
    }
}

/// A TCP forwarder on another loopback port, as `ssh -L <port>:127.0.0.1:<hub port>` is: the
/// browser's Host and Origin then name the tunnel's port, not the hub's.
fn tunnel_to(hub_port: u16) -> u16 {
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the tunnel");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(upstream) = TcpStream::connect(("127.0.0.1", hub_port)) else {
                continue;
            };
            let (mut c_read, mut u_write) = (
                client.try_clone().expect("clone"),
                upstream.try_clone().expect("clone"),
            );
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c_read, &mut u_write);
                let _ = u_write.shutdown(std::net::Shutdown::Write);
            });
            let (mut u_read, mut c_write) = (upstream, client);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut u_read, &mut c_write);
                let _ = c_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    port
}

#[test]
fn ssh_tunnel_to_another_local_port_is_served() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let t = tunnel_to(h.port);
    assert_ne!(t, h.port);
    let auth = format!("Bearer {}", h.agent_token);
    let origin = format!("http://127.0.0.1:{t}");
    // the page, the API with the page's own Origin, and a control request through the tunnel
    let page = http(t, "GET", "/", &[], None);
    assert_eq!(page.status, 200, "{}", page.body);
    let runs = http(
        t,
        "GET",
        "/api/runs",
        &[("Origin", &origin), ("Authorization", &auth)],
        None,
    );
    assert_eq!(runs.status, 200, "{}", runs.body);
    let mode = http(
        t,
        "POST",
        "/api/debug/mode",
        &[
            ("Origin", &origin),
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        Some(r#"{"mode":"step"}"#),
    );
    assert_eq!(mode.status / 100, 2, "{}", mode.body);
    assert_eq!(h.get_json("/api/debug")["mode"], "step");
    // through the tunnel, a page of the hub's own port is another origin than the browser's
    let cross = http(
        t,
        "GET",
        "/api/runs",
        &[
            ("Origin", &format!("http://127.0.0.1:{}", h.port)),
            ("Authorization", &auth),
        ],
        None,
    );
    assert_eq!(cross.status, 403, "{}", cross.body);
}

#[test]
fn websocket_upgrades_check_host_and_origin_too() {
    let h = hub(|_| {});
    let p = h.port;
    block_on(async {
        for path in ["/ingest", "/ws/ui"] {
            assert_eq!(
                Peer::connect_with(p, path, &[("Origin", "http://evil.test")])
                    .await
                    .err(),
                Some(403),
                "{path}"
            );
            assert_eq!(
                Peer::connect_with(p, path, &[("Origin", "null")])
                    .await
                    .err(),
                Some(403),
                "{path}"
            );
            assert_eq!(
                Peer::connect_with(p, path, &[("Host", "evil.test")])
                    .await
                    .err(),
                Some(403),
                "{path}"
            );
            assert!(
                Peer::connect_with(p, path, &[("Origin", &format!("http://127.0.0.1:{p}"))])
                    .await
                    .is_ok()
            );
            // No Origin at all (the Python client sends none) is fine.
            assert!(Peer::connect_with(p, path, &[]).await.is_ok());
        }
    });
}

#[test]
fn responses_forbid_framing_and_sniffing_and_carry_no_cors() {
    let h = hub(|_| {});
    let p = h.port;
    for path in ["/", "/health", "/api/runs", "/api/pauses", "/nope"] {
        let r = http(
            p,
            "GET",
            path,
            &[("Origin", &format!("http://127.0.0.1:{p}"))],
            None,
        );
        assert_eq!(
            r.header("x-frame-options").as_deref(),
            Some("DENY"),
            "{path}"
        );
        assert_eq!(
            r.header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
        assert!(
            r.header("content-security-policy")
                .is_some_and(|c| c.contains("frame-ancestors 'none'")),
            "{path}"
        );
        assert!(
            !r.head.to_ascii_lowercase().contains("access-control-"),
            "{path}: {}",
            r.head
        );
    }
    let pre = http(
        p,
        "OPTIONS",
        "/api/debug/mode",
        &[
            ("Origin", "http://evil.test"),
            ("Access-Control-Request-Method", "POST"),
        ],
        None,
    );
    assert_ne!(pre.status / 100, 2);
    assert!(!pre.head.to_ascii_lowercase().contains("access-control-"));
    let pre = http(
        p,
        "OPTIONS",
        "/api/debug/mode",
        &[("Access-Control-Request-Method", "POST")],
        None,
    );
    assert!(!pre.head.to_ascii_lowercase().contains("access-control-"));
}
