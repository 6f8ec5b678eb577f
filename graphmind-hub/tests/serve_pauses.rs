//! The pause registry: what a held gate looks like over HTTP, first resume wins, the answer
//! follows the app's exec.resumed / exec.refused, and exec.resume reaches only the owner.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

/// The setup of the tests of one held gate: an app holds `pause` on its tool `tool` of `run`
/// (named `name`), and the hub lists it: the app and the open pauses.
async fn held_gate(
    port: u16,
    run: &str,
    name: &str,
    tool: &str,
    pause: &str,
    point: &str,
    input: serde_json::Value,
) -> (App, Vec<serde_json::Value>) {
    let app = App::holding(port, run, name, tool, pause, point, input).await;
    (app, wait_for_pause(port).await)
}

#[test]
fn first_resume_wins_and_the_answer_follows_exec_resumed() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let (port, ctl) = (h.port, h.control());
    let run = "run_100000000001";
    block_on(async {
        let (mut app, pauses) = held_gate(
            port,
            run,
            "pauses",
            "search",
            "pause_a_1",
            "before",
            json!({"q": "flights"}),
        )
        .await;
        let p = &pauses[0];
        assert_eq!(p["pauseId"], json!("pause_a_1"));
        assert_eq!(p["runId"], json!(run));
        assert_eq!(p["nodeId"], json!("tool:search"));
        assert_eq!(p["point"], json!("before"));
        assert_eq!(p["reason"], json!("breakpoint"));
        assert_eq!(p["kind"], json!("tool"));
        assert_eq!(p["name"], json!("search"));
        assert_eq!(p["instanceId"], json!("call_pause_a_1"));
        assert_eq!(p["input"], json!({"q": "flights"}));
        assert_eq!(p["state"], json!("open"));

        let first = tokio::spawn(ctl.resume(
            run,
            "pause_a_1",
            json!({"action": "inject", "output": {"price": 1}}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["runId"], json!(run));
        assert_eq!(frame["payload"]["pauseId"], json!("pause_a_1"));
        assert_eq!(frame["payload"]["action"], json!("inject"));
        assert_eq!(frame["payload"]["output"], json!({"price": 1}));
        assert!(frame["payload"]["requestId"].as_str().is_some());

        // While the first is in flight, a second one is told "taken".
        let second = ctl
            .resume(run, "pause_a_1", json!({"action": "continue"}))
            .await;
        assert_eq!(second.status, 409, "{}", second.body);
        assert_eq!(second.json()["outcome"], json!("taken"));

        app.confirm(run, "pause_a_1", "inject").await;
        let first = first.await.unwrap();
        assert_eq!(first.status, 200, "{}", first.body);
        assert_eq!(first.json()["outcome"], json!("resumed"));
        assert_eq!(first.json()["action"], json!("inject"));

        // After the release: taken, and the pause reads as closed by the hub.
        let third = ctl
            .resume(run, "pause_a_1", json!({"action": "continue"}))
            .await;
        assert_eq!(third.status, 409);
        let closed = get_async(port, format!("/api/runs/{run}/pauses/pause_a_1"))
            .await
            .json();
        assert_eq!(closed["state"], json!("closed"));
        assert_eq!(closed["by"], json!("hub"));
        assert_eq!(closed["action"], json!("inject"));
        // No second exec.resume reached the app.
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
    });
    assert_eq!(h.get_json("/api/pauses")["pauses"], json!([]));
}

#[test]
fn refused_keeps_the_gate_held_and_a_later_resume_works() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let (port, ctl) = (h.port, h.control());
    let run = "run_100000000002";
    block_on(async {
        let (mut app, _) = held_gate(
            port,
            run,
            "refuse",
            "add",
            "pause_b_1",
            "error",
            json!({"a": 1}),
        )
        .await;
        let first = tokio::spawn(ctl.resume(
            run,
            "pause_b_1",
            json!({"action": "inject", "output": "not a number"}),
        ));
        let frame = app.expect_resume(5000).await;
        let request_id = frame["payload"]["requestId"].clone();
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_b_1", "code": "schema",
            "message": "expected an integer", "requestId": request_id}),
        )
        .await;
        let first = first.await.unwrap();
        assert_eq!(first.status, 422, "{}", first.body);
        let body = first.json();
        assert_eq!(body["outcome"], json!("refused"));
        assert_eq!(body["code"], json!("schema"));
        assert_eq!(body["message"], json!("expected an integer"));
        let still = get_async(port, format!("/api/runs/{run}/pauses/pause_b_1"))
            .await
            .json();
        assert_eq!(still["state"], json!("open"));
        assert_eq!(still["reason"], json!("error"));

        let second =
            tokio::spawn(ctl.resume(run, "pause_b_1", json!({"action": "inject", "output": 3})));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["output"], json!(3));
        app.confirm(run, "pause_b_1", "inject").await;
        assert_eq!(second.await.unwrap().status, 200);
    });
}

#[test]
fn exec_resume_goes_only_to_the_connection_that_owns_the_run() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let (port, ctl) = (h.port, h.control());
    let run = "run_100000000003";
    block_on(async {
        let mut owner = App::connect(port).await;
        let mut other = App::connect(port).await;
        owner.start_run(run, "owned").await;
        owner
            .pause_at(run, "t", "pause_c_1", "before", json!(null))
            .await;
        // Another app reporting into the same run does not take it over while the owner lives.
        other.emit(run, "x.note", json!({})).await;
        wait_for_pause(port).await;
        let r = tokio::spawn(ctl.resume(run, "pause_c_1", json!({"action": "continue"})));
        let frame = owner.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("continue"));
        assert!(
            matches!(other.peer.recv(300).await, Got::Timeout),
            "a non-owner got a control frame"
        );
        owner.confirm(run, "pause_c_1", "continue").await;
        assert_eq!(r.await.unwrap().status, 200);
    });
}

#[test]
fn a_reconnecting_app_regains_its_runs_with_its_resume_token() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let (port, ctl) = (h.port, h.control());
    let run = "run_100000000004";
    block_on(async {
        let first = App::running(port, run, "claim").await;
        let token = first.session_token();
        let seq = first.seq;
        drop(first);
        // An unrelated app connects in between.
        let mut stranger = App::connect(port).await;
        let mut back = App::connect_resuming(port, Some(&token), seq).await;
        back.pause_at(run, "t", "pause_d_1", "before", json!(1))
            .await;
        wait_for_pause(port).await;
        let r = tokio::spawn(ctl.resume(run, "pause_d_1", json!({"action": "abort"})));
        let frame = back.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("abort"));
        assert!(matches!(stranger.peer.recv(200).await, Got::Timeout));
        back.confirm(run, "pause_d_1", "abort").await;
        assert_eq!(r.await.unwrap().json()["outcome"], json!("resumed"));
        let runs = get_async(port, "/api/runs".into()).await.json();
        assert_eq!(runs["runs"][0]["live"], json!(true));
    });
}

#[test]
fn a_disconnect_closes_the_apps_pauses() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let port = h.port;
    let run = "run_100000000005";
    block_on(async {
        let (app, _) = held_gate(port, run, "gone", "t", "pause_e_1", "before", json!(1)).await;
        drop(app);
    });
    wait_for(5, "the pause to close", || {
        (h.get_json("/api/pauses")["pauses"] == json!([])).then_some(())
    });
    let r = h.post(
        &format!("/api/runs/{run}/pauses/pause_e_1/resume"),
        &json!({"action": "continue"}),
    );
    assert_eq!(r.status, 410, "{}", r.body);
    assert_eq!(r.json()["outcome"], json!("gone"));
    let unknown = h.post(
        &format!("/api/runs/{run}/pauses/nope/resume"),
        &json!({"action": "continue"}),
    );
    assert_eq!(unknown.status, 410);
    assert_eq!(h.get(&format!("/api/runs/{run}/pauses/nope")).status, 404);
}

#[test]
fn a_run_whose_app_vanished_is_abandoned_after_the_grace() {
    let h = hub(|c| c.abandon_grace = std::time::Duration::from_millis(400));
    let port = h.port;
    let (gone, kept) = ("run_100000000006", "run_100000000007");
    block_on(async {
        let a = App::running(port, gone, "vanishes").await;
        let b = App::running(port, kept, "comes back").await;
        let token = b.session_token();
        let seq = b.seq;
        wait_for_runs(port, 2).await;
        let t0 = Instant::now();
        drop(a);
        drop(b);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _back = App::connect_resuming(port, Some(&token), seq).await;
        loop {
            let runs = get_async(port, "/api/runs".into()).await.json();
            let st = |id: &str| {
                runs["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["runId"] == id)
                    .unwrap()
                    .clone()
            };
            if st(gone)["status"] == "abandoned" {
                assert!(
                    t0.elapsed() >= Duration::from_millis(400),
                    "abandoned before the grace"
                );
                assert_eq!(st(gone)["live"], json!(false));
                assert_eq!(st(kept)["status"], json!("running"));
                assert_eq!(st(kept)["live"], json!(true));
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "never abandoned");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

async fn wait_for_runs(port: u16, n: usize) {
    for _ in 0..250 {
        let r = get_async(port, "/api/runs".into()).await.json();
        if r["runs"].as_array().map_or(0, Vec::len) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("runs never appeared");
}

#[test]
fn long_poll_returns_when_a_pause_opens_and_times_out_empty() {
    let h = hub(|_| {});
    let port = h.port;
    let t0 = Instant::now();
    let empty = h.get_json("/api/pauses?wait=0.3");
    assert_eq!(empty["pauses"], json!([]));
    assert!(t0.elapsed() >= Duration::from_millis(300));
    block_on(async {
        let poll = tokio::spawn(get_async(
            port,
            "/api/pauses?runId=run_100000000009&wait=10".into(),
        ));
        let mut app = App::holding(
            port,
            "run_100000000008",
            "other",
            "x",
            "pause_f_0",
            "before",
            json!(0),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!poll.is_finished(), "a pause of another run ended the wait");
        let t1 = Instant::now();
        app.start_run("run_100000000009", "mine").await;
        app.pause_at("run_100000000009", "x", "pause_f_1", "after", json!(0))
            .await;
        let got = poll.await.unwrap().json();
        assert!(t1.elapsed() < Duration::from_secs(3));
        assert_eq!(got["pauses"][0]["pauseId"], json!("pause_f_1"));
        assert_eq!(got["pauses"].as_array().unwrap().len(), 1);
    });
}

#[test]
fn an_unanswered_resume_reports_sent_and_a_later_one_may_try_again() {
    let h = hub(|c| {
        c.allow_control = graphmind_hub::AllowControl::Resume;
        c.resume_wait = std::time::Duration::from_millis(300);
    });
    let (port, ctl) = (h.port, h.control());
    let run = "run_100000000010";
    block_on(async {
        let (mut app, _) =
            held_gate(port, run, "silent", "t", "pause_g_1", "before", json!(1)).await;
        let t0 = Instant::now();
        let r = ctl
            .resume(run, "pause_g_1", json!({"action": "continue"}))
            .await;
        assert_eq!(r.status, 202, "{}", r.body);
        assert_eq!(r.json()["outcome"], json!("sent"));
        assert!(t0.elapsed() >= Duration::from_millis(300));
        let stale = app.expect_resume(2000).await["payload"]["requestId"].clone();
        // Not in flight any more: the next resume is sent again, and answered this time.
        let again = tokio::spawn(ctl.resume(run, "pause_g_1", json!({"action": "retry"})));
        let f = app.expect_resume(2000).await;
        assert_eq!(f["payload"]["action"], json!("retry"));
        // A late refusal of the first request does not answer the second.
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_g_1", "code": "schema", "requestId": stale}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !again.is_finished(),
            "a stale refusal answered the new request"
        );
        app.confirm(run, "pause_g_1", "retry").await;
        assert_eq!(again.await.unwrap().status, 200);
    });
}

#[test]
fn a_finished_run_holds_no_pause() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let port = h.port;
    let run = "run_100000000011";
    block_on(async {
        let (mut app, _) = held_gate(port, run, "ends", "t", "pause_h_1", "before", json!(1)).await;
        app.emit(run, "run.finished", json!({"status": "aborted"}))
            .await;
        for _ in 0..250 {
            let p = get_async(port, "/api/pauses".into()).await.json();
            if p["pauses"] == json!([]) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the pause outlived its run");
    });
    let r = h.post(
        &format!("/api/runs/{run}/pauses/pause_h_1/resume"),
        &json!({"action": "continue"}),
    );
    assert_eq!(r.status, 410);
    assert_eq!(h.runs()[0]["status"], json!("aborted"));
}

#[test]
fn a_loop_hold_carries_its_details() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_100000000012";
    block_on(async {
        let mut app = App::running(port, run, "loop").await;
        app.emit(run, "node.started", json!({"nodeId": "tool:add", "kind": "tool", "name": "add", "instanceId": "call_9", "input": {"a": 1}})).await;
        app.emit(run, "exec.paused", json!({"pauseId": "pause_l_9", "nodeId": "tool:add", "point": "before", "reason": "loop",
            "loop": {"repeats": 3, "firstSeq": 3, "lastSeq": 7, "fingerprint": "af71"}})).await;
        let p = wait_for_pause(port).await;
        assert_eq!(p[0]["reason"], json!("loop"));
        assert_eq!(p[0]["loop"]["repeats"], json!(3));
        assert_eq!(p[0]["input"], json!({"a": 1}));
    });
}
