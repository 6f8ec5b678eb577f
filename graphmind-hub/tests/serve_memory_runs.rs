//! A long-lived hub keeps at most `--memory-runs` finished runs in memory (`/health` `runs`);
//! older ones leave memory oldest first but stay stored, and every read still answers for
//! them from the database: the run list (HTTP and the viewer's hello), one run's summary, its
//! events. An event of an evicted run (an app replaying its ring) finds the stored run: it is
//! deduplicated and counted on the stored run instead of starting a new, empty one. Runs still
//! running or holding a pause never leave memory.

mod support;

use serde_json::{Value, json};
use support::{App, InProcessHub, Peer, TempDir, hub, run_ids, runtime, wait_for};

const CAP: usize = 5;

fn run_id(i: usize) -> String {
    format!("run_mem_{i:03}")
}

/// A short run: started, one node, finished ok (4 events).
async fn short_run(app: &mut App, run: &str) {
    app.start_run(run, &format!("job-{run}")).await;
    app.emit(
        run,
        "node.started",
        json!({"nodeId": "tool:work", "kind": "tool", "name": "work", "instanceId": format!("call_{run}"), "input": {"n": 1}}),
    )
    .await;
    app.emit(
        run,
        "node.finished",
        json!({"nodeId": "tool:work", "instanceId": format!("call_{run}"), "durationMs": 1.0, "status": "ok", "output": 2}),
    )
    .await;
    app.emit(run, "run.finished", json!({"status": "ok"})).await;
}

fn memory_runs(h: &InProcessHub) -> usize {
    usize::try_from(h.health()["runs"].as_u64().expect("runs in /health")).expect("fits")
}

fn summary(h: &InProcessHub, run: &str) -> Value {
    let r = h.get(&format!("/api/runs/{run}"));
    assert_eq!(r.status, 200, "GET /api/runs/{run}: {}", r.body);
    r.json()
}

fn listed_ids(h: &InProcessHub, limit: usize) -> Vec<String> {
    run_ids(
        h.get_json(&format!("/api/runs?limit={limit}"))["runs"]
            .as_array()
            .expect("runs"),
    )
}

#[test]
fn finished_runs_beyond_the_cap_leave_memory_and_are_read_from_storage() {
    let cap = CAP.to_string();
    let rt = runtime();
    let h = hub(|c| c.memory_runs = cap.parse().unwrap());
    let n = 30;
    let mut app = rt.block_on(async {
        let mut app = App::connect(h.port).await;
        for i in 0..n {
            short_run(&mut app, &run_id(i)).await;
        }
        app
    });
    wait_for(10, "all events accepted", || {
        (h.health()["stats"]["eventsAccepted"] == json!(4 * n)).then_some(())
    });
    wait_for(10, "memory down to the cap", || {
        (memory_runs(&h) == CAP).then_some(())
    });
    let health = h.health();
    assert_eq!(health["stats"]["runsEvicted"], json!(n - CAP), "{health}");
    assert_eq!(health["stats"]["invalidFrames"], json!(0), "{health}");

    // The list still has every run, newest first, the evicted ones from storage.
    let expected: Vec<String> = (0..n).rev().map(run_id).collect();
    assert_eq!(listed_ids(&h, 200), expected);
    assert_eq!(listed_ids(&h, 7), expected[..7].to_vec());
    let listed = h.get_json("/api/runs")["runs"].clone();
    let oldest = listed
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["runId"] == json!(run_id(0)))
        .expect("the oldest run is listed")
        .clone();
    assert_eq!(oldest["status"], json!("ok"), "{oldest}");
    assert_eq!(oldest["live"], json!(false), "{oldest}");
    assert_eq!(oldest["eventCount"], json!(4), "{oldest}");
    assert_eq!(
        oldest["name"],
        json!(format!("job-{}", run_id(0))),
        "{oldest}"
    );

    // One evicted run: its summary and its events.
    let s = summary(&h, &run_id(0));
    assert_eq!(s, oldest, "the summary matches the listed one");
    assert!(s["durationMs"].as_u64().is_some(), "{s}");
    let events = h.events(&run_id(0));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        kinds,
        [
            "run.started",
            "node.started",
            "node.finished",
            "run.finished"
        ]
    );
    assert_eq!(h.get("/api/runs/run_never_seen").status, 404);
    assert_eq!(h.get("/api/runs/run_never_seen/events").status, 404);

    // A viewer's hello lists them too, and a subscription replays an evicted run.
    let (hello, replayed) = rt.block_on(async {
        let mut viewer = Peer::viewer(h.port).await;
        let hello = viewer.until(5000, |v| v["type"] == "hello").await;
        viewer
            .send(&json!({"type": "subscribe", "runId": run_id(0)}))
            .await;
        let mut replayed = Vec::new();
        loop {
            let f = viewer
                .until(5000, |v| v["type"] == "events" || v["type"] == "replayed")
                .await;
            if f["type"] == "replayed" {
                break;
            }
            assert_eq!(f["runId"], json!(run_id(0)), "{f}");
            replayed.extend(f["events"].as_array().expect("events").iter().cloned());
        }
        (hello, replayed)
    });
    assert_eq!(replayed, events, "the replay is the stored events");
    let hello_ids = run_ids(hello["runs"].as_array().expect("runs"));
    assert_eq!(hello_ids, expected);

    // The app replays an evicted run (duplicates) and then reports one more event of it: the
    // stored run is found, nothing is stored twice, and the run keeps its name and status.
    let first = events[0].clone();
    rt.block_on(async {
        app.peer.send(&first).await;
        app.emit(
            &run_id(0),
            "node.started",
            json!({"nodeId": "tool:late", "kind": "tool", "name": "late", "instanceId": "call_late"}),
        )
        .await;
    });
    wait_for(10, "the late event", || {
        (h.events(&run_id(0)).len() == 5).then_some(())
    });
    let health = h.health();
    assert_eq!(health["stats"]["duplicates"], json!(1), "{health}");
    let s = summary(&h, &run_id(0));
    assert_eq!(s["status"], json!("ok"), "{s}");
    assert_eq!(s["eventCount"], json!(5), "{s}");
    assert_eq!(s["name"], json!(format!("job-{}", run_id(0))), "{s}");
    assert_eq!(
        s["startedAt"], oldest["startedAt"],
        "the stored start is kept"
    );
    // It came back into memory and leaves again.
    wait_for(10, "memory back at the cap", || {
        (memory_runs(&h) == CAP).then_some(())
    });
    assert_eq!(listed_ids(&h, 200), expected);
}

#[test]
fn running_and_paused_runs_stay_in_memory_however_old() {
    let cap = CAP.to_string();
    let rt = runtime();
    let h = hub(|c| {
        c.memory_runs = cap.parse().unwrap();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let n = 12;
    let mut app = rt.block_on(async {
        let mut app = App::running(h.port, "run_aaa_running", "long-job").await;
        app.start_run("run_aab_paused", "held-job").await;
        app.pause_at(
            "run_aab_paused",
            "search",
            "pause_held_1",
            "before",
            json!({"q": 1}),
        )
        .await;
        for i in 0..n {
            short_run(&mut app, &run_id(i)).await;
        }
        app
    });
    wait_for(10, "memory down to the cap plus the two open runs", || {
        (memory_runs(&h) == CAP + 2).then_some(())
    });
    // Eviction keeps going while they are there: still CAP finished runs after a while.
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(memory_runs(&h), CAP + 2);
    let s = summary(&h, "run_aaa_running");
    assert_eq!(s["status"], json!("running"), "{s}");
    assert_eq!(s["live"], json!(true), "{s}");
    let p = h.get_json("/api/pauses?runId=run_aab_paused");
    assert_eq!(p["pauses"][0]["pauseId"], json!("pause_held_1"), "{p}");
    assert_eq!(p["pauses"][0]["input"], json!({"q": 1}), "{p}");

    // The held gate is still resumable through its app.
    let port = h.port;
    let token = h.agent_token.clone();
    rt.block_on(async {
        let resume = tokio::spawn(support::resume_async(
            port,
            token,
            "run_aab_paused".into(),
            "pause_held_1".into(),
            json!({"action": "continue"}),
        ));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["pauseId"], json!("pause_held_1"));
        app.emit(
            "run_aab_paused",
            "exec.resumed",
            json!({"pauseId": "pause_held_1", "action": "continue"}),
        )
        .await;
        let r = resume.await.expect("join");
        assert_eq!(r.status, 200, "{}", r.body);
        // Both finish: now they are ordinary finished runs, the oldest, and leave memory.
        app.emit("run_aab_paused", "run.finished", json!({"status": "ok"}))
            .await;
        app.emit(
            "run_aaa_running",
            "run.finished",
            json!({"status": "error"}),
        )
        .await;
    });
    wait_for(10, "the two old runs evicted", || {
        (memory_runs(&h) == CAP).then_some(())
    });
    let s = summary(&h, "run_aaa_running");
    assert_eq!(s["status"], json!("error"), "{s}");
    assert_eq!(s["eventCount"], json!(2), "{s}");
    let ids = listed_ids(&h, 200);
    assert_eq!(ids.len(), n + 2);
    assert_eq!(ids[n..], ["run_aab_paused", "run_aaa_running"]);
}

#[test]
fn a_restarted_hub_loads_only_the_newest_runs_that_fit_in_memory_and_older_running_ones() {
    let rt = runtime();
    let dir = TempDir::new("memory-restart");
    let n = 30;
    {
        // A first start with room for every run: one left running (its app stays until the
        // stop), then `n` finished ones.
        let s = InProcessHub::start_in(&dir.0, |_| {});
        let app = rt.block_on(async {
            let mut app = App::running(s.port, "run_aaa_left_running", "left").await;
            for i in 0..n {
                short_run(&mut app, &run_id(i)).await;
            }
            app
        });
        wait_for(10, "every event accepted", || {
            (s.health()["stats"]["eventsAccepted"] == json!(1 + 4 * n)).then_some(())
        });
        drop(app);
        s.stop();
    }
    let s = InProcessHub::start_in(&dir.0, |c| {
        c.memory_runs = CAP;
        c.abandon_grace = std::time::Duration::from_millis(800);
    });
    // From the start memory holds the newest CAP runs and the old running one; nothing had to
    // be evicted (a start used to read every kept run and trim them afterwards).
    assert_eq!(memory_runs(&s), CAP + 1, "{}", s.health());
    std::thread::sleep(std::time::Duration::from_millis(600));
    let health = s.health();
    assert_eq!(health["stats"]["runsEvicted"], json!(0), "{health}");
    assert_eq!(memory_runs(&s), CAP + 1, "{health}");
    // The rest is read from storage: the list, a summary, the events.
    let mut expected: Vec<String> = (0..n).rev().map(run_id).collect();
    expected.push("run_aaa_left_running".into());
    assert_eq!(listed_ids(&s, 200), expected);
    let oldest = summary(&s, &run_id(0));
    assert_eq!(oldest["status"], json!("ok"), "{oldest}");
    assert_eq!(oldest["eventCount"], json!(4), "{oldest}");
    assert_eq!(s.events(&run_id(0)).len(), 4);
    // The old running run gets the abandon grace as before.
    wait_for(10, "the unclaimed run abandoned", || {
        (summary(&s, "run_aaa_left_running")["status"] == json!("abandoned")).then_some(())
    });
    s.stop();
}
