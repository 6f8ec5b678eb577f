//! Every exit code of the control commands against the real binary: 1 usage, 2 timeout,
//! 3 unreachable, 4 gone, 5 unauthorized, 6 refused, 7 taken — each with one clear stderr line.

mod support;

use serde_json::json;
use support::*;

/// The setup of every resume test: an app holds `pause` on its tool `add` in `run` (named
/// `name`), and `graphmind wait` saw the pause open.
async fn held_gate(
    h: &TestHub,
    run: &str,
    name: &str,
    pause: &str,
    point: &str,
    input: serde_json::Value,
) -> App {
    let app = App::holding(h.port, run, name, "add", pause, point, input).await;
    gm_wait_open(&h.home, &h.port.to_string()).await;
    app
}

#[test]
fn usage_errors_exit_1_with_one_line() {
    let dir = TempDir::new("cli-usage");
    let port = free_port().to_string();
    let p = port.as_str();
    for a in [
        vec![
            "resume", "pause_x", "--run", "run_x", "--action", "bogus", "--port", p,
        ],
        vec![
            "resume", "pause_x", "--run", "r", "--action", "inject", "--port", p,
        ],
        vec![
            "resume", "pause_x", "--run", "r", "--action", "inject", "--output", "not json",
            "--port", p,
        ],
        vec![
            "resume", "pause_x", "--run", "r", "--action", "continue", "--output", "1", "--port", p,
        ],
        vec![
            "resume",
            "pause_x",
            "--run",
            "r",
            "--action",
            "inject",
            "--output",
            "@/nonexistent/out.json",
            "--port",
            p,
        ],
        vec!["break", "toggle", "--port", p],
        vec!["break", "set", "--point", "middle", "--port", p],
        vec!["break", "set", "--port", p],
        vec!["mode", "walk", "--port", p],
        vec!["wait", "--timeout", "-1", "--port", p],
        vec!["runs", "--port", "70000"],
        vec!["no-such-command"],
    ] {
        let out = gm(&dir.0, &a);
        assert_eq!(out.code, 1, "{a:?}: {}", out.stderr);
        let line = out.one_line_error();
        assert!(
            !line.contains("no debugger"),
            "{a:?} must fail before the network: {line}"
        );
    }
    let out = gm(
        &dir.0,
        &[
            "resume", "p", "--run", "r", "--action", "inject", "--port", p,
        ],
    );
    assert!(out.stderr.contains("--output"), "{}", out.stderr);
}

#[test]
fn unreachable_without_a_hub_exits_3() {
    let dir = TempDir::new("cli-unreachable");
    let port = free_port().to_string();
    let p = port.as_str();
    for a in [
        vec!["runs", "--port", p],
        vec!["runs", "--json", "--port", p],
        vec!["record", "run_x", "--port", p],
        vec!["pauses", "--port", p],
        vec!["wait", "--timeout", "5", "--port", p],
        vec![
            "resume", "pause_x", "--run", "run_x", "--action", "continue", "--port", p,
        ],
        vec!["break", "set", "--kind", "tool", "--port", p],
        vec!["break", "list", "--port", p],
        vec!["mode", "step", "--port", p],
    ] {
        let out = gm(&dir.0, &a);
        assert_eq!(out.code, 3, "{a:?}: {}", out.stderr);
        let line = out.one_line_error();
        assert_eq!(
            line,
            format!("graphmind: no debugger on port {p} (start one with `graphmind serve`)")
        );
        assert!(
            out.took.as_secs() < 4,
            "{a:?} must not wait out its timeout"
        );
    }
    // A stale run file (its hub died without cleaning up) changes nothing.
    let run = dir.0.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join(format!("serve-{p}.json")),
        json!({"port": port.parse::<u16>().unwrap(), "token": "00112233445566778899aabbccddeeff"})
            .to_string(),
    )
    .unwrap();
    let out = gm(&dir.0, &["mode", "run", "--port", p]).expect(3);
    assert!(out.stderr.contains("no debugger on port"), "{}", out.stderr);
}

#[test]
fn wait_times_out_with_exit_2() {
    let h = hub(|_| {});
    let port = h.port.to_string();
    let out = gm(&h.home, &["wait", "--timeout", "0.4", "--port", &port]).expect(2);
    assert!(out.took.as_millis() >= 400, "returned after {:?}", out.took);
    assert!(out.took.as_secs() < 5, "took {:?}", out.took);
    assert_eq!(
        out.one_line_error(),
        "graphmind: no pause opened within 0.4 s"
    );
    // --timeout 0 looks once and gives up at once.
    let out = gm(
        &h.home,
        &["wait", "--timeout", "0", "--json", "--port", &port],
    )
    .expect(2);
    assert!(out.stdout.is_empty());
}

#[test]
fn tampered_run_file_is_unauthorized_exit_5() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    let file = h.run_file();
    let original = std::fs::read_to_string(&file).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&original).unwrap();

    // Wrong token.
    doc["agentToken"] = json!("0123456789abcdef0123456789abcdef");
    doc["token"] = doc["agentToken"].clone();
    std::fs::write(&file, doc.to_string()).unwrap();
    for a in [
        vec!["break", "set", "--kind", "tool", "--port", &port],
        vec!["mode", "step", "--port", &port],
        vec![
            "resume", "pause_x", "--run", "run_x", "--action", "continue", "--port", &port,
        ],
    ] {
        let out = gm(&h.home, &a).expect(5);
        assert!(out.stderr.contains("wrong token"), "{a:?}: {}", out.stderr);
    }
    // The viewer token is not an agent token.
    doc["agentToken"] = json!(h.viewer_token);
    doc["token"] = doc["agentToken"].clone();
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = gm(&h.home, &["mode", "step", "--port", &port]).expect(5);
    assert!(out.stderr.contains("viewer token"), "{}", out.stderr);
    // No run file at all: reads still work, mutations are unauthorized.
    std::fs::remove_file(&file).unwrap();
    gm(&h.home, &["break", "list", "--port", &port]).expect(0);
    let out = gm(&h.home, &["break", "clear", "--port", &port]).expect(5);
    assert!(out.stderr.contains("no run file"), "{}", out.stderr);
    // Nothing changed on the hub.
    assert_eq!(
        h.get_json("/api/debug"),
        json!({"breakpoints": [{"point": "error"}], "mode": "run"})
    );
    std::fs::write(&file, original).unwrap();
    gm(&h.home, &["mode", "step", "--port", &port]).expect(0);
    assert_eq!(h.get_json("/api/debug")["mode"], json!("step"));
}

#[test]
fn resume_without_permission_is_unauthorized_and_the_gate_stays_held() {
    let h = hub(|_| {}); // --allow-control off
    let port = h.port.to_string();
    let run = "run_500000000001";
    block_on(async {
        let mut app = held_gate(&h, run, "held", "pause_f_1", "before", json!({"a": 1})).await;
        let out = gm_async(
            h.home.clone(),
            resume_args("pause_f_1", run, "continue", &port, &[]),
        )
        .await
        .expect(5);
        assert!(
            out.stderr.contains("--allow-control resume"),
            "{}",
            out.stderr
        );
        let p = get_async(h.port, format!("/api/runs/{run}/pauses/pause_f_1"))
            .await
            .json();
        assert_eq!(p["state"], json!("open"));
        assert!(
            matches!(app.peer.recv(200).await, Got::Timeout),
            "no exec.resume was sent"
        );
    });
}

#[test]
fn gone_exits_4_for_unknown_runs_and_released_pauses() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    let out = gm(&h.home, &["record", "run_nobody", "--port", &port]).expect(4);
    assert_eq!(out.one_line_error(), "graphmind: no run run_nobody");
    let out = gm(
        &h.home,
        &[
            "resume",
            "pause_none",
            "--run",
            "run_nobody",
            "--action",
            "abort",
            "--port",
            &port,
        ],
    )
    .expect(4);
    assert!(out.stderr.contains("pause_none is gone"), "{}", out.stderr);

    let run = "run_400000000001";
    block_on(async {
        let mut app = held_gate(&h, run, "gone", "pause_g_1", "before", json!({})).await;
        // The app releases the gate on its own (e.g. its pause timeout).
        app.confirm(run, "pause_g_1", "continue").await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let r = get_async(h.port, format!("/api/runs/{run}/pauses/pause_g_1")).await;
            if r.json()["state"] == json!("closed") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "pause never closed: {}",
                r.body
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let out = gm_async(
            h.home.clone(),
            resume_args("pause_g_1", run, "continue", &port, &["--json"]),
        )
        .await
        .expect(4);
        assert_eq!(out.json()["outcome"], json!("gone"));
        assert!(out.stderr.contains("already released"), "{}", out.stderr);
    });
}

#[test]
fn refused_inject_exits_6_and_a_second_resume_is_taken_7() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    let run = "run_600000000001";
    block_on(async {
        let mut app = held_gate(&h, run, "refuse", "pause_r_1", "after", json!({"a": 1})).await;
        let resume = |action: &str, extra: &[&str]| {
            let a = resume_args("pause_r_1", run, action, &port, extra);
            tokio::spawn(gm_async(h.home.clone(), a))
        };

        // The app refuses a badly typed inject: exit 6, the gate stays held.
        let first = resume("inject", &["--output", "\"three\""]);
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["output"], json!("three"));
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_r_1", "code": "schema", "message": "expected an integer",
                   "requestId": frame["payload"]["requestId"].clone()}),
        )
        .await;
        let out = first.await.unwrap().expect(6);
        assert_eq!(
            out.one_line_error(),
            "graphmind: the app refused inject (schema): expected an integer (the gate stays held)"
        );
        let p = get_async(h.port, format!("/api/runs/{run}/pauses/pause_r_1"))
            .await
            .json();
        assert_eq!(p["state"], json!("open"));

        // A good inject is in flight; a second resume meanwhile is taken (7).
        let second = resume("inject", &["--output", "3", "--json"]);
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["output"], json!(3));
        let out = gm_async(
            h.home.clone(),
            resume_args("pause_r_1", run, "abort", &port, &[]),
        )
        .await
        .expect(7);
        assert!(out.stderr.contains("pause_r_1 is taken"), "{}", out.stderr);
        app.confirm(run, "pause_r_1", "inject").await;
        let out = second.await.unwrap().expect(0);
        assert_eq!(out.json()["outcome"], json!("resumed"));
        assert_eq!(out.json()["action"], json!("inject"));
        // And after the release, too.
        let out = gm_async(
            h.home.clone(),
            resume_args("pause_r_1", run, "continue", &port, &[]),
        )
        .await
        .expect(7);
        assert!(out.stderr.contains("already released"), "{}", out.stderr);
    });
}

#[test]
fn unconfirmed_resume_exits_2_and_a_later_resume_can_finish_it() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let port = h.port.to_string();
    let run = "run_200000000001";
    block_on(async {
        let mut app = held_gate(&h, run, "silent", "pause_s_1", "before", json!({})).await;
        let resume = || {
            tokio::spawn(gm_async(
                h.home.clone(),
                resume_args("pause_s_1", run, "retry", &port, &[]),
            ))
        };
        // The app gets exec.resume but never confirms: the hub answers 202 after 5 s.
        let first = resume();
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["action"], json!("retry"));
        let out = first.await.unwrap().expect(2);
        assert_eq!(
            out.one_line_error(),
            "graphmind: sent retry to the app, but it did not confirm in time"
        );
        // A later resume goes through once the app answers.
        let second = resume();
        app.expect_resume(10_000).await;
        app.confirm(run, "pause_s_1", "retry").await;
        second.await.unwrap().expect(0);
    });
}
