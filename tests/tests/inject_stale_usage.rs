//! Regression: an inject on a model step recorded the *original* response's `finishReason`
//! and usage beside the injected output. The injected value replaces all of it: its own
//! usage and finish reason (read through `StepResponse`), or none.

mod macro_support;

use std::borrow::Cow;

use graphmind::model::{StepResponse, Usage};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, finished, pause_id, paused, run_finished};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Serialize)]
struct Request {
    messages: Vec<String>,
}

/// A response whose usage and finish reason are its own fields, so that an injected value
/// carries its own (or none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Reply {
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish: Option<String>,
}

impl StepResponse for Reply {
    fn usage(&self) -> Option<Usage> {
        self.output_tokens.map(|n| Usage::new(100, n))
    }
    fn finish_reason(&self) -> Option<Cow<'_, str>> {
        self.finish.as_deref().map(Cow::Borrowed)
    }
}

#[graphmind::model_step]
async fn complete(request: Request) -> Result<Reply, String> {
    if request.messages.iter().any(|m| m == "fail") {
        return Err("model overloaded".into());
    }
    Ok(Reply {
        text: "original".into(),
        output_tokens: Some(42),
        finish: Some("stop".into()),
    })
}

fn request(text: &str) -> Request {
    Request {
        messages: vec!["system".into(), text.into()],
    }
}

/// Injects `value` at the first pause (`point`) of one step and returns its node.finished.
async fn finished_after_inject(point: &str, ask: &str, value: Value) -> Value {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": point})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        let req = request(ask);
        async move { gm.run("r", complete(req)).await }
    });
    let pause = paused(&hub, 1).await;
    assert_eq!(pause.payload()["point"], point);
    assert!(hub.inject(pause.run_id(), &pause_id(&pause), value.clone()));
    let out = task.await.expect("joined").expect("not aborted");
    let expected: Reply = serde_json::from_value(value).expect("a reply");
    assert_eq!(out, Ok(expected), "the caller gets the injected reply");
    run_finished(&hub).await;
    let fin = finished(&hub, "llm:step").remove(0);
    hub.assert_valid();
    gm.dispose().await;
    fin
}

#[tokio::test]
async fn after_inject_without_usage_drops_the_original_usage_and_finish_reason() {
    let fin = finished_after_inject("after", "hi", json!({"text": "injected"})).await;
    assert_eq!(fin["output"], json!({"text": "injected"}));
    assert_eq!(fin["injected"], true);
    assert!(fin.get("usage").is_none(), "stale usage: {fin}");
    assert!(
        fin.get("finishReason").is_none(),
        "stale finish reason: {fin}"
    );
}

#[tokio::test]
async fn after_inject_records_the_injected_usage_and_finish_reason() {
    let value = json!({"text": "cut", "output_tokens": 7, "finish": "length"});
    let fin = finished_after_inject("after", "hi", value.clone()).await;
    assert_eq!(fin["output"], value);
    assert_eq!(fin["usage"], json!({"inputTokens": 100, "outputTokens": 7}));
    assert_eq!(fin["finishReason"], "length");
}

#[tokio::test]
async fn error_inject_records_the_injected_usage_and_finish_reason() {
    let value = json!({"text": "recovered", "output_tokens": 5, "finish": "stop"});
    let fin = finished_after_inject("error", "fail", value.clone()).await;
    assert_eq!(fin["output"], value);
    assert_eq!(fin["recoveredFromError"], true);
    assert_eq!(fin["usage"], json!({"inputTokens": 100, "outputTokens": 5}));
    assert_eq!(fin["finishReason"], "stop");
}

#[tokio::test]
async fn before_inject_records_the_injected_usage_and_finish_reason() {
    let value = json!({"text": "canned", "output_tokens": 1, "finish": "stop"});
    let fin = finished_after_inject("before", "hi", value.clone()).await;
    assert_eq!(fin["output"], value);
    assert_eq!(fin["usage"], json!({"inputTokens": 100, "outputTokens": 1}));
    assert_eq!(fin["finishReason"], "stop");
}
