//! A debugger that misbehaves in every way at once while eight runs make tool calls through
//! gates: it resumes with random actions, drops connections, dies and comes back, hangs,
//! flips breakpoints and step mode. Whatever happens, every call ends with its real result
//! (or the injected one), nothing stays held, every frame is schema-valid, each connection
//! sees strictly increasing seqs, and the final replay tells the whole story: every node
//! that started finished and every pause was resumed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame, frame};
use serde_json::json;

const WORKERS: u64 = 8;
const CALLS: u64 = 150;
const INJECTED: u64 = 1_000_000;

#[graphmind::tool]
async fn double(x: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(10)).await;
    x * 2
}

/// xorshift64: the controller's choices (timing still varies from run to run).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Pauses announced and not yet resumed, by pauseId, with their run.
fn open_pauses(frames: &[Frame]) -> Vec<(String, String)> {
    let resumed: HashSet<&str> = frames
        .iter()
        .filter(|f| f.kind() == "exec.resumed")
        .filter_map(|f| f.payload()["pauseId"].as_str())
        .collect();
    let mut open: Vec<(String, String)> = frames
        .iter()
        .filter(|f| f.kind() == "exec.paused")
        .filter_map(|f| {
            let id = f.payload()["pauseId"].as_str()?;
            (!resumed.contains(id)).then(|| (id.to_owned(), f.run_id().to_owned()))
        })
        .collect();
    open.sort();
    open.dedup();
    open
}

/// What the debugger does next.
#[derive(Debug, Clone, Copy)]
enum Act {
    ResumeAll,
    DropConnections,
    KillAndRestart,
    Hang,
    ClearBreakpoint,
    SetBreakpoint,
    Mode,
    Junk,
}

/// The first moves cover every kind of misbehaviour once, between resumes; then random
/// ones, mostly resumes.
const SCRIPT: [Act; 25] = {
    use Act::{
        ClearBreakpoint, DropConnections, Hang, Junk, KillAndRestart, Mode, ResumeAll,
        SetBreakpoint,
    };
    [
        ResumeAll,
        ResumeAll,
        ResumeAll,
        DropConnections,
        ResumeAll,
        ResumeAll,
        ResumeAll,
        Mode,
        ResumeAll,
        ResumeAll,
        ResumeAll,
        KillAndRestart,
        ResumeAll,
        ResumeAll,
        SetBreakpoint,
        ResumeAll,
        ResumeAll,
        Junk,
        ResumeAll,
        ClearBreakpoint,
        ResumeAll,
        SetBreakpoint,
        ResumeAll,
        ResumeAll,
        Hang,
    ]
};

fn next_act(step: usize, rng: &mut Rng) -> Act {
    if let Some(act) = SCRIPT.get(step) {
        return *act;
    }
    match rng.below(100) {
        0..=54 => Act::ResumeAll,
        55..=62 => Act::DropConnections,
        63..=66 => Act::KillAndRestart,
        67..=68 => Act::Hang,
        69..=74 => Act::ClearBreakpoint,
        75..=89 => Act::SetBreakpoint,
        90..=94 => Act::Mode,
        _ => Act::Junk,
    }
}

async fn misbehave(hub: &FakeDebugger, act: Act, rng: &mut Rng) {
    match act {
        Act::ResumeAll => {
            for (pause, run) in open_pauses(&hub.frames()) {
                match rng.below(3) {
                    0 => hub.resume(&run, &pause, "continue"),
                    1 => hub.resume(&run, &pause, "retry"),
                    _ => hub.inject(&run, &pause, json!(INJECTED)),
                };
            }
        }
        Act::DropConnections => hub.drop_connections(),
        Act::KillAndRestart => {
            hub.kill();
            tokio::time::sleep(Duration::from_millis(rng.below(30))).await;
            hub.restart().await;
        }
        Act::Hang => {
            // Longer than the liveness budget below: the client must call it dead.
            hub.freeze(true);
            tokio::time::sleep(Duration::from_millis(350)).await;
            hub.freeze(false);
        }
        Act::ClearBreakpoint => {
            hub.breakpoint_clear(json!({"name": "double"}));
        }
        Act::SetBreakpoint => {
            let point = ["before", "after"][usize::from(rng.below(2) == 1)];
            hub.breakpoint_set(json!({"name": "double", "point": point}));
        }
        Act::Mode => {
            hub.mode_set(["run", "step"][usize::from(rng.below(2) == 1)]);
        }
        Act::Junk => {
            // Frames the client must ignore.
            hub.send_raw(
                r#"{"gm":1,"seq":1,"ts":0,"runId":"*","type":"exec.resume","payload":{"pauseId":5}}"#,
            );
            hub.send_raw("not json at all");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debugger_that_misbehaves_in_every_way_never_wedges_or_corrupts_a_run() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "double"})]);
    let gm = graphmind::Session::new(
        hub.config("chaos")
            .liveness(Duration::from_millis(100), Duration::from_millis(300))
            .retry_interval(Duration::from_millis(100)),
    );
    assert!(gm.ready(Duration::from_secs(2)).await);

    let done = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let gm = gm.clone();
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                let out = gm
                    .run(format!("worker-{w}"), async move {
                        let mut injected = 0;
                        for i in 0..CALLS {
                            let x = w * 1000 + i;
                            let got = double(x).await;
                            if got == INJECTED {
                                injected += 1;
                            } else {
                                assert_eq!(got, x * 2, "a wrong result for {x}");
                            }
                        }
                        injected
                    })
                    .await;
                done.fetch_add(1, Ordering::Relaxed);
                out
            })
        })
        .collect();

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut steps = 0;
    let chaos = tokio::time::timeout(Duration::from_secs(40), async {
        while done.load(Ordering::Relaxed) < usize::try_from(WORKERS).unwrap_or(8) {
            let act = next_act(steps, &mut rng);
            misbehave(&hub, act, &mut rng).await;
            steps += 1;
            if matches!(act, Act::DropConnections | Act::KillAndRestart | Act::Hang) {
                // Disrupt an attached session next time, not one still reconnecting.
                let back = tokio::time::Instant::now() + Duration::from_secs(3);
                while !gm.is_attached() && tokio::time::Instant::now() < back {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(1 + rng.below(10))).await;
        }
    })
    .await;
    assert!(chaos.is_ok(), "runs still unfinished after 40 s: wedged");
    assert!(
        steps > SCRIPT.len(),
        "the runs ended after {steps} moves, before every misbehaviour was tried"
    );
    eprintln!(
        "chaos: {steps} moves, {} connections, {} pauses, {} resumes",
        hub.connections(),
        hub.frames_of("exec.paused").len(),
        hub.frames_of("exec.resumed").len()
    );
    for w in workers {
        let out = w.await.expect("worker did not panic");
        assert!(out.is_ok(), "no run was aborted");
    }
    assert_eq!(gm.stats().held_gates, 0, "a gate is still held");
    assert_eq!(gm.stats().dropped, 0, "the ring had room for everything");

    // Strictly increasing seqs on every connection after its hello (which takes a fresh seq;
    // the replay that follows starts over from the oldest event).
    let frames = hub.frames();
    let mut last: HashMap<usize, u64> = HashMap::new();
    for f in frames.iter().filter(|f| f.kind() != "hello") {
        if let Some(prev) = last.insert(f.conn, f.seq()) {
            assert!(
                f.seq() > prev,
                "conn {}: seq {} after {prev}",
                f.conn,
                f.seq()
            );
        }
    }

    // One last clean connection: its replay is the whole history.
    hub.set_breakpoints(Vec::new());
    let conn = hub.connections() + 1;
    hub.restart().await;
    hub.wait_connections(conn, Duration::from_secs(5)).await;
    let replay = hub
        .wait_matches(
            &frame("run.finished").on_conn(conn),
            usize::try_from(WORKERS).unwrap_or(8),
            Duration::from_secs(5),
        )
        .await;
    let replay: Vec<&Frame> = replay.iter().filter(|f| f.conn == conn).collect();
    let ids = |kind: &str, key: &str| -> HashSet<String> {
        replay
            .iter()
            .filter(|f| f.kind() == kind)
            .filter_map(|f| f.payload()[key].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        ids("node.started", "instanceId"),
        ids("node.finished", "instanceId")
    );
    assert_eq!(
        ids("exec.paused", "pauseId"),
        ids("exec.resumed", "pauseId")
    );
    let calls = replay
        .iter()
        .filter(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "tool:double")
        .count();
    assert_eq!(calls, usize::try_from(WORKERS * CALLS).unwrap_or(0));
    hub.assert_valid();
    gm.dispose().await;
}
