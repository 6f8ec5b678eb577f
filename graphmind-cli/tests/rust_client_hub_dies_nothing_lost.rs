//! The hub dies (SIGKILL) with far more events in flight than the app's replay ring holds:
//! 1,500 parallel held gates, all released at once by the disconnect, into a ring of 1,000.
//! The hub acknowledges what it committed (`hub.ack`), so events written to the dead hub's
//! socket and never stored are not evicted as if delivered: every event the app recorded is
//! either stored or announced as lost (`"lost"` seq ranges on a later frame), exactly.
//! A run with events lost is marked incomplete (`incomplete: true` in its summary), not
//! shown as a plain `ok`. (Before acks, 3,000 gates stored 5,553–8,309 of 12,004 events,
//! announced only 1,002–3,366 as dropped, and the runs showed `ok`.)

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{TempDir, block_on, config, kill_hard, serve_on, serve_on_free_port};

const GATES: u32 = 1500;
const RING: usize = 1000;
/// The events of one gated run: run.started, the agent node's start, the tool's start,
/// exec.paused, exec.resumed, the tool's finish, the agent's finish, run.finished.
const RUN_EVENTS: i64 = 8;
/// Retention keeps every run: what a hub drops by its retention rule is not a loss.
const HUB_ARGS: [&str; 6] = [
    "--keep",
    "100000",
    "--memory-runs",
    "100000",
    "--allow-control",
    "resume",
];

#[graphmind::tool]
async fn held(i: u32) -> u32 {
    i + 1
}

/// Stored seqs, and the seqs the stored frames announce as lost.
fn stored_and_announced(db: &std::path::Path) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database");
    let mut stmt = conn.prepare("SELECT seq, body FROM events").expect("query");
    let rows: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let mut stored = BTreeSet::new();
    let mut announced = BTreeSet::new();
    for (seq, body) in rows {
        stored.insert(u64::try_from(seq).expect("seq"));
        let v: Value = serde_json::from_str(&body).expect("stored JSON");
        for range in v["lost"].as_array().into_iter().flatten() {
            let (a, b) = (
                range[0].as_u64().expect("from"),
                range[1].as_u64().expect("to"),
            );
            announced.extend(a..=b);
        }
    }
    (stored, announced)
}

#[test]
fn hub_killed_with_more_than_the_ring_in_flight_loses_nothing_silently() {
    let dir = TempDir::new("nothing-lost");
    let db = dir.0.join("graphmind.db");
    let mut first = serve_on_free_port(&dir.0, &db, &HUB_ARGS);
    let port = first.port;
    let r = first.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"name": "held"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let home = dir.0.clone();
    let hub = block_on(async move {
        let gm = graphmind::Session::new(
            config(port, "nothing-lost")
                .ring_limits(RING, 64 * 1024 * 1024)
                .retry_interval(Duration::from_millis(200))
                .on_loop(graphmind::OnLoop::Off),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        let calls: Vec<_> = (0..GATES)
            .map(|i| {
                let gm = gm.clone();
                tokio::spawn(async move { gm.run("gates", held(i)).await })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while gm.stats().held_gates < GATES as usize {
            assert!(
                Instant::now() < deadline,
                "{} gates held",
                gm.stats().held_gates
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        kill_hard(&mut first);
        let mut sum = 0u64;
        for c in calls {
            sum += u64::from(c.await.expect("joined").expect("released, not aborted"));
        }
        assert_eq!(sum, (1..=u64::from(GATES)).sum::<u64>(), "every call ran");
        let stats = gm.stats();
        assert!(
            stats.recorded > 4 * RING as u64,
            "more than the ring was in flight: {stats:?}"
        );
        assert!(stats.lost > 0, "the ring overflowed unconfirmed: {stats:?}");

        let second = {
            let (home, db) = (home.clone(), db.clone());
            tokio::task::spawn_blocking(move || {
                serve_on(&home, port, &db, &HUB_ARGS).expect("restart on the same port")
            })
            .await
            .expect("join")
        };
        assert!(gm.ready(Duration::from_secs(10)).await, "attached again");
        let recorded = gm.stats().recorded;
        // The replay of the ring is stored (and committed) within moments; poll until the
        // account closes, and fail with the numbers if it does not.
        let deadline = Instant::now() + Duration::from_secs(30);
        let (stored, missing) = loop {
            let db = db.clone();
            let (stored, announced) =
                tokio::task::spawn_blocking(move || stored_and_announced(&db))
                    .await
                    .expect("join");
            let missing: BTreeSet<u64> = announced.difference(&stored).copied().collect();
            if stored.len() as u64 + missing.len() as u64 == recorded || Instant::now() > deadline {
                break (stored, missing);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let health = second.health();
        assert_eq!(
            health["stats"]["eventsForDeletedRuns"],
            json!(0),
            "{health}"
        );
        assert_eq!(
            stored.len() as u64 + missing.len() as u64,
            recorded,
            "stored {} + announced lost and not stored {} != recorded {recorded}; client {:?}; \
             hub {health}",
            stored.len(),
            missing.len(),
            gm.stats()
        );
        assert!(!missing.is_empty(), "the scenario lost events");
        assert!(
            health["stats"]["acksSent"].as_u64() > Some(0),
            "the new hub acknowledged: {health}"
        );
        println!(
            "recorded {recorded}, stored {}, announced lost {}, client lost {}",
            stored.len(),
            missing.len(),
            gm.stats().lost
        );
        gm.dispose().await;
        second
    });
    // Every run missing events is marked incomplete, in storage and in its summary.
    let hub = &hub;
    let conn = hub.open_db();
    let mut stmt = conn
        .prepare(
            "SELECT r.run_id, (SELECT count(*) FROM events e WHERE e.run_id = r.run_id),
                    EXISTS (SELECT 1 FROM run_gaps g WHERE g.run_id = r.run_id)
             FROM runs r",
        )
        .expect("query");
    let runs: Vec<(String, i64, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let short: Vec<&(String, i64, bool)> = runs.iter().filter(|r| r.1 < RUN_EVENTS).collect();
    assert!(!short.is_empty(), "some runs lost events");
    let unmarked: Vec<_> = short.iter().filter(|r| !r.2).collect();
    assert!(
        unmarked.is_empty(),
        "runs with a gap not marked: {unmarked:?}"
    );
    for (id, _, _) in short.iter().take(20) {
        let summary = hub.get_json(&format!("/api/runs/{id}"));
        assert_eq!(summary["incomplete"], json!(true), "{summary}");
    }
    let whole = runs.iter().find(|r| r.1 == RUN_EVENTS && !r.2);
    if let Some((id, _, _)) = whole {
        let summary = hub.get_json(&format!("/api/runs/{id}"));
        assert_eq!(summary["incomplete"], json!(false), "{summary}");
        assert_eq!(summary["status"], json!("ok"), "{summary}");
    }
}
