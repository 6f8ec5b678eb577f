//! Control needs the right token: the agent token over HTTP (what it may do is set by
//! --allow-control), the viewer token over /ws/ui. A refused control leaves the gate held.

mod support;

use serde_json::json;
use support::*;

fn resume(port: u16, auth: Option<&str>, run: &str, pause: &str, body: &str) -> Response {
    let mut headers = vec![("Content-Type", "application/json")];
    let a;
    if let Some(t) = auth {
        a = format!("Bearer {t}");
        headers.push(("Authorization", &a));
    }
    http(
        port,
        "POST",
        &format!("/api/runs/{run}/pauses/{pause}/resume"),
        &headers,
        Some(body),
    )
}

#[test]
fn missing_wrong_and_viewer_tokens_are_refused_and_the_gate_stays_held() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port;
    let run = "run_200000000001";
    let viewer = h.viewer_token.clone();
    let agent = h.agent_token.clone();
    block_on(async {
        let mut app = App::holding(port, run, "tokens", "t", "pause_t_1", "before", json!(1)).await;
        get_async(port, "/api/pauses?wait=5".into()).await;
        let wrong = "0".repeat(32);
        let cases: [(Option<&str>, u16); 5] = [
            (None, 401),
            (Some(&wrong), 401),
            (Some(&agent[..31]), 401),
            (Some(&viewer), 401),
            (Some("garbage token"), 401),
        ];
        for (tok, want) in cases {
            let (t, r) = (tok.map(str::to_owned), run.to_owned());
            let resp = tokio::task::spawn_blocking(move || {
                resume(
                    port,
                    t.as_deref(),
                    &r,
                    "pause_t_1",
                    r#"{"action":"continue"}"#,
                )
            })
            .await
            .unwrap();
            assert_eq!(resp.status, want, "token {tok:?}: {}", resp.body);
            assert_eq!(resp.json()["outcome"], json!("unauthorized"));
        }
        // Nothing reached the app, the pause is still open.
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
        let p = get_async(port, format!("/api/runs/{run}/pauses/pause_t_1"))
            .await
            .json();
        assert_eq!(p["state"], json!("open"));

        // Debug changes with a wrong token are refused too.
        for tok in [None, Some(viewer.clone())] {
            let resp = tokio::task::spawn_blocking(move || {
                let a = tok.map(|t| format!("Bearer {t}"));
                let mut hd = vec![("Content-Type", "application/json")];
                if let Some(a) = &a {
                    hd.push(("Authorization", a));
                }
                http(
                    port,
                    "POST",
                    "/api/debug/mode",
                    &hd,
                    Some(r#"{"mode":"step"}"#),
                )
            })
            .await
            .unwrap();
            assert_eq!(resp.status, 401);
        }
        assert_eq!(
            get_async(port, "/api/debug".into()).await.json()["mode"],
            json!("run")
        );
    });
}

#[test]
fn allow_control_decides_what_the_agent_token_may_do() {
    use graphmind_hub::AllowControl;
    for (level, cont, inject, debug) in [
        (AllowControl::Off, 403, 403, 403),
        (AllowControl::Resume, 200, 403, 200),
        (AllowControl::Inject, 200, 200, 200),
        (AllowControl::Edit, 200, 200, 200),
    ] {
        let h = hub(|c| c.allow_control = level);
        let port = h.port;
        let agent = h.agent_token.clone();
        let run = "run_200000000002";
        block_on(async {
            let mut app = App::running(port, run, "levels").await;
            for (i, (action, want)) in [("inject", inject), ("continue", cont)]
                .into_iter()
                .enumerate()
            {
                let pause = format!("pause_l_{i}");
                app.pause_at(run, "t", &pause, "before", json!(1)).await;
                get_async(port, format!("/api/pauses?runId={run}&wait=5")).await;
                let body = json!({"action": action, "output": 5});
                let req = tokio::spawn(resume_async(
                    port,
                    agent.clone(),
                    run.into(),
                    pause.clone(),
                    body,
                ));
                if want == 200 {
                    let f = app.expect_resume(5000).await;
                    assert_eq!(f["payload"]["action"], json!(action));
                    app.emit(
                        run,
                        "exec.resumed",
                        json!({"pauseId": pause, "action": action}),
                    )
                    .await;
                } else {
                    assert!(
                        matches!(app.peer.recv(300).await, Got::Timeout),
                        "{level:?}/{action} reached the app"
                    );
                }
                let r = req.await.unwrap();
                assert_eq!(
                    r.status, want,
                    "--allow-control {level:?}, {action}: {}",
                    r.body
                );
                if want == 403 {
                    assert_eq!(r.json()["outcome"], json!("forbidden"));
                    assert!(r.body.contains("--allow-control"));
                    // Close it for the next round.
                    app.emit(
                        run,
                        "exec.resumed",
                        json!({"pauseId": pause, "action": "continue"}),
                    )
                    .await;
                }
            }
        });
        // Breakpoints and mode need `resume`, as in the reference: at `off` nothing.
        let r = h.post("/api/debug/mode", &json!({"mode": "step"}));
        assert_eq!(r.status, debug, "{level:?}: {}", r.body);
    }
}

/// Regression: `--allow-control off` still let the agent token set breakpoints and the mode
/// (its help said "breakpoints and mode only"); the reference allows nothing at `off`.
#[test]
fn allow_control_off_lets_the_agent_token_set_no_breakpoint_and_no_mode() {
    let h = hub(|_| {});
    let before = h.get_json("/api/debug");
    for (path, body) in [
        ("/api/debug/mode", json!({"mode": "step"})),
        (
            "/api/debug/breakpoints/set",
            json!({"matcher": {"kind": "tool", "point": "before"}}),
        ),
        ("/api/debug/breakpoints/clear", json!({"all": true})),
        ("/api/debug", json!({"breakpoints": [], "mode": "step"})),
    ] {
        let r = h.post(path, &body);
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert!(
            r.body.contains("--allow-control off") && r.body.contains("--allow-control resume"),
            "{path}: {}",
            r.body
        );
    }
    assert_eq!(h.get_json("/api/debug"), before, "nothing changed");
    // Reads still work with the agent token.
    assert_eq!(h.get("/api/runs").status, 200);
}

#[test]
fn viewer_control_needs_the_viewer_token() {
    let h = hub(|_| {});
    let port = h.port;
    let (viewer_tok, agent_tok) = (h.viewer_token.clone(), h.agent_token.clone());
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        for (i, tok) in [None, Some(agent_tok.as_str()), Some("nope")]
            .into_iter()
            .enumerate()
        {
            let mut frame =
                json!({"type": "mode.set", "requestId": format!("r{i}"), "mode": "step"});
            if let Some(t) = tok {
                frame["token"] = json!(t);
            }
            v.send(&frame).await;
            let res = v.until(5000, |f| f["type"] == "result").await;
            assert_eq!(res["requestId"], json!(format!("r{i}")));
            assert_eq!(res["ok"], json!(false));
            assert_eq!(res["outcome"], json!("unauthorized"));
        }
        assert_eq!(
            get_async(port, "/api/debug".into()).await.json()["mode"],
            json!("run")
        );
        v.send(
            &json!({"type": "mode.set", "requestId": "ok", "mode": "step", "token": viewer_tok}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["ok"], json!(true), "{res}");
        assert_eq!(
            get_async(port, "/api/debug".into()).await.json()["mode"],
            json!("step")
        );
    });
}
