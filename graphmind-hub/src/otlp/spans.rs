//! A stored run's events → OTLP spans: the run is a trace, each node execution a span under
//! its parent's execution, named and attributed by the GenAI conventions ([`super::names`]).

use std::borrow::Cow;
use std::collections::HashMap;

use graphmind_protocol::{NodeKind, PausePoint, PauseReason, RefusedCode, ResumeAction, Status};
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status as SpanStatus,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::names as n;
use graphmind_protocol::trace::span_id;
pub use graphmind_protocol::trace::trace_id;

/// Longest JSON content attribute written (content opt-in), in bytes; longer ones are cut at
/// a character boundary and end with `…`.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

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

fn strings<S: AsRef<str>>(key: &str, v: &[S]) -> KeyValue {
    kv(
        key,
        any_value::Value::ArrayValue(ArrayValue {
            values: v
                .iter()
                .map(|x| AnyValue {
                    value: Some(any_value::Value::StringValue(x.as_ref().to_owned())),
                })
                .collect(),
        }),
    )
}

/// A JSON value as JSON text (a string as its text), at most [`MAX_CONTENT_BYTES`].
fn json_text(raw: &RawValue) -> String {
    let mut text = match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(t)) => t,
        Ok(v) => v.to_string(),
        Err(_) => raw.get().to_owned(),
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

// ----- the envelopes, read lean ---------------------------------------------------------
//
// The spans need a few fields of each envelope. They are read borrowed from the stored text
// (no `Value` tree, no copies of strings without escapes); inputs and outputs stay raw JSON
// text, looked into only for the fields a span needs (or written whole with the content
// opt-in). The stored texts passed the hub's full parse on intake.

/// Deserializes a field that may be JSON `null` as present (`Some("null")`), as the protocol's
/// payloads keep a present `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A raw JSON value as a string, if it is one.
fn raw_str(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let text = raw?.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// A raw JSON value as an unsigned integer, if it is one.
fn raw_u64(raw: Option<&RawValue>) -> Option<u64> {
    serde_json::from_str(raw?.get()).ok()
}

/// Whether a raw JSON value is `true`.
fn raw_true(raw: Option<&RawValue>) -> bool {
    raw.is_some_and(|r| r.get() == "true")
}

/// A field of a raw JSON object, if the value is an object and has it.
fn raw_field<'a>(raw: Option<&'a RawValue>, key: &str) -> Option<&'a RawValue> {
    let text = raw?.get();
    if !text.starts_with('{') {
        return None;
    }
    let fields: HashMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(text).ok()?;
    fields.get(key).copied()
}

/// The envelope: its type and raw payload.
#[derive(Deserialize)]
struct LeanEnvelope<'a> {
    gm: u64,
    ts: u64,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    payload: &'a RawValue,
}

/// An error's name and message.
#[derive(Debug, Deserialize)]
struct LeanError<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    message: Cow<'a, str>,
}

#[derive(Deserialize)]
struct LeanSdk<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
}

#[derive(Deserialize)]
struct LeanRunStarted<'a> {
    #[serde(borrow)]
    app: Cow<'a, str>,
    #[serde(borrow)]
    sdk: LeanSdk<'a>,
    #[serde(default, borrow)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct LeanRunFinished<'a> {
    status: Status,
    #[serde(default, borrow)]
    error: Option<LeanError<'a>>,
}

/// Token counts of a model step.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanUsage<'a> {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(default, borrow, deserialize_with = "present")]
    cache_read_tokens: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    cache_write_tokens: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    reasoning_tokens: Option<&'a RawValue>,
}

/// The fields of the protocol's extensions (a payload's unknown fields) the spans read, raw;
/// a later event's field replaces an earlier one's, as `extra.extend` would.
#[derive(Debug, Default, Clone, Copy)]
struct Extras<'a> {
    model: Option<&'a RawValue>,
    response_id: Option<&'a RawValue>,
    finish_reason: Option<&'a RawValue>,
    provider: Option<&'a RawValue>,
    api: Option<&'a RawValue>,
    injected: Option<&'a RawValue>,
    recovered_from_error: Option<&'a RawValue>,
    edited: Option<&'a RawValue>,
    input_edited: Option<&'a RawValue>,
    provider_executed: Option<&'a RawValue>,
    streamed: Option<&'a RawValue>,
    streaming: Option<&'a RawValue>,
    attempts: Option<&'a RawValue>,
}

/// A node payload's struct: its own fields, then the [`Extras`] fields (read in the same
/// pass), and `extras()` taking them out.
macro_rules! node_payload {
    ($(#[$m:meta])* struct $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct $name<'a> {
            $($(#[$fm])* $field: $ty,)*
            #[serde(default, borrow, deserialize_with = "present")]
            model: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            response_id: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            finish_reason: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            provider: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            api: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            injected: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            recovered_from_error: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            edited: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            input_edited: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            provider_executed: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            streamed: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            streaming: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            attempts: Option<&'a RawValue>,
        }
        impl<'a> $name<'a> {
            fn extras(&self) -> Extras<'a> {
                Extras {
                    model: self.model,
                    response_id: self.response_id,
                    finish_reason: self.finish_reason,
                    provider: self.provider,
                    api: self.api,
                    injected: self.injected,
                    recovered_from_error: self.recovered_from_error,
                    edited: self.edited,
                    input_edited: self.input_edited,
                    provider_executed: self.provider_executed,
                    streamed: self.streamed,
                    streaming: self.streaming,
                    attempts: self.attempts,
                }
            }
        }
    };
}

impl<'a> Extras<'a> {
    fn extend(&mut self, later: Extras<'a>) {
        macro_rules! take {
            ($($f:ident),*) => { $(if later.$f.is_some() { self.$f = later.$f; })* };
        }
        take!(
            model,
            response_id,
            finish_reason,
            provider,
            api,
            injected,
            recovered_from_error,
            edited,
            input_edited,
            provider_executed,
            streamed,
            streaming,
            attempts
        );
    }
}

node_payload! {
    /// `node.started`.
    struct LeanNodeStarted {
        #[serde(borrow)]
        node_id: Cow<'a, str>,
        kind: NodeKind,
        #[serde(borrow)]
        name: Cow<'a, str>,
        #[serde(borrow)]
        instance_id: Cow<'a, str>,
        #[serde(default, borrow)]
        parent_id: Option<Cow<'a, str>>,
        #[serde(default, borrow, deserialize_with = "present")]
        input: Option<&'a RawValue>,
    }
}

node_payload! {
    /// `node.finished`.
    struct LeanNodeFinished {
        #[serde(borrow)]
        node_id: Cow<'a, str>,
        #[serde(default, borrow)]
        instance_id: Option<Cow<'a, str>>,
        status: Status,
        #[serde(default, borrow, deserialize_with = "present")]
        output: Option<&'a RawValue>,
        #[serde(default, borrow)]
        usage: Option<LeanUsage<'a>>,
        #[serde(default)]
        held_ms: Option<f64>,
    }
}

node_payload! {
    /// `node.error`.
    struct LeanNodeError {
        #[serde(borrow)]
        node_id: Cow<'a, str>,
        #[serde(default, borrow)]
        instance_id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        error: LeanError<'a>,
        #[serde(default)]
        held_ms: Option<f64>,
    }
}

/// `exec.paused`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanPaused<'a> {
    #[serde(borrow)]
    pause_id: Cow<'a, str>,
    #[serde(borrow)]
    node_id: Cow<'a, str>,
    point: PausePoint,
    #[serde(default)]
    reason: Option<PauseReason>,
    #[serde(default, borrow, deserialize_with = "present")]
    instance_id: Option<&'a RawValue>,
}

/// `exec.resumed`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanResumed<'a> {
    #[serde(borrow)]
    pause_id: Cow<'a, str>,
    action: ResumeAction,
    #[serde(default, borrow)]
    edited: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    auto: Option<&'a RawValue>,
}

/// `exec.refused`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanRefused<'a> {
    #[serde(borrow)]
    pause_id: Cow<'a, str>,
    code: RefusedCode,
}

/// The messages the spans are built from.
enum Lean<'a> {
    RunStarted(LeanRunStarted<'a>),
    RunFinished(LeanRunFinished<'a>),
    NodeStarted(LeanNodeStarted<'a>),
    NodeFinished(LeanNodeFinished<'a>),
    NodeError(LeanNodeError<'a>),
    Paused(LeanPaused<'a>),
    Resumed(LeanResumed<'a>),
    Refused(LeanRefused<'a>),
    /// Any other type: only its timestamp counts.
    Other,
}

/// One stored envelope, read for its spans: its `ts` and message. `None`: not an envelope of
/// protocol 1, or a known type whose payload lacks what the protocol requires.
fn lean(text: &str) -> Option<(u64, Lean<'_>)> {
    fn p<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Option<T> {
        serde_json::from_str(raw.get()).ok()
    }
    let env: LeanEnvelope<'_> = serde_json::from_str(text).ok()?;
    if env.gm != 1 {
        return None;
    }
    let raw = env.payload;
    let msg = match env.kind.as_ref() {
        "run.started" => Lean::RunStarted(p(raw)?),
        "run.finished" => Lean::RunFinished(p(raw)?),
        "node.started" => Lean::NodeStarted(p(raw)?),
        "node.finished" => Lean::NodeFinished(p(raw)?),
        "node.error" => Lean::NodeError(p(raw)?),
        "exec.paused" => Lean::Paused(p(raw)?),
        "exec.resumed" => Lean::Resumed(p(raw)?),
        "exec.refused" => Lean::Refused(p(raw)?),
        _ => {
            // Any other known type still has to be an object payload to count.
            if !raw.get().starts_with('{') {
                return None;
            }
            Lean::Other
        }
    };
    Some((env.ts, msg))
}

/// One node execution being assembled.
#[derive(Debug)]
struct Exec<'a> {
    node_id: Cow<'a, str>,
    instance_id: Cow<'a, str>,
    kind: NodeKind,
    name: Cow<'a, str>,
    parent_node: Option<Cow<'a, str>>,
    /// Index of the parent execution, resolved at start.
    parent: Option<usize>,
    span_id: [u8; 8],
    start: u64,
    end: Option<u64>,
    open: bool,
    input: Option<&'a RawValue>,
    output: Option<&'a RawValue>,
    status: Option<Status>,
    error: Option<ErrorText<'a>>,
    held_ms: Option<f64>,
    holds: u64,
    actions: Vec<&'static str>,
    extra: Extras<'a>,
    usage: Option<LeanUsage<'a>>,
    events: Vec<Event>,
}

/// An error's name and message.
type ErrorText<'a> = (Cow<'a, str>, Cow<'a, str>);

/// The run as the spans see it.
#[derive(Debug, Default)]
struct RunInfo<'a> {
    app: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    sdk: Option<(Cow<'a, str>, Cow<'a, str>)>,
    started: Option<u64>,
    finished: Option<(u64, Status, Option<ErrorText<'a>>)>,
    first_ts: Option<u64>,
    last_ts: u64,
}

/// The literal `true`, for an extension set by a later event.
fn raw_true_value() -> Option<&'static RawValue> {
    serde_json::from_str("true").ok()
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
    let mut execs: Vec<Exec<'_>> = Vec::new();
    // (nodeId, instanceId) → how many executions with that key so far.
    let mut seen: HashMap<(Cow<'_, str>, Cow<'_, str>), usize> = HashMap::new();
    // pauseId → the execution it held.
    let mut pauses: HashMap<Cow<'_, str>, usize> = HashMap::new();
    for body in bodies {
        let Some((ts, message)) = lean(body.as_ref()) else {
            continue;
        };
        run.first_ts = Some(run.first_ts.map_or(ts, |t| t.min(ts)));
        run.last_ts = run.last_ts.max(ts);
        match message {
            Lean::RunStarted(p) => {
                run.app = Some(p.app);
                run.sdk = Some((p.sdk.name, p.sdk.version));
                run.name = raw_str(raw_field(p.meta, "name"));
                run.started = Some(ts);
            }
            Lean::RunFinished(p) => {
                run.finished = Some((ts, p.status, p.error.map(|e| (e.name, e.message))));
            }
            Lean::NodeStarted(p) => {
                let extra = p.extras();
                // The same execution starting again (a retry from the top) stays one span.
                if let Some(ix) = find_open(&execs, &p.node_id, Some(&p.instance_id)) {
                    if p.input.is_some() {
                        execs[ix].input = p.input;
                    }
                    continue;
                }
                let nth = seen
                    .entry((p.node_id.clone(), p.instance_id.clone()))
                    .or_insert(0);
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
                    start: ts,
                    end: None,
                    open: true,
                    input: p.input,
                    output: None,
                    status: None,
                    error: None,
                    held_ms: None,
                    holds: 0,
                    actions: Vec::new(),
                    extra,
                    usage: None,
                    events: Vec::new(),
                });
            }
            Lean::NodeFinished(p) => {
                let extra = p.extras();
                if let Some(ix) = find_open(&execs, &p.node_id, p.instance_id.as_deref()) {
                    let e = &mut execs[ix];
                    e.open = false;
                    e.end = Some(ts);
                    e.status = Some(p.status);
                    if p.status == Status::Ok {
                        e.error = None;
                    }
                    e.output = p.output;
                    e.usage = p.usage;
                    e.held_ms = p.held_ms;
                    e.extra.extend(extra);
                }
            }
            Lean::NodeError(p) => {
                let extra = p.extras();
                if let Some(ix) = find_open(&execs, &p.node_id, p.instance_id.as_deref()) {
                    // Still open: the error gate may follow (then node.finished ends it,
                    // or a retry runs it again as the same execution).
                    let e = &mut execs[ix];
                    e.end = Some(ts);
                    e.status = Some(Status::Error);
                    e.error = Some((p.error.name, p.error.message));
                    e.held_ms = p.held_ms;
                    e.extra.extend(extra);
                }
            }
            Lean::Paused(p) => {
                let instance = raw_str(p.instance_id);
                if let Some(ix) = find_open(&execs, &p.node_id, instance.as_deref())
                    .or_else(|| find_last(&execs, &p.node_id))
                {
                    let mut attrs = vec![
                        s(n::PAUSE_ID, p.pause_id.as_ref()),
                        s(n::PAUSE_POINT, p.point.as_str()),
                    ];
                    if let Some(r) = p.reason {
                        attrs.push(s(n::PAUSE_REASON, r.as_str()));
                    }
                    let e = &mut execs[ix];
                    e.holds += 1;
                    e.events.push(event(n::EVENT_PAUSED, ts, attrs));
                    pauses.insert(p.pause_id, ix);
                }
            }
            Lean::Resumed(p) => {
                if let Some(&ix) = pauses.get(&p.pause_id) {
                    let mut attrs = vec![
                        s(n::PAUSE_ID, p.pause_id.as_ref()),
                        s(n::ACTION, p.action.as_str()),
                    ];
                    if raw_true(p.auto) {
                        attrs.push(b(n::AUTO, true));
                    }
                    if let Some(reason) = p.reason {
                        attrs.push(s(n::REASON, reason));
                    }
                    let e = &mut execs[ix];
                    if p.edited.is_some() {
                        e.extra.edited = raw_true_value();
                    }
                    e.actions.push(p.action.as_str());
                    e.events.push(event(n::EVENT_RESUMED, ts, attrs));
                }
            }
            Lean::Refused(p) => {
                if let Some(&ix) = pauses.get(&p.pause_id) {
                    let attrs = vec![
                        s(n::PAUSE_ID, p.pause_id.as_ref()),
                        s(n::STATUS, p.code.as_str()),
                    ];
                    execs[ix].events.push(event(n::EVENT_REFUSED, ts, attrs));
                }
            }
            Lean::Other => {}
        }
    }
    assemble(run_id, &run, execs, incomplete, opts)
}

/// The open execution of `node_id` (with `instance_id` when given), latest first.
fn find_open(execs: &[Exec<'_>], node_id: &str, instance_id: Option<&str>) -> Option<usize> {
    let by_instance = instance_id.and_then(|inst| {
        execs
            .iter()
            .rposition(|e| e.open && e.node_id == node_id && e.instance_id == inst)
    });
    by_instance.or_else(|| execs.iter().rposition(|e| e.open && e.node_id == node_id))
}

fn find_last(execs: &[Exec<'_>], node_id: &str) -> Option<usize> {
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
fn provider<'a>(extra: &Extras<'a>, model: Option<&str>) -> Option<Cow<'a, str>> {
    if let Some(p) = raw_str(extra.provider) {
        return Some(p);
    }
    if let Some(api) = raw_str(extra.api)
        && matches!(
            api.as_ref(),
            "chat.completions" | "responses" | "completions"
        )
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

/// The span of one execution: name, kind and attributes by node kind.
fn exec_span(e: &Exec<'_>, opts: MapOptions) -> (String, SpanKind, Vec<KeyValue>) {
    let mut a = vec![
        s(n::NODE_ID, e.node_id.as_ref()),
        s(n::NODE_KIND, e.kind.as_str()),
        s(n::INSTANCE_ID, e.instance_id.as_ref()),
    ];
    let (name, kind) = match e.kind {
        NodeKind::Llm => {
            let response_model = raw_str(e.extra.model);
            let request_model =
                raw_str(raw_field(e.input, "model")).or_else(|| response_model.clone());
            a.push(s(n::OPERATION, "chat"));
            if let Some(p) = provider(&e.extra, request_model.as_deref()) {
                a.push(s(n::PROVIDER, p));
            }
            if let Some(m) = &request_model {
                a.push(s(n::REQUEST_MODEL, m.as_ref()));
            }
            if let Some(m) = &response_model {
                a.push(s(n::RESPONSE_MODEL, m.as_ref()));
            }
            if let Some(id) = raw_str(e.extra.response_id) {
                a.push(s(n::RESPONSE_ID, id));
            }
            let finish = raw_str(e.extra.finish_reason)
                .or_else(|| raw_str(raw_field(e.output, "rawFinishReason")))
                .or_else(|| raw_str(raw_field(e.output, "finishReason")));
            if let Some(fr) = finish {
                a.push(strings(n::FINISH_REASONS, &[fr]));
            }
            if let Some(u) = &e.usage {
                a.push(i(n::INPUT_TOKENS, u.input_tokens));
                a.push(i(n::OUTPUT_TOKENS, u.output_tokens));
                for (raw, name) in [
                    (u.cache_read_tokens, n::CACHE_READ_TOKENS),
                    (u.cache_write_tokens, n::CACHE_WRITE_TOKENS),
                    (u.reasoning_tokens, n::REASONING_TOKENS),
                ] {
                    if let Some(v) = raw_u64(raw) {
                        a.push(i(name, v));
                    }
                }
            }
            if opts.content {
                if let Some(v) = e.input {
                    a.push(s(n::INPUT_MESSAGES, json_text(v)));
                }
                if let Some(v) = e.output {
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
            a.push(s(n::TOOL_NAME, e.name.as_ref()));
            a.push(s(n::TOOL_CALL_ID, e.instance_id.as_ref()));
            if opts.content {
                if let Some(v) = e.input {
                    a.push(s(n::TOOL_ARGUMENTS, json_text(v)));
                }
                if let Some(v) = e.output {
                    a.push(s(n::TOOL_RESULT, json_text(v)));
                }
            }
            (format!("execute_tool {}", e.name), SpanKind::Internal)
        }
        NodeKind::Agent => {
            a.push(s(n::OPERATION, "invoke_agent"));
            a.push(s(n::AGENT_NAME, e.name.as_ref()));
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
        a.push(s(n::ERROR_TYPE, name.as_ref()));
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
    let x = &e.extra;
    for (raw, name) in [
        (x.injected, n::INJECTED),
        (x.recovered_from_error, n::RECOVERED),
        (x.edited, n::EDITED),
        (x.input_edited, n::EDITED),
        (x.provider_executed, n::PROVIDER_EXECUTED),
    ] {
        if raw_true(raw) && !a.iter().any(|k| k.key == name) {
            a.push(b(name, true));
        }
    }
    if raw_true(x.streamed) || raw_true(x.streaming) {
        a.push(b(n::STREAMED, true));
    }
    if let Some(n_) = raw_u64(x.attempts) {
        a.push(i(n::ATTEMPTS, n_));
    }
    if let Some(api) = raw_str(x.api) {
        a.push(s(n::API, api));
    }
    (name, kind, a)
}

fn content_generic(a: &mut Vec<KeyValue>, e: &Exec<'_>, opts: MapOptions) {
    if opts.content {
        if let Some(v) = e.input {
            a.push(s(n::INPUT, json_text(v)));
        }
        if let Some(v) = e.output {
            a.push(s(n::OUTPUT, json_text(v)));
        }
    }
}

fn span_status(status: Option<Status>, error: Option<&ErrorText<'_>>) -> Option<SpanStatus> {
    match status {
        Some(Status::Error | Status::Aborted) => Some(SpanStatus {
            message: error.map(|(_, m)| m.to_string()).unwrap_or_default(),
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
    run: &RunInfo<'_>,
    execs: Vec<Exec<'_>>,
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
    let run_name: String = run
        .name
        .as_deref()
        .or_else(|| root_ix.map(|ix| execs[ix].name.as_ref()))
        .or(run.app.as_deref())
        .unwrap_or("run")
        .to_owned();
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
            s(n::AGENT_NAME, run_name.as_str()),
        ];
        run_attrs(&mut a);
        let (status, error) = match &run.finished {
            Some((_, st, err)) => {
                a.push(s(n::STATUS, st.as_str()));
                if let Some((name, _)) = err {
                    a.push(s(n::ERROR_TYPE, name.as_ref()));
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
    let ids: Vec<[u8; 8]> = execs.iter().map(|e| e.span_id).collect();
    for (ix, mut e) in execs.into_iter().enumerate() {
        let (name, kind, mut a) = exec_span(&e, opts);
        a.insert(0, s(n::RUN_ID, run_id));
        if Some(ix) == root_ix {
            run_attrs(&mut a);
        }
        let parent = if Some(ix) == root_ix {
            Vec::new()
        } else {
            e.parent.map_or(root_id, |p| ids[p]).to_vec()
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
            status: span_status(e.status, e.error.as_ref()),
            events: std::mem::take(&mut e.events),
            ..Span::default()
        });
    }
    let mut resource = vec![s(
        n::SERVICE_NAME,
        run.app.as_deref().unwrap_or("graphmind"),
    )];
    if let Some((name, version)) = &run.sdk {
        resource.push(s(n::SDK_NAME, name.as_ref()));
        resource.push(s(n::SDK_VERSION, version.as_ref()));
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

    #[test]
    fn envelopes_read_lean_keep_escapes_present_nulls_and_later_extensions() {
        let bodies = vec![
            env(
                1,
                1,
                "node.started",
                json!({"nodeId": "llm:m", "kind": "llm", "name": "caf\u{e9} \"m\"", "instanceId": "i",
                       "input": {"model": "gpt-4o\n", "messages": [{"role": "user"}]},
                       "api": "chat.completions", "streamed": true, "attempts": "two"}),
            ),
            env(
                2,
                4,
                "node.finished",
                json!({"nodeId": "llm:m", "instanceId": "i", "durationMs": 3, "status": "ok",
                       "output": null, "model": 5, "attempts": 2,
                       "usage": {"inputTokens": 7, "outputTokens": 9, "cacheReadTokens": 3, "reasoningTokens": -1}}),
            ),
            // A known type without what the protocol requires is skipped.
            env(3, 9, "node.finished", json!({"nodeId": "llm:m"})),
        ];
        let s = spans(&bodies, MapOptions { content: true });
        assert_eq!(s.len(), 2);
        let m = &s[1];
        assert_eq!(m.name, "chat gpt-4o\n");
        let str_of = |k| match attr(m, k) {
            Some(any_value::Value::StringValue(t)) => Some(t.clone()),
            _ => None,
        };
        assert_eq!(str_of(n::REQUEST_MODEL).as_deref(), Some("gpt-4o\n"));
        // The later event's non-string `model` replaced the earlier extension.
        assert_eq!(attr(m, n::RESPONSE_MODEL), None);
        assert_eq!(str_of(n::PROVIDER).as_deref(), Some("openai"));
        assert_eq!(
            attr(m, n::STREAMED),
            Some(&any_value::Value::BoolValue(true))
        );
        assert_eq!(attr(m, n::ATTEMPTS), Some(&any_value::Value::IntValue(2)));
        assert_eq!(
            attr(m, n::INPUT_TOKENS),
            Some(&any_value::Value::IntValue(7))
        );
        assert_eq!(
            attr(m, n::CACHE_READ_TOKENS),
            Some(&any_value::Value::IntValue(3))
        );
        assert_eq!(attr(m, n::REASONING_TOKENS), None);
        // A present null output is written as JSON `null`; the input as compact JSON.
        assert_eq!(str_of(n::OUTPUT_MESSAGES).as_deref(), Some("null"));
        assert_eq!(
            str_of(n::INPUT_MESSAGES).as_deref(),
            Some(r#"{"model":"gpt-4o\n","messages":[{"role":"user"}]}"#)
        );
        // The skipped event did not move the run's end.
        assert_eq!(s[0].end_time_unix_nano, 4_000_000);
    }
}
