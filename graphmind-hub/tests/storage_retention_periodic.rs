//! Retention (`--keep`, 30 days) is applied while the hub runs, not only at start (a
//! long-lived hub used to keep every run): runs beyond the newest N and runs older than 30 days
//! are deleted with their events, from the database and from memory, on every pass (hidden
//! `--retention-interval-ms`). A run still running is kept while it runs.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{App, TestHub, hub, now_ms, run_ids, runtime, wait_for};

/// Run ids in the database.
fn stored_runs(h: &TestHub) -> Vec<String> {
    let conn = h.open_db();
    let mut st = conn
        .prepare("SELECT run_id FROM runs ORDER BY run_id")
        .expect("prepare");
    st.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn stored_events(h: &TestHub, run: &str) -> i64 {
    let conn = h.open_db();
    conn.query_row(
        "SELECT count(*) FROM events WHERE run_id = ?1",
        [run],
        |r| r.get(0),
    )
    .expect("count")
}

fn listed(h: &TestHub) -> Vec<String> {
    run_ids(&h.runs())
}

#[test]
fn keep_n_is_applied_while_running_and_spares_a_running_run() {
    let rt = runtime();
    let h = hub(|c| {
        c.keep = 3;
        c.retention_interval = std::time::Duration::from_millis(300);
        c.abandon_grace = std::time::Duration::from_millis(60000);
    });
    let ids: Vec<String> = (1..=6).map(|i| format!("run_keep_{i}")).collect();
    let mut app = rt.block_on(async {
        let mut app = App::connect(h.port).await;
        // The oldest run is still running.
        app.start_run("run_keep_0_running", "long").await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        for id in &ids {
            app.start_run(id, id).await;
            app.emit(id, "run.finished", json!({"status": "ok"})).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        app
    });
    wait_for(10, "the oldest finished runs deleted", || {
        (stored_runs(&h).len() == 4).then_some(())
    });
    assert_eq!(
        stored_runs(&h),
        [
            "run_keep_0_running",
            "run_keep_4",
            "run_keep_5",
            "run_keep_6"
        ]
    );
    assert_eq!(stored_events(&h, "run_keep_1"), 0);
    assert_eq!(stored_events(&h, "run_keep_6"), 2);
    // Gone from memory too: the list, the summary, the events.
    wait_for(5, "the list trimmed", || {
        (listed(&h).len() == 4).then_some(())
    });
    assert_eq!(
        listed(&h),
        [
            "run_keep_6",
            "run_keep_5",
            "run_keep_4",
            "run_keep_0_running"
        ]
    );
    assert_eq!(h.get("/api/runs/run_keep_1").status, 404);
    assert_eq!(h.get("/api/runs/run_keep_1/events").status, 404);
    let health = h.health();
    assert_eq!(health["runs"], json!(4), "{health}");
    assert_eq!(health["stats"]["runsDeleted"], json!(3), "{health}");

    // The running run goes on untouched through more passes.
    rt.block_on(async {
        app.emit(
            "run_keep_0_running",
            "node.started",
            json!({"nodeId": "tool:step", "kind": "tool", "name": "step", "instanceId": "call_1"}),
        )
        .await;
    });
    std::thread::sleep(Duration::from_millis(700));
    let s = h.get_json("/api/runs/run_keep_0_running");
    assert_eq!(s["status"], json!("running"), "{s}");
    assert_eq!(s["live"], json!(true), "{s}");
    assert_eq!(s["name"], json!("long"), "{s}");
    assert_eq!(s["eventCount"], json!(2), "{s}");
    assert_eq!(h.events("run_keep_0_running").len(), 2);
    assert_eq!(stored_runs(&h).len(), 4);

    // Once finished it is the oldest: a later pass deletes it.
    rt.block_on(async {
        app.emit(
            "run_keep_0_running",
            "run.finished",
            json!({"status": "ok"}),
        )
        .await;
    });
    wait_for(10, "the finished old run deleted", || {
        (stored_runs(&h).len() == 3).then_some(())
    });
    assert_eq!(stored_runs(&h), ["run_keep_4", "run_keep_5", "run_keep_6"]);
    wait_for(5, "the list trimmed", || {
        (listed(&h).len() == 3).then_some(())
    });
}

#[test]
fn runs_older_than_30_days_are_deleted_while_running() {
    let rt = runtime();
    let h = hub(|c| c.retention_interval = std::time::Duration::from_millis(300));
    let now = now_ms();
    rt.block_on(async {
        let mut app = App::connect(h.port).await;
        for (id, age_days) in [("run_age_31", 31u64), ("run_age_29", 29)] {
            app.emit_at(
                now - age_days * 86_400_000,
                id,
                "run.started",
                json!({"app": "a", "sdk": {"name": "rust", "version": "1"}, "meta": {"name": id}}),
            )
            .await;
            app.emit(id, "run.finished", json!({"status": "ok"})).await;
        }
    });
    wait_for(10, "the 31-day-old run deleted", || {
        (stored_runs(&h) == ["run_age_29"]).then_some(())
    });
    wait_for(5, "and listed no more", || {
        (listed(&h) == ["run_age_29"]).then_some(())
    });
}
