//! A tool returning a `Result` under another name (`type Res<T> = Result<T, E>`) gets the
//! error gate and `node.error` with `result = true`; without it the `Err` is just an output.

use std::time::Duration;

use graphmind_tests::{FakeDebugger, frame};
use serde::{Deserialize, Serialize};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[derive(Debug, Serialize, Deserialize)]
struct NotFound(u32);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no order {}", self.0)
    }
}

type Res<T> = Result<T, NotFound>;

#[graphmind::tool(result = true)]
async fn find_order(id: u32) -> Res<String> {
    Err(NotFound(id))
}

#[graphmind::tool]
async fn find_order_unmarked(id: u32) -> Res<String> {
    Err(NotFound(id))
}

#[tokio::test]
async fn a_result_alias_marked_result_gets_the_error_gate() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"point": "error"})]);
    let gm = graphmind::Session::new(hub.config("alias"));
    assert!(gm.ready(2 * SECOND).await);
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", find_order(7)).await }
    });
    let paused = hub.wait_for_kind("exec.paused", 2 * SECOND).await;
    assert_eq!(paused.payload()["point"], "error");
    assert_eq!(paused.payload()["nodeId"], "tool:find_order");
    assert_eq!(paused.payload()["error"]["message"], "no order 7");
    let id = paused.payload()["pauseId"].as_str().expect("id").to_owned();
    assert!(hub.inject(paused.run_id(), &id, json!("ORD-7")));
    assert_eq!(
        task.await.expect("joined").expect("ok").expect("injected"),
        "ORD-7"
    );

    // Unmarked, the alias is a plain value: no error gate, the Err is the output.
    let out = gm.run("r2", find_order_unmarked(8)).await.expect("ok");
    assert!(out.is_err());
    hub.wait_match(
        &frame("node.finished").with("nodeId", "tool:find_order_unmarked"),
        2 * SECOND,
    )
    .await;
    let frames = hub.frames();
    let fin = frames
        .iter()
        .find(|f| {
            f.kind() == "node.finished" && f.payload()["nodeId"] == "tool:find_order_unmarked"
        })
        .expect("finished");
    assert_eq!(fin.payload()["status"], "ok");
    assert_eq!(fin.payload()["output"], json!({"Err": 8}));
    assert_eq!(hub.frames_of("exec.paused").len(), 1);
    assert!(
        hub.frames_of("node.error")
            .iter()
            .all(|f| f.payload()["nodeId"] == "tool:find_order")
    );
    hub.assert_valid();
    gm.dispose().await;
}
