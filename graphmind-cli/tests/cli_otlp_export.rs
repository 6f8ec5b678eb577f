//! `graphmind serve --otlp` exports each finished run as it finishes, with the
//! `--otlp-header`s; `graphmind export <runId…>` sends stored runs again (`--otlp`) or writes
//! the request to a file (`--out`) — the same trace either way; bad endpoints are one-line
//! errors.

#[path = "../../graphmind-hub/tests/otlp_support/mod.rs"]
mod otlp_support;
mod support;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use otlp_support::*;
use prost::Message as _;
use serde_json::json;
use support::*;

#[test]
fn serve_exports_finished_runs_and_export_sends_or_writes_stored_ones() {
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(0));
    let endpoint = rx.endpoint();
    let h = spawned_hub(&["--otlp", &endpoint, "--otlp-header", "x-team=qa"]);
    let run = "run_400000000001";
    rt.block_on(async {
        let mut app = App::running(h.port, run, "exported").await;
        app.emit(run, "node.started", json!({"nodeId": "tool:lookup", "kind": "tool", "name": "lookup", "instanceId": "call_7", "input": {"id": 1}})).await;
        app.emit(run, "node.finished", json!({"nodeId": "tool:lookup", "instanceId": "call_7", "durationMs": 1, "status": "ok", "output": {"ok": true}})).await;
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
        let live = rx.wait_runs(1, 30).await;
        assert_eq!(
            tree(&spans(&live[0])),
            ["invoke_agent exported (INTERNAL)", "  execute_tool lookup (INTERNAL)"]
        );
        let (headers, _) = &rx.requests()[0];
        assert_eq!(headers.get("x-team").and_then(|v| v.to_str().ok()), Some("qa"));
    });
    let live = rx.runs();

    // --out: the request as it would be POSTed, the same spans as the live export.
    let out = h.dir.0.join("run.otlp.pb");
    let o = gm(&h.home, &["export", run, "--out", out.to_str().unwrap()]).expect(0);
    assert!(
        o.stdout.contains("exported 1 run(s), 2 span(s)"),
        "{}",
        o.stdout
    );
    let req = ExportTraceServiceRequest::decode(std::fs::read(&out).expect("file").as_slice())
        .expect("decode");
    assert_eq!(req.resource_spans, live);

    // Regression: `--port N` was a usage error although every command takes it; it names
    // the hub whose database is read (the `db` of its run file).
    let by_port = h.dir.0.join("run.by-port.pb");
    let port = h.port.to_string();
    let o = gm(
        &h.home,
        &[
            "export",
            run,
            "--port",
            &port,
            "--out",
            by_port.to_str().unwrap(),
        ],
    )
    .expect(0);
    assert!(o.stdout.contains("exported 1 run(s)"), "{}", o.stdout);
    assert_eq!(std::fs::read(&by_port).ok(), std::fs::read(&out).ok());
    let o = gm(
        &h.home,
        &["export", run, "--port", "1", "--out", "/dev/null"],
    )
    .expect(1);
    assert!(o.stderr.contains("no run file"), "{}", o.stderr);

    // --otlp: sent again; a missing run is named and the exit code says so.
    let o = gm(
        &h.home,
        &["export", run, "run_nothere00", "--otlp", &endpoint],
    )
    .expect(1);
    assert!(o.stderr.contains("no run run_nothere00"), "{}", o.stderr);
    let again = rt.block_on(rx.wait_runs(2, 30));
    assert_eq!(again[1], live[0], "the same trace, ids and all");
}

#[test]
fn bad_otlp_flags_are_one_line_errors() {
    let dir = TempDir::new("otlp-flags");
    let o = gm(
        &dir.0,
        &[
            "serve",
            "--port",
            "0",
            "--no-open",
            "--otlp",
            "https://api.example.com",
        ],
    )
    .expect(1);
    assert!(
        o.one_line_error()
            .contains("https endpoints are not supported"),
        "{}",
        o.stderr
    );
    let o = gm(
        &dir.0,
        &["serve", "--port", "0", "--no-open", "--otlp-header", "k=v"],
    )
    .expect(1);
    assert!(
        o.one_line_error().contains("--otlp-header needs --otlp"),
        "{}",
        o.stderr
    );
    let o = gm(&dir.0, &["export", "run_x"]).expect(1);
    assert!(
        o.one_line_error().contains("--otlp ENDPOINT or --out FILE"),
        "{}",
        o.stderr
    );
    let o = gm(
        &dir.0,
        &[
            "export",
            "run_x",
            "--out",
            "/dev/null",
            "--db",
            "/nonexistent/gm.db",
        ],
    )
    .expect(1);
    assert!(
        o.one_line_error().contains("no such database"),
        "{}",
        o.stderr
    );
}
