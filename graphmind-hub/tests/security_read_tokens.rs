//! Reads need a token: the runs, events and pauses over HTTP and the `/ws/ui` feed expose
//! every tool input and output, and any local process could read them without one. HTTP
//! reads take `Authorization: Bearer` with the agent or the viewer token; a viewer socket
//! sends `{"type":"auth","token":…}` as its first frame (never the URL: query strings end up
//! in logs) within a short handshake budget, else it is closed and counted. `/health` stays
//! open.

mod support;

use serde_json::json;
use support::*;

const READS: [&str; 5] = [
    "/api/runs",
    "/api/runs/run_read_1",
    "/api/runs/run_read_1/events",
    "/api/pauses",
    "/api/runs/run_read_1/pauses/p_1",
];

fn get_with(port: u16, path: &str, token: Option<&str>) -> Response {
    match token {
        Some(t) => http(
            port,
            "GET",
            path,
            &[("Authorization", &format!("Bearer {t}"))],
            None,
        ),
        None => http(port, "GET", path, &[], None),
    }
}

#[test]
fn http_reads_take_the_agent_or_viewer_token_and_nothing_else() {
    let h = hub(|_| {});
    let port = h.port;
    let _app = block_on(async {
        let app = App::holding(
            port,
            "run_read_1",
            "reads",
            "t",
            "p_1",
            "before",
            json!({"secret": 1}),
        )
        .await;
        wait_for_pause(port).await;
        app
    });
    let wrong = "0".repeat(32);
    for path in READS {
        for token in [None, Some(wrong.as_str()), Some("not a token")] {
            let r = get_with(port, path, token);
            assert_eq!(r.status, 401, "{path} with {token:?}: {}", r.body);
            assert!(!r.body.contains("secret"), "{}", r.body);
            assert!(
                r.json()["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("token"))
            );
        }
        for token in [&h.agent_token, &h.viewer_token] {
            let r = get_with(port, path, Some(token));
            assert_eq!(r.status, 200, "{path}: {}", r.body);
        }
    }
    assert_eq!(get_with(port, "/health", None).status, 200);
}

#[test]
fn a_viewer_is_let_in_only_after_an_auth_frame_with_a_token() {
    let h = hub(|c| c.ui_auth_timeout = std::time::Duration::from_millis(1000));
    let port = h.port;
    let (viewer, agent) = (h.viewer_token.clone(), h.agent_token.clone());
    block_on(async {
        for token in [&viewer, &agent] {
            let mut v = Peer::viewer_with(port, Some(token)).await;
            let hello = v.next_json(5000).await;
            assert_eq!(hello["type"], json!("hello"), "{hello}");
        }
        // A wrong token, no token, or another frame first: told why, then closed (1008).
        let wrong = "0".repeat(32);
        for first in [
            json!({"type": "auth", "token": wrong}),
            json!({"type": "auth"}),
            json!({"type": "subscribe", "runId": "run_x"}),
        ] {
            let mut v = Peer::connect(port, "/ws/ui").await;
            v.send(&first).await;
            let f = v.next_json(5000).await;
            assert_eq!(f["type"], json!("unauthorized"), "{first}: {f}");
            assert_eq!(v.close_code(5000).await, Some(1008), "{first}");
        }
        // The token in the URL counts for nothing: without an auth frame the socket is
        // closed at the end of the budget, having been sent nothing.
        let mut v = Peer::connect(port, &format!("/ws/ui?token={viewer}")).await;
        match v.recv(10_000).await {
            Got::Closed(code) => assert_eq!(code, Some(1008)),
            other => panic!("expected a close, got {other:?}"),
        }
    });
    let stats = h.health()["stats"].clone();
    assert_eq!(stats["uiAuthRejected"], json!(3), "{stats}");
    assert_eq!(stats["uiAuthTimeouts"], json!(1), "{stats}");
    assert_eq!(h.health()["viewers"], json!(0));
}
