//! `graphmind serve` starts, announces itself, and answers the app handshake.

mod support;

use serde_json::json;
use support::*;

#[test]
fn json_line_and_run_file_describe_the_hub() {
    let mut h = spawned_hub(&["--allow-control", "resume"]);
    let line = &h.line;
    assert_eq!(line["url"], json!(format!("http://127.0.0.1:{}", h.port)));
    assert_eq!(line["pid"], json!(h.child.id()));
    assert_eq!(line["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(h.viewer_token.len(), 32);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.run_file()).unwrap()).unwrap();
    assert_eq!(run["port"], json!(h.port));
    assert_eq!(run["pid"], json!(h.child.id()));
    assert_eq!(run["allowControl"], json!("resume"));
    assert_eq!(h.agent_token.len(), 32);
    assert_ne!(h.agent_token, h.viewer_token);
    let health = h.health();
    assert_eq!(health["ok"], json!(true));
    assert_eq!(health["port"], json!(h.port));
    // A clean exit (Ctrl-C) removes the run file.
    let status = h.interrupt();
    assert!(status.success(), "exit status {status:?}");
    assert!(!h.run_file().exists(), "run file left behind");
}

#[test]
fn hello_ack_carries_versions_capabilities_debug_state_and_token() {
    let h = spawned_hub(&[]);
    block_on(async {
        let mut peer = Peer::connect(h.port, "/ingest").await;
        // Frames before the hello are ignored, not stored.
        peer.send(&env(
            0,
            "run_early",
            "run.started",
            json!({"app": "a", "sdk": {"name": "rust", "version": "1"}}),
        ))
        .await;
        peer.send_text("not json").await;
        peer.send(&hello(1, None)).await;
        let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
        assert_eq!(ack["gm"], json!(1));
        assert_eq!(ack["runId"], json!("*"));
        assert!(ack["seq"].as_u64().is_some());
        let p = &ack["payload"];
        assert_eq!(p["versions"]["protocol"], json!(1));
        assert_eq!(p["versions"]["viewer"], json!(env!("CARGO_PKG_VERSION")));
        assert_eq!(
            p["capabilities"],
            json!(["pause", "step", "inject", "retry", "abort", "run-claim"])
        );
        assert_eq!(p["breakpoints"], json!([{"point": "error"}]));
        assert_eq!(p["mode"], json!("run"));
        assert!(p["sessionToken"].as_str().is_some_and(|t| t.len() >= 16));
        assert!(
            p["hubCapabilities"]
                .as_array()
                .is_some_and(|c| c.contains(&json!("run-claim")))
        );
    });
    let health = h.health();
    assert_eq!(health["stats"]["ignoredBeforeHello"], json!(2));
    assert!(h.runs().is_empty(), "a frame before hello was stored");
}

#[test]
fn pause_on_error_flag_sets_the_initial_breakpoints() {
    for (flag, want) in [
        ("off", json!([])),
        ("tool", json!([{"kind": "tool", "point": "error"}])),
        ("on", json!([{"point": "error"}])),
    ] {
        let h = spawned_hub(&["--pause-on-error", flag]);
        assert_eq!(
            h.get_json("/api/debug")["breakpoints"],
            want,
            "--pause-on-error {flag}"
        );
        block_on(async {
            let app = App::connect(h.port).await;
            assert_eq!(app.ack["payload"]["breakpoints"], want);
        });
    }
}

#[test]
fn bad_pause_on_error_value_is_a_usage_error() {
    let dir = TempDir::new("usage");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args([
            "serve",
            "--port",
            "0",
            "--json",
            "--no-open",
            "--pause-on-error",
            "sometimes",
        ])
        .env("GRAPHMIND_HOME", &dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--pause-on-error"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_hello_without_client_version_is_still_a_hello() {
    let h = spawned_hub(&[]);
    block_on(async {
        let mut peer = Peer::connect(h.port, "/ingest").await;
        peer.send(
            &json!({"gm": 1, "seq": 0, "ts": 0, "runId": "*", "type": "hello",
                          "payload": {"versions": {"protocol": 1}}}),
        )
        .await;
        let ack = peer.next_json(5000).await;
        assert_eq!(ack["type"], json!("hello.ack"));
        assert_eq!(ack["payload"]["capabilities"], json!([]));
    });
}

#[test]
fn sigterm_also_removes_the_run_file_and_a_busy_port_is_a_clear_error() {
    let mut h = spawned_hub(&[]);
    let port = h.port.to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["serve", "--port", &port, "--json", "--no-open"])
        .env("GRAPHMIND_HOME", &h.home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("port {port} is in use")), "{err}");
    assert!(
        h.run_file().exists(),
        "the failed start removed the running hub's run file"
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &h.child.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while h.child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no exit on SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!h.run_file().exists());
}
