//! Detached (graphmind enabled, no debugger): every wrapped call returns exactly what the
//! bare client returns, and its step still reaches the replay ring.

mod support;

use futures_util::StreamExt;
use genai::chat::ChatRequest;
use graphmind_genai::Instrument;
use graphmind_tests::FakeDebugger;
use support::mock::Mock;
use support::{SECOND, assert_same_steps, attach_late, attached, detached, request, with_tools};

#[tokio::test]
async fn detached_the_wrapper_returns_what_the_bare_client_returns() {
    let mock = Mock::start().await;
    // Nothing listens on port 9 (discard).
    let gm = graphmind::Session::new(
        graphmind::Config::new("detached")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    let bare = mock.client();
    let client = mock.client().graphmind();
    let req = || ChatRequest::from_user("hi");
    let (wrapped, plain) = gm
        .run("a", async {
            let mut out = Vec::new();
            for c in [&client as &dyn Call, &bare as &dyn Call] {
                let mut one = Vec::new();
                for model in ["gpt-tools", "claude-tools", "claude-think"] {
                    let r = c.chat(model, req()).await;
                    one.push(serde_json::to_value(r).expect("json"));
                    one.extend(c.stream(model, req()).await);
                }
                out.push(one);
            }
            (out.remove(0), out.remove(0))
        })
        .await
        .expect("not aborted");
    assert_eq!(wrapped, plain);
    assert!(!gm.is_attached());
    assert!(gm.stats().buffered > 0, "the steps reached the replay ring");
    gm.dispose().await;
}

/// The same calls on the wrapped and the bare client.
trait Call: Sync {
    fn chat<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = genai::chat::ChatResponse> + Send + 'a>>;
    fn stream<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Vec<serde_json::Value>> + Send + 'a>>;
}

impl Call for graphmind_genai::Client {
    fn chat<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = genai::chat::ChatResponse> + Send + 'a>> {
        Box::pin(async move { self.exec_chat(model, req, None).await.expect("ok") })
    }
    fn stream<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Vec<serde_json::Value>> + Send + 'a>> {
        Box::pin(async move {
            let s = self
                .exec_chat_stream(model, req, None)
                .await
                .expect("ok")
                .stream;
            s.map(|e| serde_json::to_value(e.expect("event")).expect("json"))
                .collect()
                .await
        })
    }
}

impl Call for genai::Client {
    fn chat<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = genai::chat::ChatResponse> + Send + 'a>> {
        Box::pin(async move { self.exec_chat(model, req, None).await.expect("ok") })
    }
    fn stream<'a>(
        &'a self,
        model: &'static str,
        req: ChatRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Vec<serde_json::Value>> + Send + 'a>> {
        Box::pin(async move {
            let s = self
                .exec_chat_stream(model, req, None)
                .await
                .expect("ok")
                .stream;
            s.map(|e| serde_json::to_value(e.expect("event")).expect("json"))
                .collect()
                .await
        })
    }
}

/// `exec_chat` on both dialects, inside run `a`.
async fn two_dialects(gm: &graphmind::Session, mock: &Mock) {
    let client = mock.client().graphmind();
    gm.run("a", async {
        for model in ["gpt-tools", "claude-tools"] {
            client
                .exec_chat(model, with_tools(request()), None)
                .await
                .expect("ok");
        }
    })
    .await
    .expect("not aborted");
}

#[tokio::test]
async fn a_detached_exec_chat_sent_before_its_step_is_recorded_leaves_the_frames_of_an_attached_one()
 {
    let mock = Mock::start().await;
    // Detached: the request goes out before its step is recorded (`Node::detached_now`).
    let (late, gm) = detached("genai-detached").await;
    two_dialects(&gm, &mock).await;
    assert!(!gm.is_attached(), "the calls ran detached");
    attach_late(&late, &gm).await;
    // Attached, no breakpoint: step recorded, gate, request.
    let hub = FakeDebugger::start().await;
    let on = attached(&hub, vec![]).await;
    two_dialects(&on, &mock).await;
    hub.wait_count("run.finished", 1, 3 * SECOND).await;

    let lines = assert_same_steps(&late, &hub);
    assert_eq!(
        lines
            .iter()
            .filter(|l| *l == "node.finished llm:step ok")
            .count(),
        2,
        "{lines:?}"
    );
    gm.dispose().await;
    on.dispose().await;
}
