//! `mcp-proxy` gating the calls a client sends to an MCP server written with the Python
//! `mcp` SDK: its destructive tool held by default and answered by an inject (the server
//! never runs it), its read-only tool never held.

#[path = "support/proxy.rs"]
mod proxy_support;

use graphmind_tests::FakeDebugger;
use graphmind_tests::adapter::{SECOND, events, inject_at};
use proxy_support::{conversation, converse_on, proxied};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_tool_holds_an_inject_answers_and_a_cancel_ends_the_hold() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![]);
    let gm = graphmind::init(hub.config("mcp-proxy-tests"));
    assert!(gm.ready(SECOND * 5).await, "attached");
    let (task, to, from) = proxied();
    let lines = conversation(&[
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"x":2,"y":3}}}"#,
        r#"{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"delete_file","arguments":{"path":"/"}}}"#,
    ]);
    let talk = tokio::spawn(async move {
        let (mut to, mut from) = (to, BufReader::new(from));
        let answers = converse_on(&lines, &mut to, &mut from).await;
        (answers, to, from)
    });
    let p = inject_at(&hub, 1, json!("kept everything")).await;
    assert_eq!(p.payload()["nodeId"], "tool:delete_file");
    assert_eq!(
        p.payload()["holdReason"],
        "held before it runs: MCP server `py-files` marks tool `delete_file` destructive (destructiveHint: true)"
    );
    let (answers, mut to, _from) = tokio::time::timeout(SECOND * 30, talk)
        .await
        .expect("answered")
        .expect("joined");
    let add: Value = serde_json::from_slice(&answers[2]).expect("json");
    assert_eq!(add["result"]["content"][0]["text"], "5");
    let deleted: Value = serde_json::from_slice(&answers[3]).expect("json");
    assert_eq!(deleted["id"], "d");
    assert_eq!(deleted["result"]["content"][0]["text"], "kept everything");
    hub.wait_count("node.finished", 2, SECOND * 10).await;
    let lines = events(&hub);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("exec.paused"))
            .count(),
        1,
        "only the destructive tool held: {lines:?}"
    );
    let fin = hub
        .frames_of("node.finished")
        .into_iter()
        .find(|f| f.payload()["nodeId"] == "tool:delete_file")
        .expect("finished");
    assert_eq!(fin.payload()["injected"], true);
    // The client gives up on a held destructive call: the hold ends as a cancellation and the
    // server never sees the call.
    let held_call = r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"delete_file","arguments":{"path":"/home"}}}"#;
    to.write_all(format!("{held_call}\n").as_bytes())
        .await
        .expect("sent");
    to.flush().await.expect("flushed");
    graphmind_tests::adapter::paused(&hub, 2).await;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"timeout"}}"#;
    to.write_all(format!("{cancel}\n").as_bytes())
        .await
        .expect("sent");
    to.flush().await.expect("flushed");
    hub.wait_count("node.finished", 3, SECOND * 10).await;
    let cancelled = hub
        .frames_of("node.finished")
        .into_iter()
        .find(|f| f.payload()["cancelled"] == true)
        .expect("a cancelled call");
    assert_eq!(cancelled.payload()["nodeId"], "tool:delete_file");
    assert_eq!(cancelled.payload()["status"], "aborted");
    let resumed = hub.frames_of("exec.resumed");
    assert_eq!(resumed.len(), 2, "the held gate was released");
    hub.assert_valid();
    drop(task);
    gm.dispose().await;
}
