//! Disabled (the process default session off): the wrapper calls straight through, so its
//! results are the bare client's, a stream is genai's own inside, and graphmind records
//! nothing.

mod support;

use futures_util::StreamExt;
use genai::chat::ChatRequest;
use graphmind_genai::Instrument;
use support::mock::Mock;

#[tokio::test]
async fn disabled_the_wrapper_calls_straight_through() {
    let gm = graphmind::init(
        graphmind::Config::new("disabled")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!graphmind::node::Node::enabled());
    let mock = Mock::start().await;
    let client = mock.client().graphmind();
    let req = ChatRequest::from_user("hi");
    let wrapped = client
        .exec_chat("claude-tools", req.clone(), None)
        .await
        .expect("ok");
    let bare = mock
        .client()
        .exec_chat("claude-tools", req.clone(), None)
        .await
        .expect("ok");
    assert_eq!(
        serde_json::to_value(wrapped).expect("json"),
        serde_json::to_value(bare).expect("json")
    );
    let events: Vec<_> = client
        .exec_chat_stream("gpt-tools", req, None)
        .await
        .expect("ok")
        .stream
        .map(|e| serde_json::to_value(e.expect("event")).expect("json"))
        .collect()
        .await;
    assert!(
        events
            .last()
            .is_some_and(|e| e["End"].get("captured_usage").is_none()),
        "no usage forced on when disabled: {events:?}"
    );
    assert_eq!(gm.stats().recorded, 0, "nothing recorded");
    assert_eq!(mock.count(), 3);
    // What went out is what the caller asked for: no `include_usage` added.
    assert!(mock.seen()[2].body.get("stream_options").is_none());
}
