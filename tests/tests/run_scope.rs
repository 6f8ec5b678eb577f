//! Run scopes: run.started / agent node / run.finished, parent ids, errors, and abort ending
//! the run with `Err(Aborted)` before anything after the gate runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind_tests::{FakeDebugger, frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[graphmind::tool]
async fn echo(text: String) -> String {
    text
}

static AFTER: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn counted(n: u32) -> u32 {
    AFTER.fetch_add(1, Ordering::SeqCst);
    n
}

async fn session(hub: &FakeDebugger) -> graphmind::Session {
    let gm = graphmind::Session::new(hub.config("run-scope").meta("team", "qa"));
    assert!(gm.ready(2 * SECOND).await);
    gm
}

#[tokio::test]
async fn a_run_emits_started_agent_node_and_finished_in_order() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let out = gm.run("ticket", echo("hi".into())).await.expect("ok");
    assert_eq!(out, "hi");
    let frames = hub
        .wait_frames(
            &[
                frame("run.started")
                    .with("app", "run-scope")
                    .with("meta", json!({"team": "qa", "name": "ticket"})),
                frame("node.started")
                    .with("nodeId", "agent:ticket")
                    .with("kind", "agent"),
                frame("node.started")
                    .with("parentId", "agent:ticket")
                    .with("input", json!({"text": "hi"})),
                frame("node.finished"),
                frame("node.finished")
                    .with("nodeId", "agent:ticket")
                    .with("heldMs", 0.0),
                frame("run.finished").with("status", "ok"),
            ],
            SECOND,
        )
        .await;
    let run_id = frames[0].run_id().to_owned();
    assert!(run_id.starts_with("run_") && run_id.len() == 16, "{run_id}");
    assert_eq!(frames[1].payload()["instanceId"], run_id.as_str());
    assert_eq!(frames[5].payload(), &json!({"status": "ok"}));
    assert!(frames.iter().all(|f| f.run_id() == run_id));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn run_result_err_marks_the_run_error() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let out = gm
        .run_result("failing", async { Err::<u32, _>("boom".to_owned()) })
        .await;
    assert_eq!(out.expect("not aborted"), Err("boom".to_owned()));
    let fin = hub.wait_for_kind("run.finished", SECOND).await;
    assert_eq!(fin.payload()["status"], "error");
    assert_eq!(fin.payload()["error"]["message"], "boom");
    let err = hub.wait_for_kind("node.error", SECOND).await;
    assert_eq!(err.payload()["nodeId"], "agent:failing");
    gm.dispose().await;
}

#[tokio::test]
async fn abort_at_a_gate_drops_the_run_and_returns_aborted() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "counted"})]);
    let gm = session(&hub).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("abortable", async {
                let a = counted(1).await;
                let b = counted(2).await;
                a + b
            })
            .await
        }
    });
    let p = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert!(hub.resume(
        p.run_id(),
        p.payload()["pauseId"].as_str().expect("id"),
        "abort"
    ));
    let err = task.await.expect("joined").expect_err("aborted");
    assert_eq!(err.name(), "abortable");
    assert_eq!(err.run_id(), p.run_id());
    assert_eq!(
        AFTER.load(Ordering::SeqCst),
        0,
        "no call ran after the abort"
    );
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    assert_eq!(
        hub.frames_of("exec.paused").len(),
        1,
        "the second call never started"
    );
    let resumed = hub.frames_of("exec.resumed");
    assert_eq!(resumed[0].payload()["action"], "abort");
    let fin: Vec<_> = frames
        .iter()
        .filter(|f| f.kind() == "node.finished")
        .collect();
    assert_eq!(fin[0].payload()["nodeId"], "tool:counted");
    assert_eq!(fin[0].payload()["status"], "aborted");
    assert_eq!(fin[1].payload()["nodeId"], "agent:abortable");
    assert_eq!(fin[1].payload()["status"], "aborted");
    assert_eq!(
        frames
            .iter()
            .find(|f| f.kind() == "run.finished")
            .expect("fin")
            .payload(),
        &json!({"status": "aborted"})
    );
    gm.dispose().await;
}

#[tokio::test]
async fn abort_outside_a_run_is_refused_and_the_gate_stays_held() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "echo"})]);
    let _default = graphmind::init(hub.config("no-run"));
    let gm = graphmind::session();
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn(echo("x".into()));
    let p = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    let id = p.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.resume(p.run_id(), &id, "abort"));
    let refused = hub.wait_for_kind("exec.refused", SECOND).await;
    assert_eq!(refused.payload()["code"], "unsupported");
    assert!(!task.is_finished());
    assert!(hub.resume(p.run_id(), &id, "continue"));
    assert_eq!(task.await.expect("joined"), "x");
    let implicit = hub.wait_for_kind("run.started", SECOND).await;
    assert_eq!(implicit.payload()["meta"]["implicit"], true);
    gm.dispose().await;
    let fin = hub.wait_for_kind("run.finished", SECOND).await;
    assert_eq!(
        fin.run_id(),
        implicit.run_id(),
        "dispose ends the implicit run"
    );
    assert_eq!(fin.payload()["status"], "ok");
}

#[tokio::test]
async fn spawned_work_joins_the_run_with_in_current_run() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    let out = gm
        .run("fan-out", async {
            let a = tokio::spawn(graphmind::in_current_run(echo("a".into())));
            let b = tokio::spawn(echo("b".into()));
            (a.await.expect("joined"), b.await.expect("joined"))
        })
        .await
        .expect("ok");
    assert_eq!(out, ("a".to_owned(), "b".to_owned()));
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let run_id = frames
        .iter()
        .find(|f| f.kind() == "run.started")
        .expect("run")
        .run_id();
    let a = frames
        .iter()
        .find(|f| f.kind() == "node.started" && f.payload()["input"]["text"] == "a")
        .expect("a");
    assert_eq!(a.run_id(), run_id);
    assert_eq!(a.payload()["parentId"], "agent:fan-out");
    assert!(
        !frames
            .iter()
            .any(|f| f.kind() == "node.started" && f.payload()["input"]["text"] == "b"),
        "a plain spawn does not carry the run (it reports to the default session)"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn abort_releases_the_other_held_gates_of_the_run() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "echo"})]);
    let gm = session(&hub).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("pair", async {
                futures_util::future::join(echo("left".into()), echo("right".into())).await
            })
            .await
        }
    });
    let seen = hub.wait_count("exec.paused", 2, 2 * SECOND).await;
    assert_eq!(seen.len(), 2, "exec.paused");
    let frames = hub.frames();
    let pauses: Vec<String> = frames
        .iter()
        .filter(|f| f.kind() == "exec.paused")
        .map(|f| f.payload()["pauseId"].as_str().expect("id").to_owned())
        .collect();
    let run_id = frames
        .iter()
        .find(|f| f.kind() == "exec.paused")
        .expect("p")
        .run_id()
        .to_owned();
    assert_eq!(gm.stats().held_gates, 2);
    assert!(hub.resume(&run_id, &pauses[0], "abort"));
    assert!(task.await.expect("joined").is_err(), "Err(Aborted)");
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let resumed: Vec<(String, String)> = frames
        .iter()
        .filter(|f| f.kind() == "exec.resumed")
        .map(|f| {
            (
                f.payload()["pauseId"].as_str().expect("id").to_owned(),
                f.payload()["action"].as_str().expect("action").to_owned(),
            )
        })
        .collect();
    assert!(resumed.contains(&(pauses[0].clone(), "abort".to_owned())));
    assert!(
        resumed.contains(&(pauses[1].clone(), "continue".to_owned())),
        "the other gate is released when the run is dropped: {resumed:?}"
    );
    assert_eq!(gm.stats().held_gates, 0);
    let statuses: Vec<&str> = frames
        .iter()
        .filter(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "tool:echo")
        .map(|f| f.payload()["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["aborted", "aborted"]);
    gm.dispose().await;
}

#[tokio::test]
async fn current_run_id_names_the_run_an_emitted_event_joins() {
    let hub = FakeDebugger::start().await;
    let gm = session(&hub).await;
    assert_eq!(graphmind::current_run_id(), None, "outside any run");
    let (inside, spawned) = gm
        .run("emitting", async {
            let id = graphmind::current_run_id().expect("inside the run");
            let spawned = tokio::spawn(graphmind::in_current_run(async {
                graphmind::current_run_id()
            }));
            gm.emit(&id, graphmind_tests::token_event("agent:emitting", "hi"));
            (id, spawned.await.expect("joined"))
        })
        .await
        .expect("ok");
    assert_eq!(spawned.as_deref(), Some(inside.as_str()));
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let started = frames
        .iter()
        .find(|f| f.kind() == "run.started")
        .expect("run");
    assert_eq!(started.run_id(), inside);
    let token = frames
        .iter()
        .find(|f| f.kind() == "node.token")
        .expect("the emitted event");
    assert_eq!(token.run_id(), inside);
    gm.dispose().await;
}
