//! OTLP export of finished runs (`HubConfig::otlp`, `serve --otlp`) against an in-test
//! OTLP/HTTP receiver decoding with the official proto types: span names, kinds, parents and
//! attributes per node kind (a matrix), content only when opted in, holds and actions as
//! span events, headers, retries with backoff, and a down collector that only costs counted
//! drops (bounded queue, ingest not stalled).

mod otlp_support;
mod support;

use std::time::{Duration, Instant};

use graphmind_hub::otlp::{BATCH_RUNS, MapOptions, OtlpConfig, encode_stored, trace_id};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use otlp_support::*;
use prost::Message as _;
use serde_json::json;
use support::*;

fn otlp(endpoint: &str, set: impl FnOnce(&mut OtlpConfig)) -> OtlpConfig {
    let mut c = OtlpConfig::new(endpoint).expect("endpoint");
    c.backoff = Duration::from_millis(50);
    set(&mut c);
    c
}

/// One run with a node of every kind the export names specially, and the debugger's marks.
async fn matrix_run(app: &mut App, run: &str) {
    let t0 = now_ms() - 10_000;
    app.emit_at(
        t0,
        run,
        "run.started",
        json!({"app": "matrix-app", "sdk": {"name": "rust", "version": "9.9.9"}, "meta": {"name": "triage"}}),
    )
    .await;
    app.emit_at(t0 + 1, run, "node.started", json!({"nodeId": "agent:triage", "kind": "agent", "name": "triage", "instanceId": run, "input": {"ticket": "T-1"}})).await;
    app.emit_at(t0 + 2, run, "node.started", json!({"nodeId": "llm:step", "kind": "llm", "name": "step", "instanceId": "inv:s1", "parentId": "agent:triage", "input": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello model"}]}})).await;
    app.emit_at(t0 + 40, run, "node.finished", json!({
        "nodeId": "llm:step", "instanceId": "inv:s1", "durationMs": 38.0, "status": "ok",
        "output": {"text": "calling", "finishReason": "tool-calls", "rawFinishReason": "tool_calls", "toolCalls": []},
        "usage": {"inputTokens": 120, "outputTokens": 30, "cacheReadTokens": 100, "cacheWriteTokens": 7, "reasoningTokens": 12},
        "model": "gpt-4o-mini-2024-07-18", "responseId": "chatcmpl-1", "finishReason": "tool_calls", "api": "chat.completions", "streamed": true,
    })).await;
    app.emit_at(t0 + 41, run, "node.started", json!({"nodeId": "tool:search", "kind": "tool", "name": "search", "instanceId": "call_1", "parentId": "llm:step", "input": {"q": "tool args here"}})).await;
    app.emit_at(t0 + 42, run, "exec.paused", json!({"pauseId": "p1", "nodeId": "tool:search", "point": "before", "reason": "breakpoint"})).await;
    app.emit_at(
        t0 + 542,
        run,
        "exec.resumed",
        json!({"pauseId": "p1", "action": "inject"}),
    )
    .await;
    app.emit_at(t0 + 543, run, "node.finished", json!({"nodeId": "tool:search", "instanceId": "call_1", "durationMs": 502.0, "status": "ok", "output": {"hits": ["tool result here"]}, "heldMs": 500.0, "injected": true, "attempts": 2})).await;
    app.emit_at(t0 + 544, run, "node.started", json!({"nodeId": "retriever:docs", "kind": "retriever", "name": "docs", "instanceId": "r1", "parentId": "agent:triage", "input": "retriever query"})).await;
    app.emit_at(
        t0 + 544,
        run,
        "exec.paused",
        json!({"pauseId": "p2", "nodeId": "retriever:docs", "point": "before", "editable": true}),
    )
    .await;
    app.emit_at(
        t0 + 544,
        run,
        "exec.resumed",
        json!({"pauseId": "p2", "action": "continue", "edited": {"after": "edited query"}}),
    )
    .await;
    app.emit_at(t0 + 545, run, "node.error", json!({"nodeId": "retriever:docs", "instanceId": "r1", "error": {"name": "Timeout", "message": "index slow"}})).await;
    app.emit_at(t0 + 546, run, "node.started", json!({"nodeId": "chain:format", "kind": "chain", "name": "format", "instanceId": "c1", "parentId": "agent:triage"})).await;
    app.emit_at(
        t0 + 547,
        run,
        "exec.paused",
        json!({"pauseId": "p3", "nodeId": "chain:format", "point": "before"}),
    )
    .await;
    app.emit_at(
        t0 + 548,
        run,
        "exec.resumed",
        json!({"pauseId": "p3", "action": "reject", "reason": "too risky", "auto": true}),
    )
    .await;
    // chain:format never finishes: it ends with the run, marked unfinished.
    app.emit_at(t0 + 600, run, "node.finished", json!({"nodeId": "agent:triage", "instanceId": run, "durationMs": 599.0, "status": "ok", "output": "done"})).await;
    app.emit_at(t0 + 601, run, "run.finished", json!({"status": "ok"}))
        .await;
}

fn by_name<'a>(
    spans: &'a [opentelemetry_proto::tonic::trace::v1::Span],
    name: &str,
) -> &'a opentelemetry_proto::tonic::trace::v1::Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name}: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

#[test]
fn every_node_kind_maps_to_its_genai_span_name_kind_parent_and_attributes() {
    block_on(async {
        let rx = Receiver::start(0).await;
        let endpoint = rx.endpoint();
        let hub = hub(move |c| {
            c.otlp = Some(otlp(&endpoint, |o| {
                o.header("x-api-key=secret-key").expect("header");
            }));
        });
        let mut app = App::connect(hub.port).await;
        matrix_run(&mut app, "run_matrix01").await;
        let runs = rx.wait_runs(1, 20).await;
        assert_eq!(runs.len(), 1);
        let rs = &runs[0];
        let res = &rs.resource.as_ref().expect("resource").attributes;
        assert_eq!(str_attr(res, "service.name").as_deref(), Some("matrix-app"));
        assert_eq!(str_attr(res, "telemetry.sdk.name").as_deref(), Some("rust"));
        assert_eq!(
            str_attr(res, "telemetry.sdk.version").as_deref(),
            Some("9.9.9")
        );
        let spans = spans(rs);
        assert_eq!(
            tree(&spans),
            [
                "invoke_agent triage (INTERNAL)",
                "  chat gpt-4o-mini (CLIENT)",
                "    execute_tool search (INTERNAL)",
                "  retriever docs (INTERNAL)",
                "  chain format (INTERNAL)",
            ]
        );
        // One trace, derived from the run id.
        let tid = trace_id("run_matrix01").to_vec();
        assert!(spans.iter().all(|s| s.trace_id == tid));
        assert!(spans.iter().all(
            |s| str_attr(&s.attributes, "graphmind.run.id").as_deref() == Some("run_matrix01")
        ));

        let agent = by_name(&spans, "invoke_agent triage");
        assert_eq!(
            str_attr(&agent.attributes, "gen_ai.operation.name").as_deref(),
            Some("invoke_agent")
        );
        assert_eq!(
            str_attr(&agent.attributes, "gen_ai.agent.name").as_deref(),
            Some("triage")
        );
        assert_eq!(
            str_attr(&agent.attributes, "gen_ai.conversation.id").as_deref(),
            Some("run_matrix01")
        );
        assert_eq!(agent.status.as_ref().map(|s| s.code), Some(1), "ok");

        let chat = by_name(&spans, "chat gpt-4o-mini");
        let a = &chat.attributes;
        assert_eq!(
            str_attr(a, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert_eq!(
            str_attr(a, "gen_ai.provider.name").as_deref(),
            Some("openai")
        );
        assert_eq!(
            str_attr(a, "gen_ai.request.model").as_deref(),
            Some("gpt-4o-mini")
        );
        assert_eq!(
            str_attr(a, "gen_ai.response.model").as_deref(),
            Some("gpt-4o-mini-2024-07-18")
        );
        assert_eq!(
            str_attr(a, "gen_ai.response.id").as_deref(),
            Some("chatcmpl-1")
        );
        assert_eq!(
            strings_attr(a, "gen_ai.response.finish_reasons"),
            Some(vec!["tool_calls".to_owned()])
        );
        assert_eq!(int_attr(a, "gen_ai.usage.input_tokens"), Some(120));
        assert_eq!(int_attr(a, "gen_ai.usage.output_tokens"), Some(30));
        assert_eq!(
            int_attr(a, "gen_ai.usage.cache_read.input_tokens"),
            Some(100)
        );
        assert_eq!(
            int_attr(a, "gen_ai.usage.cache_creation.input_tokens"),
            Some(7)
        );
        assert_eq!(int_attr(a, "graphmind.usage.reasoning_tokens"), Some(12));
        assert_eq!(bool_attr(a, "graphmind.streamed"), Some(true));
        assert_eq!(
            str_attr(a, "graphmind.api").as_deref(),
            Some("chat.completions")
        );
        // Start and end from the events' timestamps.
        assert_eq!(
            chat.end_time_unix_nano - chat.start_time_unix_nano,
            38_000_000
        );

        let tool = by_name(&spans, "execute_tool search");
        let a = &tool.attributes;
        assert_eq!(
            tool.parent_span_id, chat.span_id,
            "the tool runs under its model step"
        );
        assert_eq!(
            str_attr(a, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(str_attr(a, "gen_ai.tool.name").as_deref(), Some("search"));
        assert_eq!(
            str_attr(a, "gen_ai.tool.call.id").as_deref(),
            Some("call_1")
        );
        assert_eq!(double_attr(a, "graphmind.held_ms"), Some(500.0));
        assert_eq!(int_attr(a, "graphmind.holds"), Some(1));
        assert_eq!(
            strings_attr(a, "graphmind.actions"),
            Some(vec!["inject".to_owned()])
        );
        assert_eq!(bool_attr(a, "graphmind.injected"), Some(true));
        assert_eq!(int_attr(a, "graphmind.attempts"), Some(2));
        let events: Vec<(&str, Option<String>)> = tool
            .events
            .iter()
            .map(|e| {
                (
                    e.name.as_str(),
                    str_attr(&e.attributes, "graphmind.pause.point")
                        .or_else(|| str_attr(&e.attributes, "graphmind.action")),
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                ("exec.paused", Some("before".to_owned())),
                ("exec.resumed", Some("inject".to_owned()))
            ]
        );
        assert_eq!(
            tool.events[1].time_unix_nano - tool.events[0].time_unix_nano,
            500_000_000
        );

        let retriever = by_name(&spans, "retriever docs");
        assert_eq!(
            str_attr(&retriever.attributes, "error.type").as_deref(),
            Some("Timeout")
        );
        assert_eq!(
            str_attr(&retriever.attributes, "graphmind.status").as_deref(),
            Some("error")
        );
        let st = retriever.status.as_ref().expect("status");
        assert_eq!((st.code, st.message.as_str()), (2, "index slow"));

        assert_eq!(
            bool_attr(&retriever.attributes, "graphmind.edited"),
            Some(true)
        );
        assert_eq!(bool_attr(&tool.attributes, "graphmind.edited"), None);
        let chain = by_name(&spans, "chain format");
        assert_eq!(
            strings_attr(&chain.attributes, "graphmind.actions"),
            Some(vec!["reject".to_owned()])
        );
        let resumed = &chain.events[1];
        assert_eq!(
            str_attr(&resumed.attributes, "graphmind.reason").as_deref(),
            Some("too risky")
        );
        assert_eq!(bool_attr(&resumed.attributes, "graphmind.auto"), Some(true));
        assert_eq!(
            bool_attr(&chain.attributes, "graphmind.unfinished"),
            Some(true)
        );
        assert_eq!(
            chain.end_time_unix_nano,
            agent.end_time_unix_nano + 1_000_000,
            "ends with the run"
        );

        // Content is off by default: no inputs or outputs anywhere.
        for s in &spans {
            for k in keys(s) {
                assert!(
                    ![
                        "gen_ai.input.messages",
                        "gen_ai.output.messages",
                        "gen_ai.tool.call.arguments",
                        "gen_ai.tool.call.result",
                        "graphmind.input",
                        "graphmind.output"
                    ]
                    .contains(&k.as_str()),
                    "{} has content attribute {k} without the opt-in",
                    s.name
                );
            }
        }
        let (headers, _) = &rx.requests()[0];
        assert_eq!(
            headers.get("x-api-key").and_then(|v| v.to_str().ok()),
            Some("secret-key")
        );
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/x-protobuf")
        );

        // The counters move once the collector's answer is back.
        let port = hub.port;
        let health = wait_async(20, "the export counted", move || {
            let h = read(port, "/health").json();
            (h["otlp"]["batchesSent"] == 1).then_some(h)
        })
        .await;
        assert_eq!(health["otlp"]["runsExported"], 1, "{health}");
        assert_eq!(health["otlp"]["spansExported"], 5, "{health}");
        assert_eq!(health["otlp"]["runsDropped"], 0, "{health}");
    });
}

#[test]
fn content_is_exported_only_when_opted_in() {
    block_on(async {
        let rx = Receiver::start(0).await;
        let endpoint = rx.endpoint();
        let hub = hub(move |c| c.otlp = Some(otlp(&endpoint, |o| o.content = true)));
        let mut app = App::connect(hub.port).await;
        matrix_run(&mut app, "run_content01").await;
        let runs = rx.wait_runs(1, 20).await;
        let spans = spans(&runs[0]);
        let chat = by_name(&spans, "chat gpt-4o-mini");
        let input = str_attr(&chat.attributes, "gen_ai.input.messages").expect("input messages");
        assert!(input.contains("hello model"), "{input}");
        let output = str_attr(&chat.attributes, "gen_ai.output.messages").expect("output messages");
        assert!(output.contains("\"text\":\"calling\""), "{output}");
        let tool = by_name(&spans, "execute_tool search");
        assert!(
            str_attr(&tool.attributes, "gen_ai.tool.call.arguments")
                .expect("args")
                .contains("tool args here")
        );
        assert!(
            str_attr(&tool.attributes, "gen_ai.tool.call.result")
                .expect("result")
                .contains("tool result here")
        );
        let retriever = by_name(&spans, "retriever docs");
        assert_eq!(
            str_attr(&retriever.attributes, "graphmind.input").as_deref(),
            Some("retriever query")
        );
    });
}

#[test]
fn a_collector_that_fails_first_gets_the_run_after_retries_with_backoff() {
    block_on(async {
        let rx = Receiver::start(2).await;
        let endpoint = rx.endpoint();
        let hub = hub(move |c| {
            c.otlp = Some(otlp(&endpoint, |o| o.backoff = Duration::from_millis(200)));
        });
        let mut app = App::connect(hub.port).await;
        matrix_run(&mut app, "run_retry01").await;
        let runs = rx.wait_runs(1, 30).await;
        assert_eq!(run_of(&runs[0]), "run_retry01");
        assert_eq!(rx.hits(), 3, "two 503s, then taken");
        let t = rx.hit_times();
        // Backoff: 200 ms, then 400 ms (generous lower bounds only).
        assert!(
            t[1] - t[0] >= Duration::from_millis(180),
            "{:?}",
            t[1] - t[0]
        );
        assert!(
            t[2] - t[1] >= Duration::from_millis(380),
            "{:?}",
            t[2] - t[1]
        );
        let port = hub.port;
        let h = wait_async(20, "the export counted", move || {
            let h = read(port, "/health").json();
            (h["otlp"]["batchesSent"] == 1).then_some(h)
        })
        .await;
        assert_eq!(h["otlp"]["retries"], 2, "{h}");
        assert_eq!(h["otlp"]["runsExported"], 1, "{h}");
        assert_eq!(h["otlp"]["runsFailed"], 0, "{h}");
    });
}

/// A collector that accepts connections and never answers: the exporter hangs on its one
/// request (however many runs it gathered into it), the queue fills, further runs are
/// dropped and counted — and ingest keeps pace. What the exporter holds stays bounded: the
/// queue's runs and at most one request's ([`BATCH_RUNS`]).
#[test]
fn a_hung_collector_bounds_the_queue_counts_drops_and_never_stalls_ingest() {
    block_on(async {
        let sink = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = sink.local_addr().expect("addr").port();
        let held = tokio::spawn(async move {
            let mut conns = Vec::new();
            while let Ok((c, _)) = sink.accept().await {
                conns.push(c); // never read, never answered
            }
        });
        let endpoint = format!("http://127.0.0.1:{port}");
        let queue = 4u64;
        let hub = hub(move |c| {
            c.otlp = Some(otlp(&endpoint, |o| {
                o.queue = queue as usize;
                o.timeout = Duration::from_secs(120);
            }));
        });
        let mut app = App::connect(hub.port).await;
        // More runs than one request and the queue can hold: some must be dropped.
        let runs = 3 * BATCH_RUNS as u64;
        let started = Instant::now();
        for r in 0..runs {
            let run = format!("run_hung{r:04}");
            app.start_run(&run, "hung").await;
            for k in 0..20 {
                app.emit(&run, "node.started", json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": format!("c{k}")})).await;
                app.emit(&run, "node.finished", json!({"nodeId": "tool:t", "instanceId": format!("c{k}"), "durationMs": 0, "status": "ok"})).await;
            }
            app.emit(&run, "run.finished", json!({"status": "ok"}))
                .await;
        }
        let total = runs * 42;
        let port = hub.port;
        // Every event accepted and every finished run offered to the export queue, and each
        // run accounted for: dropped, waiting in the queue, or in the request that hangs. The
        // offer follows the run's last event, so under load `/health` can show the one
        // before the other.
        let h = wait_async(
            60,
            "every event accepted and every run accounted for",
            move || {
                let h = read(port, "/health").json();
                let o = &h["otlp"];
                let n = |k: &str| o[k].as_u64().unwrap_or(0);
                let settled = n("runsQueued") == runs
                    && n("runsInFlight") > 0
                    && n("runsDropped") + n("queued") + n("runsInFlight") == runs;
                (h["stats"]["eventsAccepted"].as_u64() == Some(total) && settled).then_some(h)
            },
        )
        .await;
        let took = started.elapsed();
        // Loose: 8,064 small events on a loaded 2-core machine; a stalled hub would not
        // finish at all while the collector hangs (120 s timeout).
        assert!(took < Duration::from_secs(60), "ingest took {took:?}");
        let o = &h["otlp"];
        let n = |k: &str| o[k].as_u64().unwrap();
        assert_eq!(n("runsQueued"), runs, "{h}");
        assert!(n("queued") <= queue, "the queue is bounded: {h}");
        assert_eq!(n("queueCapacity"), queue, "{h}");
        let in_flight = n("runsInFlight");
        assert!(
            (1..=BATCH_RUNS as u64).contains(&in_flight),
            "one request in flight holds at most BATCH_RUNS runs: {h}"
        );
        let dropped = n("runsDropped");
        assert!(dropped >= runs - queue - BATCH_RUNS as u64, "{h}");
        assert_eq!(dropped + n("queued") + in_flight, runs, "{h}");
        assert_eq!(n("runsExported"), 0, "{h}");
        assert_eq!(n("batchesSent"), 0, "{h}");
        // Bounded memory: only the queue's runs keep their events (no run is open).
        assert_eq!(o["keptRuns"], 0, "{h}");
        held.abort();
    });
}

#[test]
fn stored_runs_encode_to_the_same_trace_as_the_live_export() {
    block_on(async {
        let rx = Receiver::start(0).await;
        let endpoint = rx.endpoint();
        let hub = hub(move |c| c.otlp = Some(otlp(&endpoint, |_| {})));
        let mut app = App::connect(hub.port).await;
        matrix_run(&mut app, "run_stored01").await;
        let live = rx.wait_runs(1, 20).await;
        let db = hub.dir.0.join("graphmind.db");
        let (bytes, summary) = encode_stored(
            &db,
            &["run_stored01".to_owned(), "run_nope".to_owned()],
            MapOptions::default(),
        )
        .await
        .expect("encode");
        assert_eq!(summary.runs, 1);
        assert_eq!(summary.spans, 5);
        assert_eq!(summary.missing, ["run_nope"]);
        let req = ExportTraceServiceRequest::decode(bytes.as_ref()).expect("decode");
        assert_eq!(req.resource_spans, live, "the same spans, ids and all");
    });
}

#[test]
fn endpoints_and_headers_are_checked() {
    assert_eq!(
        OtlpConfig::new("http://127.0.0.1:4318").unwrap().endpoint,
        "http://127.0.0.1:4318/v1/traces"
    );
    assert_eq!(
        OtlpConfig::new("http://collector:4318/").unwrap().endpoint,
        "http://collector:4318/v1/traces"
    );
    assert_eq!(
        OtlpConfig::new("http://h:1/custom/traces")
            .unwrap()
            .endpoint,
        "http://h:1/custom/traces"
    );
    let https = OtlpConfig::new("https://api.honeycomb.io").unwrap_err();
    assert!(https.contains("not supported"), "{https}");
    assert!(OtlpConfig::new("ftp://x").is_err());
    assert!(OtlpConfig::new("http://").is_err());
    let mut c = OtlpConfig::new("http://h:1").unwrap();
    assert!(c.header("novalue").is_err());
    assert!(c.header("bad name=1").is_err());
    c.header("Authorization=Basic abc=").unwrap();
    assert_eq!(
        c.headers,
        [("Authorization".to_owned(), "Basic abc=".to_owned())]
    );
}
