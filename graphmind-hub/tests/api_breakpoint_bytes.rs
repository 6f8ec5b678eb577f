//! Breakpoints were capped in count (256) but not in bytes: ten matchers with 1.9 MB names
//! made every Rust app fail to attach (`hello.ack` over the client's 16 MiB frame limit) and
//! the open `GET /api/debug` answered 19 MB. Now a matcher's name holds at most
//! `MAX_MATCHER_NAME_BYTES` and the list at most `MAX_BREAKPOINTS_BYTES` as JSON: past either,
//! the API answers `413` naming the limit (counted in `breakpointsRefused`), the feed answers
//! `ok: false` with it, a replacement list changes nothing, and a hub does not start with such
//! a list.

mod support;

use graphmind_hub::{MAX_BREAKPOINTS_BYTES, MAX_MATCHER_NAME_BYTES};
use serde_json::{Value, json};
use support::*;

fn named(name: String) -> Value {
    json!({"kind": "tool", "name": name, "point": "before"})
}

#[test]
fn ten_huge_breakpoint_names_are_refused_and_a_rust_app_still_attaches() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    for i in 0..10 {
        let name = format!("{i}{}", "n".repeat(1_900_000));
        let r = h.post(
            "/api/debug/breakpoints/set",
            &json!({"matcher": named(name)}),
        );
        assert_eq!(r.status, 413, "{i}: {}", &r.body[..r.body.len().min(300)]);
        assert!(
            r.body.contains(&MAX_MATCHER_NAME_BYTES.to_string()),
            "the answer names the limit: {}",
            r.body
        );
    }
    assert_eq!(h.health()["stats"]["breakpointsRefused"], json!(10));
    let open = http(h.port, "GET", "/api/debug", &[], None);
    assert_eq!(open.status, 200);
    assert!(open.body.len() < 1024, "{} bytes", open.body.len());

    // A name at the limit is fine; the app attaches with it in its hello.ack.
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": named("m".repeat(MAX_MATCHER_NAME_BYTES))}),
    );
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(300)]);
    let port = h.port;
    block_on(async {
        let gm = attached(port, "small-ack").await;
        gm.dispose().await;
    });
}

#[test]
fn the_list_is_capped_in_bytes_by_one_set_at_a_time_and_by_a_replacement() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let name = |i: usize| format!("{i:0>width$}", width = MAX_MATCHER_NAME_BYTES);
    let mut held = 0;
    let refused = loop {
        let r = h.post(
            "/api/debug/breakpoints/set",
            &json!({"matcher": named(name(held))}),
        );
        if r.status != 200 {
            break r;
        }
        held += 1;
        assert!(held <= 256, "never refused");
    };
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert!(
        refused.body.contains(&MAX_BREAKPOINTS_BYTES.to_string()),
        "{}",
        refused.body
    );
    assert!(
        held > 200,
        "only {held} of {MAX_MATCHER_NAME_BYTES} bytes each"
    );
    let open = http(h.port, "GET", "/api/debug", &[], None);
    assert!(
        open.body.len() <= MAX_BREAKPOINTS_BYTES + 1024,
        "GET /api/debug answers {} bytes",
        open.body.len()
    );
    assert_eq!(h.health()["stats"]["breakpointsRefused"], json!(1));

    // A replacement over the bytes changes nothing (nor the mode).
    let before = h.get_json("/api/debug");
    let all: Vec<Value> = (0..256).map(|i| named(name(i + 1000))).collect();
    let r = h.post("/api/debug", &json!({"breakpoints": all, "mode": "step"}));
    assert_eq!(r.status, 413, "{}", &r.body[..r.body.len().min(300)]);
    assert!(
        r.body.contains(&MAX_BREAKPOINTS_BYTES.to_string()),
        "{}",
        r.body
    );
    assert_eq!(h.get_json("/api/debug"), before);
    assert_eq!(h.health()["stats"]["breakpointsRefused"], json!(2));
}

#[test]
fn the_feed_refuses_a_huge_name_with_the_limit() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let (port, token) = (h.port, h.viewer_token.clone());
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        v.send(
            &json!({"type": "breakpoint.set", "token": token, "requestId": "r1",
                       "matcher": named("v".repeat(MAX_MATCHER_NAME_BYTES + 1))}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["ok"], json!(false), "{res}");
        assert!(
            res["message"]
                .as_str()
                .unwrap_or("")
                .contains(&MAX_MATCHER_NAME_BYTES.to_string()),
            "{res}"
        );
    });
    assert_eq!(h.get_json("/api/debug")["breakpoints"], json!([]));
}

#[test]
fn a_hub_does_not_start_with_a_huge_breakpoint() {
    let dir = TempDir::new("huge-break");
    let mut c = InProcessHub::config_in(&dir.0);
    c.breakpoints = vec![graphmind_protocol::BreakpointMatcher {
        name: Some("s".repeat(MAX_MATCHER_NAME_BYTES + 1)),
        ..graphmind_protocol::BreakpointMatcher::default()
    }];
    let err = block_on(graphmind_hub::start(c))
        .err()
        .expect("refused to start");
    assert!(
        err.to_string()
            .contains(&MAX_MATCHER_NAME_BYTES.to_string()),
        "{err}"
    );
}
