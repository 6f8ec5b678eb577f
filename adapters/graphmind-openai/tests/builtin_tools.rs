//! The Responses API's built-in tools other than web search, each from a fixture shaped like
//! the real API's answer: file search, code interpreter, image generation and an MCP call.
//! Each becomes an observe-only node `tool:<name>` named by its output item's id
//! (`providerExecuted: true, ungated: true`), beside the `llm:step` that ran it, and the
//! caller gets the SDK's own `Response` with every item.

use std::time::Duration;

use async_openai::types::responses::{CreateResponse, Response};
use graphmind_openai::Instrument;
use graphmind_openai_mock::{Mock, fixture_json as fixture};
use graphmind_tests::{FakeDebugger, Frame};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

/// (model asked for, fixture answered, tool node, output item id).
const CASES: [(&str, &str, &str, &str); 4] = [
    (
        "file-search",
        "responses_file_search.json",
        "file_search",
        "fs_0001",
    ),
    (
        "code-interpreter",
        "responses_code_interpreter.json",
        "code_interpreter",
        "ci_0001",
    ),
    (
        "image-generation",
        "responses_image_generation.json",
        "image_generation",
        "ig_0001",
    ),
    ("mcp", "responses_mcp.json", "mcp", "mcp_0001"),
];

fn of<'a>(frames: &'a [Frame], kind: &str, node: &str) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|f| f.kind() == kind && f.payload()["nodeId"] == node)
        .collect()
}

#[tokio::test]
async fn each_built_in_tool_is_an_observe_only_node_named_by_its_item_id() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    // A breakpoint on every tool: built-in tools are never gated all the same.
    hub.set_breakpoints(vec![json!({"kind": "tool"})]);
    let gm = graphmind::Session::new(hub.config("openai-builtin-tools"));
    assert!(gm.ready(5 * SECOND).await, "did not attach");
    let client = mock.client().graphmind();
    let answers: Vec<Response> = gm
        .run("built-in tools", async {
            let mut out = Vec::new();
            for (model, ..) in CASES {
                let req: CreateResponse =
                    serde_json::from_value(json!({"model": model, "input": "go"})).expect("req");
                out.push(
                    client
                        .responses()
                        .create(req)
                        .await
                        .expect("the SDK's response"),
                );
            }
            out
        })
        .await
        .expect("not aborted");
    let frames = hub.wait_count("run.finished", 1, 10 * SECOND).await;
    assert!(!frames.is_empty());
    let frames = hub.frames();
    assert!(
        !frames.iter().any(|f| f.kind() == "exec.paused"),
        "a built-in tool was gated"
    );
    for ((model, file, tool, item_id), answer) in CASES.iter().zip(&answers) {
        let fixture = fixture(file);
        assert_eq!(answer.output.len(), 2, "{model}: the SDK read both items");
        let node = format!("tool:{tool}");
        let started = of(&frames, "node.started", &node);
        assert_eq!(started.len(), 1, "{model}: one node {node}");
        assert_eq!(started[0].payload()["instanceId"], *item_id, "{model}");
        assert_eq!(started[0].payload()["kind"], "tool", "{model}");
        let finished = of(&frames, "node.finished", &node);
        assert_eq!(finished.len(), 1, "{model}: {node} finished");
        let fin = finished[0].payload();
        assert_eq!(fin["status"], "ok", "{model}");
        assert_eq!(fin["providerExecuted"], true, "{model}");
        assert_eq!(fin["ungated"], true, "{model}");
        assert_eq!(fin["api"], "responses", "{model}");
        assert_eq!(
            fin["output"]["id"], *item_id,
            "{model}: the item is the output"
        );
        assert_eq!(
            fin["output"]["type"], fixture["output"][0]["type"],
            "{model}"
        );
    }
    // The steps that ran them answered with the message text, not a tool call.
    let steps = of(&frames, "node.finished", "llm:step");
    assert_eq!(steps.len(), CASES.len());
    for (step, (model, file, ..)) in steps.iter().zip(CASES) {
        let out = &step.payload()["output"];
        assert_eq!(
            out["text"],
            fixture(file)["output"][1]["content"][0]["text"],
            "{model}"
        );
        assert_eq!(out["finishReason"], "stop", "{model}");
        assert_eq!(out["toolCalls"], json!([]), "{model}");
    }
    hub.assert_valid();
    gm.dispose().await;
}
