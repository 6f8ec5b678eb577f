//! `#[graphmind::model_step(codec = graphmind_openai::codec::Chat)]` over async-openai's own
//! request and response types: a user's hand-written step records the same frames as the
//! wrapped client does for the same request (streams: the same tokens, and `node.finished`
//! differs only where the adapter's README says), and a stream under the SDK's alias is teed.
//! Every step takes the test's own mock client (`skip(client)`), as the README shows.

mod support;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionResponseStream, CreateChatCompletionRequest, CreateChatCompletionResponse,
};
use async_openai::types::responses::{CreateResponse, Response, ResponseStream};
use futures_util::StreamExt;
use graphmind_openai::Instrument;
use graphmind_tests::FakeDebugger;
use serde_json::{Value, json};
use support::mock::Mock;
use support::{attached, deltas, finished, runs_finished, sdk, started};

/// A Responses step over a client of its own (each test's mock).
#[graphmind::model_step(codec = graphmind_openai::codec::Responses, skip(client))]
async fn respond_with(
    client: &async_openai::Client<OpenAIConfig>,
    req: CreateResponse,
) -> Result<Response, OpenAIError> {
    client.responses().create(req).await
}

/// A chat step over a client of its own: its request is the one argument recorded.
#[graphmind::model_step(codec = graphmind_openai::codec::Chat, skip(client))]
async fn step_with(
    client: &async_openai::Client<OpenAIConfig>,
    req: CreateChatCompletionRequest,
) -> Result<CreateChatCompletionResponse, OpenAIError> {
    client.chat().create(req).await
}

#[graphmind::model_step(codec = graphmind_openai::codec::Chat, skip(client), stream = true)]
async fn step_stream_with(
    client: &async_openai::Client<OpenAIConfig>,
    req: CreateChatCompletionRequest,
) -> Result<ChatCompletionResponseStream, OpenAIError> {
    client.chat().create_stream(req).await
}

#[graphmind::model_step(codec = graphmind_openai::codec::Responses, skip(client), stream = true)]
async fn respond_stream_with(
    client: &async_openai::Client<OpenAIConfig>,
    req: CreateResponse,
) -> Result<ResponseStream, OpenAIError> {
    client.responses().create_stream(req).await
}

fn request(stream: bool) -> CreateChatCompletionRequest {
    sdk(json!({
        "model": "tools",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon, and 120 USD in EUR?"}
        ]
    }))
}

#[tokio::test]
async fn a_codec_step_records_what_the_wrapped_client_records() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    gm.run("a", async {
        step_with(&mock.client(), request(false)).await.expect("ok");
        wrapped.chat().create(request(false)).await.expect("ok");
        let mut s = step_stream_with(&mock.client(), request(true))
            .await
            .expect("ok");
        let mut chunks = 0;
        while let Some(c) = s.next().await {
            c.expect("a chunk");
            chunks += 1;
        }
        assert_eq!(chunks, 8);
        let first = respond_with(&mock.client(), sdk(json!({"model": "text", "input": "hi"})))
            .await
            .expect("ok");
        respond_with(
            &mock.client(),
            sdk(json!({"model": "text", "input": "more", "previous_response_id": first.id})),
        )
        .await
        .expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 5);
    let (by_macro, by_wrapper) = (&fins[0], &fins[1]);
    for key in [
        "text",
        "finishReason",
        "rawFinishReason",
        "toolCalls",
        "response",
    ] {
        assert_eq!(by_macro["output"][key], by_wrapper["output"][key], "{key}");
    }
    assert_eq!(by_macro["usage"], by_wrapper["usage"]);
    assert_eq!(by_macro["responseId"], by_wrapper["responseId"]);
    assert_eq!(by_macro["output"]["finishReason"], "tool-calls");
    let streamed: String = deltas(&hub, "llm:step")
        .iter()
        .filter(|d| d["t"] == "tool-args" && d["index"] == 1)
        .map(|d| d["v"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        streamed, r#"{"amount":120,"to":"EUR"}"#,
        "the alias stream was teed"
    );
    let ids: Vec<String> = started(&hub, "llm:step")
        .iter()
        .map(|s| s["instanceId"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        ids[4].ends_with(":s2"),
        "previous_response_id continued: {ids:?}"
    );
    hub.assert_valid();
    gm.dispose().await;
}

/// Regression: a Responses answer ends `completed` even when it stops for tool calls; the
/// codec path recorded `finishReason: "stop"` there while the wrapped client said
/// `tool-calls`. Both now go through `Reply`, which maps a normal end with tool calls.
#[tokio::test]
async fn a_codec_step_ending_completed_with_tool_calls_is_tool_calls_like_the_wrapper() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    gm.run("tools", async {
        respond_with(
            &mock.client(),
            sdk(json!({"model": "tools", "input": "weather?"})),
        )
        .await
        .expect("ok");
        wrapped
            .responses()
            .create(sdk(json!({"model": "tools", "input": "weather?"})))
            .await
            .expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let fins = finished(&hub, "llm:step");
    assert_eq!(fins.len(), 2);
    for (path, fin) in ["codec", "wrapper"].iter().zip(&fins) {
        assert_eq!(fin["output"]["finishReason"], "tool-calls", "{path}");
        assert_eq!(fin["output"]["rawFinishReason"], "completed", "{path}");
        assert_eq!(fin["output"]["toolCalls"][1]["name"], "convert", "{path}");
    }
    assert_eq!(fins[0]["output"], fins[1]["output"]);
    hub.assert_valid();
    gm.dispose().await;
}

/// The frames of run `run`, each as (type, payload) with what differs between two runs of
/// the same calls left out: `seq`, `ts`, ids of the run and its invocation, durations.
fn frames_of_run(hub: &FakeDebugger, run: &str) -> Vec<(String, Value)> {
    hub.frames()
        .iter()
        .filter(|f| f.kind() != "hello" && f.run_id() == run)
        .map(|f| {
            let mut p = f.payload().clone();
            if let Some(map) = p.as_object_mut() {
                for key in ["seq", "ts", "runId", "durationMs", "heldMs"] {
                    map.remove(key);
                }
                for value in map.values_mut() {
                    if *value == run {
                        *value = json!("<run>");
                    }
                }
                if let Some(Value::String(id)) = map.get_mut("instanceId")
                    && let Some((_, step)) = id.rsplit_once(':')
                {
                    *id = step.to_owned();
                }
            }
            (f.kind().to_owned(), p)
        })
        .collect()
}

/// The run ids of the run.finished frames, in order.
fn finished_runs(hub: &FakeDebugger) -> Vec<String> {
    hub.frames_of("run.finished")
        .iter()
        .map(|f| f.run_id().to_owned())
        .collect()
}

#[tokio::test]
async fn a_codec_step_and_the_wrapped_client_record_the_same_frames_for_one_request() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    gm.run("a", async {
        step_with(&mock.client(), request(false)).await.expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    gm.run("a", async {
        wrapped.chat().create(request(false)).await.expect("ok");
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 2).await;
    let runs = finished_runs(&hub);
    let (by_macro, by_wrapper) = (frames_of_run(&hub, &runs[0]), frames_of_run(&hub, &runs[1]));
    let kinds: Vec<&str> = by_macro.iter().map(|(k, _)| k.as_str()).collect();
    assert!(kinds.contains(&"node.finished"), "{kinds:?}");
    assert_eq!(by_macro.len(), by_wrapper.len(), "{kinds:?}");
    for ((kind, a), (_, b)) in by_macro.iter().zip(&by_wrapper) {
        assert_eq!(a, b, "{kind}: codec step, then wrapped client");
    }
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["api"], "chat.completions");
    let input = &started(&hub, "llm:step")[0]["input"];
    assert_eq!(input["model"], "tools", "the request itself: {input}");
    hub.assert_valid();
    gm.dispose().await;
}

/// The tool-argument deltas of one streamed step, by index: (call ids, tool names, text).
fn calls_streamed(deltas: &[Value]) -> Vec<(Vec<Value>, Vec<Value>, String)> {
    let mut calls: Vec<(Vec<Value>, Vec<Value>, String)> = Vec::new();
    for d in deltas.iter().filter(|d| d["t"] == "tool-args") {
        let i = usize::try_from(d["index"].as_u64().expect("an index")).expect("small");
        if calls.len() <= i {
            calls.resize_with(i + 1, Default::default);
        }
        calls[i].0.push(d["toolCallId"].clone());
        calls[i].1.push(d["toolName"].clone());
        calls[i].2.push_str(d["v"].as_str().unwrap_or_default());
    }
    calls
}

#[tokio::test]
async fn interleaved_responses_function_calls_stream_apart_with_their_ids_and_names() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    let request =
        || sdk::<CreateResponse>(json!({"model": "tools", "input": "weather?", "stream": true}));
    gm.run("a", async {
        let mut s = respond_stream_with(&mock.client(), request())
            .await
            .expect("ok");
        while let Some(e) = s.next().await {
            e.expect("an event");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    let by_macro = deltas(&hub, "llm:step");
    gm.run("a", async {
        let mut s = wrapped
            .responses()
            .create_stream(request())
            .await
            .expect("ok");
        while let Some(e) = s.next().await {
            e.expect("an event");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 2).await;
    let by_wrapper: Vec<Value> = deltas(&hub, "llm:step").split_off(by_macro.len());
    for (path, deltas) in [("codec", &by_macro), ("wrapper", &by_wrapper)] {
        let calls = calls_streamed(deltas);
        assert_eq!(calls.len(), 2, "{path}: {deltas:?}");
        for ((ids, names, args), (id, name, whole)) in calls.iter().zip([
            ("call_weather_1", "get_weather", r#"{"city":"Lisbon"}"#),
            ("call_convert_2", "convert", r#"{"amount":120,"to":"EUR"}"#),
        ]) {
            assert_eq!(args, whole, "{path}: the pieces of one call, apart");
            assert!(
                ids.iter().all(|i| i == id),
                "{path}: every piece names {id}: {ids:?}"
            );
            assert!(
                names.iter().all(|n| n == name),
                "{path}: every piece names {name}: {names:?}"
            );
        }
    }
    let fins = finished(&hub, "llm:step");
    assert_eq!(
        fins[0]["output"]["toolCalls"],
        fins[1]["output"]["toolCalls"]
    );
    assert_eq!(fins[0]["output"]["toolCalls"][1]["id"], "call_convert_2");
    hub.assert_valid();
    gm.dispose().await;
}

/// The request is the codec step's whole input: an edit at its before gate names the
/// request's fields (as on the wrapped client), and the step runs with the merged request.
#[tokio::test]
async fn an_edit_at_a_codec_steps_before_gate_names_the_requests_fields() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    hub.set_hub_capabilities(&["pause-registry", "edit-input"]);
    let gm = attached(&hub, vec![json!({"kind": "llm", "point": "before"})]).await;
    let task = tokio::spawn({
        let (gm, client) = (gm.clone(), mock.client());
        async move {
            gm.run("a", async { step_with(&client, request(false)).await })
                .await
        }
    });
    let p = support::paused(&hub, 1).await;
    assert_eq!(p.payload()["editable"], true, "{}", p.payload());
    let messages = json!([{"role": "user", "content": "Weather in Porto?"}]);
    support::edit_at(&hub, &p, json!({"messages": messages}), "e-1");
    tokio::time::timeout(std::time::Duration::from_secs(20), task)
        .await
        .expect("the call ended")
        .expect("joined")
        .expect("not aborted")
        .expect("ok");
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["messages"][0]["content"], "Weather in Porto?",
        "{}",
        seen[0].body
    );
    assert_eq!(
        seen[0].body["model"], "tools",
        "the keys not edited are kept"
    );
    runs_finished(&hub, 1).await;
    let fin = &finished(&hub, "llm:step")[0];
    assert_eq!(fin["edited"]["after"]["messages"], messages, "{fin}");
    assert_eq!(fin["edited"]["before"]["model"], "tools", "{fin}");
    hub.assert_valid();
    gm.dispose().await;
}

/// The keys of `node.finished` whose values differ between two payloads.
fn differing_keys(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["<not objects>".into()];
    };
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// What the adapter's README says a streamed codec step records differently from the
/// wrapped client: `streaming` for `streamed`, no `model` nor `responseId` (the tee reads
/// chunks through the codec, which has no per-chunk model or id), and for Responses no
/// final `response` under the output. Every other frame (tokens included) is the same.
#[tokio::test]
async fn a_streamed_codec_step_differs_from_the_wrapped_client_only_where_the_readme_says() {
    let mock = Mock::start().await;
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let wrapped = mock.client().graphmind();
    let responses =
        || sdk::<CreateResponse>(json!({"model": "tools", "input": "weather?", "stream": true}));
    gm.run("a", async {
        let mut s = step_stream_with(&mock.client(), request(true))
            .await
            .expect("ok");
        while let Some(c) = s.next().await {
            c.expect("a chunk");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 1).await;
    gm.run("a", async {
        let mut s = wrapped
            .chat()
            .create_stream(request(true))
            .await
            .expect("ok");
        while let Some(c) = s.next().await {
            c.expect("a chunk");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 2).await;
    gm.run("a", async {
        let mut s = respond_stream_with(&mock.client(), responses())
            .await
            .expect("ok");
        while let Some(e) = s.next().await {
            e.expect("an event");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 3).await;
    gm.run("a", async {
        let mut s = wrapped
            .responses()
            .create_stream(responses())
            .await
            .expect("ok");
        while let Some(e) = s.next().await {
            e.expect("an event");
        }
    })
    .await
    .expect("not aborted");
    runs_finished(&hub, 4).await;
    let runs = finished_runs(&hub);
    let documented = ["model", "responseId", "streamed", "streaming"];
    for ((codec, wrapper), api) in [((0, 1), "chat"), ((2, 3), "responses")] {
        let (a, b) = (
            frames_of_run(&hub, &runs[codec]),
            frames_of_run(&hub, &runs[wrapper]),
        );
        assert_eq!(a.len(), b.len(), "{api}");
        for ((kind, x), (_, y)) in a.iter().zip(&b) {
            if kind == "node.finished" && x["nodeId"] == "llm:step" {
                let mut expected: Vec<&str> = documented.to_vec();
                if api == "responses" {
                    expected.push("output");
                    let mut out = y["output"].clone();
                    out.as_object_mut().map(|o| o.remove("response"));
                    assert_eq!(x["output"], out, "{api}: the output but `response`");
                }
                expected.sort_unstable();
                assert_eq!(differing_keys(x, y), expected, "{api}");
                assert_eq!(x["streaming"], true);
                assert_eq!(y["streamed"], true);
            } else {
                assert_eq!(x, y, "{api}: {kind}");
            }
        }
    }
    hub.assert_valid();
    gm.dispose().await;
}
