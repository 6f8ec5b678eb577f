//! Mutations are POST with Content-Type application/json only; frames over the caps close
//! the socket; a refused mutation changes nothing.

mod support;

use serde_json::json;
use support::*;

#[test]
fn get_and_form_encoded_mutations_are_refused() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let p = h.port;
    let auth = format!("Bearer {}", h.agent_token);
    for path in [
        "/api/debug/mode",
        "/api/debug/breakpoints/set",
        "/api/debug/breakpoints/clear",
        "/api/runs/run_x/pauses/pause_x/resume",
    ] {
        let r = http(
            p,
            "GET",
            &format!("{path}?mode=step&action=continue"),
            &[("Authorization", &auth)],
            None,
        );
        assert_eq!(r.status, 405, "GET {path}");
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
        ] {
            let r = http(
                p,
                "POST",
                path,
                &[("Authorization", &auth), ("Content-Type", ct)],
                Some("mode=step&action=continue"),
            );
            assert_eq!(r.status, 415, "POST {path} as {ct}: {}", r.body);
        }
        let r = http(
            p,
            "POST",
            path,
            &[("Authorization", &auth)],
            Some(r#"{"mode":"step"}"#),
        );
        assert_eq!(r.status, 415, "POST {path} without a content type");
    }
    let r = http(
        p,
        "POST",
        "/api/debug/mode",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some("mode=step"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(h.get_json("/api/debug")["mode"], json!("run"));
    let ok = http(
        p,
        "POST",
        "/api/debug/mode",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json; charset=utf-8"),
        ],
        Some(r#"{"mode":"step"}"#),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
}

/// Every debug mutation checks, in this order: the content type (`415`), the agent token
/// (`401`), then the body (`400`, `{"error": …}`), so a caller without a token learns nothing
/// about the body it would need.
#[test]
fn debug_mutations_check_the_content_type_then_the_token_then_the_body() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let p = h.port;
    let auth = format!("Bearer {}", h.agent_token);
    let json_ct = ("Content-Type", "application/json");
    for path in [
        "/api/debug",
        "/api/debug/mode",
        "/api/debug/breakpoints/set",
        "/api/debug/breakpoints/clear",
        "/api/runs/run_x/remembered/clear",
    ] {
        let r = http(
            p,
            "POST",
            path,
            &[("Content-Type", "text/plain")],
            Some("[1]"),
        );
        assert_eq!(r.status, 415, "POST {path}, no token, not JSON: {}", r.body);
        let r = http(p, "POST", path, &[json_ct], Some("[1]"));
        assert_eq!(r.status, 401, "POST {path}, no token: {}", r.body);
        let r = http(
            p,
            "POST",
            path,
            &[json_ct, ("Authorization", "Bearer wrong")],
            Some("[1]"),
        );
        assert_eq!(r.status, 401, "POST {path}, a wrong token: {}", r.body);
        for bad in ["[1]", "{not json"] {
            let r = http(
                p,
                "POST",
                path,
                &[json_ct, ("Authorization", &auth)],
                Some(bad),
            );
            assert_eq!(r.status, 400, "POST {path} {bad}: {}", r.body);
            let body: serde_json::Value = serde_json::from_str(&r.body).expect("a JSON body");
            assert!(body["error"].is_string(), "POST {path} {bad}: {body}");
        }
    }
    assert_eq!(h.get_json("/api/debug")["mode"], json!("run"));
}

#[test]
fn oversized_viewer_frame_and_body_are_refused() {
    let h = hub(|_| {});
    let p = h.port;
    block_on(async {
        let mut v = Peer::viewer(p).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let _ = v
            .try_send_text(format!(
                r#"{{"type":"subscribe","runId":"{}"}}"#,
                "x".repeat(1024 * 1024 + 10)
            ))
            .await;
        assert_eq!(v.close_code(5000).await, Some(1009));
    });
    let big = format!(r#"{{"mode":"{}"}}"#, "s".repeat(3 * 1024 * 1024));
    let r = http(
        p,
        "POST",
        "/api/debug/mode",
        &[
            ("Authorization", &format!("Bearer {}", h.agent_token)),
            ("Content-Type", "application/json"),
        ],
        Some(&big),
    );
    assert_eq!(r.status, 413);
    assert_eq!(h.health()["ok"], json!(true));
}
