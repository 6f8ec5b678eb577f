//! `graphmind demo --agent openai --auto` (feature `demo-openai`): the async-openai travel
//! agent runs against the mock OpenAI server and reaches the hub with its two model steps
//! and its two parallel tool calls, named by the model's call ids.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::hub;

/// The events of `node` of one type.
fn of<'a>(events: &'a [Value], kind: &str, node: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind && e["payload"]["nodeId"] == node)
        .collect()
}

#[test]
fn demo_openai_agent_reaches_the_hub_with_its_model_steps_and_tools() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["demo", "--agent", "openai", "--auto", "--no-open"])
        .args(["--port", &port, "--timeout", "60"])
        .env("GRAPHMIND_HOME", &h.home)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("GRAPHMIND_URL")
        .env_remove("GRAPHMIND_DISABLED")
        .stdin(Stdio::null())
        .output()
        .expect("run graphmind demo");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("agent: "), "the agent answered: {stdout}");
    assert!(stdout.contains("run trip-agent finished ok"), "{stdout}");

    let run = h
        .runs()
        .into_iter()
        .find(|r| r["app"] == "openai-agent" && r["name"] == "trip-agent")
        .unwrap_or_else(|| panic!("the demo's run on the hub: {:?}", h.runs()));
    let run_id = run["runId"].as_str().expect("runId").to_owned();
    let events = {
        // the hub writes in batches: wait for the run's end to be stored
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let ev = h.events(&run_id);
            if ev.iter().any(|e| e["type"] == "run.finished") || std::time::Instant::now() > until {
                break ev;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let steps = of(&events, "node.finished", "llm:step");
    assert_eq!(steps.len(), 2, "two model steps: {events:#?}");
    assert_eq!(steps[0]["payload"]["api"], "chat.completions");
    let calls = &steps[0]["payload"]["output"]["toolCalls"];
    assert_eq!(
        calls.as_array().map(Vec::len),
        Some(2),
        "the first step asked for two tools: {calls}"
    );
    assert_eq!(steps[1]["payload"]["output"]["finishReason"], "stop");
    for (tool, call_id) in [
        ("tool:get_weather", "call_weather_1"),
        ("tool:convert", "call_convert_2"),
    ] {
        let started = of(&events, "node.started", tool);
        assert_eq!(started.len(), 1, "{tool} ran once: {events:#?}");
        assert_eq!(
            started[0]["payload"]["instanceId"],
            json!(call_id),
            "{tool}"
        );
        let finished = of(&events, "node.finished", tool);
        assert_eq!(finished.len(), 1, "{tool}");
        assert_eq!(finished[0]["payload"]["status"], "ok", "{tool}");
    }
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "run.finished" && e["payload"]["status"] == "ok"),
        "the run finished ok on the hub"
    );
}
