//! `#[graphmind::model_step(codec = …)]` over types of another crate (`serde_json::Value`
//! shaped like OpenAI's chat API, which implements no graphmind trait for it): the response is
//! recorded in GraphMind 0.6's shape `{text, finishReason, rawFinishReason, toolCalls}` with
//! the full response under `response`, the finish reason normalized; an inject replaces all of
//! it; chunks stream through the codec; `previous_response_id` continues an invocation.

mod macro_support;

use std::borrow::Cow;

use futures_util::{Stream, StreamExt};
use graphmind::model::{
    ChunkCodec, Delta, DeltaKind, RequestCodec, ResponseCodec, ToolCall, Usage,
};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, finished, pause_id, paused, run_finished, wait_count};
use serde_json::{Value, json};

/// The codec this crate owns for the "SDK's" JSON types.
struct Chat;

fn usage_of(u: &Value) -> Option<Usage> {
    let usage = Usage::inclusive(
        u["prompt_tokens"].as_u64()?,
        u["completion_tokens"].as_u64()?,
    );
    Some(
        match u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
        {
            Some(n) => usage.with_cache_read(n),
            None => usage,
        },
    )
}

impl ResponseCodec<Value> for Chat {
    fn usage(r: &Value) -> Option<Usage> {
        usage_of(r.get("usage")?)
    }
    fn finish_reason(r: &Value) -> Option<Cow<'_, str>> {
        r.pointer("/choices/0/finish_reason")?
            .as_str()
            .map(Cow::Borrowed)
    }
    fn text(r: &Value) -> Option<Cow<'_, str>> {
        let message = r.pointer("/choices/0/message")?;
        Some(Cow::Borrowed(message["content"].as_str().unwrap_or("")))
    }
    fn tool_calls(r: &Value) -> Vec<ToolCall<'_>> {
        let calls = r
            .pointer("/choices/0/message/tool_calls")
            .and_then(Value::as_array);
        calls
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let f = c.get("function")?;
                let call = ToolCall::new(f["name"].as_str()?, f["arguments"].as_str()?);
                Some(match c["id"].as_str() {
                    Some(id) => call.with_id(id),
                    None => call,
                })
            })
            .collect()
    }
    fn model(r: &Value) -> Option<Cow<'_, str>> {
        r.get("model")?.as_str().map(Cow::Borrowed)
    }
    fn response_id(r: &Value) -> Option<Cow<'_, str>> {
        r.get("id")?.as_str().map(Cow::Borrowed)
    }
}

impl ChunkCodec<Value> for Chat {
    fn call_deltas(c: &Value, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Some(text) = c
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            emit(Delta::new(DeltaKind::Text, text));
        }
        let calls = c
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let args = call.pointer("/function/arguments").and_then(Value::as_str);
            let (Some(index), Some(args)) = (call["index"].as_u64(), args) else {
                continue;
            };
            let mut delta = Delta::tool_args(index, args);
            if let Some(id) = call["id"].as_str() {
                delta = delta.with_call_id(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                delta = delta.with_tool_name(name);
            }
            emit(delta);
        }
    }
    fn usage(c: &Value) -> Option<Usage> {
        usage_of(c.get("usage")?)
    }
    fn finish_reason(c: &Value) -> Option<Cow<'_, str>> {
        c.pointer("/choices/0/finish_reason")?
            .as_str()
            .map(Cow::Borrowed)
    }
}

impl RequestCodec<Value> for Chat {
    fn previous_response_id(q: &Value) -> Option<Cow<'_, str>> {
        q.get("previous_response_id")?.as_str().map(Cow::Borrowed)
    }
}

/// The "server": answers with `request.reply`, or a plain stop.
#[graphmind::model_step(codec = Chat)]
async fn create(request: Value) -> Result<Value, String> {
    Ok(request.get("reply").cloned().unwrap_or_else(|| {
        json!({"id": "resp_x", "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})
    }))
}

#[graphmind::model_step(codec = Chat)]
async fn create_stream(request: Value) -> impl Stream<Item = Value> + Send {
    let _ = request;
    futures_util::stream::iter(vec![
        json!({"choices": [{"delta": {"content": "Lis"}}]}),
        json!({"choices": [{"delta": {"content": "bon"}}]}),
        json!({"choices": [{"delta": {}, "finish_reason": "length"}],
               "usage": {"prompt_tokens": 9, "completion_tokens": 2}}),
    ])
}

fn reply(content: Value, finish: &str) -> Value {
    json!({
        "id": "resp_1",
        "model": "gpt-test",
        "choices": [{"message": {"content": content}, "finish_reason": finish}],
    })
}

#[tokio::test]
async fn a_foreign_response_is_recorded_in_graphmind_06_shape() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let response = json!({
        "id": "chatcmpl-7",
        "model": "gpt-test",
        "choices": [{
            "message": {
                "content": null,
                "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"city\":\"Lisbon\"}"}},
                    {"id": "call_b", "type": "function",
                     "function": {"name": "convert", "arguments": "not json"}},
                ],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30,
                  "prompt_tokens_details": {"cached_tokens": 100}},
    });
    let out = gm
        .run("r", create(json!({"reply": response.clone()})))
        .await
        .expect("not aborted");
    assert_eq!(
        out,
        Ok(response.clone()),
        "the caller gets the SDK's value untouched"
    );
    run_finished(&hub).await;
    let fin = finished(&hub, "llm:step").remove(0);
    assert_eq!(
        fin["output"],
        json!({
            "text": "",
            "finishReason": "tool-calls",
            "rawFinishReason": "tool_calls",
            "toolCalls": [
                {"id": "call_a", "name": "weather", "input": {"city": "Lisbon"}},
                {"id": "call_b", "name": "convert", "input": null, "inputText": "not json"},
            ],
            "response": response,
        })
    );
    assert_eq!(
        fin["usage"],
        json!({"inputTokens": 120, "outputTokens": 30, "inclusive": true, "cacheReadTokens": 100})
    );
    assert!(
        fin.get("finishReason").is_none(),
        "one finish reason, in the output: {fin:?}"
    );
    assert_eq!(fin["model"], "gpt-test");
    assert_eq!(fin["responseId"], "chatcmpl-7");
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn every_provider_finish_reason_is_normalized_and_kept_raw() {
    let cases = [
        ("stop", "stop"),
        ("end_turn", "stop"),
        ("length", "length"),
        ("MAX_TOKENS", "length"),
        ("tool_calls", "tool-calls"),
        ("tool_use", "tool-calls"),
        ("content_filter", "content-filter"),
        ("SAFETY", "content-filter"),
        ("error", "error"),
        ("pause_turn", "other"),
    ];
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        for (raw, _) in cases {
            let _ = create(json!({"reply": reply(json!("x"), raw)})).await;
        }
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), cases.len());
    for ((raw, normal), fin) in cases.iter().zip(&fins) {
        assert_eq!(fin["output"]["finishReason"], *normal, "{raw}: {fin}");
        assert_eq!(fin["output"]["rawFinishReason"], *raw, "{fin}");
        assert_eq!(fin["output"]["text"], "x");
    }
    gm.dispose().await;
}

/// Injects `value` at the after gate of one step answering `response`; its node.finished.
async fn finished_after_inject(response: Value, value: Value) -> (Result<Value, String>, Value) {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "after"})]).await;
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("r", create(json!({"reply": response}))).await }
    });
    let pause = paused(&hub, 1).await;
    assert!(hub.inject(pause.run_id(), &pause_id(&pause), value));
    let out = task.await.expect("joined").expect("not aborted");
    run_finished(&hub).await;
    let fin = finished(&hub, "llm:step").remove(0);
    hub.assert_valid();
    gm.dispose().await;
    (out, fin)
}

#[tokio::test]
async fn an_injected_response_replaces_output_usage_and_finish_reason() {
    let mut original = reply(json!("original"), "stop");
    original["usage"] = json!({"prompt_tokens": 50, "completion_tokens": 5});
    let injected =
        json!({"choices": [{"message": {"content": "injected"}, "finish_reason": "length"}]});
    let (out, fin) = finished_after_inject(original, injected.clone()).await;
    assert_eq!(out, Ok(injected.clone()));
    assert_eq!(
        fin["output"],
        json!({"text": "injected", "finishReason": "length", "rawFinishReason": "length",
               "toolCalls": [], "response": injected})
    );
    assert_eq!(fin["injected"], true);
    assert!(fin.get("usage").is_none(), "stale usage: {fin}");
    assert!(
        fin.get("finishReason").is_none(),
        "one finish reason, in the output: {fin:?}"
    );
    assert!(fin.get("responseId").is_none(), "stale response id: {fin}");
    assert!(fin.get("model").is_none(), "stale model: {fin}");
}

#[tokio::test]
async fn an_edited_recorded_output_injects_its_response() {
    // What a viewer sends back when the user edits the recorded 0.6 output: the function gets
    // the `response`, which the recorded shape is rebuilt from.
    let inner = reply(json!("edited"), "content_filter");
    let edited =
        json!({"text": "ignored", "finishReason": "stop", "toolCalls": [], "response": inner});
    let (out, fin) = finished_after_inject(reply(json!("original"), "stop"), edited).await;
    assert_eq!(out, Ok(inner.clone()));
    assert_eq!(fin["output"]["text"], "edited");
    assert_eq!(fin["output"]["finishReason"], "content-filter");
    assert_eq!(fin["output"]["response"], inner);
}

#[tokio::test]
async fn a_foreign_stream_is_read_through_the_codec() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let items: Vec<Value> = gm
        .run("r", async {
            create_stream(json!({"messages": ["hi"]}))
                .await
                .collect()
                .await
        })
        .await
        .expect("not aborted");
    assert_eq!(items.len(), 3, "every chunk reaches the caller");
    run_finished(&hub).await;
    let tokens = wait_count(&hub, "node.token", 1).await;
    let text: String = tokens
        .iter()
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|d| d["v"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Lisbon");
    let fin = finished(&hub, "llm:step").remove(0);
    assert_eq!(
        fin["usage"],
        json!({"inputTokens": 9, "outputTokens": 2, "inclusive": true})
    );
    assert!(
        fin.get("finishReason").is_none(),
        "one finish reason, in the output: {fin:?}"
    );
    assert_eq!(fin["chunks"], 3);
    assert_eq!(
        fin["output"],
        json!({"text": "Lisbon", "finishReason": "length", "rawFinishReason": "length", "toolCalls": []})
    );
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn previous_response_id_continues_the_invocation_that_answered_it() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        let first = json!({"reply": reply(json!("a"), "stop")}); // answers resp_1
        let _ = create(first).await;
        let _ = create(json!({"previous_response_id": "resp_1"})).await; // answers resp_x
        let _ = create(json!({"previous_response_id": "resp_x"})).await;
        let _ = create(json!({"previous_response_id": "resp_unknown"})).await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let ids: Vec<String> = finished(&hub, "llm:step")
        .iter()
        .map(|f| f["instanceId"].as_str().unwrap_or("-").to_owned())
        .collect();
    let inv = |id: &str| id.rsplit_once(':').map(|(a, _)| a.to_owned());
    assert_eq!(ids.len(), 4);
    assert!(
        ids[0].ends_with(":s1") && ids[1].ends_with(":s2") && ids[2].ends_with(":s3"),
        "{ids:?}"
    );
    assert_eq!(inv(&ids[0]), inv(&ids[2]), "{ids:?}");
    assert!(
        ids[3].ends_with(":s1") && inv(&ids[3]) != inv(&ids[0]),
        "{ids:?}"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_streamed_answer_is_recorded_in_graphmind_06_shape() {
    #[graphmind::model_step(codec = Chat)]
    async fn stream_calls(request: Value) -> impl Stream<Item = Value> + Send {
        let _ = request;
        // Two parallel tool calls interleaved by index, the id and name on each first piece.
        let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": index, "id": id, "function": {"name": name, "arguments": args}}
            ]}}]})
        };
        futures_util::stream::iter(vec![
            json!({"choices": [{"delta": {"content": "Checking"}}]}),
            call(0, Some("call_a"), Some("weather"), "{\"city\":"),
            call(1, Some("call_b"), Some("convert"), "{\"amount\":"),
            call(0, None, None, "\"Lisbon\"}"),
            call(1, None, None, "120}"),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ])
    }
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let n = gm
        .run("r", async { stream_calls(json!({})).await.count().await })
        .await
        .expect("not aborted");
    assert_eq!(n, 6);
    run_finished(&hub).await;
    let fin = finished(&hub, "llm:step").remove(0);
    assert_eq!(
        fin["output"],
        json!({
            "text": "Checking",
            "finishReason": "tool-calls",
            "rawFinishReason": "tool_calls",
            "toolCalls": [
                {"id": "call_a", "name": "weather", "input": {"city": "Lisbon"}},
                {"id": "call_b", "name": "convert", "input": {"amount": 120}},
            ],
        })
    );
    assert_eq!(fin["streaming"], true);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_hand_made_step_tees_chunks_through_a_codec_and_its_response_id_groups_the_next() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        let node =
            graphmind::node::Node::start_step(json!({"input": "hi"}), Chat::grouping(&json!({})))
                .expect("enabled");
        let chunks = futures_util::stream::iter(vec![
            json!({"choices": [{"delta": {"content": "hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo"}, "finish_reason": "stop"}]}),
        ]);
        let seen: Vec<Value> = node.tee_codec::<Chat, _>(chunks).collect().await;
        assert_eq!(seen.len(), 2);
        // A non-streamed step finished by hand with its response id …
        let node = graphmind::node::Node::start_step(json!({}), graphmind::model::Grouping::Auto)
            .expect("enabled");
        let extras = graphmind::node::Extras::new().response_id("resp_hand");
        node.finish_with(graphmind::protocol::Status::Ok, None, None, extras.into());
        // … is continued by a request naming it.
        let next = json!({"previous_response_id": "resp_hand"});
        let node = graphmind::node::Node::start_step(next.clone(), Chat::grouping(&next))
            .expect("enabled");
        node.finish(graphmind::protocol::Status::Ok, None);
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 3);
    assert_eq!(
        fins[0]["output"],
        json!({"text": "hello", "finishReason": "stop", "rawFinishReason": "stop", "toolCalls": []})
    );
    let ids: Vec<&str> = fins
        .iter()
        .map(|f| f["instanceId"].as_str().unwrap_or("-"))
        .collect();
    let inv = |id: &str| id.rsplit_once(':').map(|(a, _)| a.to_owned());
    assert!(
        ids[2].ends_with(":s2") && inv(ids[1]) == inv(ids[2]),
        "{ids:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}
