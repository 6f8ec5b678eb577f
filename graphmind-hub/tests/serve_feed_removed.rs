//! A retention pass while the hub runs tells the viewers which runs it deleted
//! (`{"type":"removed","runIds":[…]}` on /ws/ui, docs/dev/ui-feed.md): an open viewer used to
//! keep listing deleted runs until it reconnected. The frame names exactly the deleted runs
//! (never a running or held one), runs already evicted from memory too, at most 500 per frame;
//! a subscription to a deleted run ends with it.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

fn ids(list: &[&str]) -> HashSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The run ids of a `removed` frame, checking its shape.
fn removed_ids(f: &Value) -> Vec<String> {
    let obj = f.as_object().expect("object");
    assert_eq!(
        obj.keys().map(String::as_str).collect::<HashSet<_>>(),
        HashSet::from(["type", "runIds"]),
        "{f}"
    );
    f["runIds"]
        .as_array()
        .expect("runIds")
        .iter()
        .map(|v| v.as_str().expect("a run id").to_owned())
        .collect()
}

/// Reads `removed` frames until together they name `want`; every one must name only runs of
/// `want`, each once. Returns the frames' id lists.
async fn removed_until(v: &mut Peer, want: &HashSet<String>, secs: u64) -> Vec<Vec<String>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut seen = HashSet::new();
    let mut frames = Vec::new();
    while seen != *want {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let f = match v.recv(left.as_millis() as u64).await {
            Got::Json(f) => f,
            other => panic!("waiting for removed frames naming {want:?} (saw {seen:?}): {other:?}"),
        };
        if f["type"] != "removed" {
            continue;
        }
        let list = removed_ids(&f);
        for id in &list {
            assert!(want.contains(id), "{id} removed, not one of {want:?}");
            assert!(seen.insert(id.clone()), "{id} removed twice");
        }
        frames.push(list);
    }
    frames
}

/// Fails on any `removed` frame within `ms`.
async fn no_removed_for(v: &mut Peer, ms: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match v.recv((left.as_millis() as u64).max(1)).await {
            Got::Timeout => return,
            Got::Json(f) => assert_ne!(f["type"], json!("removed"), "unexpected: {f}"),
            Got::Closed(c) => panic!("the feed closed ({c:?})"),
        }
    }
}

async fn finished_run(app: &mut App, run: &str) {
    app.start_run(run, run).await;
    app.emit(run, "run.finished", json!({"status": "ok"})).await;
}

async fn listed(port: u16) -> Vec<String> {
    run_ids(runs_async(port).await["runs"].as_array().expect("runs"))
}

#[test]
fn removed_names_exactly_the_deleted_runs_never_a_running_or_held_one() {
    let h = hub(|c| {
        c.keep = 2;
        c.retention_interval = std::time::Duration::from_millis(200);
        c.abandon_grace = std::time::Duration::from_millis(60000);
    });
    let port = h.port;
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let mut app = App::connect(port).await;
        // The two oldest runs are protected: one running, one holding a gate.
        app.start_run("run_rm_running", "running").await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        app.start_run("run_rm_held", "held").await;
        app.pause_at("run_rm_held", "pay", "pause_rm_1", "before", json!({}))
            .await;
        for id in ["run_rm_1", "run_rm_2", "run_rm_3", "run_rm_4"] {
            tokio::time::sleep(Duration::from_millis(5)).await;
            finished_run(&mut app, id).await;
        }
        removed_until(&mut v, &ids(&["run_rm_1", "run_rm_2"]), 10).await;
        // Three more passes delete nothing: the rest are the newest two and the active ones.
        no_removed_for(&mut v, 700).await;
        assert_eq!(
            listed(port).await,
            ["run_rm_4", "run_rm_3", "run_rm_held", "run_rm_running"]
        );

        // Once released and finished they are the oldest: the next pass deletes them.
        app.confirm("run_rm_held", "pause_rm_1", "continue").await;
        for id in ["run_rm_held", "run_rm_running"] {
            app.emit(id, "run.finished", json!({"status": "ok"})).await;
        }
        removed_until(&mut v, &ids(&["run_rm_held", "run_rm_running"]), 10).await;
        assert_eq!(listed(port).await, ["run_rm_4", "run_rm_3"]);
    });
}

#[test]
fn a_subscription_to_a_deleted_run_ends_with_no_stale_tail() {
    let h = hub(|c| {
        c.keep = 1;
        c.retention_interval = std::time::Duration::from_millis(200);
        c.abandon_grace = std::time::Duration::from_millis(60000);
    });
    let port = h.port;
    let run = "run_rm_sub";
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let mut app = App::running(port, run, "watched").await;
        app.emit(run, "x.step", json!({"i": 1})).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        app.start_run("run_rm_newer", "newer").await;
        v.send(&json!({"type": "subscribe", "runId": run})).await;
        v.until(5000, |f| {
            f["type"] == "replayed" && f["runId"] == json!(run)
        })
        .await;

        app.emit(run, "run.finished", json!({"status": "ok"})).await;
        let f = v.until(10_000, |f| f["type"] == "removed").await;
        assert_eq!(removed_ids(&f), [run]);

        // More frames under the deleted id are dropped (the run stays deleted): not tailed to
        // the viewer, not listed.
        app.emit(run, "x.late", json!({"i": 2})).await;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match v.recv((left.as_millis() as u64).max(1)).await {
                Got::Timeout => break,
                Got::Json(f) => {
                    assert_ne!(f["type"], json!("events"), "stale tail: {f}");
                    assert_ne!(
                        f["run"]["runId"],
                        json!(run),
                        "the deleted run is back: {f}"
                    );
                }
                Got::Closed(c) => panic!("the feed closed ({c:?})"),
            }
        }
        assert!(!listed(port).await.contains(&run.to_owned()));
    });
}

#[test]
fn runs_already_evicted_from_memory_are_announced_too() {
    let h = hub(|c| {
        c.keep = 2;
        c.memory_runs = 0;
        c.retention_interval = std::time::Duration::from_millis(200);
    });
    let port = h.port;
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let mut app = App::connect(port).await;
        for id in ["run_ev_1", "run_ev_2"] {
            finished_run(&mut app, id).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Both leave memory (a second after their last event); storage keeps them.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let health = get_async(port, "/health".into()).await.json();
            if health["stats"]["runsEvicted"] == json!(2) {
                assert_eq!(health["runs"], json!(0), "{health}");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not evicted: {health}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for id in ["run_ev_3", "run_ev_4"] {
            finished_run(&mut app, id).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        removed_until(&mut v, &ids(&["run_ev_1", "run_ev_2"]), 10).await;
        assert_eq!(listed(port).await, ["run_ev_4", "run_ev_3"]);
    });
}

#[test]
fn a_large_pass_is_split_into_frames_of_at_most_500_ids() {
    // The first pass comes 1.5 s after the start: the runs are all stored by then.
    let h = hub(|c| {
        c.keep = 2;
        c.retention_interval = std::time::Duration::from_millis(1500);
    });
    let port = h.port;
    let all: Vec<String> = (0..1002).map(|i| format!("run_big_{i:04}")).collect();
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let mut app = App::connect(port).await;
        for id in &all {
            finished_run(&mut app, id).await;
        }
        let mut kept = HashSet::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while kept.len() != 2 {
            kept = listed(port).await.into_iter().collect::<HashSet<_>>();
            assert!(tokio::time::Instant::now() < deadline, "{kept:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let doomed: HashSet<String> = all
            .iter()
            .filter(|id| !kept.contains(*id))
            .cloned()
            .collect();
        assert_eq!(doomed.len(), 1000);
        let frames = removed_until(&mut v, &doomed, 20).await;
        let sizes: Vec<usize> = frames.iter().map(Vec::len).collect();
        assert!(sizes.iter().all(|&n| (1..=500).contains(&n)), "{sizes:?}");
    });
}
