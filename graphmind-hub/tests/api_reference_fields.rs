//! The HTTP answers carry the reference family's field names (GraphMind 0.6 hubs) beside the
//! hub's own, so a client written against either reads them: run rows with `id`,
//! `finishedAt`, `schemaVersion`, `source` and `errorCount`; event pages with `total`; a
//! pause's details under `pause` with the held node under `node`; `/health` with `name`; and a
//! resumer's own `requestId` kept.

mod support;

use serde_json::json;
use support::*;

/// Regression: `/api/runs` rows, event pages and `/health` lacked the reference's names.
#[test]
fn run_rows_event_pages_and_health_carry_the_reference_names_beside_ours() {
    let h = hub(|_| {});
    let run = "run_ref000000001";
    block_on(async {
        let mut app = App::running(h.port, run, "reference-names").await;
        for (i, id) in ["c1", "c2"].iter().enumerate() {
            app.emit(
                run,
                "node.started",
                json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": id, "input": i}),
            )
            .await;
            app.emit(
                run,
                "node.error",
                json!({"nodeId": "tool:t", "instanceId": id, "error": {"name": "E", "message": "m"}}),
            )
            .await;
        }
        app.emit(run, "run.finished", json!({"status": "error"}))
            .await;
    });
    let row = wait_for(10, "the finished run", || {
        let runs = h.runs();
        runs.into_iter()
            .find(|r| r["runId"] == json!(run) && r["status"] == json!("error"))
    });
    assert_eq!(row["id"], json!(run), "{row}");
    assert_eq!(row["schemaVersion"], json!(1), "{row}");
    assert_eq!(row["source"], json!("live"), "{row}");
    assert_eq!(row["errorCount"], json!(2), "{row}");
    assert!(row["finishedAt"].is_u64(), "{row}");
    assert_eq!(row["finishedAt"], row["endedAt"], "{row}");
    // One run alone answers the same.
    let one = h.get_json(&format!("/api/runs/{run}"));
    assert_eq!((&one["id"], &one["errorCount"]), (&json!(run), &json!(2)));

    // `total`: every stored event of the run, whatever the page holds.
    let page = h.get_json(&format!("/api/runs/{run}/events?limit=2"));
    assert_eq!(page["events"].as_array().map(Vec::len), Some(2), "{page}");
    let count = row["eventCount"].as_u64().expect("eventCount");
    assert!(count > 2, "{row}");
    assert_eq!(page["total"], json!(count), "{page}");

    let health = h.health();
    assert_eq!(health["name"], json!("graphmind"), "{health}");
    assert_eq!(health["ok"], json!(true));
}

/// Regression: a run's error count survives the hub's restart (read from storage).
#[test]
fn a_stored_runs_error_count_is_read_back_from_storage() {
    let dir = TempDir::new("errors-restart");
    let run = "run_ref000000002";
    {
        let first = InProcessHub::start_in(&dir.0, |_| {});
        block_on(async {
            let mut app = App::running(first.port, run, "errors").await;
            app.emit(
                run,
                "node.error",
                json!({"nodeId": "tool:t", "instanceId": "c1", "error": {"name": "E", "message": "m"}}),
            )
            .await;
            app.emit(run, "run.finished", json!({"status": "error"}))
                .await;
        });
        wait_for(10, "the finished run", || {
            events_on(first.port, run)
                .iter()
                .any(|e| e["type"] == json!("run.finished"))
                .then_some(())
        });
    }
    let second = InProcessHub::start_in(&dir.0, |_| {});
    let runs = second.get_json("/api/runs");
    let row = runs["runs"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["id"] == json!(run)).cloned())
        .unwrap_or_else(|| panic!("the run is listed after the restart: {runs}"));
    assert_eq!(row["errorCount"], json!(1), "{row}");
}

/// Regression: a pause's details were flat; the reference nests them as `{pause: {…, node}}`
/// (GraphMind 0.6 clients read `pause.node.input`). Ours stay at the top level too.
#[test]
fn a_pause_detail_has_the_reference_nesting_beside_the_flat_fields() {
    let h = hub(|_| {});
    let run = "run_ref000000003";
    // Asked while the app holds the gate (the app's going away closes the pause).
    let d = block_on(async {
        let mut app = App::running(h.port, run, "nested").await;
        app.pause_at(run, "lookup", "pause_r_1", "before", json!({"q": "x"}))
            .await;
        get_async(h.port, format!("/api/pauses?runId={run}&wait=5")).await;
        get_async(h.port, format!("/api/runs/{run}/pauses/pause_r_1"))
            .await
            .json()
    });
    assert_eq!(d["state"], json!("open"), "{d}");
    assert_eq!(d["pauseId"], json!("pause_r_1"), "{d}");
    assert_eq!(d["input"], json!({"q": "x"}), "{d}");
    let p = &d["pause"];
    assert_eq!(p["pauseId"], json!("pause_r_1"), "{d}");
    assert_eq!(p["runId"], json!(run), "{d}");
    assert_eq!(p["point"], json!("before"), "{d}");
    assert_eq!(p["node"]["input"], json!({"q": "x"}), "{d}");
    assert_eq!(p["node"]["kind"], json!("tool"), "{d}");
    assert_eq!(p["node"]["name"], json!("lookup"), "{d}");
    assert_eq!(p["node"]["instanceId"], json!("call_pause_r_1"), "{d}");
}

/// Regression: the hub replaced a resumer's `requestId` with one of its own; it keeps one
/// that is short and plain (the reference's rule) and sends it to the app.
#[test]
fn a_resumers_request_id_is_kept_and_reaches_the_app() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let (port, agent) = (h.port, h.agent_token.clone());
    let run = "run_ref000000004";
    block_on(async {
        let mut app = App::running(port, run, "request-ids").await;
        for (pause, sent, kept) in [
            ("pause_q_1", json!("mine-42.a:b_c"), true),
            ("pause_q_2", json!("has spaces"), false),
        ] {
            app.pause_at(run, "t", pause, "before", json!(1)).await;
            get_async(port, format!("/api/pauses?runId={run}&wait=5")).await;
            let req = tokio::spawn(resume_async(
                port,
                agent.clone(),
                run.into(),
                pause.into(),
                json!({"action": "continue", "requestId": sent}),
            ));
            let frame = app.expect_resume(5000).await;
            let id = frame["payload"]["requestId"].clone();
            assert_eq!(id == sent, kept, "{pause}: {frame}");
            assert!(id.as_str().is_some_and(|s| !s.is_empty()), "{frame}");
            app.emit(
                run,
                "exec.resumed",
                json!({"pauseId": pause, "action": "continue", "requestId": id}),
            )
            .await;
            let r = req.await.expect("joined");
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.json()["requestId"], id, "{}", r.body);
        }
    });
}
