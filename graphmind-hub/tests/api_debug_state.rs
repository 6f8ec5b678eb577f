//! Breakpoints and mode over HTTP: read, set, clear, replace; every change is pushed to every
//! connected app and viewer at once.

mod support;

use serde_json::json;
use support::*;

#[test]
fn debug_changes_reach_every_app_and_viewer() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let port = h.port;
    let ctl = h.control();
    block_on(async {
        let mut a = App::connect(port).await;
        let mut b = App::connect(port).await;
        let mut v = Peer::viewer(port).await;
        let hello = v.until(5000, |f| f["type"] == "hello").await;
        assert_eq!(
            hello["debug"],
            json!({"breakpoints": [{"point": "error"}], "mode": "run"})
        );

        let m = json!({"kind": "tool", "name": "search", "point": "before"});
        let r = ctl
            .post_async("/api/debug/breakpoints/set", json!({"matcher": m}))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["breakpoints"], json!([{"point": "error"}, m]));
        for app in [&mut a, &mut b] {
            let f = app.peer.next_json(5000).await;
            assert_eq!(f["type"], json!("breakpoint.set"));
            assert_eq!(f["runId"], json!("*"));
            assert_eq!(f["payload"]["matcher"], m);
        }
        let d = v.until(5000, |f| f["type"] == "debug").await;
        assert_eq!(d["breakpoints"], json!([{"point": "error"}, m]));

        // Setting an equal matcher again changes nothing and sends nothing.
        ctl.post_async("/api/debug/breakpoints/set", json!({"matcher": m}))
            .await;
        assert!(matches!(a.peer.recv(200).await, Got::Timeout));

        let r = ctl
            .post_async("/api/debug/mode", json!({"mode": "step"}))
            .await;
        assert_eq!(r.json()["mode"], json!("step"));
        let f = a.peer.next_json(5000).await;
        assert_eq!(
            (f["type"].clone(), f["payload"]["mode"].clone()),
            (json!("mode.set"), json!("step"))
        );

        let r = ctl
            .post_async(
                "/api/debug/breakpoints/clear",
                json!({"matcher": {"point": "error"}}),
            )
            .await;
        assert_eq!(r.json()["breakpoints"], json!([m]));
        let f = a.peer.next_json(5000).await;
        assert_eq!(f["type"], json!("breakpoint.clear"));
        assert_eq!(f["payload"]["matcher"], json!({"point": "error"}));

        let r = ctl
            .post_async(
                "/api/debug",
                json!({"breakpoints": [{"point": "after"}], "mode": "run"}),
            )
            .await;
        assert_eq!(
            r.json(),
            json!({"breakpoints": [{"point": "after"}], "mode": "run"})
        );
        let mut got = Vec::new();
        for _ in 0..3 {
            let f = a.peer.next_json(5000).await;
            got.push((f["type"].clone(), f["payload"].clone()));
        }
        assert_eq!(
            got,
            vec![
                (json!("breakpoint.clear"), json!({"matcher": m})),
                (
                    json!("breakpoint.set"),
                    json!({"matcher": {"point": "after"}})
                ),
                (json!("mode.set"), json!({"mode": "run"})),
            ]
        );
        // b saw the same sequence after the earlier changes.
        let last = b
            .peer
            .until(5000, |f| {
                f["type"] == "mode.set" && f["payload"]["mode"] == "run"
            })
            .await;
        assert_eq!(last["runId"], json!("*"));

        let r = ctl
            .post_async("/api/debug/breakpoints/clear", json!({"all": true}))
            .await;
        assert_eq!(r.json()["breakpoints"], json!([]));
        // A new app gets the current state in its ack.
        let c = App::connect(port).await;
        assert_eq!(c.ack["payload"]["breakpoints"], json!([]));
        assert_eq!(c.ack["payload"]["mode"], json!("run"));
    });
    let bad = h.post("/api/debug/mode", &json!({"mode": "walk"}));
    assert_eq!(bad.status, 400);
    let bad = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"point": "sideways"}}),
    );
    assert_eq!(bad.status, 400);
}
