//! Disabled (the process default session off): the wrapper calls straight through, so its
//! results are the bare client's and graphmind records nothing.

mod support;

use async_openai::types::chat::CreateChatCompletionRequest;
use async_openai::types::responses::CreateResponse;
use graphmind_openai::Instrument;
use serde_json::json;
use support::mock::Mock;
use support::sdk;

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
    let req: CreateChatCompletionRequest =
        sdk(json!({"model": "tools", "messages": [{"role": "user", "content": "hi"}]}));
    let wrapped = client.chat().create(req.clone()).await.expect("ok");
    let bare = mock.client().chat().create(req).await.expect("ok");
    assert_eq!(
        serde_json::to_value(wrapped).expect("json"),
        serde_json::to_value(bare).expect("json")
    );
    let r: CreateResponse = sdk(json!({"model": "web-search", "input": "hi"}));
    let wrapped = client.responses().create(r.clone()).await.expect("ok");
    let bare = mock.client().responses().create(r).await.expect("ok");
    assert_eq!(wrapped.id, bare.id);
    assert_eq!(gm.stats().recorded, 0, "nothing recorded");
    assert_eq!(mock.count(), 4);
}
