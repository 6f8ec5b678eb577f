//! Another process reading the hub's database while the hub runs (a script, `sqlite3`, a
//! test) must not bring the hub down. The hub used to open and close its `-shm` file after
//! SQLite had opened it (to set its mode), which dropped the hub's lock on it: the next
//! process that opened the database took the file for unused and truncated it under the hub's
//! mapping, and the hub died of SIGBUS at its next write.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{App, hub, wait_for};

#[test]
fn a_reader_process_does_not_truncate_the_hubs_shared_memory() {
    let h = hub(|_| {});
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let port = h.port;
    // An app keeps writing while the database is opened and closed from here.
    let writer = rt.spawn(async move {
        let mut app = App::connect(port).await;
        let mut sent = 0u64;
        for i in 0..400 {
            let run = format!("run_reader_{i:04}");
            app.start_run(&run, "r").await;
            app.emit(&run, "run.finished", json!({"status": "ok"}))
                .await;
            sent += 2;
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        sent
    });
    let db = h.dir.0.join("graphmind.db");
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut reads = 0;
    while Instant::now() < deadline && !writer.is_finished() {
        let conn = rusqlite::Connection::open_with_flags(
            &db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .expect("open the database");
        let _: i64 = conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .expect("count");
        drop(conn);
        reads += 1;
    }
    assert!(reads > 10, "only {reads} reads");
    let sent = rt.block_on(writer).expect("join");
    wait_for(10, "every event stored", || {
        let health = h.health();
        (health["stats"]["eventsAccepted"] == json!(sent)).then_some(())
    });
    assert_eq!(h.runs().len(), 200, "the hub is alive and lists its runs");
}
