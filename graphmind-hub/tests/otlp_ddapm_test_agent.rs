//! The OTLP export against a receiver nobody here wrote: Datadog's APM test agent
//! (`ddapm-test-agent` from PyPI, installed by `scripts/install-test-deps.sh`), which takes
//! OTLP/HTTP `POST /v1/traces`, decodes it with the Python protobuf runtime and the
//! OpenTelemetry proto package, and serves what it got at `GET /test/session/traces`. The run
//! must arrive whole: every span, one trace, the parent links, names, kinds and attributes.
//!
//! Needs `ddapm-test-agent` on the PATH; without it this test fails, it does not skip.

mod support;

use std::collections::HashMap;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use graphmind_hub::otlp::OtlpConfig;
use serde_json::{Value, json};
use support::*;

const VERSION: &str = "1.69.1";

struct Agent {
    child: Child,
    otlp_port: u16,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the test agent on free loopback ports; waits (at most 60 s) until its OTLP port
/// answers.
fn start_agent() -> Agent {
    let version = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('ddapm-test-agent'))",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    assert_eq!(
        version, VERSION,
        "this test needs ddapm-test-agent=={VERSION} (pip): run scripts/install-test-deps.sh"
    );
    let (port, otlp_port, grpc_port) = (free_port(), free_port(), free_port());
    let child = Command::new("ddapm-test-agent")
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--otlp-http-port",
            &otlp_port.to_string(),
            "--otlp-grpc-port",
            &grpc_port.to_string(),
        ])
        .env("SNAPSHOT_DIR", std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ddapm-test-agent on the PATH (scripts/install-test-deps.sh)");
    let agent = Agent { child, otlp_port };
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", otlp_port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "ddapm-test-agent did not listen within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    agent
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn a_run_exported_to_the_datadog_test_agent_arrives_whole() {
    let agent = start_agent();
    let otlp_port = agent.otlp_port;
    let rt = runtime();
    let endpoint = format!("http://127.0.0.1:{otlp_port}");
    let hub = hub(move |c| c.otlp = Some(OtlpConfig::new(&endpoint).expect("endpoint")));
    let run = "run_ddapm000001";
    rt.block_on(async {
        let mut app = App::running(hub.port, run, "triage").await;
        app.emit(run, "node.started", json!({"nodeId": "agent:triage", "kind": "agent", "name": "triage", "instanceId": run})).await;
        for step in 1..=2u64 {
            let inst = format!("inv:s{step}");
            app.emit(run, "node.started", json!({"nodeId": "llm:step", "kind": "llm", "name": "step", "instanceId": inst, "parentId": "agent:triage", "input": {"model": "claude-sonnet-4"}})).await;
            app.emit(run, "node.finished", json!({"nodeId": "llm:step", "instanceId": inst, "durationMs": 3, "status": "ok", "usage": {"inputTokens": 100 * step, "outputTokens": 7}, "finishReason": "tool_use"})).await;
            let call = format!("toolu_{step}");
            app.emit(run, "node.started", json!({"nodeId": "tool:search", "kind": "tool", "name": "search", "instanceId": call, "parentId": "llm:step"})).await;
            app.emit(run, "node.finished", json!({"nodeId": "tool:search", "instanceId": call, "durationMs": 1, "status": "ok"})).await;
        }
        app.emit(run, "node.finished", json!({"nodeId": "agent:triage", "instanceId": run, "durationMs": 20, "status": "ok"})).await;
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
    });
    // What the test agent decoded, read back.
    let spans = wait_for(60, "the run at the test agent", || {
        let r = http(otlp_port, "GET", "/test/session/traces", &[], None);
        if r.status != 200 {
            return None;
        }
        let got: Value = serde_json::from_str(&r.body).ok()?;
        let spans: Vec<Value> = got
            .as_array()?
            .iter()
            .flat_map(|req| {
                req["resource_spans"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .flat_map(|rs| rs["scope_spans"].as_array().cloned().unwrap_or_default())
            .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
            .collect();
        (!spans.is_empty()).then_some(spans)
    });
    assert_eq!(spans.len(), 5, "{spans:#?}");
    let trace = &spans[0]["trace_id"];
    assert!(trace.is_string());
    assert!(spans.iter().all(|s| &s["trace_id"] == trace), "one trace");
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().expect("span_id"), s))
        .collect();
    let parent_name = |s: &Value| {
        s["parent_span_id"]
            .as_str()
            .filter(|p| !p.is_empty())
            .map(|p| by_id[p]["name"].as_str().unwrap_or("?").to_owned())
    };
    let mut shape: Vec<(String, String, Option<String>)> = spans
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_owned(),
                s["kind"].as_str().unwrap_or_default().to_owned(),
                parent_name(s),
            )
        })
        .collect();
    shape.sort();
    let internal = "SPAN_KIND_INTERNAL".to_owned();
    let chat = Some("chat claude-sonnet-4".to_owned());
    assert_eq!(
        shape,
        [
            (
                "chat claude-sonnet-4".into(),
                "SPAN_KIND_CLIENT".into(),
                Some("invoke_agent triage".into())
            ),
            (
                "chat claude-sonnet-4".into(),
                "SPAN_KIND_CLIENT".into(),
                Some("invoke_agent triage".into())
            ),
            ("execute_tool search".into(), internal.clone(), chat.clone()),
            ("execute_tool search".into(), internal.clone(), chat),
            ("invoke_agent triage".into(), internal, None),
        ]
    );
    // Each tool hangs under its own step.
    let tool_parents: std::collections::HashSet<&str> = spans
        .iter()
        .filter(|s| s["name"] == "execute_tool search")
        .map(|s| s["parent_span_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_parents.len(), 2);
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "chat claude-sonnet-4")
        .collect();
    for c in &chats {
        assert_eq!(
            attr(c, "gen_ai.provider.name"),
            Some(&json!({"string_value": "anthropic"}))
        );
        assert_eq!(
            attr(c, "gen_ai.operation.name"),
            Some(&json!({"string_value": "chat"}))
        );
        assert_eq!(
            attr(c, "gen_ai.usage.output_tokens"),
            Some(&json!({"int_value": "7"}))
        );
        assert_eq!(
            attr(c, "gen_ai.response.finish_reasons"),
            Some(&json!({"array_value": {"values": [{"string_value": "tool_use"}]}}))
        );
    }
    let mut inputs: Vec<&Value> = chats
        .iter()
        .filter_map(|c| attr(c, "gen_ai.usage.input_tokens"))
        .collect();
    inputs.sort_by_key(|v| v.to_string());
    assert_eq!(
        inputs,
        [&json!({"int_value": "100"}), &json!({"int_value": "200"})]
    );
    drop(agent);
}
