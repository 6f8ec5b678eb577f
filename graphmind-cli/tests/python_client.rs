//! The hub with the real Python client `graphmind-ai==0.5.1` (`tests/python/agent.py`): its run
//! is stored with all its events, a breakpoint set with `graphmind break set` holds its tool,
//! `graphmind resume --action inject` makes the tool return the injected value, and the replay
//! after the client reconnects to a restarted hub stores no duplicate. The hub's answers also
//! carry the reference family's names (run rows, event totals, pause details).
//!
//! Needs `python3` with `graphmind-ai==0.5.1` (scripts/install-test-deps.sh); without it these
//! tests fail, they do not skip.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// Fails (never skips) when the reference client is missing.
fn require_python_client() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m, graphmind; print(m.version('graphmind-ai'))",
        ])
        .output();
    let version = match &out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        _ => String::new(),
    };
    assert_eq!(
        version, "0.5.1",
        "these tests need python3 with the Python client graphmind-ai==0.5.1 \
         (found {version:?}): run scripts/install-test-deps.sh"
    );
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/agent.py")
}

/// A running `tests/python/agent.py`.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Agent {
    fn spawn(port: u16, mode: &str) -> Self {
        Self::spawn_with_loop_guard(port, mode, "off")
    }

    /// `GRAPHMIND_ON_LOOP` set to `on_loop` (the client's default is `pause`).
    fn spawn_with_loop_guard(port: u16, mode: &str, on_loop: &str) -> Self {
        let mut cmd = Command::new("python3");
        cmd.arg(script())
            .arg(mode)
            .env("GRAPHMIND_URL", format!("ws://127.0.0.1:{port}/ingest"))
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("GRAPHMIND_ON_LOOP", on_loop)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for var in [
            "GRAPHMIND_DISABLED",
            "GRAPHMIND_ENV",
            "ENVIRONMENT",
            "APP_ENV",
            "PYTHON_ENV",
            "ENV",
            "DJANGO_ENV",
            "FLASK_ENV",
            "NODE_ENV",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        let mut child = cmd.spawn().expect("spawn python3");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// The next JSON line the script prints.
    fn next(&self, secs: u64) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(secs))
            .unwrap_or_else(|_| panic!("the Python agent printed nothing within {secs} s"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits for a clean exit.
    fn finish(mut self, secs: u64) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                assert!(s.success(), "the Python agent failed: {s}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the Python agent did not exit in {secs} s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_named<'a>(runs: &'a [Value], name: &str) -> &'a Value {
    runs.iter()
        .find(|r| r["name"] == json!(name))
        .unwrap_or_else(|| panic!("no run {name:?} in {runs:?}"))
}

#[test]
fn python_run_is_stored_with_all_its_events() {
    require_python_client();
    let h = hub(|_| {});
    let agent = Agent::spawn(h.port, "once");
    let line = agent.next(30);
    assert_eq!(
        line,
        json!({"run": "py-run", "attached": true, "result": 3})
    );
    agent.finish(10);

    let runs = wait_for(10, "the run stored", || {
        let runs = h.runs();
        (runs.len() == 1 && runs[0]["status"] == json!("ok")).then_some(runs)
    });
    let r = &runs[0];
    assert_eq!(r["app"], json!("py-agent"));
    assert_eq!(r["name"], json!("py-run"));
    assert_eq!(r["status"], json!("ok"));
    assert_eq!(r["sdk"], json!({"name": "python", "version": "0.5.1"}));
    assert_eq!(r["eventCount"], json!(6));
    assert_eq!(r["live"], json!(false));
    // The reference's names beside ours, for the Python client's run as for any.
    assert_eq!(r["id"], r["runId"]);
    assert_eq!(
        (&r["errorCount"], &r["schemaVersion"], &r["source"]),
        (&json!(0), &json!(1), &json!("live"))
    );
    assert_eq!(r["finishedAt"], r["endedAt"]);
    let run = r["runId"].as_str().unwrap();
    let page = h.get_json(&format!("/api/runs/{run}/events?limit=2"));
    assert_eq!(page["total"], json!(6), "{page}");
    let events = h.events(run);
    assert_eq!(
        types(&events),
        [
            "run.started",
            "node.started",
            "node.started",
            "node.finished",
            "node.finished",
            "run.finished"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(events[2]["payload"]["nodeId"], json!("tool:add"));
    assert_eq!(events[2]["payload"]["input"], json!({"a": 1, "b": 2}));
    assert_eq!(events[3]["payload"]["output"], json!(3));
    assert_eq!(events[5]["payload"], json!({"status": "ok"}));

    // `graphmind record` gives the same envelopes.
    let out = gm(&h.home, &["record", run, "--port", &h.port.to_string()]).expect(0);
    let recorded: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recorded, events);
}

#[test]
fn cli_breakpoint_holds_the_python_tool_and_inject_sets_its_result() {
    require_python_client();
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    gm(
        &h.home,
        &[
            "break", "set", "--kind", "tool", "--name", "add", "--port", &port,
        ],
    )
    .expect(0);

    let mut agent = Agent::spawn(h.port, "once");
    let p = block_on(gm_wait_pause(&h));
    assert_eq!(p["nodeId"], json!("tool:add"));
    assert_eq!(p["point"], json!("before"));
    assert_eq!(p["reason"], json!("breakpoint"));
    assert_eq!(p["input"], json!({"a": 1, "b": 2}));
    let pause = p["pauseId"].as_str().unwrap().to_owned();
    let run = p["runId"].as_str().unwrap().to_owned();
    assert!(pause.starts_with("pause_"), "{pause}");

    // Held: the tool has not returned and the script has printed nothing.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        agent.is_running(),
        "the Python agent ran past its breakpoint"
    );
    assert!(agent.lines.try_recv().is_err());
    // The details in the reference's shape too: `pause.node.input` (a GraphMind 0.6 client).
    let detail = h.get_json(&format!("/api/runs/{run}/pauses/{pause}"));
    assert_eq!(
        detail["pause"]["node"]["input"],
        json!({"a": 1, "b": 2}),
        "{detail}"
    );
    assert_eq!(detail["pause"]["node"]["name"], json!("add"), "{detail}");

    let out = gm(
        &h.home,
        &[
            "resume",
            &pause,
            "--run",
            &run,
            "--action",
            "inject",
            "--output",
            r#"{"sum": 99}"#,
            "--port",
            &port,
        ],
    )
    .expect(0);
    assert_eq!(
        out.stdout,
        format!("resumed {pause} of run {run} (inject)\n")
    );
    assert_eq!(
        agent.next(10),
        json!({"run": "py-run", "attached": true, "result": {"sum": 99}})
    );
    agent.finish(10);

    // The pause is closed now: a second resume is taken.
    gm(
        &h.home,
        &[
            "resume", &pause, "--run", &run, "--action", "continue", "--port", &port,
        ],
    )
    .expect(7);
    let events = wait_for(10, "the run stored", || {
        let ev = h.events(&run);
        (ev.len() == 8).then_some(ev)
    });
    assert_eq!(
        types(&events),
        [
            "run.started",
            "node.started",
            "node.started",
            "exec.paused",
            "exec.resumed",
            "node.finished",
            "node.finished",
            "run.finished"
        ]
    );
    // What the client sent, and who released it as the hub stamps it: the agent token.
    let resumed = &events[4]["payload"];
    assert_eq!(resumed["pauseId"], json!(pause));
    assert_eq!(resumed["action"], json!("inject"));
    assert_eq!(resumed["principal"], json!("agent"));
    assert!(resumed.get("operator").is_some(), "{resumed}");
    let fin = &events[5]["payload"];
    assert_eq!(fin["nodeId"], json!("tool:add"));
    assert_eq!(fin["output"], json!({"sum": 99}));
    assert_eq!(fin["injected"], json!(true));
    assert!(fin["heldMs"].as_f64().unwrap() >= 250.0, "{fin}");
}

/// The Python client 0.5.1 announces no `edit-input`: its gate is shown not editable,
/// `graphmind wait` says so, and `graphmind resume --input` is refused by the hub itself
/// (exit 6) without reaching the client, whose gate then continues as usual.
#[test]
fn the_python_client_0_5_1_is_never_offered_an_edit() {
    require_python_client();
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let port = h.port.to_string();
    gm(
        &h.home,
        &[
            "break", "set", "--kind", "tool", "--name", "add", "--port", &port,
        ],
    )
    .expect(0);
    let mut agent = Agent::spawn(h.port, "once");
    let p = block_on(gm_wait_pause(&h));
    assert_eq!(p["nodeId"], json!("tool:add"));
    assert_eq!(p["editable"], json!(false));
    assert!(
        !p["resume"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().contains("--input")),
        "{p}"
    );
    let pause = p["pauseId"].as_str().unwrap().to_owned();
    let run = p["runId"].as_str().unwrap().to_owned();
    let text = gm(&h.home, &["wait", "--timeout", "5", "--port", &port]).expect(0);
    assert!(text.stdout.contains("not editable"), "{}", text.stdout);

    let out = gm(
        &h.home,
        &[
            "resume",
            &pause,
            "--run",
            &run,
            "--action",
            "continue",
            "--input",
            r#"{"a": 5, "b": 5}"#,
            "--port",
            &port,
        ],
    )
    .expect(6);
    assert!(
        out.stderr
            .contains("the hub refused continue (unsupported)"),
        "{}",
        out.stderr
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(agent.is_running(), "the edit reached the Python agent");
    assert!(agent.lines.try_recv().is_err());
    gm(
        &h.home,
        &[
            "resume", &pause, "--run", &run, "--action", "continue", "--port", &port,
        ],
    )
    .expect(0);
    assert_eq!(
        agent.next(10),
        json!({"run": "py-run", "attached": true, "result": 3})
    );
    agent.finish(10);
}

#[test]
fn replay_after_the_python_client_reconnects_stores_no_duplicate() {
    require_python_client();
    let dir = TempDir::new("py-replay");
    let db = dir.0.join("hub.db");
    let first_hub = start_on_free_port(&dir.0, &db, |_| {});
    let port = first_hub.port;
    let mut agent = Agent::spawn(port, "twice");
    assert_eq!(
        agent.next(30),
        json!({"run": "first", "attached": true, "result": 3})
    );
    let waiting = agent.next(10);
    assert_eq!(waiting["waiting"], json!(true));
    // The client sends from its own thread: wait until the whole first run arrived.
    let first = wait_for(10, "the first run stored", || {
        first_hub
            .runs()
            .into_iter()
            .find(|r| r["name"] == json!("first") && r["eventCount"] == json!(6))
    });
    let first_id = first["runId"].as_str().unwrap().to_owned();
    let first_events = first_hub.events(&first_id);

    // Restart the hub on the same port and database; the client notices the drop.
    first_hub.stop();
    let second_hub = start_on(&dir.0, port, &db, |_| {}).expect("restart on the same port");
    assert_eq!(second_hub.health()["stats"]["duplicates"], json!(0));

    // The client reconnects (ready() kicks a connect) and replays its whole ring, which
    // still holds the first run; then it runs "second".
    let stdin = agent.stdin.as_mut().expect("stdin");
    writeln!(stdin).expect("tell the agent to go on");
    stdin.flush().expect("flush");
    assert_eq!(
        agent.next(30),
        json!({"run": "second", "attached": true, "result": 3})
    );
    agent.next(10);
    agent.finish(10);

    let stats = wait_for(10, "the replay to be processed", || {
        let s = second_hub.health()["stats"].clone();
        (s["duplicates"].as_u64().unwrap_or(0) >= 6).then_some(s)
    });
    assert!(stats["duplicates"].as_u64().unwrap() >= 6, "{stats}");

    let after = wait_for(10, "the second run stored", || {
        let runs = second_hub.runs();
        runs.iter()
            .any(|r| r["name"] == json!("second") && r["status"] == json!("ok"))
            .then_some(runs)
    });
    assert_eq!(after.len(), 2, "{after:?}");
    let first_again = run_named(&after, "first");
    assert_eq!(first_again["runId"], json!(first_id));
    assert_eq!(
        first_again["eventCount"],
        json!(6),
        "the replay inflated the count"
    );
    assert_eq!(first_again["status"], json!("ok"));
    assert_eq!(
        second_hub.events(&first_id),
        first_events,
        "the replay changed stored events"
    );

    let second = run_named(&after, "second");
    assert_eq!(second["eventCount"], json!(6));
    let seqs = second_hub.seqs(second["runId"].as_str().unwrap());
    let mut unique = seqs.clone();
    unique.dedup();
    assert_eq!(seqs, unique);
    assert_eq!(seqs.len(), 6);
    // The client's seqs go on across the reconnect (one counter per session).
    assert!(seqs[0] > 6, "{seqs:?}");
}

#[test]
fn the_python_loop_guard_holds_at_the_hub_and_the_cli_continues_it() {
    require_python_client();
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    let port = h.port.to_string();
    let mut agent = Agent::spawn_with_loop_guard(h.port, "loop", "pause");
    let p = block_on(gm_wait_pause(&h));
    assert_eq!(p["nodeId"], json!("tool:add"));
    assert_eq!(p["point"], json!("before"));
    assert_eq!(p["reason"], json!("loop"), "{p}");
    assert_eq!(p["loop"]["repeats"], json!(3), "{p}");
    assert!(p["loop"]["fingerprint"].is_string(), "{p}");
    let pause = p["pauseId"].as_str().unwrap().to_owned();
    let run = p["runId"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(200));
    assert!(agent.is_running(), "the third call ran past the loop hold");

    gm(
        &h.home,
        &[
            "resume", &pause, "--run", &run, "--action", "continue", "--port", &port,
        ],
    )
    .expect(0);
    assert_eq!(
        agent.next(10),
        json!({"run": "py-loop", "attached": true, "result": [3, 3, 3]})
    );
    agent.finish(10);
    let events = wait_for(10, "the run stored", || {
        let ev = h.events(&run);
        ev.iter().any(|e| e["type"] == "run.finished").then_some(ev)
    });
    let paused: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "exec.paused")
        .collect();
    assert_eq!(paused.len(), 1, "{events:?}");
    assert_eq!(paused[0]["payload"]["reason"], json!("loop"));
    let started: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "node.started" && e["payload"]["nodeId"] == "tool:add")
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    assert_eq!(started.len(), 3);
    assert_eq!(paused[0]["payload"]["loop"]["lastSeq"], json!(started[2]));
}
