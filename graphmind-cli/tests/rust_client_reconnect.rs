//! The Rust client reconnects to a hub that crashed and came back on the same port and
//! database: its replay (the whole ring, original seqs) stores no duplicate, a run that was in
//! flight across the restart is live again as soon as its app is back (never `abandoned`), and
//! it ends with every event stored once; a run made while the hub was down arrives whole.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{
    SpawnedHub, TempDir, block_on, config, kill_hard, labels, restart_on, run_named, runs_once_ok,
    serve_on_free_port, wait_async,
};

#[graphmind::tool]
async fn step_one(n: i64) -> i64 {
    n + 1
}

#[graphmind::tool]
async fn step_two(n: i64) -> i64 {
    n * 10
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

#[test]
fn replay_after_a_hub_restart_stores_no_duplicate_and_the_live_run_goes_on() {
    let dir = TempDir::new("rs-replay");
    let db = dir.0.join("hub.db");
    let first_hub = serve_on_free_port(&dir.0, &db, &[]);
    let port = first_hub.port;
    let home = dir.0.clone();
    block_on(async move {
        let mut first_hub = first_hub;
        let gm = graphmind::Session::new(
            config(port, "rust-agent").retry_interval(Duration::from_millis(200)),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");

        // A finished run, then one that waits in the middle.
        let done = gm
            .run("first", async { step_two(step_one(1).await).await })
            .await;
        assert_eq!(done, Ok(20));
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let second = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run("second", async {
                    let n = step_one(4).await;
                    let _ = go_rx.await;
                    step_two(n).await
                })
                .await
            }
        });

        let (first_id, first_events, second_id) = wait_async(10, "both runs stored", move || {
            let runs = first_hub.runs();
            let first = run_named(&runs, "first")?;
            let second = run_named(&runs, "second")?;
            (first["status"] == json!("ok") && second["eventCount"] == json!(4)).then(|| {
                let id = first["runId"].as_str().unwrap().to_owned();
                let ev = first_hub.events(&id);
                let sid = second["runId"].as_str().unwrap().to_owned();
                // The hub crashes: no close frame, no cleanup.
                kill_hard(&mut first_hub);
                (id, ev, sid)
            })
        })
        .await;
        assert_eq!(first_events.len(), 8);
        let ring = gm.stats().buffered;
        assert_eq!(ring, 8 + 4, "the ring holds both runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!gm.is_attached(), "the client noticed the crash");

        let second_hub = restart_on(&home, port, &db).await;
        // The run the crash interrupted waits for its app (the abandon grace), not live.
        let before = second_hub.get_json(&format!("/api/runs/{second_id}"));
        assert_eq!(before["status"], json!("running"), "{before}");
        assert_eq!(before["live"], json!(false), "{before}");
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");

        // The whole ring comes again, and every frame of it is a duplicate.
        wait_async(10, "the replay processed", move || {
            let s = support::http(port, "GET", "/health", &[], None).json()["stats"].clone();
            (s["duplicates"] == json!(ring)).then_some(())
        })
        .await;
        let health = second_hub.health();
        assert_eq!(health["stats"]["eventsAccepted"], json!(0), "{health}");
        let summary = second_hub.get_json(&format!("/api/runs/{second_id}"));
        assert_eq!(
            summary["status"],
            json!("running"),
            "its app is back: {summary}"
        );
        assert_eq!(summary["live"], json!(true), "{summary}");
        assert_eq!(summary["eventCount"], json!(4));

        go_tx.send(()).expect("the run waits");
        let out = second.await.expect("joined");
        assert_eq!(out, Ok(50));
        gm.dispose().await;

        let runs = runs_once_ok(port, "second", "the second run finished").await;
        check_after(&second_hub, &runs, &first_id, &first_events, &second_id);
    });
}

fn check_after(
    hub: &SpawnedHub,
    runs: &[Value],
    first_id: &str,
    first_events: &[Value],
    second_id: &str,
) {
    assert_eq!(runs.len(), 2, "{runs:?}");
    let first = run_named(runs, "first").expect("first");
    assert_eq!(first["runId"], json!(first_id));
    assert_eq!(first["status"], json!("ok"));
    assert_eq!(
        first["eventCount"],
        json!(8),
        "the replay inflated the count"
    );
    assert_eq!(
        hub.events(first_id),
        first_events,
        "the replay changed stored events"
    );

    let second = run_named(runs, "second").expect("second");
    assert_eq!(second["runId"], json!(second_id));
    assert_eq!(second["eventCount"], json!(8));
    let events = hub.events(second_id);
    assert_eq!(
        labels(&events),
        [
            "run.started",
            "node.started agent:second",
            "node.started tool:step_one",
            "node.finished tool:step_one",
            "node.started tool:step_two",
            "node.finished tool:step_two",
            "node.finished agent:second",
            "run.finished",
        ]
    );
    let s = seqs(&events);
    assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
    // The client's seqs go on across the reconnect (one counter per session).
    assert!(s[0] > *seqs(first_events).last().unwrap(), "{s:?}");
    let health = hub.health();
    assert_eq!(health["stats"]["duplicates"], json!(12), "{health}");
    assert_eq!(health["stats"]["eventsAccepted"], json!(4), "{health}");
}

#[test]
fn a_run_made_while_the_hub_was_down_arrives_whole_when_it_is_back() {
    let dir = TempDir::new("rs-offline");
    let db = dir.0.join("hub.db");
    let mut hub = serve_on_free_port(&dir.0, &db, &["--allow-control", "resume"]);
    let port = hub.port;
    // A breakpoint on the tool: it must not hold while nobody is there to release it.
    let r = hub.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"kind": "tool", "name": "step_one"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    block_on(async {
        let gm = graphmind::Session::new(
            config(port, "rust-agent").retry_interval(Duration::from_millis(200)),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        assert_eq!(gm.breakpoints().len(), 2, "armed: {:?}", gm.breakpoints());
        kill_hard(&mut hub);
        drop(hub);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!gm.is_attached());

        let started = std::time::Instant::now();
        let out = gm
            .run("offline", async { step_two(step_one(2).await).await })
            .await;
        assert_eq!(out, Ok(30));
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "a detached gate waited: {:?}",
            started.elapsed()
        );
        let ring = gm.stats().buffered;

        let back = restart_on(&dir.0, port, &db).await;
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");
        let runs = runs_once_ok(port, "offline", "the offline run stored").await;
        let offline = run_named(&runs, "offline").expect("listed");
        let id = offline["runId"].as_str().unwrap();
        let events = back.events(id);
        assert_eq!(
            labels(&events),
            [
                "run.started",
                "node.started agent:offline",
                "node.started tool:step_one",
                "node.finished tool:step_one",
                "node.started tool:step_two",
                "node.finished tool:step_two",
                "node.finished agent:offline",
                "run.finished",
            ],
            "no exec.paused: the detached gate did not hold"
        );
        assert_eq!(offline["eventCount"], json!(8));
        assert_eq!(offline["live"], json!(false));
        // The ring held exactly that run (the hub of the first start saw none of it).
        assert_eq!(ring, 8);
        assert_eq!(back.health()["stats"]["duplicates"], json!(0));
        gm.dispose().await;
    });
}

#[test]
fn events_the_client_lost_during_an_outage_are_counted_by_the_hub() {
    let dir = TempDir::new("rs-lossy");
    let db = dir.0.join("hub.db");
    let mut hub = serve_on_free_port(&dir.0, &db, &[]);
    let port = hub.port;
    block_on(async {
        // A ring of 4 events: a run of 8 made while the hub is down loses 4. (A detached
        // call that finishes in its first poll is one ring entry of two events, evicted
        // whole: a ring of 3 would keep only the last 2.)
        let gm = graphmind::Session::new(
            config(port, "rust-agent")
                .retry_interval(Duration::from_millis(200))
                .ring_limits(4, 1 << 20),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        kill_hard(&mut hub);
        drop(hub);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let out = gm
            .run("lossy", async { step_two(step_one(0).await).await })
            .await;
        assert_eq!(out, Ok(10));
        let lost = gm.stats().dropped;
        assert_eq!(lost, 4, "{:?}", gm.stats());

        let back = restart_on(&dir.0, port, &db).await;
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");
        let stats = wait_async(10, "the loss announced", move || {
            let s = support::http(port, "GET", "/health", &[], None).json()["stats"].clone();
            (s["eventsAccepted"] == json!(4)).then_some(s)
        })
        .await;
        assert_eq!(stats["clientDropped"], json!(lost), "{stats}");
        let runs = back.runs();
        let r = run_named(&runs, "lossy")
            .or_else(|| runs.first().cloned())
            .expect("the run's tail is stored");
        let events = back.events(r["runId"].as_str().unwrap());
        assert_eq!(
            labels(&events),
            [
                "node.started tool:step_two",
                "node.finished tool:step_two",
                "node.finished agent:lossy",
                "run.finished"
            ],
            "the newest 4 events survive"
        );
        gm.dispose().await;
    });
}
