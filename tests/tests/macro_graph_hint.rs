//! The first model step of an invocation sends graph.hint: the agent node, `llm:step` under
//! it, and under that the step's own roster, `tools = [...]` from the attribute — so the
//! viewer draws the graph before any tool runs. Tools linked into the binary that the step
//! does not name (another agent's) stay out of it.

mod macro_support;

use graphmind_tests::FakeDebugger;
use macro_support::{attached, events, run_finished};
use serde_json::{Value, json};

#[graphmind::tool]
async fn lookup_order(id: String) -> String {
    id
}

#[graphmind::tool(name = "refund")]
async fn issue_refund(id: String) -> String {
    id
}

#[derive(Clone, serde::Serialize)]
struct Chat {
    messages: Vec<String>,
}

#[graphmind::model_step(tools = [lookup_order, "escalate"])]
async fn plan(request: Chat) -> String {
    request.messages.join(" ")
}

fn chat(messages: &[&str]) -> Chat {
    Chat {
        messages: messages.iter().map(|m| (*m).to_owned()).collect(),
    }
}

/// Another agent's tool, linked into the same binary: issue 35 item 10 saw such tools drawn
/// under every step.
#[graphmind::tool]
async fn other_agents_convert(amount: i64) -> i64 {
    amount
}

#[tokio::test]
async fn the_first_step_hints_the_agent_the_step_and_its_own_tools() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("support", async {
        plan(chat(&["look it up"])).await;
        lookup_order("ORD-1".into()).await;
        plan(chat(&["look it up", "found", "then refund"])).await;
        issue_refund("ORD-1".into()).await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;

    let hints = hub.frames_of("graph.hint");
    assert_eq!(hints.len(), 1, "one hint for the run's one invocation");
    let mut nodes: Vec<Value> = hints[0].payload()["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    nodes.sort_by_key(|n| n["nodeId"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        nodes,
        [
            json!({"nodeId": "agent:support", "kind": "agent", "name": "support"}),
            json!({"nodeId": "llm:step", "kind": "llm", "name": "step", "parentId": "agent:support"}),
            json!({"nodeId": "tool:escalate", "kind": "tool", "name": "escalate", "parentId": "llm:step"}),
            json!({"nodeId": "tool:lookup_order", "kind": "tool", "name": "lookup_order", "parentId": "llm:step"}),
        ],
        "the step's tools = [lookup_order, \"escalate\"], not refund or other_agents_convert"
    );
    let mut roster = graphmind::tool_roster();
    roster.sort_unstable();
    assert_eq!(
        roster,
        ["lookup_order", "other_agents_convert", "refund"],
        "the binary's tools, by their names"
    );
    assert_eq!(
        events(&hub)[..4],
        [
            "run.started",
            "node.started agent:support",
            "graph.hint agent:support,llm:step,tool:escalate,tool:lookup_order",
            "node.started llm:step"
        ],
        "the hint comes before the step's node.started"
    );
    // The tools' node.started agree with the hint: under the model step.
    let started = hub.frames_of("node.started");
    for tool in ["tool:lookup_order", "tool:refund"] {
        let s = started
            .iter()
            .find(|f| f.payload()["nodeId"] == tool)
            .unwrap_or_else(|| panic!("{tool} started"));
        assert_eq!(s.payload()["parentId"], "llm:step", "{tool}: {s:?}");
    }
    let _ = other_agents_convert;
    gm.dispose().await;
}
