//! A calculator agent over rig, instrumented with graphmind-rig, answering from rig's own
//! scripted model (no API key, no network).
//!
//! `cargo run -p graphmind-rig --example rig_agent`
//!
//! Detached (no debugger listening) it runs as an ordinary program. With `graphmind serve`
//! running (or `GRAPHMIND_URL` set) it attaches first, so breakpoints hold from the first
//! gate: `llm:step` before each model call, and the two tool calls of the first turn, run in
//! parallel (`tool_concurrency(2)`), each gated on its own under rig's tool-call id.

use std::time::Duration;

use graphmind_rig::Instrument;
use rig_agent::AgentBuilder;
use rig_agent::tool::{Tool, ToolContext};
use rig_core::completion::AssistantContent;
use rig_core::message::{ToolCall, ToolFunction, ToolName};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde::Deserialize;
use serde_json::json;

/// A tool's failure.
#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Failed {}

#[derive(Deserialize)]
struct Operands {
    x: f64,
    y: f64,
}

/// `x + y`.
struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Error = Failed;
    type Args = Operands;
    type Output = f64;

    fn description(&self) -> String {
        "Adds x and y".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}})
    }

    async fn call(&self, _: &mut ToolContext, a: Operands) -> Result<f64, Failed> {
        Ok(a.x + a.y)
    }
}

/// `x * y`.
struct Multiply;

impl Tool for Multiply {
    const NAME: &'static str = "multiply";
    type Error = Failed;
    type Args = Operands;
    type Output = f64;

    fn description(&self) -> String {
        "Multiplies x and y".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}})
    }

    async fn call(&self, _: &mut ToolContext, a: Operands) -> Result<f64, Failed> {
        Ok(a.x * a.y)
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Option<AssistantContent> {
    let name = ToolName::new(name).ok()?;
    Some(AssistantContent::ToolCall(ToolCall::from_wire(
        id,
        ToolFunction::new(name, args),
    )))
}

#[tokio::main]
async fn main() {
    let gm = graphmind::init(graphmind::Config::new("rig-agent"));
    // Attach before the first gate when a debugger is there; go on detached otherwise.
    let attached = gm.ready(Duration::from_secs(2)).await;
    println!(
        "graphmind: {}",
        if attached {
            "attached"
        } else {
            "detached (start `graphmind serve` to debug)"
        }
    );

    // The scripted model: two tool calls in the first turn, then the answer.
    let calls: Vec<AssistantContent> = [
        call("call_add", "add", json!({"x": 2, "y": 3})),
        call("call_mul", "multiply", json!({"x": 4, "y": 5})),
    ]
    .into_iter()
    .flatten()
    .collect();
    let model = MockCompletionModel::from_turns([
        MockTurn::from_contents(calls),
        MockTurn::text("2 + 3 = 5 and 4 × 5 = 20."),
    ]);
    let agent = AgentBuilder::new(model)
        .name("calculator")
        .preamble("You are a calculator.")
        .tool(Add)
        .tool(Multiply)
        .build();

    match agent
        .graphmind()
        .prompt("What are 2 + 3 and 4 × 5?")
        .with(|r| r.max_turns(4).tool_concurrency(2))
        .await
    {
        Ok(response) => println!("{}", response.output()),
        Err(e) => eprintln!("the run failed: {e}"),
    }
    gm.dispose().await;
}
