//! Reject with a reason at a tool's `before` gate, in an agent loop of the user's own over
//! the wrapped client: the `#[graphmind::tool(call_id = …, reject)]` does not run, returns the
//! rejection as its error, and the loop hands that to the model as the call's result.

mod support;

use genai::chat::{ChatMessage, ChatRequest, Tool, ToolResponse};
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::Mock;
use support::{attached, finished, paused, runs_finished};

/// A tool's failure as the loop hands it to the model; a person's rejection is one.
#[derive(Debug)]
struct ToolFailed(String);

impl std::fmt::Display for ToolFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolFailed {}

impl From<graphmind::Rejection> for ToolFailed {
    fn from(r: graphmind::Rejection) -> Self {
        Self(r.to_string())
    }
}

#[graphmind::tool(call_id = call_id, reject)]
async fn send_weather(call_id: String, city: String) -> Result<Value, ToolFailed> {
    let _ = call_id;
    Ok(json!({"city": city, "sent": true}))
}

#[tokio::test]
async fn a_rejected_tool_does_not_run_and_the_model_sees_the_reason_as_its_result() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let client = mock.client().graphmind();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("a", async {
                let req = ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")])
                    .with_tools(vec![Tool::new("get_weather")]);
                let res = client.exec_chat("claude-tools", req.clone(), None).await?;
                let call = res.tool_calls()[0].clone();
                let city = call.fn_arguments["city"].as_str().unwrap_or("?").to_owned();
                // The tool's error (a rejection too) is the tool result the model reads.
                let content = match send_weather(call.call_id.clone(), city).await {
                    Ok(v) => v.to_string(),
                    Err(ToolFailed(why)) => why,
                };
                let req = req
                    .append_message(ChatMessage::from(vec![call.clone()]))
                    .append_message(ChatMessage::from(ToolResponse::new(call.call_id, content)));
                client.exec_chat("claude-tools", req, None).await
            })
            .await
        }
    });
    let p = paused(&hub, 1).await;
    assert_eq!(p.payload()["nodeId"], "tool:send_weather");
    assert!(
        p.payload()["actions"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("reject"))),
        "{:?}",
        p.payload()
    );
    support::reject_at(&hub, 1, "not that city").await;
    task.await
        .expect("joined")
        .expect("not aborted")
        .expect("the second turn");
    let second = serde_json::to_string(&mock.seen()[1].body).expect("JSON");
    assert!(
        second.contains("the call was rejected by a person: not that city"),
        "the model's next turn carries the reason: {second}"
    );
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "tool:send_weather")[0];
    assert_eq!(fin["status"], "error", "{fin}");
    assert_eq!(fin["rejected"]["reason"], "not that city");
    hub.assert_valid();
    gm.dispose().await;
}
