//! Model steps inside one run are grouped into invocations: a step continues the previous
//! invocation when its request has the same first message and has grown (through
//! `StepRequest`, or the captured `messages` field), or when `invocation = …` says so. The
//! request is the first argument the input records (not a skipped client).

mod macro_support;

use std::borrow::Cow;

use graphmind_tests::FakeDebugger;
use macro_support::{attached, run_finished};

#[derive(Clone, serde::Serialize)]
struct Chat {
    messages: Vec<String>,
}

impl graphmind::model::StepRequest for Chat {
    fn first_message(&self) -> Option<Cow<'_, str>> {
        self.messages.first().map(|m| Cow::Borrowed(m.as_str()))
    }
    fn message_count(&self) -> usize {
        self.messages.len()
    }
}

/// No `StepRequest`: grouped from the captured input's `messages`.
#[derive(Clone, serde::Serialize)]
struct Plain {
    messages: Vec<String>,
}

#[graphmind::model_step]
async fn by_trait(request: Chat) -> String {
    request.messages.join("|")
}

#[graphmind::model_step]
async fn by_input(request: Plain) -> String {
    request.messages.join("|")
}

/// A `StepRequest` whose input does not serialize as `messages` (like the Responses API's
/// `input`), behind a skipped client argument.
#[derive(Clone, serde::Serialize)]
struct Responses {
    input: Vec<String>,
}

impl graphmind::model::StepRequest for Responses {
    fn first_message(&self) -> Option<Cow<'_, str>> {
        self.input.first().map(|m| Cow::Borrowed(m.as_str()))
    }
    fn message_count(&self) -> usize {
        self.input.len()
    }
}

struct Client;

#[graphmind::model_step(skip(client))]
async fn after_a_client(client: &Client, request: Responses) -> String {
    let _ = client;
    request.input.join("|")
}

#[graphmind::model_step(invocation = ticket)]
async fn by_key(ticket: u32, prompt: String) -> String {
    format!("{ticket}:{prompt}")
}

fn msgs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// `(invocation, step)` of every llm:step node.started, and the number of graph.hints.
fn steps(hub: &FakeDebugger) -> (Vec<(String, String)>, usize) {
    let ids = hub
        .frames_of("node.started")
        .iter()
        .filter(|f| f.payload()["nodeId"] == "llm:step")
        .map(|f| {
            let id = f.payload()["instanceId"].as_str().unwrap_or_default();
            let (inv, step) = id.rsplit_once(':').unwrap_or((id, ""));
            (inv.to_owned(), step.to_owned())
        })
        .collect();
    (ids, hub.frames_of("graph.hint").len())
}

fn shape(ids: &[(String, String)]) -> Vec<String> {
    // Invocations renamed A, B, … in order of appearance.
    let mut seen: Vec<&str> = Vec::new();
    ids.iter()
        .map(|(inv, step)| {
            let n = seen.iter().position(|s| s == inv).unwrap_or_else(|| {
                seen.push(inv);
                seen.len() - 1
            });
            format!(
                "{}:{step}",
                char::from(b'A' + u8::try_from(n).unwrap_or(25))
            )
        })
        .collect()
}

#[tokio::test]
async fn growing_requests_continue_an_invocation_and_a_new_first_message_starts_one() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        by_trait(Chat {
            messages: msgs(&["sys", "u1"]),
        })
        .await;
        by_trait(Chat {
            messages: msgs(&["sys", "u1", "a1", "tool"]),
        })
        .await;
        by_trait(Chat {
            messages: msgs(&["sys", "u1", "a1", "tool", "a2"]),
        })
        .await;
        by_trait(Chat {
            messages: msgs(&["other sys", "u2"]),
        })
        .await;
        by_trait(Chat {
            messages: msgs(&["other sys"]),
        })
        .await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let (ids, hints) = steps(&hub);
    assert_eq!(
        shape(&ids),
        ["A:s1", "A:s2", "A:s3", "B:s1", "C:s1"],
        "a shrunk request starts anew"
    );
    assert_eq!(
        hints, 1,
        "one graph.hint per run: the later invocations offer the same nodes"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn the_captured_messages_group_without_a_trait() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        by_input(Plain {
            messages: msgs(&["sys", "u1"]),
        })
        .await;
        by_input(Plain {
            messages: msgs(&["sys", "u1", "a1"]),
        })
        .await;
        by_input(Plain {
            messages: msgs(&["sys2", "u1"]),
        })
        .await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    assert_eq!(shape(&steps(&hub).0), ["A:s1", "A:s2", "B:s1"]);
    gm.dispose().await;
}

#[tokio::test]
async fn an_explicit_invocation_key_groups_by_key() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        by_key(7, "a".into()).await;
        by_key(7, "completely different".into()).await;
        by_key(8, "a".into()).await;
        by_key(7, "back".into()).await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    // Only the run's current invocation can be continued: key 7 after key 8 starts anew.
    assert_eq!(shape(&steps(&hub).0), ["A:s1", "A:s2", "B:s1", "C:s1"]);
    gm.dispose().await;
}

#[tokio::test]
async fn a_skipped_client_argument_is_not_taken_for_the_request() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        after_a_client(
            &Client,
            Responses {
                input: msgs(&["sys", "u1"]),
            },
        )
        .await;
        after_a_client(
            &Client,
            Responses {
                input: msgs(&["sys", "u1", "a1"]),
            },
        )
        .await;
        after_a_client(
            &Client,
            Responses {
                input: msgs(&["sys2"]),
            },
        )
        .await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    assert_eq!(shape(&steps(&hub).0), ["A:s1", "A:s2", "B:s1"]);
    gm.dispose().await;
}

#[tokio::test]
async fn a_model_step_started_by_hand_joins_the_invocation_of_macro_steps() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        let first = Chat {
            messages: msgs(&["sys", "u1"]),
        };
        by_trait(first.clone()).await;
        // An SDK call made by hand, with the grown conversation: the same invocation.
        let grown = Chat {
            messages: msgs(&["sys", "u1", "a1"]),
        };
        let node = graphmind::node::Node::start_step(
            serde_json::json!({"messages": grown.messages}),
            graphmind::model::Grouping::of(&grown),
        )
        .expect("enabled");
        node.finish(
            graphmind::protocol::Status::Ok,
            Some(serde_json::json!("a2")),
        );
        by_trait(Chat {
            messages: msgs(&["sys", "u1", "a1", "a2"]),
        })
        .await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let (ids, hints) = steps(&hub);
    assert_eq!(shape(&ids), ["A:s1", "A:s2", "A:s3"]);
    assert_eq!(hints, 1, "one invocation, one graph.hint");
    gm.dispose().await;
}
