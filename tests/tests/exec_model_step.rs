//! Model steps: `llm:step` nodes, invocation grouping, the graph hint with the tool roster,
//! usage and finish reason, the error gate's retry within one node execution.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind::model::{StepRequest, StepResponse, Usage};
use graphmind_tests::FakeDebugger;
use serde::{Deserialize, Serialize};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[derive(Clone, Serialize)]
struct Chat {
    messages: Vec<String>,
}

impl StepRequest for Chat {
    fn first_message(&self) -> Option<Cow<'_, str>> {
        self.messages.first().map(|m| Cow::Borrowed(m.as_str()))
    }
    fn message_count(&self) -> usize {
        self.messages.len()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Reply {
    text: String,
}

impl StepResponse for Reply {
    fn usage(&self) -> Option<Usage> {
        // OpenAI-style counts: the prompt tokens include the cached ones.
        Some(Usage::inclusive(10, 3))
    }
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed("stop"))
    }
}

static FAILS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::model_step(tools = [lookup])]
async fn step(req: Chat) -> Result<Reply, String> {
    if req.messages.iter().any(|m| m == "fail-once") && FAILS.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err("rate limited".into());
    }
    Ok(Reply {
        text: format!("{} messages", req.messages.len()),
    })
}

#[graphmind::tool]
async fn lookup(id: String) -> String {
    id
}

/// Never named on a model step: it reaches the hint through the binary's roster only.
#[graphmind::tool]
async fn audit(line: String) -> String {
    line
}

fn chat(msgs: &[&str]) -> Chat {
    Chat {
        messages: msgs.iter().map(|m| (*m).to_owned()).collect(),
    }
}

#[tokio::test]
async fn steps_group_into_invocations_and_the_first_step_hints_the_graph() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("steps"));
    assert!(gm.ready(2 * SECOND).await);
    gm.run("agent", async {
        step(chat(&["sys", "q1"])).await.expect("ok");
        step(chat(&["sys", "q1", "a1", "tool"])).await.expect("ok");
        step(chat(&["other", "q2"])).await.expect("ok");
    })
    .await
    .expect("not aborted");
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let ids: Vec<String> = frames
        .iter()
        .filter(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "llm:step")
        .map(|f| f.payload()["instanceId"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids.len(), 3);
    let inv = |s: &str| s.rsplit_once(':').expect("inv:sN").0.to_owned();
    assert!(
        ids[0].ends_with(":s1") && ids[1].ends_with(":s2") && ids[2].ends_with(":s1"),
        "{ids:?}"
    );
    assert_eq!(
        inv(&ids[0]),
        inv(&ids[1]),
        "a grown conversation continues the invocation"
    );
    assert_ne!(
        inv(&ids[0]),
        inv(&ids[2]),
        "a new first message starts a new one"
    );
    let hints = hub.frames_of("graph.hint");
    assert_eq!(
        hints.len(),
        1,
        "one hint per run: the second invocation offers the same nodes"
    );
    let nodes = &hints[0].payload()["nodes"];
    assert_eq!(
        nodes[0],
        json!({"nodeId": "agent:agent", "kind": "agent", "name": "agent"})
    );
    assert_eq!(nodes[1]["nodeId"], "llm:step");
    assert_eq!(nodes[1]["parentId"], "agent:agent");
    let tools: Vec<&str> = nodes
        .as_array()
        .expect("nodes")
        .iter()
        .skip(2)
        .map(|n| n["name"].as_str().expect("name"))
        .collect();
    assert!(tools.contains(&"lookup"), "tools = [lookup]: {tools:?}");
    assert!(
        !tools.contains(&"audit"),
        "a tool the step does not name stays out of its roster: {tools:?}"
    );
    let _ = (lookup, audit);
    assert!(
        nodes
            .as_array()
            .expect("nodes")
            .iter()
            .skip(2)
            .all(|n| n["parentId"] == "llm:step")
    );
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "llm:step")
        .expect("finished");
    assert_eq!(
        fin.payload()["usage"],
        json!({"inputTokens": 10, "outputTokens": 3, "inclusive": true}),
        "counts that include cached prompt tokens say so"
    );
    // Said once: the output is the response as it serializes (no text read), so the
    // finish reason is the loose field.
    assert_eq!(fin.payload()["finishReason"], "stop");
    assert!(
        fin.payload()["output"].get("finishReason").is_none(),
        "{fin:?}"
    );
    assert_eq!(fin.payload()["output"], json!({"text": "2 messages"}));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn error_retry_reruns_the_model_call_in_one_node_execution() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"kind": "llm", "point": "error"})]);
    let gm = graphmind::Session::new(hub.config("steps-retry"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("agent", step(chat(&["fail-once"]))).await }
    });
    let p = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(p.payload()["nodeId"], "llm:step");
    assert_eq!(p.payload()["point"], "error");
    assert!(hub.resume(
        p.run_id(),
        p.payload()["pauseId"].as_str().expect("id"),
        "retry"
    ));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Ok(Reply {
            text: "1 messages".into()
        })
    );
    hub.wait_for_kind("run.finished", SECOND).await;
    let frames = hub.frames();
    let started = frames
        .iter()
        .filter(|f| f.kind() == "node.started" && f.payload()["nodeId"] == "llm:step")
        .count();
    assert_eq!(started, 1);
    let fin = frames
        .iter()
        .find(|f| f.kind() == "node.finished" && f.payload()["nodeId"] == "llm:step")
        .expect("finished");
    assert_eq!(fin.payload()["attempts"], 2);
    assert_eq!(fin.payload()["status"], "ok");
    gm.dispose().await;
}
