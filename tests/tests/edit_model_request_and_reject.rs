//! A held model step's request can be edited before it is sent (the scripted model gets the
//! edited request, through `#[model_step]` and through `Node::editable`), and a person can
//! reject a tool call with a reason: a `#[tool(reject)]` does not run and its caller gets
//! the `Err` built from `graphmind::Rejection`; a tool that did not opt in refuses the
//! reject as `unsupported`.

mod macro_support;

use graphmind_tests::adapter::resume_with;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use graphmind::node::{Node, Resume};
use graphmind::protocol::{NodeKind, PausePoint, Status};
use graphmind_tests::FakeDebugger;
use macro_support::{SECOND, finished, paused, run_finished, wait_count};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const EDIT_CAPS: &[&str] = &["pause-registry", "edit-input"];

async fn attached(hub: &FakeDebugger, breakpoints: Vec<Value>) -> graphmind::Session {
    hub.set_hub_capabilities(EDIT_CAPS);
    hub.set_breakpoints(breakpoints);
    let gm = graphmind::Session::new(hub.config("edit"));
    assert!(gm.ready(2 * SECOND).await, "did not attach");
    gm
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Chat {
    model: String,
    messages: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Reply {
    text: String,
}

impl graphmind::model::StepResponse for Reply {}

/// What the scripted model was sent.
static SENT: Mutex<Vec<Chat>> = Mutex::new(Vec::new());

#[graphmind::model_step]
async fn call_model(request: Chat) -> Reply {
    SENT.lock().expect("lock").push(request.clone());
    Reply {
        text: format!("{} said {}", request.model, request.messages.join(" ")),
    }
}

#[tokio::test]
async fn an_edited_model_request_reaches_the_scripted_model() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm"})]).await;
    let request = Chat {
        model: "small".into(),
        messages: vec!["hi".into()],
    };
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", call_model(request)).await }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["nodeId"], "llm:step");
    assert_eq!(held.payload()["editable"], true);
    let edited = json!({"model": "large", "messages": ["hello", "there"]});
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"request": edited}, "requestId": "m-1"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out.text, "large said hello there");
    let sent = SENT.lock().expect("lock").clone();
    assert_eq!(
        sent,
        [Chat {
            model: "large".into(),
            messages: vec!["hello".into(), "there".into()]
        }],
        "the model got the edited request, once"
    );
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(
        resumed.payload()["edited"]["after"],
        json!({"request": edited})
    );
    assert_eq!(resumed.payload()["requestId"], "m-1");
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["edited"]["after"], json!({"request": edited}));
    assert_eq!(
        fin["edited"]["before"],
        json!({"request": {"model": "small", "messages": ["hi"]}})
    );
    gm.dispose().await;
}

#[tokio::test]
async fn an_adapter_request_made_editable_through_node_returns_the_merged_request() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                let mut request = Chat {
                    model: "small".into(),
                    messages: vec!["hi".into()],
                };
                let mut node =
                    Node::start(NodeKind::Llm, "step", serde_json::to_value(&request).ok())
                        .expect("enabled");
                node.editable(&request);
                if let Resume::Edit { input, .. } = node.gate(PausePoint::Before).await {
                    request = serde_json::from_value(input).expect("checked at the gate");
                }
                node.finish(Status::Ok, Some(json!({"text": "ok"})));
                request
            })
            .await
        }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["editable"], true);
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"model": 7}}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(
        refused[0].payload()["code"],
        "schema",
        "{}",
        refused[0].payload()
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "continue", "input": {"model": "large"}}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Chat {
            model: "large".into(),
            messages: vec!["hi".into()]
        },
        "the edit is merged over the request"
    );
    gm.dispose().await;
}

#[derive(Debug, PartialEq)]
enum SendError {
    Rejected(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Rejected(r) => write!(f, "rejected: {r}"),
        }
    }
}

impl From<graphmind::Rejection> for SendError {
    fn from(r: graphmind::Rejection) -> Self {
        SendError::Rejected(r.reason)
    }
}

static SENDS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool(reject)]
async fn send_email(to: String) -> Result<String, SendError> {
    SENDS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sent to {to}"))
}

static DELETES: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn delete_branch(name: String) -> Result<String, String> {
    DELETES.fetch_add(1, Ordering::SeqCst);
    Ok(format!("deleted {name}"))
}

#[tokio::test]
async fn a_rejected_tool_does_not_run_and_its_caller_gets_the_reason_as_its_err() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool"})]).await;
    let caps = hub.frames_of("hello")[0].payload()["capabilities"].clone();
    assert!(
        caps.as_array().expect("caps").contains(&json!("reject")),
        "{caps}"
    );
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", send_email("boss@example.com".into())).await }
    });
    let held = paused(&hub, 1).await;
    let actions = held.payload()["actions"].clone();
    assert!(
        actions
            .as_array()
            .expect("actions")
            .contains(&json!("reject")),
        "{actions}"
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "reject", "reason": "wrong recipient", "requestId": "x-1"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, Err(SendError::Rejected("wrong recipient".into())));
    assert_eq!(SENDS.load(Ordering::SeqCst), 0, "the tool did not run");
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "reject");
    assert_eq!(resumed.payload()["reason"], "wrong recipient");
    assert_eq!(resumed.payload()["requestId"], "x-1");
    let error = &hub.frames_of("node.error")[0];
    assert_eq!(error.payload()["error"]["name"], "Rejected");
    assert!(
        error.payload()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("wrong recipient"))
    );
    let fin = &finished(&hub, "tool:send_email")[0];
    assert_eq!(fin["status"], "error");
    assert_eq!(fin["rejected"], json!({"reason": "wrong recipient"}));
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_tool_that_did_not_opt_in_refuses_a_reject_as_unsupported_and_stays_held() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", delete_branch("main".into())).await }
    });
    let held = paused(&hub, 1).await;
    let actions = held.payload()["actions"].clone();
    assert!(
        !actions
            .as_array()
            .expect("actions")
            .contains(&json!("reject")),
        "{actions}"
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "reject", "reason": "no", "requestId": "x-2"}),
    );
    let refused = wait_count(&hub, "exec.refused", 1).await;
    assert_eq!(refused[0].payload()["code"], "unsupported");
    assert_eq!(refused[0].payload()["requestId"], "x-2");
    tokio::time::sleep(SECOND / 10).await;
    assert!(!task.is_finished(), "still held after the refusal");
    assert_eq!(DELETES.load(Ordering::SeqCst), 0);
    resume_with(&hub, &held, json!({"action": "continue"}));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, Ok("deleted main".to_owned()));
    gm.dispose().await;
}

static STREAMS_OPENED: AtomicUsize = AtomicUsize::new(0);

/// A streaming tool that opts in to reject: it returns `Result<impl Stream, E>`.
#[graphmind::tool(reject)]
async fn stream_report(
    to: String,
) -> Result<impl futures_util::Stream<Item = String> + Send, SendError> {
    STREAMS_OPENED.fetch_add(1, Ordering::SeqCst);
    Ok(futures_util::stream::iter(vec![
        format!("report for {to}: "),
        "done".to_owned(),
    ]))
}

#[tokio::test]
async fn a_rejected_streaming_tool_never_opens_its_stream_and_its_caller_gets_the_reason() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "tool", "point": "before"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                match stream_report("ops".into()).await {
                    Ok(s) => {
                        use futures_util::StreamExt;
                        Ok(s.collect::<Vec<String>>().await)
                    }
                    Err(e) => Err(e),
                }
            })
            .await
        }
    });
    let held = paused(&hub, 1).await;
    let actions = held.payload()["actions"].clone();
    assert!(
        actions
            .as_array()
            .expect("actions")
            .contains(&json!("reject")),
        "{actions}"
    );
    resume_with(
        &hub,
        &held,
        json!({"action": "reject", "reason": "not today", "requestId": "x-3"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(out, Err(SendError::Rejected("not today".into())));
    assert_eq!(STREAMS_OPENED.load(Ordering::SeqCst), 0, "never opened");
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "reject");
    assert_eq!(resumed.payload()["requestId"], "x-3");
    let fin = &finished(&hub, "tool:stream_report")[0];
    assert_eq!(fin["status"], "error");
    assert_eq!(fin["rejected"], json!({"reason": "not today"}));

    // Continued, the same tool streams as usual.
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r2", async {
                use futures_util::StreamExt;
                match stream_report("ops".into()).await {
                    Ok(s) => Ok(s.collect::<Vec<String>>().await),
                    Err(e) => Err(e),
                }
            })
            .await
        }
    });
    let held = paused(&hub, 2).await;
    resume_with(&hub, &held, json!({"action": "continue"}));
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Ok(vec!["report for ops: ".to_owned(), "done".to_owned()])
    );
    assert_eq!(STREAMS_OPENED.load(Ordering::SeqCst), 1);
    hub.assert_valid();
    gm.dispose().await;
}

/// What the flaky scripted model was sent.
static FLAKY_SENT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Fails for the model `"gone"`.
#[graphmind::model_step]
async fn call_flaky_model(request: Chat) -> Result<Reply, String> {
    FLAKY_SENT.lock().expect("lock").push(request.model.clone());
    if request.model == "gone" {
        Err("model not found".into())
    } else {
        Ok(Reply {
            text: format!("{} answered", request.model),
        })
    }
}

#[tokio::test]
async fn retry_with_an_edited_request_at_the_error_gate_sends_it_to_the_scripted_model() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "error"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run(
                "r",
                call_flaky_model(Chat {
                    model: "gone".into(),
                    messages: vec!["hi".into()],
                }),
            )
            .await
        }
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["point"], "error");
    assert_eq!(held.payload()["editable"], true, "{}", held.payload());
    resume_with(
        &hub,
        &held,
        json!({"action": "retry", "input": {"request": {"model": "small", "messages": ["hi"]}},
               "requestId": "m-1"}),
    );
    let out = task.await.expect("joined").expect("not aborted");
    assert_eq!(
        out,
        Ok(Reply {
            text: "small answered".into()
        })
    );
    assert_eq!(
        *FLAKY_SENT.lock().expect("lock"),
        ["gone", "small"],
        "the retry sent the edited request"
    );
    run_finished(&hub).await;
    let resumed = &hub.frames_of("exec.resumed")[0];
    assert_eq!(resumed.payload()["action"], "retry");
    assert_eq!(resumed.payload()["requestId"], "m-1");
    assert_eq!(
        resumed.payload()["edited"]["after"]["request"]["model"],
        "small"
    );
    hub.assert_valid();
    gm.dispose().await;
}
