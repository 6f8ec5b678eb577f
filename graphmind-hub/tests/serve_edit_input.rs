//! Editing a held call's input, who a release is credited to, and decisions remembered for a
//! run, played against the hub by hand-written app frames: `hello.ack` announces `edit-input`
//! (not with editing off), an edit reaches only an app that announced it at a gate it marked
//! editable, the request is answered with the app's outcome (resumed with the edited input,
//! refused with its code, or a timeout that leaves the gate held), every stored `exec.resumed`
//! carries the hub's `principal` and `operator` (whatever the app wrote is dropped), and a
//! remembered decision releases further holds of the node until it is revoked.

mod support;

use serde_json::{Value, json};
use support::*;

/// The capabilities of an app that can run a held call with an edited input.
const EDITING: [&str; 8] = [
    "pause",
    "step",
    "inject",
    "retry",
    "abort",
    "run-claim",
    "request-id",
    "edit-input",
];

/// The capabilities the Python client 0.5.1 announces: no `edit-input`.
const PYTHON_051: [&str; 6] = ["pause", "step", "inject", "retry", "abort", "run-claim"];

/// An app that announced `caps`, with `run` started.
async fn app_with(port: u16, caps: &[&str], run: &str) -> App {
    let mut peer = Peer::connect(port, "/ingest").await;
    let mut h = hello(0, None);
    h["payload"]["capabilities"] = json!(caps);
    peer.send(&h).await;
    let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
    let mut app = App { peer, ack, seq: 1 };
    app.start_run(run, "edit").await;
    app
}

/// Holds `pause` before `tool:<tool>` with `input`; `editable` as the app says it.
async fn hold(app: &mut App, run: &str, tool: &str, pause: &str, input: Value, editable: bool) {
    app.emit(
        run,
        "node.started",
        json!({"nodeId": format!("tool:{tool}"), "kind": "tool", "name": tool,
               "instanceId": format!("call_{pause}"), "input": input}),
    )
    .await;
    let mut p = json!({"pauseId": pause, "nodeId": format!("tool:{tool}"), "point": "before"});
    if editable {
        p["editable"] = json!(true);
    }
    app.emit(run, "exec.paused", p).await;
}

/// The open pause `pause`, once listed.
async fn listed(port: u16, pause: &str) -> Value {
    let pause = pause.to_owned();
    wait_async(10, "the pause listed", move || {
        let list = read(port, "/api/pauses").json()["pauses"].clone();
        list.as_array()?
            .iter()
            .find(|p| p["pauseId"] == json!(pause))
            .cloned()
    })
    .await
}

/// The stored `exec.resumed` payloads of `run`, once there are `n`.
async fn stored_resumed(port: u16, run: &str, n: usize) -> Vec<Value> {
    let run = run.to_owned();
    wait_async(10, "exec.resumed stored", move || {
        let got: Vec<Value> = events_on(port, &run)
            .into_iter()
            .filter(|e| e["type"] == "exec.resumed")
            .map(|e| e["payload"].clone())
            .collect();
        (got.len() >= n).then_some(got)
    })
    .await
}

fn caps(ack: &Value) -> Vec<String> {
    ack["payload"]["hubCapabilities"]
        .as_array()
        .expect("hubCapabilities")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

#[test]
fn hello_ack_announces_edit_input_unless_editing_is_turned_off() {
    let on = hub(|_| {});
    let off = hub(|c| c.edit_input = false);
    block_on(async {
        let a = app_with(on.port, &EDITING, "run_e00000000001").await;
        let c = caps(&a.ack);
        assert!(c.iter().any(|x| x == "pause-registry"), "{c:?}");
        assert!(c.iter().any(|x| x == "edit-input"), "{c:?}");
        let b = app_with(off.port, &EDITING, "run_e00000000002").await;
        let c = caps(&b.ack);
        assert!(c.iter().any(|x| x == "pause-registry"), "{c:?}");
        assert!(!c.iter().any(|x| x == "edit-input"), "{c:?}");
    });
}

#[test]
fn an_edit_reaches_the_app_and_the_answer_and_the_store_credit_the_agent() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000003";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(
            &mut app,
            run,
            "send_email",
            "pause_e_1",
            json!({"to": "a@x"}),
            true,
        )
        .await;
        let p = listed(port, "pause_e_1").await;
        assert_eq!(p["editable"], json!(true));
        assert_eq!(p["input"], json!({"to": "a@x"}));

        let answer = tokio::spawn(ctl.resume(
            run,
            "pause_e_1",
            json!({"action": "continue", "input": {"to": "b@x"}, "operator": "ops-bot"}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("continue"));
        assert_eq!(frame["payload"]["input"], json!({"to": "b@x"}));
        let request_id = frame["payload"]["requestId"].clone();
        assert!(request_id.as_str().is_some_and(|r| r.starts_with("req")));
        // The app writes the hub's fields itself: they must not survive.
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_e_1", "action": "continue", "requestId": request_id,
                   "edited": {"after": {"to": "b@x"}},
                   "principal": "viewer", "operator": "mallory", "remembered": true}),
        )
        .await;
        let answer = answer.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        let a = answer.json();
        assert_eq!(a["outcome"], json!("resumed"));
        assert_eq!(a["principal"], json!("agent"));
        assert_eq!(a["requestId"], request_id);
        assert_eq!(a["edited"], json!({"to": "b@x"}));

        let stored = stored_resumed(port, run, 1).await;
        assert_eq!(stored[0]["principal"], json!("agent"));
        assert_eq!(stored[0]["operator"], json!("ops-bot"));
        assert_eq!(stored[0]["edited"], json!({"after": {"to": "b@x"}}));
        assert_eq!(stored[0]["requestId"], request_id);
        assert!(stored[0].get("remembered").is_none(), "{}", stored[0]);
    });
}

#[test]
fn a_refused_edit_is_answered_refused_with_its_code_and_a_valid_edit_then_releases_the_gate() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000004";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(
            &mut app,
            run,
            "add",
            "pause_e_2",
            json!({"a": 1, "b": 2}),
            true,
        )
        .await;
        listed(port, "pause_e_2").await;

        let first = tokio::spawn(ctl.resume(
            run,
            "pause_e_2",
            json!({"action": "continue", "input": {"a": "one"}}),
        ));
        let frame = app.expect_resume(5000).await;
        let rid = frame["payload"]["requestId"].clone();
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_e_2", "code": "schema", "requestId": rid,
                   "message": "field a: expected an integer"}),
        )
        .await;
        let first = first.await.unwrap();
        assert_eq!(first.status, 422, "{}", first.body);
        let a = first.json();
        assert_eq!(a["outcome"], json!("refused"));
        assert_eq!(a["code"], json!("schema"));
        assert_eq!(a["refusedBy"], json!("app"));
        assert_eq!(a["message"], json!("field a: expected an integer"));
        // Still held, and open again for the next try.
        assert_eq!(listed(port, "pause_e_2").await["state"], json!("open"));

        let second = tokio::spawn(ctl.resume(
            run,
            "pause_e_2",
            json!({"action": "continue", "input": {"a": 5, "b": 2}}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["input"], json!({"a": 5, "b": 2}));
        assert_ne!(frame["payload"]["requestId"], rid, "a fresh id per request");
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_e_2", "action": "continue",
                   "requestId": frame["payload"]["requestId"],
                   "edited": {"after": {"a": 5, "b": 2}}}),
        )
        .await;
        let second = second.await.unwrap();
        assert_eq!(second.status, 200, "{}", second.body);
        assert_eq!(second.json()["edited"], json!({"a": 5, "b": 2}));
    });
    assert_eq!(h.get_json("/api/pauses")["pauses"], json!([]));
}

#[test]
fn with_editing_off_no_gate_is_editable_and_the_hub_refuses_an_edit_itself() {
    let h = hub(|c| {
        c.allow_control = graphmind_hub::AllowControl::Edit;
        c.edit_input = false;
    });
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000005";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(
            &mut app,
            run,
            "send_email",
            "pause_e_3",
            json!({"to": "a@x"}),
            true,
        )
        .await;
        assert_eq!(listed(port, "pause_e_3").await["editable"], json!(false));
        let r = ctl
            .resume(
                run,
                "pause_e_3",
                json!({"action": "continue", "input": {"to": "b@x"}}),
            )
            .await;
        assert_eq!(r.status, 422, "{}", r.body);
        let a = r.json();
        assert_eq!(a["outcome"], json!("refused"));
        assert_eq!(a["code"], json!("disabled"));
        assert_eq!(a["refusedBy"], json!("hub"));
        assert!(
            a["message"].as_str().unwrap().contains("--no-edit-input"),
            "{a}"
        );
        // Nothing reached the app, and the gate is still held.
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
        assert_eq!(listed(port, "pause_e_3").await["state"], json!("open"));
    });
}

#[test]
fn an_app_without_edit_input_like_python_051_is_never_offered_an_edit() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000006";
    block_on(async {
        let mut app = app_with(port, &PYTHON_051, run).await;
        // Even a gate that claims to be editable is not, for an app that did not announce it.
        hold(&mut app, run, "add", "pause_e_4", json!({"a": 1}), true).await;
        assert_eq!(listed(port, "pause_e_4").await["editable"], json!(false));
        let r = ctl
            .resume(
                run,
                "pause_e_4",
                json!({"action": "continue", "input": {"a": 2}}),
            )
            .await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.json()["code"], json!("unsupported"));
        assert_eq!(r.json()["refusedBy"], json!("hub"));
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
        // A plain continue still works.
        let r = tokio::spawn(ctl.resume(run, "pause_e_4", json!({"action": "continue"})));
        let frame = app.expect_resume(5000).await;
        assert!(frame["payload"].get("input").is_none(), "{frame}");
        app.confirm(run, "pause_e_4", "continue").await;
        assert_eq!(r.await.unwrap().status, 200);
    });
}

/// The reference's levels: `inject` injects results, only `edit` runs an edited input.
#[test]
fn an_edit_by_the_agent_token_needs_the_edit_level_not_inject() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000007";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(&mut app, run, "add", "pause_e_5", json!({"a": 1}), true).await;
        listed(port, "pause_e_5").await;
        let r = ctl
            .resume(
                run,
                "pause_e_5",
                json!({"action": "continue", "input": {"a": 2}}),
            )
            .await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert!(r.body.contains("--allow-control edit"), "{}", r.body);
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
    });
}

#[test]
fn a_release_the_app_made_itself_is_stamped_anonymous_and_its_own_stamps_dropped() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_e00000000008";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(&mut app, run, "add", "pause_e_6", json!({"a": 1}), false).await;
        listed(port, "pause_e_6").await;
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_e_6", "action": "continue", "auto": "timeout",
                   "principal": "viewer", "operator": "mallory"}),
        )
        .await;
        let stored = stored_resumed(port, run, 1).await;
        assert_eq!(
            stored[0],
            json!({"pauseId": "pause_e_6", "action": "continue", "auto": "timeout",
                   "principal": "anonymous", "operator": null})
        );
    });
}

#[test]
fn a_viewer_resume_is_answered_with_the_outcome_and_stored_as_the_viewers() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_e00000000009";
    let (_, viewer_token) = tokens_of(port).unwrap();
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(&mut app, run, "add", "pause_e_7", json!({"a": 1}), true).await;
        listed(port, "pause_e_7").await;
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        v.send(
            &json!({"type": "resume", "requestId": "ui-1", "token": viewer_token,
                       "runId": run, "pauseId": "pause_e_7", "action": "continue",
                       "input": {"a": 3}, "operator": "ana"}),
        )
        .await;
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["input"], json!({"a": 3}));
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_e_7", "action": "continue",
                   "requestId": frame["payload"]["requestId"], "edited": {"after": {"a": 3}}}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["requestId"], json!("ui-1"));
        assert_eq!(res["ok"], json!(true));
        assert_eq!(res["outcome"], json!("resumed"));
        assert_eq!(res["resume"]["principal"], json!("viewer"));
        assert_eq!(res["resume"]["edited"], json!({"a": 3}));
        assert_eq!(res["resume"]["requestId"], frame["payload"]["requestId"]);
        let stored = stored_resumed(port, run, 1).await;
        assert_eq!(stored[0]["principal"], json!("viewer"));
        assert_eq!(stored[0]["operator"], json!("ana"));
    });
}

#[test]
fn a_hung_app_gets_a_timeout_answer_and_the_gate_stays_held() {
    let h = hub(|c| {
        c.allow_control = graphmind_hub::AllowControl::Edit;
        c.resume_wait = ms(300);
    });
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000010";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(&mut app, run, "add", "pause_e_8", json!({"a": 1}), true).await;
        listed(port, "pause_e_8").await;
        let r = tokio::spawn(ctl.resume(
            run,
            "pause_e_8",
            json!({"action": "continue", "input": {"a": 2}}),
        ));
        app.expect_resume(5000).await; // and never answered
        let r = r.await.unwrap();
        assert_eq!(r.status, 202, "{}", r.body);
        assert_eq!(r.json()["outcome"], json!("sent"));
        assert!(
            r.json()["message"].as_str().unwrap().contains("still held"),
            "{}",
            r.body
        );
        assert_eq!(listed(port, "pause_e_8").await["state"], json!("open"));
    });
}

#[test]
fn a_remembered_decision_releases_further_holds_of_the_node_until_revoked() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000011";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(
            &mut app,
            run,
            "send_email",
            "pause_r_1",
            json!({"to": "a"}),
            true,
        )
        .await;
        listed(port, "pause_r_1").await;
        // An edited input is for one call: not remembered.
        let r = ctl
            .resume(
                run,
                "pause_r_1",
                json!({"action": "continue", "input": {"to": "b"}, "remember": true}),
            )
            .await;
        assert_eq!(r.status, 400, "{}", r.body);

        let first = tokio::spawn(ctl.resume(
            run,
            "pause_r_1",
            json!({"action": "continue", "remember": true, "operator": "ops"}),
        ));
        let frame = app.expect_resume(5000).await;
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_r_1", "action": "continue",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        let first = first.await.unwrap();
        assert_eq!(first.status, 200, "{}", first.body);
        assert_eq!(first.json()["remembered"], json!(true));
        let rules = read(port, &format!("/api/runs/{run}/remembered")).json();
        let rule = &rules["remembered"][0];
        assert_eq!(rule["nodeId"], json!("tool:send_email"));
        assert_eq!(rule["point"], json!("before"));
        assert_eq!(rule["action"], json!("continue"));
        assert_eq!(rule["principal"], json!("agent"));

        // The next hold of the node is released by the hub, credited to the same decision.
        hold(
            &mut app,
            run,
            "send_email",
            "pause_r_2",
            json!({"to": "c"}),
            true,
        )
        .await;
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["pauseId"], json!("pause_r_2"));
        assert_eq!(frame["payload"]["action"], json!("continue"));
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_r_2", "action": "continue",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        let stored = stored_resumed(port, run, 2).await;
        assert_eq!(stored[1]["principal"], json!("agent"));
        assert_eq!(stored[1]["operator"], json!("ops"));
        assert_eq!(stored[1]["remembered"], json!(true));
        // Another node is not touched by it.
        hold(&mut app, run, "search", "pause_r_3", json!({}), false).await;
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
        assert_eq!(listed(port, "pause_r_3").await["state"], json!("open"));

        // Revoked: the next hold of the node waits for a person.
        let r = ctl
            .post_async(
                &format!("/api/runs/{run}/remembered/clear"),
                json!({"nodeId": "tool:send_email"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["remembered"], json!([]));
        hold(
            &mut app,
            run,
            "send_email",
            "pause_r_4",
            json!({"to": "d"}),
            true,
        )
        .await;
        assert_eq!(listed(port, "pause_r_4").await["state"], json!("open"));
        assert!(matches!(app.peer.recv(300).await, Got::Timeout));
    });
}

#[test]
fn a_remembered_decision_is_forgotten_when_its_run_finishes() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000012";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        hold(&mut app, run, "add", "pause_f_1", json!({}), false).await;
        listed(port, "pause_f_1").await;
        let r = tokio::spawn(ctl.resume(
            run,
            "pause_f_1",
            json!({"action": "continue", "remember": true}),
        ));
        app.expect_resume(5000).await;
        app.confirm(run, "pause_f_1", "continue").await;
        assert_eq!(r.await.unwrap().json()["remembered"], json!(true));
        assert_eq!(
            read(port, &format!("/api/runs/{run}/remembered")).json()["remembered"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
        let p = port;
        let r = run.to_owned();
        wait_async(10, "the rule forgotten", move || {
            read(p, &format!("/api/runs/{r}/remembered")).json()["remembered"]
                .as_array()
                .is_some_and(Vec::is_empty)
                .then_some(())
        })
        .await;
    });
}

#[test]
fn a_rejection_needs_a_reason_and_reaches_only_an_app_and_gate_that_take_it() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000013";
    let run_old = "run_e00000000014";
    block_on(async {
        let mut caps = EDITING.to_vec();
        caps.push("reject");
        let mut app = app_with(port, &caps, run).await;
        let gate = |pause: &str, actions: Value| {
            json!({"pauseId": pause, "nodeId": "tool:send_email", "point": "before",
                   "actions": actions})
        };
        app.emit(
            run,
            "node.started",
            json!({"nodeId": "tool:send_email", "kind": "tool", "name": "send_email",
                   "instanceId": "call_j1", "input": {"to": "a"}}),
        )
        .await;
        app.emit(
            run,
            "exec.paused",
            gate("pause_j_1", json!(["continue", "abort", "reject"])),
        )
        .await;
        let p = listed(port, "pause_j_1").await;
        assert_eq!(p["actions"], json!(["continue", "abort", "reject"]));
        let r = ctl
            .resume(run, "pause_j_1", json!({"action": "reject"}))
            .await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(r.body.contains("needs a reason"), "{}", r.body);

        let first = tokio::spawn(ctl.resume(
            run,
            "pause_j_1",
            json!({"action": "reject", "reason": "not to customers on Sundays", "remember": true}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("reject"));
        assert_eq!(
            frame["payload"]["reason"],
            json!("not to customers on Sundays")
        );
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_j_1", "action": "reject", "reason": "not to customers on Sundays",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        let first = first.await.unwrap();
        assert_eq!(first.status, 200, "{}", first.body);
        assert_eq!(first.json()["action"], json!("reject"));
        assert_eq!(first.json()["remembered"], json!(true));
        // Remembered: the next hold is rejected by the hub with the same reason.
        app.emit(
            run,
            "exec.paused",
            gate("pause_j_2", json!(["continue", "abort", "reject"])),
        )
        .await;
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["pauseId"], json!("pause_j_2"));
        assert_eq!(frame["payload"]["action"], json!("reject"));
        assert_eq!(
            frame["payload"]["reason"],
            json!("not to customers on Sundays")
        );

        // A gate that does not list reject is not sent the remembered one: it stays held
        // for a person.
        app.emit(run, "exec.paused", gate("pause_j_3", json!(["continue"])))
            .await;
        let p = listed(port, "pause_j_3").await;
        assert_eq!(p["state"], json!("open"), "{p}");
        assert!(
            matches!(app.peer.recv(500).await, Got::Timeout),
            "a remembered reject went to a gate that does not list reject"
        );
        let r = ctl
            .resume(
                run,
                "pause_j_3",
                json!({"action": "reject", "reason": "no"}),
            )
            .await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.json()["refusedBy"], json!("hub"));
        assert_eq!(r.json()["code"], json!("unsupported"));

        // An app that did not announce reject is never sent one.
        let mut old = app_with(port, &PYTHON_051, run_old).await;
        old.emit(
            run_old,
            "exec.paused",
            json!({"pauseId": "pause_j_4", "nodeId": "tool:x", "point": "before",
                   "actions": ["continue", "reject"]}),
        )
        .await;
        listed(port, "pause_j_4").await;
        let r = ctl
            .resume(
                run_old,
                "pause_j_4",
                json!({"action": "reject", "reason": "no"}),
            )
            .await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.body.contains("did not announce reject"), "{}", r.body);
        assert!(matches!(old.peer.recv(300).await, Got::Timeout));
    });
}

#[test]
fn a_remembered_inject_skips_a_gate_that_does_not_list_inject() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let (port, ctl) = (h.port, h.control());
    let run = "run_e00000000015";
    block_on(async {
        let mut app = app_with(port, &EDITING, run).await;
        let gate = |pause: &str, actions: Option<Value>| {
            let mut p = json!({"pauseId": pause, "nodeId": "tool:lookup", "point": "before"});
            if let Some(a) = actions {
                p["actions"] = a;
            }
            p
        };
        app.emit(
            run,
            "node.started",
            json!({"nodeId": "tool:lookup", "kind": "tool", "name": "lookup",
                   "instanceId": "call_k1", "input": {"q": "a"}}),
        )
        .await;
        app.emit(
            run,
            "exec.paused",
            gate("pause_k_1", Some(json!(["continue", "inject"]))),
        )
        .await;
        listed(port, "pause_k_1").await;
        let first = tokio::spawn(ctl.resume(
            run,
            "pause_k_1",
            json!({"action": "inject", "output": {"hits": 0}, "remember": true}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("inject"));
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_k_1", "action": "inject",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        let first = first.await.unwrap();
        assert_eq!(first.json()["remembered"], json!(true), "{}", first.body);

        // A gate of the same node that cannot take an inject (a streaming call): not sent
        // the remembered inject, held for a person, and the rule is not counted as applied.
        app.emit(
            run,
            "exec.paused",
            gate("pause_k_2", Some(json!(["continue", "retry", "abort"]))),
        )
        .await;
        assert_eq!(listed(port, "pause_k_2").await["state"], json!("open"));
        assert!(
            matches!(app.peer.recv(500).await, Got::Timeout),
            "a remembered inject went to a gate that does not list inject"
        );
        let rules = read(port, &format!("/api/runs/{run}/remembered")).json();
        let applied = rules["remembered"][0]["applied"].clone();
        let applied = applied.as_u64().expect("applied counted");
        let second = tokio::spawn(ctl.resume(run, "pause_k_2", json!({"action": "continue"})));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["pauseId"], json!("pause_k_2"));
        assert_eq!(frame["payload"]["action"], json!("continue"));
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_k_2", "action": "continue",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        assert_eq!(second.await.unwrap().status, 200);

        // A gate that lists inject, and one that lists nothing (a client that does not say,
        // as the TypeScript family), get the remembered inject.
        for (pause, actions) in [
            ("pause_k_3", Some(json!(["continue", "inject"]))),
            ("pause_k_4", None),
        ] {
            app.emit(run, "exec.paused", gate(pause, actions)).await;
            let frame = app.expect_resume(5000).await;
            assert_eq!(frame["payload"]["pauseId"], json!(pause));
            assert_eq!(frame["payload"]["action"], json!("inject"));
            assert_eq!(frame["payload"]["output"], json!({"hits": 0}));
        }
        let rules = read(port, &format!("/api/runs/{run}/remembered")).json();
        assert_eq!(rules["remembered"][0]["applied"], json!(applied + 2));
    });
}
