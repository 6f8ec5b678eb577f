//! A stored run's events → OTLP spans: the run is a trace, each node execution a span under
//! its parent's execution, named and attributed by the GenAI conventions ([`super::names`]).

use std::collections::HashMap;

use graphmind_protocol::{Message, NodeKind, Parsed, Status};
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status as SpanStatus,
};
use serde_json::Value;

use super::names as n;

/// Longest JSON content attribute written (content opt-in), in bytes; longer ones are cut at
/// a character boundary and end with `…`.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// A 64-bit FNV-1a hash of `parts`, separated so `("ab","c")` and `("a","bc")` differ.
fn fnv(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Mix the low bits up (FNV leaves them weak for short inputs).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// The trace id of a run: 16 bytes derived from the run id alone, so exporting a run twice
/// (live, then `graphmind export`) gives the same trace. Never all zero.
pub fn trace_id(run_id: &str) -> [u8; 16] {
    let a = fnv(1, &[run_id.as_bytes()]);
    let b = fnv(2, &[run_id.as_bytes()]).max(1);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&a.to_be_bytes());
    id[8..].copy_from_slice(&b.to_be_bytes());
    id
}

/// The span id of one node execution (the `nth` execution with this node and instance id).
fn span_id(run_id: &str, node_id: &str, instance_id: &str, nth: usize) -> [u8; 8] {
    let nth = nth.to_string();
    fnv(
        3,
        &[
            run_id.as_bytes(),
            node_id.as_bytes(),
            instance_id.as_bytes(),
            nth.as_bytes(),
        ],
    )
    .max(1)
    .to_be_bytes()
}

/// What goes into the spans besides structure.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapOptions {
    /// Write inputs and outputs (`gen_ai.input.messages` and the like). Off by default, as the
    /// conventions have it; what the client's redaction replaced stays replaced either way
    /// (the hub never saw it).
    pub content: bool,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn s(key: &str, v: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn i(key: &str, v: u64) -> KeyValue {
    kv(
        key,
        any_value::Value::IntValue(i64::try_from(v).unwrap_or(i64::MAX)),
    )
}

fn b(key: &str, v: bool) -> KeyValue {
    kv(key, any_value::Value::BoolValue(v))
}

fn f(key: &str, v: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(v))
}

fn strings(key: &str, v: &[String]) -> KeyValue {
    kv(
        key,
        any_value::Value::ArrayValue(ArrayValue {
            values: v
                .iter()
                .map(|x| AnyValue {
                    value: Some(any_value::Value::StringValue(x.clone())),
                })
                .collect(),
        }),
    )
}

/// `value` as JSON text, at most [`MAX_CONTENT_BYTES`].
fn json_text(value: &Value) -> String {
    let mut text = match value {
        Value::String(t) => t.clone(),
        v => v.to_string(),
    };
    if text.len() > MAX_CONTENT_BYTES {
        let mut cut = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

fn ms_to_ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

/// One node execution being assembled.
#[derive(Debug)]
struct Exec {
    node_id: String,
    instance_id: String,
    kind: NodeKind,
    name: String,
    parent_node: Option<String>,
    /// Index of the parent execution, resolved at start.
    parent: Option<usize>,
    span_id: [u8; 8],
    start: u64,
    end: Option<u64>,
    open: bool,
    input: Option<Value>,
    output: Option<Value>,
    status: Option<Status>,
    error: Option<ErrorText>,
    held_ms: Option<f64>,
    holds: u64,
    actions: Vec<String>,
    extra: serde_json::Map<String, Value>,
    usage: Option<graphmind_protocol::TokenUsage>,
    events: Vec<Event>,
}

/// An error's name and message.
type ErrorText = (String, String);

/// The run as the spans see it.
#[derive(Debug, Default)]
struct RunInfo {
    app: Option<String>,
    name: Option<String>,
    sdk: Option<(String, String)>,
    started: Option<u64>,
    finished: Option<(u64, Status, Option<ErrorText>)>,
    first_ts: Option<u64>,
    last_ts: u64,
}

/// Builds the spans of one run from its stored envelopes (in seq order). Events that are not
/// valid envelopes are skipped. `incomplete`: the app announced events of the run lost.
pub fn run_spans<B: AsRef<str>>(
    run_id: &str,
    bodies: &[B],
    incomplete: bool,
    opts: MapOptions,
) -> ResourceSpans {
    let mut run = RunInfo::default();
    let mut execs: Vec<Exec> = Vec::new();
    // (nodeId, instanceId) → how many executions with that key so far.
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    // pauseId → the execution it held.
    let mut pauses: HashMap<String, usize> = HashMap::new();
    for body in bodies {
        let env = match graphmind_protocol::parse(body.as_ref()) {
            Parsed::Ok(env) | Parsed::UnknownType(env) => env,
            _ => continue,
        };
        run.first_ts = Some(run.first_ts.map_or(env.ts, |t| t.min(env.ts)));
        run.last_ts = run.last_ts.max(env.ts);
        match env.message {
            Message::RunStarted(p) => {
                run.app = Some(p.app);
                run.sdk = Some((p.sdk.name, p.sdk.version));
                run.name = p
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                run.started = Some(env.ts);
            }
            Message::RunFinished(p) => {
                run.finished = Some((env.ts, p.status, p.error.map(|e| (e.name, e.message))));
            }
            Message::NodeStarted(p) => {
                let key = (p.node_id.clone(), p.instance_id.clone());
                // The same execution starting again (a retry from the top) stays one span.
                if let Some(ix) = find_open(&execs, &p.node_id, Some(&p.instance_id)) {
                    if p.input.is_some() {
                        execs[ix].input = p.input;
                    }
                    continue;
                }
                let nth = seen.entry(key).or_insert(0);
                *nth += 1;
                let parent = p.parent_id.as_deref().and_then(|pid| {
                    find_open(&execs, pid, None).or_else(|| find_last(&execs, pid))
                });
                execs.push(Exec {
                    span_id: span_id(run_id, &p.node_id, &p.instance_id, *nth),
                    node_id: p.node_id,
                    instance_id: p.instance_id,
                    kind: p.kind,
                    name: p.name,
                    parent_node: p.parent_id,
                    parent,
                    start: env.ts,
                    end: None,
                    open: true,
                    input: p.input,
                    output: None,
                    status: None,
                    error: None,
                    held_ms: None,
                    holds: 0,
                    actions: Vec::new(),
                    extra: p.extra,
                    usage: None,
                    events: Vec::new(),
                });
            }
            Message::NodeFinished(p) => {
                if let Some(ix) = find_open(&execs, &p.node_id, p.instance_id.as_deref()) {
                    let e = &mut execs[ix];
                    e.open = false;
                    e.end = Some(env.ts);
                    e.status = Some(p.status);
                    if p.status == Status::Ok {
                        e.error = None;
                    }
                    e.output = p.output;
                    e.usage = p.usage;
                    e.held_ms = p.held_ms;
                    e.extra.extend(p.extra);
                }
            }
            Message::NodeError(p) => {
                if let Some(ix) = find_open(&execs, &p.node_id, p.instance_id.as_deref()) {
                    // Still open: the error gate may follow (then node.finished ends it,
                    // or a retry runs it again as the same execution).
                    let e = &mut execs[ix];
                    e.end = Some(env.ts);
                    e.status = Some(Status::Error);
                    e.error = Some((p.error.name, p.error.message));
                    e.held_ms = p.held_ms;
                    e.extra.extend(p.extra);
                }
            }
            Message::ExecPaused(p) => {
                let instance = p.extra.get("instanceId").and_then(Value::as_str);
                if let Some(ix) = find_open(&execs, &p.node_id, instance)
                    .or_else(|| find_last(&execs, &p.node_id))
                {
                    let mut attrs = vec![
                        s(n::PAUSE_ID, p.pause_id.clone()),
                        s(n::PAUSE_POINT, p.point.as_str()),
                    ];
                    if let Some(r) = p.reason {
                        attrs.push(s(n::PAUSE_REASON, r.as_str()));
                    }
                    let e = &mut execs[ix];
                    e.holds += 1;
                    e.events.push(event(n::EVENT_PAUSED, env.ts, attrs));
                    pauses.insert(p.pause_id, ix);
                }
            }
            Message::ExecResumed(p) => {
                if let Some(&ix) = pauses.get(&p.pause_id) {
                    let mut attrs =
                        vec![s(n::PAUSE_ID, p.pause_id), s(n::ACTION, p.action.as_str())];
                    if p.extra.get("auto").and_then(Value::as_bool) == Some(true) {
                        attrs.push(b(n::AUTO, true));
                    }
                    if let Some(reason) = &p.reason {
                        attrs.push(s(n::REASON, reason.clone()));
                    }
                    let e = &mut execs[ix];
                    if p.edited.is_some() {
                        e.extra.insert("edited".into(), Value::Bool(true));
                    }
                    e.actions.push(p.action.as_str().to_owned());
                    e.events.push(event(n::EVENT_RESUMED, env.ts, attrs));
                }
            }
            Message::ExecRefused(p) => {
                if let Some(&ix) = pauses.get(&p.pause_id) {
                    let attrs = vec![s(n::PAUSE_ID, p.pause_id), s(n::STATUS, p.code.as_str())];
                    execs[ix]
                        .events
                        .push(event(n::EVENT_REFUSED, env.ts, attrs));
                }
            }
            _ => {}
        }
    }
    assemble(run_id, &run, execs, incomplete, opts)
}

/// The open execution of `node_id` (with `instance_id` when given), latest first.
fn find_open(execs: &[Exec], node_id: &str, instance_id: Option<&str>) -> Option<usize> {
    let by_instance = instance_id.and_then(|inst| {
        execs
            .iter()
            .rposition(|e| e.open && e.node_id == node_id && e.instance_id == inst)
    });
    by_instance.or_else(|| execs.iter().rposition(|e| e.open && e.node_id == node_id))
}

fn find_last(execs: &[Exec], node_id: &str) -> Option<usize> {
    execs.iter().rposition(|e| e.node_id == node_id)
}

fn event(name: &str, ts: u64, attributes: Vec<KeyValue>) -> Event {
    Event {
        time_unix_nano: ms_to_ns(ts),
        name: name.to_owned(),
        attributes,
        ..Event::default()
    }
}

/// The provider of a model step: a `provider` extra, else from the `api` extra or the model.
fn provider(extra: &serde_json::Map<String, Value>, model: Option<&str>) -> Option<String> {
    if let Some(p) = extra.get("provider").and_then(Value::as_str) {
        return Some(p.to_owned());
    }
    if let Some(api) = extra.get("api").and_then(Value::as_str)
        && matches!(api, "chat.completions" | "responses" | "completions")
    {
        return Some("openai".into());
    }
    let m = model?.to_ascii_lowercase();
    let p = if m.starts_with("gpt-")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
    {
        "openai"
    } else if m.starts_with("claude") {
        "anthropic"
    } else if m.starts_with("gemini") {
        "gcp.gemini"
    } else if m.starts_with("mistral") || m.starts_with("codestral") {
        "mistral_ai"
    } else {
        return None;
    };
    Some(p.into())
}

fn extra_str<'a>(extra: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    extra.get(key).and_then(Value::as_str)
}

fn extra_true(extra: &serde_json::Map<String, Value>, key: &str) -> bool {
    extra.get(key).and_then(Value::as_bool) == Some(true)
}

/// The span of one execution: name, kind and attributes by node kind.
fn exec_span(e: &Exec, opts: MapOptions) -> (String, SpanKind, Vec<KeyValue>) {
    let mut a = vec![
        s(n::NODE_ID, e.node_id.clone()),
        s(n::NODE_KIND, e.kind.as_str()),
        s(n::INSTANCE_ID, e.instance_id.clone()),
    ];
    let (name, kind) = match e.kind {
        NodeKind::Llm => {
            let response_model = extra_str(&e.extra, "model").map(str::to_owned);
            let request_model = e
                .input
                .as_ref()
                .and_then(|i| i.get("model"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| response_model.clone());
            a.push(s(n::OPERATION, "chat"));
            if let Some(p) = provider(&e.extra, request_model.as_deref()) {
                a.push(s(n::PROVIDER, p));
            }
            if let Some(m) = &request_model {
                a.push(s(n::REQUEST_MODEL, m.clone()));
            }
            if let Some(m) = &response_model {
                a.push(s(n::RESPONSE_MODEL, m.clone()));
            }
            if let Some(id) = extra_str(&e.extra, "responseId") {
                a.push(s(n::RESPONSE_ID, id));
            }
            let finish = extra_str(&e.extra, "finishReason")
                .or_else(|| {
                    e.output
                        .as_ref()
                        .and_then(|o| o.get("rawFinishReason"))
                        .and_then(Value::as_str)
                })
                .or_else(|| {
                    e.output
                        .as_ref()
                        .and_then(|o| o.get("finishReason"))
                        .and_then(Value::as_str)
                });
            if let Some(fr) = finish {
                a.push(strings(n::FINISH_REASONS, &[fr.to_owned()]));
            }
            if let Some(u) = &e.usage {
                a.push(i(n::INPUT_TOKENS, u.input_tokens));
                a.push(i(n::OUTPUT_TOKENS, u.output_tokens));
                for (field, name) in [
                    ("cacheReadTokens", n::CACHE_READ_TOKENS),
                    ("cacheWriteTokens", n::CACHE_WRITE_TOKENS),
                    ("reasoningTokens", n::REASONING_TOKENS),
                ] {
                    if let Some(v) = u.extra.get(field).and_then(Value::as_u64) {
                        a.push(i(name, v));
                    }
                }
            }
            if opts.content {
                if let Some(v) = &e.input {
                    a.push(s(n::INPUT_MESSAGES, json_text(v)));
                }
                if let Some(v) = &e.output {
                    a.push(s(n::OUTPUT_MESSAGES, json_text(v)));
                }
            }
            let name = match &request_model {
                Some(m) => format!("chat {m}"),
                None => "chat".to_owned(),
            };
            (name, SpanKind::Client)
        }
        NodeKind::Tool => {
            a.push(s(n::OPERATION, "execute_tool"));
            a.push(s(n::TOOL_NAME, e.name.clone()));
            a.push(s(n::TOOL_CALL_ID, e.instance_id.clone()));
            if opts.content {
                if let Some(v) = &e.input {
                    a.push(s(n::TOOL_ARGUMENTS, json_text(v)));
                }
                if let Some(v) = &e.output {
                    a.push(s(n::TOOL_RESULT, json_text(v)));
                }
            }
            (format!("execute_tool {}", e.name), SpanKind::Internal)
        }
        NodeKind::Agent => {
            a.push(s(n::OPERATION, "invoke_agent"));
            a.push(s(n::AGENT_NAME, e.name.clone()));
            content_generic(&mut a, e, opts);
            (format!("invoke_agent {}", e.name), SpanKind::Internal)
        }
        _ => {
            content_generic(&mut a, e, opts);
            (
                format!("{} {}", e.kind.as_str(), e.name),
                SpanKind::Internal,
            )
        }
    };
    if let Some(st) = e.status {
        a.push(s(n::STATUS, st.as_str()));
    } else {
        a.push(b(n::UNFINISHED, true));
    }
    if let Some((name, _)) = &e.error {
        a.push(s(n::ERROR_TYPE, name.clone()));
    }
    if let Some(h) = e.held_ms {
        a.push(f(n::HELD_MS, h));
    }
    if e.holds > 0 {
        a.push(i(n::HOLDS, e.holds));
    }
    if !e.actions.is_empty() {
        a.push(strings(n::ACTIONS, &e.actions));
    }
    for (field, name) in [
        ("injected", n::INJECTED),
        ("recoveredFromError", n::RECOVERED),
        ("edited", n::EDITED),
        ("inputEdited", n::EDITED),
        ("providerExecuted", n::PROVIDER_EXECUTED),
    ] {
        if extra_true(&e.extra, field) && !a.iter().any(|k| k.key == name) {
            a.push(b(name, true));
        }
    }
    if extra_true(&e.extra, "streamed") || extra_true(&e.extra, "streaming") {
        a.push(b(n::STREAMED, true));
    }
    if let Some(n_) = e.extra.get("attempts").and_then(Value::as_u64) {
        a.push(i(n::ATTEMPTS, n_));
    }
    if let Some(api) = extra_str(&e.extra, "api") {
        a.push(s(n::API, api));
    }
    (name, kind, a)
}

fn content_generic(a: &mut Vec<KeyValue>, e: &Exec, opts: MapOptions) {
    if opts.content {
        if let Some(v) = &e.input {
            a.push(s(n::INPUT, json_text(v)));
        }
        if let Some(v) = &e.output {
            a.push(s(n::OUTPUT, json_text(v)));
        }
    }
}

fn span_status(status: Option<Status>, error: Option<&ErrorText>) -> Option<SpanStatus> {
    match status {
        Some(Status::Error | Status::Aborted) => Some(SpanStatus {
            message: error.map(|(_, m)| m.clone()).unwrap_or_default(),
            code: StatusCode::Error as i32,
        }),
        Some(Status::Ok) => Some(SpanStatus {
            message: String::new(),
            code: StatusCode::Ok as i32,
        }),
        None => None,
    }
}

fn assemble(
    run_id: &str,
    run: &RunInfo,
    execs: Vec<Exec>,
    incomplete: bool,
    opts: MapOptions,
) -> ResourceSpans {
    let trace = trace_id(run_id).to_vec();
    let run_start = run.started.or(run.first_ts).unwrap_or(0);
    let run_end = run
        .finished
        .as_ref()
        .map_or(run.last_ts, |f| f.0)
        .max(run_start);
    // The root: the run's agent node when it reported one (no parent), else a span of the
    // run itself.
    let root_ix = execs
        .iter()
        .position(|e| e.kind == NodeKind::Agent && e.parent_node.is_none());
    let mut spans = Vec::with_capacity(execs.len() + 1);
    let run_name = run
        .name
        .clone()
        .or_else(|| root_ix.map(|ix| execs[ix].name.clone()))
        .or_else(|| run.app.clone())
        .unwrap_or_else(|| "run".to_owned());
    let root_id = match root_ix {
        Some(ix) => execs[ix].span_id,
        None => span_id(run_id, "", run_id, 0),
    };
    let run_attrs = |a: &mut Vec<KeyValue>| {
        a.push(s(n::CONVERSATION_ID, run_id));
        if incomplete {
            a.push(b(n::INCOMPLETE, true));
        }
    };
    if root_ix.is_none() {
        let mut a = vec![
            s(n::RUN_ID, run_id),
            s(n::OPERATION, "invoke_agent"),
            s(n::AGENT_NAME, run_name.clone()),
        ];
        run_attrs(&mut a);
        let (status, error) = match &run.finished {
            Some((_, st, err)) => {
                a.push(s(n::STATUS, st.as_str()));
                if let Some((name, _)) = err {
                    a.push(s(n::ERROR_TYPE, name.clone()));
                }
                (Some(*st), err.as_ref())
            }
            None => {
                a.push(b(n::UNFINISHED, true));
                (None, None)
            }
        };
        spans.push(Span {
            trace_id: trace.clone(),
            span_id: root_id.to_vec(),
            name: format!("invoke_agent {run_name}"),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: ms_to_ns(run_start),
            end_time_unix_nano: ms_to_ns(run_end),
            attributes: a,
            status: span_status(status, error),
            ..Span::default()
        });
    }
    for (ix, e) in execs.iter().enumerate() {
        let (name, kind, mut a) = exec_span(e, opts);
        a.insert(0, s(n::RUN_ID, run_id));
        if Some(ix) == root_ix {
            run_attrs(&mut a);
        }
        let parent = if Some(ix) == root_ix {
            Vec::new()
        } else {
            e.parent.map_or(root_id, |p| execs[p].span_id).to_vec()
        };
        let end = e.end.unwrap_or(run_end).max(e.start);
        spans.push(Span {
            trace_id: trace.clone(),
            span_id: e.span_id.to_vec(),
            parent_span_id: parent,
            name,
            kind: kind as i32,
            start_time_unix_nano: ms_to_ns(e.start),
            end_time_unix_nano: ms_to_ns(end),
            attributes: a,
            events: e.events.clone(),
            status: span_status(e.status, e.error.as_ref()),
            ..Span::default()
        });
    }
    let mut resource = vec![s(
        n::SERVICE_NAME,
        run.app.clone().unwrap_or_else(|| "graphmind".into()),
    )];
    if let Some((name, version)) = &run.sdk {
        resource.push(s(n::SDK_NAME, name.clone()));
        resource.push(s(n::SDK_VERSION, version.clone()));
    }
    ResourceSpans {
        resource: Some(Resource {
            attributes: resource,
            ..Resource::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: n::SCOPE.to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                ..InstrumentationScope::default()
            }),
            spans,
            ..ScopeSpans::default()
        }],
        ..ResourceSpans::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(seq: u64, ts: u64, kind: &str, payload: Value) -> String {
        json!({"gm": 1, "seq": seq, "ts": ts, "runId": "run_t", "type": kind, "payload": payload})
            .to_string()
    }

    fn spans(bodies: &[String], opts: MapOptions) -> Vec<Span> {
        run_spans("run_t", bodies, false, opts).scope_spans[0]
            .spans
            .clone()
    }

    fn attr<'a>(s: &'a Span, key: &str) -> Option<&'a any_value::Value> {
        s.attributes
            .iter()
            .find(|k| k.key == key)
            .and_then(|k| k.value.as_ref()?.value.as_ref())
    }

    #[test]
    fn trace_ids_are_deterministic_distinct_and_never_zero() {
        assert_eq!(trace_id("run_a"), trace_id("run_a"));
        assert_ne!(trace_id("run_a"), trace_id("run_b"));
        assert_ne!(trace_id(""), [0; 16]);
    }

    #[test]
    fn a_run_without_an_agent_node_gets_a_root_of_its_own_and_bad_bodies_are_skipped() {
        let bodies = vec![
            env(
                1,
                1000,
                "run.started",
                json!({"app": "a", "sdk": {"name": "rust", "version": "1"}, "meta": {"name": "nightly"}}),
            ),
            "not json".to_owned(),
            json!({"gm": 1}).to_string(),
            env(
                2,
                1001,
                "node.started",
                json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": "c1"}),
            ),
            env(
                3,
                1002,
                "node.error",
                json!({"nodeId": "tool:t", "instanceId": "c1", "error": {"name": "Boom", "message": "it broke"}}),
            ),
            env(
                4,
                1005,
                "run.finished",
                json!({"status": "error", "error": {"name": "Boom", "message": "it broke"}}),
            ),
        ];
        let s = spans(&bodies, MapOptions::default());
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "invoke_agent nightly");
        assert!(s[0].parent_span_id.is_empty());
        assert_eq!(
            (s[0].start_time_unix_nano, s[0].end_time_unix_nano),
            (1_000_000_000, 1_005_000_000)
        );
        assert_eq!(
            s[0].status.as_ref().map(|x| x.code),
            Some(StatusCode::Error as i32)
        );
        assert_eq!(s[1].parent_span_id, s[0].span_id);
        // Only a node.error: the span ends there, failed, not unfinished.
        assert_eq!(s[1].end_time_unix_nano, 1_002_000_000);
        assert_eq!(attr(&s[1], n::UNFINISHED), None);
        assert_eq!(
            attr(&s[1], n::ERROR_TYPE),
            Some(&any_value::Value::StringValue("Boom".into()))
        );
    }

    #[test]
    fn a_retry_after_an_error_stays_one_span_and_ends_ok() {
        let bodies = vec![
            env(
                1,
                10,
                "node.started",
                json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": "c1"}),
            ),
            env(
                2,
                11,
                "node.error",
                json!({"nodeId": "tool:t", "instanceId": "c1", "error": {"name": "E", "message": "m"}}),
            ),
            env(
                3,
                12,
                "node.started",
                json!({"nodeId": "tool:t", "kind": "tool", "name": "t", "instanceId": "c1"}),
            ),
            env(
                4,
                13,
                "node.finished",
                json!({"nodeId": "tool:t", "instanceId": "c1", "durationMs": 3, "status": "ok", "attempts": 2}),
            ),
        ];
        let s = spans(&bodies, MapOptions::default());
        assert_eq!(s.len(), 2, "the run's own root and one tool span");
        assert_eq!(
            s[1].status.as_ref().map(|x| x.code),
            Some(StatusCode::Ok as i32)
        );
        assert_eq!(attr(&s[1], n::ERROR_TYPE), None);
        assert_eq!(
            attr(&s[1], n::ATTEMPTS),
            Some(&any_value::Value::IntValue(2))
        );
        assert_eq!(
            s[1].end_time_unix_nano - s[1].start_time_unix_nano,
            3_000_000
        );
    }

    #[test]
    fn content_is_cut_at_its_budget_on_a_char_boundary() {
        let big = "é".repeat(MAX_CONTENT_BYTES);
        let bodies = vec![env(
            1,
            1,
            "node.started",
            json!({"nodeId": "chain:c", "kind": "chain", "name": "c", "instanceId": "i", "input": big}),
        )];
        let s = spans(&bodies, MapOptions { content: true });
        let Some(any_value::Value::StringValue(text)) = attr(&s[1], n::INPUT) else {
            panic!("no input attribute");
        };
        assert!(text.len() <= MAX_CONTENT_BYTES + '…'.len_utf8());
        assert!(text.ends_with('…'));
        let s = spans(&bodies, MapOptions::default());
        assert_eq!(attr(&s[1], n::INPUT), None, "no content without the opt-in");
    }
}
