//! What a `GatedPeer` call is besides its gates: a child of the model step that asked for
//! it, the model's tool-call id as its instanceId, a cancellation when its future is
//! dropped while held, and `resources/read` / `prompts/get` as nodes of their own kinds.

mod support;

use std::time::Duration;

use graphmind::model::Grouping;
use graphmind::node::Node;
use graphmind::protocol::Status;
use graphmind_rmcp::Config;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::json;
use support::{
    args, call, done, expect, finished, inject_at, join, paused, spawn_in_run, started, world,
};

fn plain() -> Config {
    Config::default().hold_destructive(false)
}

#[tokio::test]
async fn a_call_after_a_model_step_is_its_child_with_the_models_call_id() {
    let w = world(vec![], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        let step = Node::start_step(
            json!({"messages": [{"role": "user", "content": "2+3?"}]}),
            Grouping::Auto,
        )
        .expect("enabled");
        step.finish(
            Status::Ok,
            Some(json!({"text": "", "toolCalls": [{"id": "call_7", "name": "add"}]})),
        );
        mcp.call_tool_for("call_7", call("add", json!({"x": 2, "y": 3})))
            .await
    });
    join(task).await.expect("not aborted").expect("answered");
    assert_eq!(
        done(&w).await,
        expect(&[
            "graph.hint agent:a,llm:step",
            "node.started llm:step",
            "node.finished llm:step ok",
            "node.started tool:add",
            "node.finished tool:add ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let s = &started(&w.hub, "tool:add")[0];
    assert_eq!(s["parentId"], "llm:step");
    assert_eq!(s["instanceId"], "call_7");
    assert_eq!(finished(&w.hub, "tool:add")[0]["instanceId"], "call_7");
    w.gm.dispose().await;
}

#[tokio::test]
async fn a_call_dropped_while_held_is_a_cancellation_not_an_error() {
    let w = world(vec![json!({"kind": "tool", "point": "before"})], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        // The agent gives up on the call after a while (its own timeout).
        tokio::time::timeout(
            Duration::from_millis(500),
            mcp.call_tool(call("add", json!({"x": 1, "y": 1}))),
        )
        .await
        .is_err()
    });
    paused(&w.hub, 1).await;
    assert!(
        join(task).await.expect("not aborted"),
        "the agent timed out"
    );
    assert_eq!(w.files.seen.count("add"), 0);
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started tool:add",
            "exec.paused tool:add before",
            "exec.resumed continue",
            "node.finished tool:add aborted",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let f = &finished(&w.hub, "tool:add")[0];
    assert_eq!(f["cancelled"], true);
    assert_eq!(w.hub.frames_of("node.error").len(), 0, "not an error");
    w.gm.dispose().await;
}

#[tokio::test]
async fn resources_read_is_a_resource_node_and_an_inject_a_valid_result() {
    let w = world(vec![json!({"kind": "resource", "point": "after"})], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.read_resource(ReadResourceRequestParams::new("mem://note"))
            .await
    });
    let p = inject_at(&w.hub, 1, json!("an edited note")).await;
    assert_eq!(p.payload()["nodeId"], "resource:mem://note");
    let out = join(task).await.expect("not aborted").expect("answered");
    let v = serde_json::to_value(&out).expect("serializes");
    assert_eq!(v["contents"][0]["text"], "an edited note");
    assert_eq!(v["contents"][0]["uri"], "mem://note");
    done(&w).await;
    let s = &started(&w.hub, "resource:mem://note")[0];
    assert_eq!(s["kind"], "resource");
    assert_eq!(s["input"], json!({"uri": "mem://note"}));
    assert_eq!(s["method"], "resources/read");
    w.gm.dispose().await;
}

#[tokio::test]
async fn prompts_get_is_a_prompt_node_with_the_arguments_as_input() {
    let w = world(vec![], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.get_prompt(
            GetPromptRequestParams::new("greet").with_arguments(args(json!({"name": "Ada"}))),
        )
        .await
    });
    let out = join(task).await.expect("not aborted").expect("answered");
    let v = serde_json::to_value(&out).expect("serializes");
    assert_eq!(v["messages"][0]["content"]["text"], "Hello Ada");
    assert_eq!(
        done(&w).await,
        expect(&[
            "node.started prompt:greet",
            "node.finished prompt:greet ok",
            "node.finished agent:a ok",
            "run.finished ok",
        ])
    );
    let s = &started(&w.hub, "prompt:greet")[0];
    assert_eq!(s["kind"], "prompt");
    assert_eq!(s["input"], json!({"name": "Ada"}));
    assert_eq!(
        finished(&w.hub, "prompt:greet")[0]["output"]["messages"][0]["content"]["text"],
        "Hello Ada"
    );
    w.gm.dispose().await;
}

#[tokio::test]
async fn the_calls_traceparent_reaches_the_server_in_its_meta() {
    let w = world(vec![], plain()).await;
    let task = spawn_in_run(&w.gm, w.mcp.clone(), |mcp| async move {
        mcp.call_tool(call("add", json!({"x": 2, "y": 3}))).await
    });
    join(task).await.expect("not aborted").expect("answered");
    done(&w).await;
    let s = &started(&w.hub, "tool:add")[0];
    let run_id = w.hub.frames_of("run.started")[0].run_id().to_owned();
    let instance = s["instanceId"].as_str().expect("instanceId");
    let expected = graphmind::protocol::trace::traceparent(&run_id, "tool:add", instance);
    let seen = w.files.traceparents.lock().expect("not poisoned").clone();
    assert_eq!(seen, vec![Some(expected.clone())]);
    // The trace id is the one the hub's OTLP export gives the run.
    let trace: String = graphmind::protocol::trace::trace_id(&run_id)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(expected.split('-').nth(1), Some(trace.as_str()));
    w.gm.dispose().await;
}

#[tokio::test]
async fn a_traceparent_the_app_set_itself_is_kept() {
    let w = world(vec![], plain()).await;
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let task = spawn_in_run(&w.gm, w.mcp.clone(), move |mcp| async move {
        let mut params = call("add", json!({"x": 2, "y": 3}));
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.0.set_traceparent(own);
        params.meta = Some(meta);
        mcp.call_tool(params).await
    });
    join(task).await.expect("not aborted").expect("answered");
    done(&w).await;
    let seen = w.files.traceparents.lock().expect("not poisoned").clone();
    assert_eq!(seen, vec![Some(own.to_owned())]);
    w.gm.dispose().await;
}
