//! The hub holds at most 256 breakpoint matchers (it took 3,001, each pushed to every app,
//! which copies the whole list on each): the 257th is refused with `409` naming the cap, a
//! replacement list over the cap changes nothing; the feed answers a `breakpoint.set` past
//! the cap with `ok: false` and the reason.

mod support;

use serde_json::{Value, json};
use support::*;

fn matcher(i: usize) -> Value {
    json!({"kind": "tool", "name": format!("tool_{i}"), "point": "before"})
}

#[test]
fn the_257th_breakpoint_is_refused_and_the_answer_names_the_cap() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    for i in 0..256 {
        let r = h.post(
            "/api/debug/breakpoints/set",
            &json!({"matcher": matcher(i)}),
        );
        assert_eq!(r.status, 200, "{i}: {}", r.body);
    }
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": matcher(256)}),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.json()["maxBreakpoints"], json!(256));
    assert!(
        r.json()["error"].as_str().unwrap_or("").contains("256"),
        "{}",
        r.body
    );
    // One already held is not a new one: still fine.
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": matcher(3)}),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    let d = h.get_json("/api/debug");
    assert_eq!(d["breakpoints"].as_array().map(Vec::len), Some(256));
    assert_eq!(h.health()["stats"]["breakpointsRefused"], json!(1));
}

#[test]
fn a_replacement_list_over_the_cap_changes_nothing() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let r = h.post("/api/debug", &json!({"breakpoints": [matcher(0)]}));
    assert_eq!(r.status, 200, "{}", r.body);
    let many: Vec<Value> = (0..300).map(matcher).collect();
    let r = h.post("/api/debug", &json!({"breakpoints": many, "mode": "step"}));
    assert_eq!(r.status, 409, "{}", r.body);
    let d = h.get_json("/api/debug");
    assert_eq!(d["breakpoints"], json!([matcher(0)]));
    assert_eq!(d["mode"], json!("run"));
    // 256 distinct (with repeats) fit.
    let mut fit: Vec<Value> = (0..256).map(matcher).collect();
    fit.push(matcher(0));
    let r = h.post("/api/debug", &json!({"breakpoints": fit}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        h.get_json("/api/debug")["breakpoints"]
            .as_array()
            .map(Vec::len),
        Some(256)
    );
}

#[test]
fn the_feed_answers_a_breakpoint_past_the_cap_with_the_reason() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let all: Vec<Value> = (0..256).map(matcher).collect();
    let r = h.post("/api/debug", &json!({"breakpoints": all}));
    assert_eq!(r.status, 200, "{}", r.body);
    let (port, token) = (h.port, h.viewer_token.clone());
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        v.send(
            &json!({"type": "breakpoint.set", "token": token, "requestId": "r1",
                       "matcher": matcher(999)}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["requestId"], json!("r1"));
        assert_eq!(res["ok"], json!(false), "{res}");
        assert!(
            res["message"].as_str().unwrap_or("").contains("256"),
            "{res}"
        );
    });
    assert_eq!(
        h.get_json("/api/debug")["breakpoints"]
            .as_array()
            .map(Vec::len),
        Some(256)
    );
}
