//! The 512 KB payload budget: a huge input or output is shrunk before it is recorded, and
//! the frames stay valid.

use std::time::Duration;

use graphmind_tests::FakeDebugger;

const SECOND: Duration = Duration::from_secs(1);
const BUDGET: usize = 512 * 1024;

#[graphmind::tool]
async fn big(text: String) -> String {
    text.repeat(2)
}

#[tokio::test]
async fn huge_input_and_output_are_shrunk_to_the_budget() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("budget"));
    assert!(gm.ready(2 * SECOND).await);
    let input = "x".repeat(600 * 1024);
    let out = gm.run("b", big(input.clone())).await.expect("ok");
    assert_eq!(out.len(), 1200 * 1024, "the caller gets the real value");
    hub.wait_for_kind("run.finished", 5 * SECOND).await;
    let frames = hub.frames();
    for kind in ["node.started", "node.finished"] {
        let f = frames
            .iter()
            .find(|f| f.kind() == kind && f.payload()["nodeId"] == "tool:big")
            .expect(kind);
        let len = f.payload().to_string().len();
        assert!(len <= BUDGET, "{kind} payload is {len} bytes");
        assert_eq!(
            f.payload()["__graphmindTruncated"],
            true,
            "{kind} is marked"
        );
        assert_eq!(f.payload()["nodeId"], "tool:big", "identity fields survive");
    }
    hub.assert_valid();
    gm.dispose().await;
}
