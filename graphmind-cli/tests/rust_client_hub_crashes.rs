//! The hub crashes (SIGKILL) and comes back on the same port and database three times (once
//! right as the apps' replays come in, before its writer surely committed them), and stops
//! cleanly (SIGTERM) and comes back once, while four Rust-client apps make eight runs at once:
//! one run of each app ends somewhere between the stops, the other goes on across all of
//! them. Every run ends up stored exactly as its app made it — each event once, none lost,
//! none duplicated, every node execution finished — and finished `ok` in the API, in the
//! stored row and in `graphmind record`; the hub holds exactly those eight runs.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    SpawnedHub, TempDir, block_on, config, gm, kill_hard, labels, read, run_named, serve_on,
    serve_on_free_port, wait_async,
};
use tokio::sync::watch;

/// Apps (one session each), runs per app, tool calls per run.
const APPS: i64 = 4;
const RUNS: i64 = 2;
const CALLS: i64 = 150;
/// The events of one run: run.started, the agent node's start and finish, two per tool call,
/// run.finished.
const EVENTS: usize = 4 + 2 * CALLS as usize;
/// The call of the held runs (run 1 of each app) that waits until the last restart is done,
/// so they span every stop and end on the last hub: near their end, so they send events
/// through most stops…
const HOLD_LATE: i64 = CALLS - 10;
/// …or early, so they are quiet through every stop and only their apps' replays can reclaim
/// them.
const HOLD_EARLY: i64 = 15;
/// Milliseconds each call of run 1 takes; run 0 of app `a` takes `4 + 4a` per call, so those
/// runs end at different moments between the stops.
const HELD_CALL_MS: u64 = 15;

/// How the hub goes down.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// SIGKILL: no close frame, no flush, no cleanup.
    Kill,
    /// SIGTERM: the clean shutdown.
    Term,
}

/// When a hub goes down.
#[derive(Debug, Clone, Copy)]
enum When {
    /// This many milliseconds after it was started, once an app is attached.
    UpFor(u64),
    /// As soon as it took in this many frames: right as the apps reconnect and replay (a
    /// replay takes a few ms, so it is mostly in, but maybe not yet committed).
    FramesIn(u64),
}

/// The stops, in order: when the hub goes down, how, and how long (ms) it stays down before
/// it is started again on the same port and database.
type Stops = [(When, Stop, u64)];

/// Three crashes and a clean stop, with the hub down for no time up to a quarter second.
const STOPS: [(When, Stop, u64); 4] = [
    (When::UpFor(300), Stop::Kill, 0),
    (When::UpFor(550), Stop::Kill, 250),
    (When::FramesIn(60), Stop::Kill, 0),
    (When::UpFor(550), Stop::Term, 100),
];

/// Stops after which the hub stays down 300 ms: the apps' next attempt comes 600 ms after
/// they lost it (their back-off), so a hub with a grace of `SHORT_GRACE_MS` abandons their
/// runs before they are back.
const LONG_STOPS: [(When, Stop, u64); 4] = [
    (When::UpFor(300), Stop::Kill, 300),
    (When::UpFor(400), Stop::Kill, 300),
    (When::UpFor(400), Stop::Term, 300),
    (When::UpFor(400), Stop::Kill, 300),
];
const SHORT_GRACE_MS: u64 = 100;

/// What the hub had seen when it went down (for the failure message).
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // read through Debug
struct StopLog {
    how: Stop,
    up_for: Duration,
    calls_made: u64,
    runs_done: usize,
    apps: u64,
    frames_in: u64,
    accepted: u64,
    duplicates: u64,
    /// From the stop until the next hub listened.
    down_for: Duration,
    /// Runs listed `abandoned` right before the stop (only watched with a short abandon
    /// grace).
    abandoned: usize,
    /// Runs the next hub listed `abandoned` before their apps were back (only watched with
    /// a short abandon grace).
    abandoned_next: usize,
}

#[graphmind::tool]
async fn crunch(app: i64, run: i64, n: i64, ms: u64) -> i64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    value(app, run, n)
}

fn value(app: i64, run: i64, n: i64) -> i64 {
    app * 1_000_000 + run * 1_000 + n
}

fn run_name(app: i64, run: i64) -> String {
    format!("app{app}-run{run}")
}

/// Milliseconds each call of run `run` of app `app` takes.
fn call_ms(app: i64, run: i64) -> u64 {
    if run == 1 {
        HELD_CALL_MS
    } else {
        4 + 4 * u64::try_from(app).expect("app index")
    }
}

/// One run of `app`: `CALLS` calls of `crunch` with distinct arguments, one after the other;
/// in run 1 the call `hold_at` first waits for `go`, and the calls from there on take 2 ms.
/// Counts the calls made in `made`.
async fn one_run(
    gm: graphmind::Session,
    (app, run, hold_at): (i64, i64, i64),
    made: Arc<AtomicU64>,
    mut go: watch::Receiver<bool>,
) -> Result<i64, graphmind::Aborted> {
    let mut ms = call_ms(app, run);
    gm.run(run_name(app, run), async move {
        let mut sum = 0;
        for n in 0..CALLS {
            if run == 1 && n == hold_at {
                let _ = go.wait_for(|g| *g).await;
                ms = 2;
            }
            let out = crunch(app, run, n, ms).await;
            assert_eq!(out, value(app, run, n));
            sum += out;
            made.fetch_add(1, Relaxed);
        }
        sum
    })
    .await
}

#[test]
fn hub_crashes_and_restarts_lose_and_duplicate_no_event_of_live_rust_runs() {
    let stops = chaos(&STOPS, None, HOLD_LATE);
    // The hubs after the first took in the apps' replays, deduplicated, before going down.
    assert!(stops[1..].iter().any(|s| s.duplicates > 0), "{stops:#?}");
}

#[test]
fn runs_abandoned_while_the_hub_was_down_are_reclaimed_by_the_replay_and_end_ok() {
    let stops = chaos(&LONG_STOPS, Some(SHORT_GRACE_MS), HOLD_EARLY);
    // A hub after a stop abandons unfinished runs before their apps are back (at least the
    // four held ones) — and the runs still end `ok`, checked by `chaos`. On a loaded machine
    // an app can reconnect before a hub's grace ran out after some stop, so at least one stop
    // must have abandoned them all (that is what the replay has to reclaim), not every one.
    assert!(
        stops.iter().any(|s| s.abandoned_next >= APPS as usize),
        "no hub abandoned the held runs before their apps were back: {stops:#?}"
    );
    // With every app back (and 400 ms to replay), none of their runs is abandoned: not even
    // the held ones, which sent nothing new since. A loaded machine can stretch a replay past
    // those 400 ms before some stop, so this holds at one stop at least; that every run ends
    // `ok` on the last hub is checked by `chaos` in any case.
    assert!(
        stops
            .iter()
            .any(|s| s.apps == APPS as u64 && s.abandoned == 0),
        "no hub had every app back and none of their runs abandoned: {stops:#?}"
    );
}

/// Four apps make their eight runs while the hub goes through `stops` (hubs started with
/// `--abandon-grace-ms grace` when given; the held runs wait at call `hold_at` until the last
/// restart); then checks that every run is stored exactly as made, finished `ok`. Returns
/// what each stop saw.
fn chaos(stops_plan: &Stops, grace: Option<u64>, hold_at: i64) -> Vec<StopLog> {
    let started = Instant::now();
    let dir = TempDir::new("hub-crashes");
    // The default path, where `SpawnedHub::open_db` reads the stored rows.
    let db = dir.0.join("graphmind.db");
    let grace_ms = grace.map(|g| g.to_string());
    let extra: Vec<String> = grace_ms
        .iter()
        .map(|g| format!("GRAPHMIND_ABANDON_GRACE_MS={g}"))
        .collect();
    let first = {
        let e: Vec<&str> = extra.iter().map(String::as_str).collect();
        serve_on_free_port(&dir.0, &db, &e)
    };
    let port = first.port;
    let home = dir.0.clone();
    let (hub, sessions, last_seqs, stops) = block_on(async move {
        let sessions: Vec<graphmind::Session> = (0..APPS)
            .map(|a| {
                graphmind::Session::new(
                    config(port, &format!("chaos-{a}"))
                        .retry_interval(Duration::from_millis(200))
                        .on_loop(graphmind::OnLoop::Off),
                )
            })
            .collect();
        for gm in &sessions {
            assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        }
        let made = Arc::new(AtomicU64::new(0));
        let (go_tx, go_rx) = watch::channel(false);
        let mut runs = Vec::new();
        for (a, gm) in (0..APPS).zip(&sessions) {
            for r in 0..RUNS {
                let fut = one_run(
                    gm.clone(),
                    (a, r, hold_at),
                    Arc::clone(&made),
                    go_rx.clone(),
                );
                runs.push((a, r, tokio::spawn(fut)));
            }
        }

        let mut hub = first;
        let mut up_since = Instant::now();
        let mut stops = Vec::new();
        for &(when, how, down_ms) in stops_plan {
            let health = match when {
                When::UpFor(ms) => {
                    tokio::time::sleep_until((up_since + Duration::from_millis(ms)).into()).await;
                    // A crash of a hub no app reached yet would prove nothing.
                    wait_async(10, "an app attached", move || {
                        let h = read(port, "/health").json();
                        (h["apps"].as_u64() >= Some(1)).then_some(h)
                    })
                    .await
                }
                // Polled closely (not `wait_async`'s 20 ms): a replay takes only a few ms.
                When::FramesIn(n) => tokio::task::spawn_blocking(move || {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    loop {
                        let h = read(port, "/health").json();
                        if h["stats"]["framesIn"].as_u64() >= Some(n) {
                            return h;
                        }
                        assert!(Instant::now() < deadline, "no replay within 10 s");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
                .await
                .expect("join"),
            };
            let log = StopLog {
                how,
                up_for: up_since.elapsed(),
                calls_made: made.load(Relaxed),
                runs_done: runs.iter().filter(|(_, _, h)| h.is_finished()).count(),
                apps: health["apps"].as_u64().unwrap_or(0),
                frames_in: health["stats"]["framesIn"].as_u64().unwrap_or(0),
                accepted: health["stats"]["eventsAccepted"].as_u64().unwrap_or(0),
                duplicates: health["stats"]["duplicates"].as_u64().unwrap_or(0),
                down_for: Duration::ZERO,
                abandoned: if grace.is_some() {
                    abandoned_now(port).await
                } else {
                    0
                },
                abandoned_next: 0,
            };
            let t = Instant::now();
            match how {
                Stop::Kill => kill_hard(&mut hub),
                Stop::Term => {
                    let status = tokio::task::spawn_blocking(move || {
                        let s = hub.terminate();
                        (s, hub)
                    })
                    .await
                    .expect("join");
                    assert!(status.0.success(), "SIGTERM: {:?}", status.0);
                    hub = status.1;
                }
            }
            drop(hub);
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            hub = restart(&home, port, &db, &extra).await;
            up_since = Instant::now();
            let down_for = t.elapsed();
            let abandoned_next = if grace.is_some() {
                abandoned_before_the_apps_are_back(port).await
            } else {
                0
            };
            stops.push(StopLog {
                down_for,
                abandoned_next,
                ..log
            });
        }
        go_tx.send(true).expect("the runs wait");

        for (a, r, handle) in runs {
            let out = tokio::time::timeout(Duration::from_secs(30), handle)
                .await
                .unwrap_or_else(|_| panic!("{} did not end", run_name(a, r)))
                .expect("joined");
            let want: i64 = (0..CALLS).map(|n| value(a, r, n)).sum();
            assert_eq!(out, Ok(want), "{}", run_name(a, r));
        }
        let mut last_seqs = Vec::new();
        for (a, gm) in (0..APPS).zip(&sessions) {
            assert!(
                gm.ready(Duration::from_secs(10)).await,
                "app {a} is attached to the last hub"
            );
            let s = gm.stats();
            assert_eq!(s.dropped, 0, "app {a}: {s:?}");
            assert_eq!(s.buffered, RUNS as usize * EVENTS, "app {a}: {s:?}");
            last_seqs.push(s.last_seq.expect("seqs handed out"));
        }
        (hub, sessions, last_seqs, stops)
    });
    let crash_took = started.elapsed();

    // Every app replays its ring to the last hub: wait (bounded) until each run is stored
    // whole and finished, then check everything.
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && !all_stored(&hub) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = diagnosis(&hub);
    let mut problems = Vec::new();
    for a in 0..APPS {
        let mut seqs_of_app: Vec<u64> = Vec::new();
        for r in 0..RUNS {
            let (events, errs) = check_run(&hub, a, r);
            problems.extend(errs);
            seqs_of_app.extend(events.iter().filter_map(|e| e["seq"].as_u64()));
        }
        seqs_of_app.sort_unstable();
        let n = seqs_of_app.len();
        seqs_of_app.dedup();
        if seqs_of_app.len() != n {
            problems.push(format!("app {a}: a seq is stored in both its runs"));
        }
        let idx = usize::try_from(a).expect("index");
        if seqs_of_app.last().is_some_and(|s| *s > last_seqs[idx]) {
            problems.push(format!(
                "app {a}: a stored seq is beyond the last one it handed out ({})",
                last_seqs[idx]
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}\n\nper run:\n{report}\nstops: {stops:#?}",
        problems.len(),
        problems.join("\n")
    );

    let runs = hub.runs();
    assert_eq!(runs.len(), (APPS * RUNS) as usize, "{report}");
    // `graphmind record` gives the same envelopes.
    for s in &runs {
        let id = s["runId"].as_str().expect("runId");
        let out = gm(&hub.home, &["record", id, "--port", &port.to_string()]).expect(0);
        let recorded: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("NDJSON"))
            .collect();
        assert_eq!(recorded, hub.events(id), "graphmind record {id}");
    }
    let health = hub.health();
    assert_eq!(health["runs"], json!(APPS * RUNS), "{health}");
    assert_eq!(health["pauses"], json!(0), "{health}");
    let stats = &health["stats"];
    assert_eq!(stats["invalidFrames"], json!(0), "{health}");
    assert_eq!(stats["clientDropped"], json!(0), "{health}");
    // Each app's whole ring reached this hub at least once (replayed or live).
    let seen =
        stats["eventsAccepted"].as_u64().unwrap_or(0) + stats["duplicates"].as_u64().unwrap_or(0);
    assert!(
        seen >= (APPS * RUNS) as u64 * EVENTS as u64,
        "the last hub saw {seen} events: {health}"
    );
    block_on(async move {
        for gm in sessions {
            gm.dispose().await;
        }
    });
    eprintln!(
        "{APPS} apps × {RUNS} runs × {CALLS} calls across {} stops: runs {crash_took:?}, all {:?}; stops {stops:#?}",
        stops_plan.len(),
        started.elapsed()
    );
    stops
}

/// The hub started again on `port` with the same home and database, off the runtime.
async fn restart(home: &Path, port: u16, db: &Path, extra: &[String]) -> SpawnedHub {
    let (home, db, extra) = (home.to_path_buf(), db.to_path_buf(), extra.to_vec());
    tokio::task::spawn_blocking(move || {
        let e: Vec<&str> = extra.iter().map(String::as_str).collect();
        serve_on(&home, port, &db, &e).expect("restart on the same port")
    })
    .await
    .expect("join")
}

/// How many runs the hub on `port` lists `abandoned`, off the runtime.
async fn abandoned_now(port: u16) -> usize {
    tokio::task::spawn_blocking(move || abandoned_of(port))
        .await
        .expect("join")
}

fn abandoned_of(port: u16) -> usize {
    read(port, "/api/runs").json()["runs"]
        .as_array()
        .map_or(0, |runs| {
            runs.iter().filter(|r| r["status"] == "abandoned").count()
        })
}

/// How many runs the hub on `port` lists `abandoned` once it has any (within 5 s); 0 if an
/// app came back first.
async fn abandoned_before_the_apps_are_back(port: u16) -> usize {
    wait_async(5, "runs abandoned or an app back", move || {
        let h = read(port, "/health").json();
        let n = abandoned_of(port);
        (n > 0 || h["apps"].as_u64() > Some(0)).then_some(n)
    })
    .await
}

/// Whether all eight runs are listed `ok` with all their events, and stored `ok`.
fn all_stored(hub: &SpawnedHub) -> bool {
    let runs = hub.runs();
    runs.len() == (APPS * RUNS) as usize
        && (0..APPS).all(|a| {
            (0..RUNS).all(|r| {
                run_named(&runs, &run_name(a, r)).is_some_and(|s| {
                    s["status"] == json!("ok")
                        && s["eventCount"] == json!(EVENTS)
                        && s["runId"]
                            .as_str()
                            .is_some_and(|id| hub.stored_status(id) == "ok")
                })
            })
        })
}

/// A line per listed run: name, status, stored status, events stored per type, seq range.
fn diagnosis(hub: &SpawnedHub) -> String {
    let mut out = String::new();
    for s in hub.runs() {
        let id = s["runId"].as_str().unwrap_or("?");
        let events = hub.events(id);
        let mut per_type: BTreeMap<String, usize> = BTreeMap::new();
        for t in support::types(&events) {
            *per_type.entry(t).or_default() += 1;
        }
        let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
        out.push_str(&format!(
            "{} {id}: listed {} ({} events, live {}), stored {}, {per_type:?}, seqs {:?}..{:?}\n",
            s["name"],
            s["status"],
            s["eventCount"],
            s["live"],
            hub.stored_status(id),
            seqs.first(),
            seqs.last(),
        ));
    }
    out
}

/// The stored events of run `r` of app `a`, and what is wrong with them: anything else than
/// exactly the events the app made, in order, once each.
fn check_run(hub: &SpawnedHub, a: i64, r: i64) -> (Vec<Value>, Vec<String>) {
    let name = run_name(a, r);
    let mut errs = Vec::new();
    let runs = hub.runs();
    let Some(summary) = run_named(&runs, &name) else {
        return (Vec::new(), vec![format!("{name}: not listed")]);
    };
    let id = summary["runId"].as_str().expect("runId").to_owned();
    let events = hub.events(&id);
    let mut bad = |what: String| errs.push(format!("{name} ({id}): {what}"));

    if summary["status"] != json!("ok") || summary["eventCount"] != json!(EVENTS) {
        bad(format!("listed as {summary}"));
    }
    if summary["app"] != json!(format!("chaos-{a}")) {
        bad(format!("app {}", summary["app"]));
    }
    let stored = hub.stored_status(&id);
    if stored != "ok" {
        bad(format!("stored status {stored}"));
    }

    // Seqs: strictly increasing, so each stored once.
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    let mut dup: Vec<u64> = seqs
        .windows(2)
        .filter(|w| w[0] >= w[1])
        .map(|w| w[1])
        .collect();
    dup.dedup();
    if !dup.is_empty() {
        bad(format!("seqs out of order or repeated: {dup:?}"));
    }

    // The exact sequence the app made.
    let mut want = vec![
        "run.started".to_owned(),
        format!("node.started agent:{name}"),
    ];
    for _ in 0..CALLS {
        want.push("node.started tool:crunch".to_owned());
        want.push("node.finished tool:crunch".to_owned());
    }
    want.push(format!("node.finished agent:{name}"));
    want.push("run.finished".to_owned());
    let got = labels(&events);
    if got != want {
        let first_diff = got.iter().zip(&want).position(|(g, w)| g != w);
        bad(format!(
            "{} events stored, {} made; first difference at {first_diff:?} (seq {:?})",
            got.len(),
            want.len(),
            first_diff.and_then(|i| seqs.get(i))
        ));
    }
    // Each call once, in order, with its own arguments and result.
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "node.started" && e["payload"]["nodeId"] == "tool:crunch")
        .collect();
    let ns: Vec<i64> = calls
        .iter()
        .filter_map(|e| e["payload"]["input"]["n"].as_i64())
        .collect();
    if ns != (0..CALLS).collect::<Vec<_>>() {
        let missing: Vec<i64> = (0..CALLS).filter(|n| !ns.contains(n)).collect();
        let mut sorted = ns.clone();
        sorted.sort_unstable();
        let repeated: Vec<i64> = sorted
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        bad(format!(
            "calls stored {}: missing n {missing:?}, repeated n {repeated:?}",
            ns.len()
        ));
    }
    for c in &calls {
        let input = &c["payload"]["input"];
        if input["app"] != json!(a) || input["run"] != json!(r) {
            bad(format!("a call of another run: {input}"));
        }
    }
    // Every node execution that started finished once, ok, with the tool's result.
    let mut finished: HashMap<String, Vec<&Value>> = HashMap::new();
    for e in events.iter().filter(|e| e["type"] == "node.finished") {
        let inst = e["payload"]["instanceId"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        finished.entry(inst).or_default().push(e);
    }
    let starts: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "node.started")
        .collect();
    for s in &starts {
        let inst = s["payload"]["instanceId"].as_str().unwrap_or("?");
        match finished.get(inst).map(Vec::as_slice) {
            Some([f]) => {
                if f["payload"]["status"] != json!("ok") {
                    bad(format!("{inst} finished {}", f["payload"]["status"]));
                }
                if let Some(n) = s["payload"]["input"]["n"].as_i64()
                    && f["payload"]["output"] != json!(value(a, r, n))
                {
                    bad(format!(
                        "{inst} (n {n}) returned {}",
                        f["payload"]["output"]
                    ));
                }
            }
            other => bad(format!(
                "{inst} finished {} times",
                other.map_or(0, <[&Value]>::len)
            )),
        }
    }
    if finished.len() != starts.len() {
        bad(format!(
            "{} executions started, {} finished",
            starts.len(),
            finished.len()
        ));
    }
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "run.finished")
        .collect();
    if ends.len() != 1 || ends[0]["payload"]["status"] != json!("ok") {
        bad(format!("run.finished: {ends:?}"));
    }
    (events, errs)
}
