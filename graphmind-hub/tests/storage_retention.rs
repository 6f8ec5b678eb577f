//! Retention at start keeps the newest N runs (`--keep`) and drops their events.

mod support;

use serde_json::json;
use support::*;

#[test]
fn keep_n_drops_the_oldest_runs_and_their_events() {
    let dir = TempDir::new("keep");
    let ids = [
        "run_400000000001",
        "run_400000000002",
        "run_400000000003",
        "run_400000000004",
    ];
    {
        let s = InProcessHub::start_in(&dir.0, |_| {});
        block_on(async {
            let mut app = App::connect(s.port).await;
            for id in ids {
                app.start_run(id, id).await;
                app.emit(id, "run.finished", json!({"status": "ok"})).await;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
        wait_for(10, "4 runs", || (s.runs().len() == 4).then_some(()));
        s.stop();
    }
    let s = InProcessHub::start_in(&dir.0, |c| c.keep = 2);
    let kept: Vec<_> = s
        .runs()
        .iter()
        .map(|r| r["runId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kept, vec![ids[3], ids[2]]);
    assert_eq!(s.runs()[0]["eventCount"], json!(2));
    assert_eq!(s.seqs(ids[3]).len(), 2);
    assert_eq!(s.get(&format!("/api/runs/{}/events", ids[0])).status, 404);
}

#[test]
fn runs_older_than_30_days_are_dropped_at_start() {
    let dir = TempDir::new("age");
    let now = now_ms();
    {
        let s = InProcessHub::start_in(&dir.0, |_| {});
        block_on(async {
            let mut app = App::connect(s.port).await;
            for (id, age_days) in [("run_400000000011", 31u64), ("run_400000000012", 29)] {
                let started = json!({"app": "a", "sdk": {"name": "rust", "version": "1"}, "meta": {"name": id}});
                app.emit_at(now - age_days * 86_400_000, id, "run.started", started)
                    .await;
            }
        });
        wait_for(10, "2 runs", || (s.runs().len() == 2).then_some(()));
        s.stop();
    }
    let s = InProcessHub::start_in(&dir.0, |_| {});
    let kept: Vec<_> = s.runs().iter().map(|r| r["runId"].clone()).collect();
    assert_eq!(kept, vec![json!("run_400000000012")]);
}
