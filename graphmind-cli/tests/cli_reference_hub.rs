//! The control CLI drives a hub that answers in the shapes of the reference family's
//! GraphMind 0.6 hub (a test double: a tiny local HTTP server in this test): its run file
//! holds `agentToken` (no `token`), `/api/runs` lists `id` and no name, there is no
//! `/api/debug`, a listed pause carries no input (`GET …/pauses/:id` has `pause.node.input`),
//! and `resume` answers `200 resumed`, `202 timeout` or `404 no-such-pause`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{TempDir, gm};

const TOKEN: &str = "ref-agent-token-0123456789";

/// One request as the double saw it: method, path, Authorization header.
type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

/// Serves the reference shapes on a free port until the test ends.
fn reference_hub() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_owned();
            let path = parts.next().unwrap_or("").to_owned();
            let (mut auth, mut length) = (None, 0usize);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap_or((&h, ""));
                match k.trim().to_ascii_lowercase().as_str() {
                    "authorization" => auth = Some(v.trim().to_owned()),
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            log.lock()
                .expect("lock")
                .push((method.clone(), path.clone(), auth));
            let (status, reason, body) = answer(&method, &path);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

fn answer(method: &str, path: &str) -> (u16, &'static str, String) {
    let pause = json!({
        "runId": "run_ts_1", "pauseId": "pause_ts_1", "nodeId": "tool:get_weather",
        "point": "before", "since": 1_700_000_000_000u64, "reason": "breakpoint", "state": "open"
    });
    let ok = |v: Value| (200, "OK", v.to_string());
    match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/api/runs") => ok(json!({"runs": [{
            "id": "run_ts_1", "app": "ts-agent", "status": "running", "live": true,
            "startedAt": 1_700_000_000_000u64, "eventCount": 7
        }]})),
        ("GET", "/api/pauses") => ok(json!({"pauses": [pause]})),
        // The reference's `/health` (server.ts): its name and version.
        ("GET", "/health") => ok(json!({"ok": true, "name": "graphmind-ai", "version": "0.6.2"})),
        // No /api/debug: breakpoints and mode are set over its viewer socket only.
        ("POST", path) if path.starts_with("/api/debug") => {
            (404, "Not Found", "404 Not Found".to_owned())
        }
        ("GET", "/api/runs/run_ts_1/pauses/pause_ts_1") => {
            let mut detail = pause;
            detail["node"] =
                json!({"kind": "tool", "name": "get_weather", "input": {"city": "Lisbon"}});
            ok(json!({"pause": detail}))
        }
        ("POST", "/api/runs/run_ts_1/pauses/pause_ts_1/resume") => ok(json!({
            "outcome": "resumed", "runId": "run_ts_1", "pauseId": "pause_ts_1"
        })),
        ("POST", "/api/runs/run_ts_1/pauses/pause_slow/resume") => (
            202,
            "Accepted",
            json!({"outcome": "timeout", "runId": "run_ts_1", "pauseId": "pause_slow",
                   "code": "no-answer", "message": "no answer from the app"})
            .to_string(),
        ),
        ("POST", _) => (
            404,
            "Not Found",
            json!({"error": "no-such-pause", "message": "pause \"pause_old\" not found"})
                .to_string(),
        ),
        // No /api/debug (Hono's plain 404).
        _ => (404, "Not Found", "404 Not Found".to_owned()),
    }
}

/// A run file as the reference hub writes it (0600 in the run directory).
fn run_file(home: &TempDir, port: u16) {
    let dir = home.0.join("run");
    std::fs::create_dir_all(&dir).expect("run dir");
    let file = dir.join(format!("serve-{port}.json"));
    let doc = json!({
        "port": port, "pid": std::process::id(), "url": format!("http://127.0.0.1:{port}"),
        "agentToken": TOKEN, "version": "0.6.0"
    });
    std::fs::write(&file, format!("{doc:#}\n")).expect("write run file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}

#[test]
fn the_cli_drives_a_hub_that_answers_in_the_reference_shapes() {
    let (port, seen) = reference_hub();
    let home = TempDir::new("ref-hub");
    run_file(&home, port);
    let p = port.to_string();

    let out = gm(&home.0, &["runs", "--port", &p]).expect(0);
    let row = out.stdout.lines().nth(1).unwrap_or_default().to_owned();
    assert!(
        row.starts_with("run_ts_1 "),
        "the run's id is read from `id`: {}",
        out.stdout
    );
    assert!(row.contains("running") && row.contains("ts-agent"), "{row}");

    let out = gm(&home.0, &["break", "list", "--port", &p]).expect(0);
    assert!(out.stdout.contains("no /api/debug"), "{}", out.stdout);
    let out = gm(&home.0, &["break", "list", "--port", &p, "--json"]).expect(0);
    assert_eq!(out.json()["breakpoints"], Value::Null);

    let out = gm(&home.0, &["wait", "--port", &p, "--timeout", "5"]).expect(0);
    assert!(
        out.stdout.contains(r#"input   {"city":"Lisbon"}"#),
        "the input is read from pause.node.input: {}",
        out.stdout
    );
    assert!(!out.stdout.contains("holds no token"), "{}", out.stdout);

    let resume = |pause: &str| {
        gm(
            &home.0,
            &[
                "resume", pause, "--run", "run_ts_1", "--action", "continue", "--port", &p,
            ],
        )
    };
    let out = resume("pause_ts_1").expect(0);
    assert_eq!(
        out.stdout,
        "resumed pause_ts_1 of run run_ts_1 (continue)\n"
    );
    let out = resume("pause_slow").expect(2);
    assert!(out.stderr.contains("did not confirm"), "{}", out.stderr);
    let out = resume("pause_old").expect(4);
    assert!(
        out.stderr.contains("pause_old is gone") && out.stderr.contains("no-such-pause"),
        "{}",
        out.stderr
    );

    // `resume` without --run: the run of the one open pause with that id.
    let out = gm(
        &home.0,
        &["resume", "pause_ts_1", "--action", "continue", "--port", &p],
    )
    .expect(0);
    assert_eq!(
        out.stdout,
        "resumed pause_ts_1 of run run_ts_1 (continue)\n"
    );

    let posts: Vec<_> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(m, _, _)| m == "POST")
        .cloned()
        .collect();
    assert_eq!(posts.len(), 4, "{posts:?}");
    for (_, path, auth) in &posts {
        assert_eq!(
            auth.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str()),
            "the agentToken of the run file is presented: {path}"
        );
    }
}

/// Regression: `graphmind break set` and `graphmind mode` against a reference hub failed with a
/// bare 404 (it has no `/api/debug`); they are refused (exit 6) naming the hub and its
/// version, and where breakpoints are set on it.
#[test]
fn break_and_mode_against_a_reference_hub_are_refused_naming_its_version() {
    let (port, _seen) = reference_hub();
    let home = TempDir::new("ref-hub-debug");
    run_file(&home, port);
    let p = port.to_string();
    for args in [
        vec!["break", "set", "--kind", "tool", "--port", &p],
        vec!["break", "clear", "--port", &p],
        vec!["mode", "step", "--port", &p],
    ] {
        let out = gm(&home.0, &args).expect(6);
        let line = out.one_line_error();
        assert!(
            line.contains("graphmind-ai 0.6.2") && line.contains("no /api/debug"),
            "{args:?}: {line}"
        );
        assert!(line.contains("viewer"), "{line}");
        assert!(!line.contains("404"), "{line}");
    }
}
