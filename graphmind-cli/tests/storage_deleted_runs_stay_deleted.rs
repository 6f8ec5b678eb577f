//! Runs the retention rule deleted stay deleted: an app that still holds their events in its
//! replay ring replays them on every reconnect (after a hub restart, or a dropped connection),
//! and the hub used to take them in again as new runs (whole, or only their tail when the ring
//! had lost the start), listed and stored until the next retention pass. The hub remembers the
//! deleted run ids (a `deleted_runs` table, loaded at start, pruned after 30 days) and drops
//! and counts their events (`eventsForDeletedRuns`); a new run id still works as usual.

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

#[graphmind::tool]
async fn add_one(n: i64) -> i64 {
    n + 1
}

/// Run ids in the database.
fn stored_runs(db: &Path) -> HashSet<String> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut st = conn.prepare("SELECT run_id FROM runs").expect("prepare");
    st.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// Run ids that have stored events.
fn runs_with_events(db: &Path) -> HashSet<String> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut st = conn
        .prepare("SELECT DISTINCT run_id FROM events")
        .expect("prepare");
    st.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn names(runs: &[Value]) -> Vec<String> {
    runs.iter()
        .map(|r| r["name"].as_str().unwrap_or("<no name>").to_owned())
        .collect()
}

fn ids(runs: &[Value]) -> HashSet<String> {
    run_ids(runs).into_iter().collect()
}

/// Events the hub has taken in, dropped as duplicates, or dropped for deleted runs.
fn seen(port: u16) -> u64 {
    ["eventsAccepted", "duplicates", "eventsForDeletedRuns"]
        .iter()
        .map(|k| stat(port, k))
        .sum()
}

fn stat(port: u16, name: &str) -> u64 {
    read(port, "/health").json()["stats"][name]
        .as_u64()
        .unwrap_or(0)
}

/// Three short runs, one after the other.
async fn three_runs(gm: &graphmind::Session) {
    for (i, name) in ["first", "second", "third"].into_iter().enumerate() {
        let out = gm.run(name, async move { add_one(i as i64).await }).await;
        assert_eq!(out, Ok(i as i64 + 1));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until retention deleted all but the newest run ("third"); returns its id and its
/// stored event count.
async fn only_third_left(port: u16, db: &Path) -> (String, usize) {
    let db = db.to_path_buf();
    wait_async(10, "retention deleted the two older runs", move || {
        let runs = runs_async_blocking(port);
        let left = names(&runs) == ["third"]
            && runs[0]["status"] == json!("ok")
            && stat(port, "runsDeleted") == 2
            && stored_runs(&db).len() == 1;
        left.then(|| {
            let id = runs[0]["runId"].as_str().expect("runId").to_owned();
            let n = events_on(port, &id).len();
            (id, n)
        })
    })
    .await
}

fn runs_async_blocking(port: u16) -> Vec<Value> {
    read(port, "/api/runs").json()["runs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The run ids a new viewer's `hello` lists.
async fn hello_runs(port: u16) -> HashSet<String> {
    let mut v = Peer::viewer(port).await;
    let hello = v.until(5000, |f| f["type"] == "hello").await;
    ids(hello["runs"].as_array().expect("runs"))
}

#[test]
fn deleted_runs_do_not_come_back_when_the_app_replays_after_a_hub_restart() {
    let dir = TempDir::new("tomb-restart");
    let db = dir.0.join("hub.db");
    let first_hub = serve_on_free_port(
        &dir.0,
        &db,
        &["--keep", "1", "GRAPHMIND_RETENTION_INTERVAL_MS=150"],
    );
    let port = first_hub.port;
    let home = dir.0.clone();
    block_on(async move {
        let mut first_hub = first_hub;
        let gm = graphmind::Session::new(
            config(port, "tomb-agent").retry_interval(Duration::from_millis(100)),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        three_runs(&gm).await;
        let (third, n) = only_third_left(port, &db).await;
        assert!(n >= 2, "the third run stored: {n}");
        let ring = gm.stats().buffered;
        assert_eq!(ring, 3 * n, "the ring holds all three runs");

        kill_hard(&mut first_hub);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!gm.is_attached(), "the client noticed the hub is gone");
        // The same database, the same rule; no retention pass before the replay is in.
        let second_hub = {
            let (home, db) = (home.clone(), db.clone());
            tokio::task::spawn_blocking(move || {
                serve_on(&home, port, &db, &["--keep", "1"]).expect("restart")
            })
            .await
            .expect("join")
        };
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");
        wait_async(10, "the whole replay processed", move || {
            (seen(port) as usize >= ring).then_some(())
        })
        .await;
        // One more beat: nothing in flight reaches storage afterwards.
        tokio::time::sleep(Duration::from_millis(300)).await;

        let only = HashSet::from([third.clone()]);
        let runs = second_hub.runs();
        assert_eq!(ids(&runs), only, "zombie runs listed: {runs:?}");
        assert_eq!(stored_runs(&db), only, "zombie runs stored");
        assert_eq!(runs_with_events(&db), only, "zombie events stored");
        assert_eq!(
            hello_runs(port).await,
            only,
            "zombie runs in a viewer's hello"
        );
        let health = second_hub.health();
        assert_eq!(health["runs"], json!(1), "{health}");
        assert_eq!(health["stats"]["eventsAccepted"], json!(0), "{health}");
        assert_eq!(health["stats"]["duplicates"], json!(n), "{health}");
        assert_eq!(
            health["stats"]["eventsForDeletedRuns"],
            json!(2 * n),
            "{health}"
        );

        // A new run (a new random id) is taken in as usual.
        let out = gm.run("fourth", async { add_one(41).await }).await;
        assert_eq!(out, Ok(42));
        gm.dispose().await;
        wait_async(10, "the fourth run stored", move || {
            let runs = runs_async_blocking(port);
            (names(&runs) == ["fourth", "third"] && runs[0]["status"] == json!("ok")).then_some(())
        })
        .await;
        let fourth = run_named(&second_hub.runs(), "fourth").expect("fourth");
        let fourth_id = fourth["runId"].as_str().expect("runId");
        assert_eq!(second_hub.events(fourth_id).len(), n);
        assert_eq!(stored_runs(&db).len(), 2);
    });
}

#[test]
fn the_tail_of_a_deleted_run_does_not_come_back_when_the_connection_drops() {
    let dir = TempDir::new("tomb-tail");
    let db = dir.0.join("hub.db");
    let hub = serve_on_free_port(
        &dir.0,
        &db,
        &["--keep", "1", "GRAPHMIND_RETENTION_INTERVAL_MS=150"],
    );
    let port = hub.port;
    block_on(async move {
        let relay = Relay::start(port).await;
        // The ring holds the third run and only the end of the second.
        let gm = graphmind::Session::new(
            config(relay.port, "tomb-agent")
                .retry_interval(Duration::from_millis(100))
                .ring_limits(8, 8 << 20),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        three_runs(&gm).await;
        let (third, n) = only_third_left(port, &db).await;
        assert!((2..8).contains(&n), "the third run: {n} events");
        assert_eq!(gm.stats().buffered, 8);
        let tail = 8 - n;
        let before = seen(port);

        relay.cut();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!gm.is_attached(), "the client noticed the cut");
        relay.reopen();
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");
        wait_async(10, "the replay processed", move || {
            (seen(port) >= before + 8).then_some(())
        })
        .await;
        // Two more retention passes: had a zombie come in (newer than the third run by first
        // sight), the rule would now delete the third run instead.
        tokio::time::sleep(Duration::from_millis(400)).await;

        let only = HashSet::from([third.clone()]);
        let runs = hub.runs();
        assert_eq!(ids(&runs), only, "a zombie run listed: {runs:?}");
        assert_eq!(stored_runs(&db), only, "a zombie run stored");
        assert_eq!(runs_with_events(&db), only, "zombie events stored");
        assert_eq!(
            hello_runs(port).await,
            only,
            "a zombie run in a viewer's hello"
        );
        let health = hub.health();
        assert_eq!(health["stats"]["eventsAccepted"], json!(3 * n), "{health}");
        assert_eq!(health["stats"]["duplicates"], json!(n), "{health}");
        assert_eq!(
            health["stats"]["eventsForDeletedRuns"],
            json!(tail),
            "{health}"
        );
        assert_eq!(health["stats"]["runsDeleted"], json!(2), "{health}");
        gm.dispose().await;
    });
}

/// The tables of a database made before the hub remembered deleted runs.
const OLD_SCHEMA: &str = "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, app TEXT, name TEXT, status TEXT NOT NULL DEFAULT 'running',
    started_at INTEGER, ended_at INTEGER, sdk TEXT,
    event_count INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL
);
CREATE TABLE events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
";

fn tombstones(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut st = conn
        .prepare("SELECT run_id FROM deleted_runs ORDER BY run_id")
        .expect("the deleted_runs table");
    st.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn an_old_database_gets_the_table_and_tombstones_go_after_30_days() {
    let dir = TempDir::new("tomb-old");
    let db = dir.0.join("hub.db");
    let now = now_ms();
    {
        let conn = rusqlite::Connection::open(&db).expect("create db");
        conn.execute_batch(OLD_SCHEMA).expect("old schema");
        conn.execute(
            "INSERT INTO runs (run_id, app, name, status, started_at, ended_at, created_at)
             VALUES ('run_old', 'a', 'old', 'ok', ?1, ?1, ?1)",
            [now as i64 - 60_000],
        )
        .expect("a run");
    }
    let mut h = serve_on_free_port(&dir.0, &db, &[]);
    assert_eq!(names(&h.runs()), ["old"]);
    assert!(tombstones(&db).is_empty());
    kill_hard(&mut h);
    {
        let conn = rusqlite::Connection::open(&db).expect("open db");
        for (id, age_days) in [("run_gone_1d", 1u64), ("run_gone_31d", 31)] {
            conn.execute(
                "INSERT INTO deleted_runs (run_id, deleted_at) VALUES (?1, ?2)",
                rusqlite::params![id, (now - age_days * 86_400_000) as i64],
            )
            .expect("a tombstone");
        }
    }
    let h = serve_on_free_port(&dir.0, &db, &[]);
    assert_eq!(
        tombstones(&db),
        ["run_gone_1d"],
        "the 31-day-old one pruned"
    );
    let port = h.port;
    block_on(async move {
        let mut app = App::connect(port).await;
        for id in ["run_gone_1d", "run_gone_31d", "run_new"] {
            app.start_run(id, id).await;
            app.emit(id, "run.finished", json!({"status": "ok"})).await;
        }
        wait_async(10, "the events taken in", move || {
            (seen(port) >= 6).then_some(())
        })
        .await;
    });
    let health = h.health();
    assert_eq!(
        health["stats"]["eventsForDeletedRuns"],
        json!(2),
        "{health}"
    );
    assert_eq!(health["stats"]["eventsAccepted"], json!(4), "{health}");
    wait_for(5, "the runs stored", || {
        (stored_runs(&db).len() == 3).then_some(())
    });
    assert_eq!(
        stored_runs(&db),
        HashSet::from(["run_old", "run_gone_31d", "run_new"].map(str::to_owned))
    );
    assert_eq!(names(&h.runs()), ["run_new", "run_gone_31d", "old"]);
}
