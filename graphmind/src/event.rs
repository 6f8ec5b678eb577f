//! What the replay ring holds: a compact record for the two events of every node execution
//! (`node.started`, `node.finished`), with call-site strings borrowed from `'static` data,
//! instance ids kept as counters and the run's ids shared, or any other [`Message`] behind an
//! `Arc`. A record becomes JSON only when it is sent (DESIGN.md: events go to the ring as
//! structs and are serialized only when they are sent); the bytes are exactly those of the
//! equivalent [`Message`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use graphmind_protocol::{Extra, Message, NodeFinished, NodeKind, NodeStarted, Status};
use serde::Serialize;
use serde_json::Value;

use crate::captured::Val;
use crate::extras::Extras;
use crate::model::Usage;

/// A node execution's id: `call_<6 hex per process>_<n>` kept as its counter until sent, or
/// any other text (a model's tool-call id, an invocation step, a run id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstanceId {
    /// `call_<process base>_<n>`.
    Call(u64),
    /// Given text.
    Text(Box<str>),
}

impl InstanceId {
    /// The next `call_…` id (same counter and format as [`crate::ids::next_id`]).
    pub(crate) fn next_call() -> Self {
        Self::Call(crate::ids::next_counter())
    }

    /// Length of the text, without formatting it.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Call(n) => {
                let digits = n.checked_ilog10().map_or(1, |d| d as usize + 1);
                "call_".len() + crate::ids::process_base().len() + 1 + digits
            }
            Self::Text(s) => s.len(),
        }
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Call(n) => write!(f, "call_{}_{n}", crate::ids::process_base()),
            Self::Text(s) => f.write_str(s),
        }
    }
}

impl Serialize for InstanceId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => s.serialize_str(t),
            Self::Call(_) => s.collect_str(self),
        }
    }
}

/// A node input as recorded: any JSON value, or the `{param: value}` object an instrumented
/// function's arguments make, kept as its fields (no map built; serialized as that object).
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    /// Any value (the low-level API, model steps); boxed to keep records small.
    Json(Box<Value>),
    /// The arguments of an instrumented call, in order (names are unique).
    Fields(Box<[(&'static str, Val)]>),
    /// Any value as its JSON text, serialized once (a model step's request).
    Raw(Box<serde_json::value::RawValue>),
    /// Any value kept as itself, serialized on first read (an adapter's request).
    Lazy(Arc<crate::lazy::Lazy>),
}

impl Payload {
    /// The field `key` of an object, if it is a string.
    pub(crate) fn get_str(&self, key: &str) -> Option<&str> {
        match self {
            Self::Json(v) => v.get(key).and_then(Value::as_str),
            Self::Fields(f) => f
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.as_str()),
            // Text is not looked into (a tool's call id is never captured as text).
            Self::Raw(_) | Self::Lazy(_) => None,
        }
    }

    /// The payload as a JSON value, by reference (the replayer compares it).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Self::Json(v) => (**v).clone(),
            Self::Fields(f) => Value::Object(
                f.iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone().into_value()))
                    .collect(),
            ),
            Self::Raw(r) => serde_json::from_str(r.get()).unwrap_or(Value::Null),
            Self::Lazy(l) => serde_json::from_str(l.text().get()).unwrap_or(Value::Null),
        }
    }

    /// The payload as a JSON value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Self::Json(v) => *v,
            Self::Fields(f) => Value::Object(
                f.into_vec()
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.into_value()))
                    .collect(),
            ),
            Self::Raw(r) => serde_json::from_str(r.get()).unwrap_or(Value::Null),
            Self::Lazy(l) => serde_json::from_str(l.text().get()).unwrap_or(Value::Null),
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Json(v) => v.serialize(s),
            Self::Fields(f) => {
                let mut m = s.serialize_map(Some(f.len()))?;
                for (k, v) in f {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Self::Raw(r) => r.serialize(s),
            Self::Lazy(l) => l.text().serialize(s),
        }
    }
}

/// What a node is: a tool's static site (no copy), or any node's id, kind and name.
#[derive(Debug, Clone)]
pub(crate) enum Label {
    /// A `#[graphmind::tool]`.
    Tool(&'static crate::sites::ToolSite),
    /// Any other node.
    Named(Box<Named>),
}

/// A node's id, kind and name.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub(crate) node_id: Cow<'static, str>,
    pub(crate) kind: NodeKind,
    pub(crate) name: Cow<'static, str>,
}

impl Label {
    /// A node by id, kind and name.
    pub(crate) fn named(
        node_id: Cow<'static, str>,
        kind: NodeKind,
        name: Cow<'static, str>,
    ) -> Self {
        Self::Named(Box::new(Named {
            node_id,
            kind,
            name,
        }))
    }

    pub(crate) fn node_id(&self) -> &str {
        match self {
            Self::Tool(site) => site.node_id,
            Self::Named(n) => &n.node_id,
        }
    }

    pub(crate) fn kind(&self) -> NodeKind {
        match self {
            Self::Tool(_) => NodeKind::Tool,
            Self::Named(n) => n.kind,
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Tool(site) => site.name,
            Self::Named(n) => &n.name,
        }
    }
}

/// `node.started` of one execution, without extra fields.
#[derive(Debug, Clone)]
pub(crate) struct Started {
    pub(crate) label: Label,
    pub(crate) instance_id: InstanceId,
    pub(crate) parent_id: Option<crate::inline_str::SmallStr>,
    pub(crate) input: Option<Payload>,
}

/// `node.finished` of one execution, without usage or extra fields.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub(crate) node_id: Cow<'static, str>,
    pub(crate) instance_id: InstanceId,
    pub(crate) duration_ms: f64,
    pub(crate) status: Status,
    pub(crate) output: Option<Val>,
    pub(crate) held_ms: f64,
    /// Usage and loose fields (`attempts`, `model`, …), when it has any; boxed, so a node
    /// without them stays small.
    pub(crate) more: Option<Box<FinishedMore>>,
}

/// The usage and loose fields of a compact `node.finished`.
#[derive(Debug, Clone)]
pub(crate) struct FinishedMore {
    /// Kept as counts: written in its wire form only when the event is serialized
    /// ([`UsageWire`]).
    pub(crate) usage: Option<Usage>,
    /// Kept typed (static keys) until the event is serialized.
    pub(crate) extra: Extras,
}

thread_local! {
    /// Set while a detached call's `node.started` waits on this thread for its first poll to
    /// end: records the waiting ones (the call layer sets it, see `call::detached`).
    static WAITING: std::cell::Cell<Option<fn()>> = const { std::cell::Cell::new(None) };
}

/// Records the `node.started` waiting on this thread, if any: the session calls it before it
/// records any event, so a call's `node.started` precedes what the call causes.
#[inline]
pub(crate) fn flush_waiting() {
    if let Some(flush) = WAITING.with(std::cell::Cell::get) {
        flush();
    }
}

/// Sets (or clears) what [`flush_waiting`] runs on this thread.
pub(crate) fn set_waiting(flush: Option<fn()>) {
    WAITING.with(|w| w.set(flush));
}

/// One event as the ring stores it.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    /// Any message (shared with the sender without a copy).
    Message(Arc<Message>),
    /// A compact `node.started`.
    Started(Started),
    /// A compact `node.finished`.
    Finished(Finished),
    /// A compact `node.started` and `node.finished` of one tool call (two frames, two seqs).
    Call(Call),
    /// A compact record (never a message, never itself shared) the transport can take out of
    /// the ring's lock with a reference count and serialize after releasing it: the form of
    /// compact records while a debugger is attached, so an app thread recording never waits
    /// for the transport's serialization (see [`Record::shared`]).
    Shared(Arc<Record>),
}

impl Record {
    /// `self` as the transport shares it outside the ring's lock: compact records behind an
    /// [`Arc`] (one allocation), messages and shared records as they are.
    pub(crate) fn shared(self) -> Self {
        match self {
            Self::Started(_) | Self::Finished(_) | Self::Call(_) => Self::Shared(Arc::new(self)),
            Self::Message(_) | Self::Shared(_) => self,
        }
    }

    /// The record itself, behind a [`Record::Shared`].
    #[inline]
    pub(crate) fn inner(&self) -> &Self {
        match self {
            Self::Shared(r) => r,
            _ => self,
        }
    }

    /// A reference-counted copy, for the records that have one (messages, shared records).
    pub(crate) fn share(&self) -> Option<Self> {
        match self {
            Self::Message(m) => Some(Self::Message(Arc::clone(m))),
            Self::Shared(r) => Some(Self::Shared(Arc::clone(r))),
            _ => None,
        }
    }
}

/// `node.started` and `node.finished` of a tool call that finished in its first poll, as one
/// ring entry: two frames with consecutive seqs, the same bytes as the two compact records
/// ([`Call::split`]).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) started: Started,
    /// Milliseconds from the started frame's `ts` to the finished frame's.
    pub(crate) finished_after: u32,
    pub(crate) duration_ms: f64,
    pub(crate) status: Status,
    pub(crate) output: Option<Val>,
}

impl Call {
    /// The two records it stands for.
    pub(crate) fn split(self) -> (Started, Finished) {
        let node_id = match &self.started.label {
            Label::Tool(site) => Cow::Borrowed(site.node_id),
            Label::Named(n) => n.node_id.clone(),
        };
        let finished = Finished {
            node_id,
            instance_id: self.started.instance_id.clone(),
            duration_ms: self.duration_ms,
            status: self.status,
            output: self.output,
            held_ms: 0.0,
            more: None,
        };
        (self.started, finished)
    }

    fn finished_wire(&self) -> FinishedWire<'_> {
        FinishedWire {
            node_id: self.started.label.node_id(),
            instance_id: &self.started.instance_id,
            duration_ms: self.duration_ms,
            status: self.status,
            output: self.output.as_ref(),
            usage: None,
            held_ms: 0.0,
            extra: None,
        }
    }
}

impl Started {
    fn wire(&self) -> StartedWire<'_> {
        StartedWire {
            node_id: self.label.node_id(),
            kind: self.label.kind(),
            name: self.label.name(),
            instance_id: &self.instance_id,
            parent_id: self.parent_id.as_deref(),
            input: self.input.as_ref(),
        }
    }
}

/// The wire form of [`Started`]: the same fields, order and omissions as [`NodeStarted`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartedWire<'a> {
    node_id: &'a str,
    kind: NodeKind,
    name: &'a str,
    instance_id: &'a InstanceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<&'a Payload>,
}

/// The wire form of [`Finished`]: the same fields, order and omissions as [`NodeFinished`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FinishedWire<'a> {
    node_id: &'a str,
    instance_id: &'a InstanceId,
    duration_ms: f64,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a Val>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageWire<'a>>,
    held_ms: f64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    extra: Option<&'a Extras>,
}

/// The wire form of a [`Usage`]: the bytes [`Usage::to_wire`] serializes to (the required
/// counts, `inclusive` when set, then each loose count that is set, in that order), written
/// without building its map.
pub(crate) struct UsageWire<'a>(pub(crate) &'a Usage);

impl Serialize for UsageWire<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let u = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("inputTokens", &u.input_tokens)?;
        map.serialize_entry("outputTokens", &u.output_tokens)?;
        if u.inclusive {
            map.serialize_entry("inclusive", &true)?;
        }
        let loose = [
            ("totalTokens", u.total_tokens),
            ("cacheReadTokens", u.cache_read_tokens),
            ("cacheWriteTokens", u.cache_write_tokens),
            ("reasoningTokens", u.reasoning_tokens),
        ];
        for (key, count) in loose {
            if let Some(n) = count {
                map.serialize_entry(key, &n)?;
            }
        }
        map.end()
    }
}

impl Record {
    /// The wire `type`.
    pub(crate) fn type_name(&self) -> &str {
        match self {
            Self::Message(m) => m.type_name(),
            Self::Started(_) => "node.started",
            Self::Finished(_) => "node.finished",
            Self::Call(_) => "node.started",
            Self::Shared(r) => r.type_name(),
        }
    }

    /// Frames (and seqs) the record stands for: 2 for a [`Call`], else 1.
    #[inline]
    pub(crate) fn frames(&self) -> u64 {
        if matches!(self.inner(), Self::Call(_)) {
            2
        } else {
            1
        }
    }

    /// The wire `type` of frame `part` (0 or 1) of the record.
    pub(crate) fn part_type_name(&self, part: u64) -> &str {
        match self.inner() {
            Self::Call(_) if part > 0 => "node.finished",
            r => r.type_name(),
        }
    }

    /// Serializes the payload object of frame `part` (0 or 1) of the record.
    pub(crate) fn part_payload_serialize<S: serde::Serializer>(
        &self,
        part: u64,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match self.inner() {
            Self::Call(c) if part > 0 => c.finished_wire().serialize(s),
            r => r.payload_serialize(s),
        }
    }

    /// Serializes the payload object.
    pub(crate) fn payload_serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Message(m) => m.payload_serialize(s),
            Self::Shared(r) => r.payload_serialize(s),
            Self::Started(p) => p.wire().serialize(s),
            Self::Call(c) => c.started.wire().serialize(s),
            Self::Finished(p) => FinishedWire {
                node_id: &p.node_id,
                instance_id: &p.instance_id,
                duration_ms: p.duration_ms,
                status: p.status,
                output: p.output.as_ref(),
                usage: p
                    .more
                    .as_ref()
                    .and_then(|m| m.usage.as_ref())
                    .map(UsageWire),
                held_ms: p.held_ms,
                extra: p.more.as_ref().map(|m| &m.extra),
            }
            .serialize(s),
        }
    }

    /// The equivalent protocol message (of a [`Call`], its `node.started`: a call is split
    /// with [`Call::split`] before it is turned into messages).
    pub(crate) fn into_message(self) -> Message {
        match self {
            Self::Message(m) => Arc::unwrap_or_clone(m),
            Self::Started(p) => Message::NodeStarted(p.into()),
            Self::Call(c) => Message::NodeStarted(c.split().0.into()),
            Self::Finished(p) => Message::NodeFinished(p.into()),
            Self::Shared(r) => Arc::unwrap_or_clone(r).into_message(),
        }
    }
}

impl From<Started> for NodeStarted {
    fn from(p: Started) -> Self {
        Self {
            node_id: p.label.node_id().to_owned(),
            kind: p.label.kind(),
            name: p.label.name().to_owned(),
            instance_id: p.instance_id.to_string(),
            parent_id: p.parent_id.map(|s| s.to_string()),
            input: p.input.map(Payload::into_value),
            extra: Extra::new(),
        }
    }
}

impl From<Finished> for NodeFinished {
    fn from(p: Finished) -> Self {
        let (usage, extra) = p.more.map_or((None, Extra::new()), |m| {
            (m.usage.map(Usage::to_wire), m.extra.into())
        });
        Self {
            node_id: p.node_id.into_owned(),
            instance_id: Some(p.instance_id.to_string()),
            duration_ms: p.duration_ms,
            status: p.status,
            output: p.output.map(Val::into_value),
            usage,
            held_ms: Some(p.held_ms),
            extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(r: &Record) -> String {
        let mut out = Vec::new();
        r.payload_serialize(&mut serde_json::Serializer::new(&mut out))
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn via_message(r: Record) -> String {
        let mut out = Vec::new();
        r.into_message()
            .payload_serialize(&mut serde_json::Serializer::new(&mut out))
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn compact_records_serialize_like_their_messages() {
        let make = |parent: Option<&str>, input: Option<Payload>, id: InstanceId| {
            Record::Started(Started {
                label: Label::named(
                    Cow::Borrowed("tool:add"),
                    NodeKind::Tool,
                    Cow::Borrowed("add"),
                ),
                instance_id: id,
                parent_id: parent.map(crate::inline_str::SmallStr::from),
                input,
            })
        };
        let cases = [
            make(None, None, InstanceId::Call(0)),
            make(
                Some("agent:a"),
                Some(Payload::Json(Box::new(
                    serde_json::json!({"a": 1, "b": "x\"y"}),
                ))),
                InstanceId::Call(1234),
            ),
            make(
                None,
                Some(Payload::Json(Box::new(Value::Null))),
                InstanceId::Text("call_x".into()),
            ),
            make(
                None,
                Some(Payload::Fields(Box::new([
                    ("b", Val::of(&serde_json::json!([1.5, null]))),
                    ("a", Val::of(&serde_json::json!({"z": "é\n", "y": -3}))),
                    ("c", Val::of("q\"")),
                    ("d", Val::of(&-2.5)),
                ]))),
                InstanceId::Call(7),
            ),
            make(
                None,
                Some(Payload::Fields(Box::new([]))),
                InstanceId::Call(8),
            ),
            make(
                None,
                Some(Payload::Raw(
                    serde_json::value::to_raw_value(&serde_json::json!({"m": [1, "é\n"]})).unwrap(),
                )),
                InstanceId::Call(9),
            ),
        ];
        for r in cases {
            let compact = json(&r);
            assert!(
                compact.starts_with(
                    r#"{"nodeId":"tool:add","kind":"tool","name":"add","instanceId":""#
                )
            );
            assert_eq!(compact, via_message(r));
        }
        for (output, status) in [
            (None, Status::Aborted),
            (Some(Val::of(&3)), Status::Ok),
            (Some(Val::of(&[1, 2])), Status::Ok),
            (Some(Val::of("s")), Status::Error),
        ] {
            let r = Record::Finished(Finished {
                node_id: Cow::Owned("llm:step".into()),
                instance_id: InstanceId::Call(9),
                duration_ms: 0.12,
                status,
                output,
                held_ms: 0.0,
                more: None,
            });
            let compact = json(&r);
            assert!(
                compact.contains(r#""durationMs":0.12,"#) && compact.ends_with(r#""heldMs":0.0}"#)
            );
            assert_eq!(compact, via_message(r));
        }
    }

    #[test]
    fn compact_finished_with_usage_extra_and_raw_output_serializes_like_its_message() {
        let mut extra = Extra::new();
        extra.insert("attempts".into(), 1.into());
        extra.insert("model".into(), "m\"1".into());
        let usages = [
            None,
            Some(Usage::new(3, 4)),
            Some(Usage::inclusive(3, 4).with_total(7).with_cache_read(2)),
        ];
        for usage in usages {
            let r = Record::Finished(Finished {
                node_id: Cow::Borrowed("llm:step"),
                instance_id: InstanceId::Text("inv_1:s1".into()),
                duration_ms: 2.5,
                status: Status::Ok,
                output: Some(Val::raw(
                    &serde_json::json!({"text": "hi", "toolCalls": []}),
                )),
                held_ms: 1.0,
                more: Some(Box::new(FinishedMore {
                    usage,
                    extra: extra.clone().into(),
                })),
            });
            let compact = json(&r);
            assert!(compact.ends_with(r#""heldMs":1.0,"attempts":1,"model":"m\"1"}"#));
            assert_eq!(compact, via_message(r));
        }
    }

    #[test]
    fn typed_extras_write_the_bytes_of_the_map_a_step_recorded() {
        // The map the openai adapter's lazy path recorded before its extras were typed.
        let mut map = Extra::new();
        map.insert("api".into(), "chat.completions".into());
        map.insert("attempts".into(), 2.into());
        map.insert("model".into(), "gpt-5-mini".into());
        map.insert("responseId".into(), "chatcmpl-1".into());
        map.insert("injected".into(), true.into());
        let typed = Extras::new()
            .api("chat.completions")
            .attempts(2)
            .model("gpt-5-mini")
            .response_id("chatcmpl-1")
            .injected();
        let record = |extra: Extras| {
            Record::Finished(Finished {
                node_id: Cow::Borrowed("llm:step"),
                instance_id: InstanceId::Text("inv_1:s2".into()),
                duration_ms: 4.0,
                status: Status::Ok,
                output: Some(Val::raw(&serde_json::json!({"text": "hi"}))),
                held_ms: 0.0,
                more: Some(Box::new(FinishedMore {
                    usage: Some(Usage::inclusive(5, 6).with_total(11)),
                    extra,
                })),
            })
        };
        let typed_json = json(&record(typed));
        assert_eq!(typed_json, json(&record(map.clone().into())));
        assert!(typed_json.ends_with(
            r#""heldMs":0.0,"api":"chat.completions","attempts":2,"model":"gpt-5-mini","responseId":"chatcmpl-1","injected":true}"#
        ));
        assert_eq!(typed_json, via_message(record(map.into())));
    }

    #[test]
    fn usage_is_written_as_the_bytes_of_its_wire_form() {
        let usages = [
            Usage::default(),
            Usage::new(12, 0),
            Usage::new(u64::MAX, 1).with_cache_write(5),
            Usage::inclusive(100, 20),
            Usage::inclusive(100, 20).with_total(120),
            Usage::inclusive(100, 20).with_cache_read(64),
            Usage::inclusive(100, 20).with_reasoning(7),
            Usage::new(1, 2)
                .with_total(3)
                .with_cache_read(4)
                .with_cache_write(5)
                .with_reasoning(6),
            Usage::inclusive(9, 8)
                .with_total(17)
                .with_cache_read(0)
                .with_cache_write(1)
                .with_reasoning(2),
        ];
        for u in usages {
            let wire = serde_json::to_string(&u.to_wire()).unwrap();
            assert_eq!(serde_json::to_string(&UsageWire(&u)).unwrap(), wire);
        }
        assert_eq!(
            serde_json::to_string(&UsageWire(&Usage::inclusive(3, 4).with_reasoning(1))).unwrap(),
            r#"{"inputTokens":3,"outputTokens":4,"inclusive":true,"reasoningTokens":1}"#
        );
    }

    #[test]
    fn call_ids_format_like_next_id() {
        let id = InstanceId::next_call();
        let text = id.to_string();
        assert_eq!(text.len(), id.len());
        let next = crate::ids::next_id("call");
        let (a, b) = (
            text.rsplit_once('_').unwrap(),
            next.rsplit_once('_').unwrap(),
        );
        assert_eq!(a.0, b.0, "same prefix and process base");
        assert!(b.1.parse::<u64>().unwrap() > a.1.parse::<u64>().unwrap());
        assert_eq!(
            InstanceId::Call(0).len(),
            InstanceId::Call(0).to_string().len()
        );
        assert_eq!(
            InstanceId::Call(10).len(),
            InstanceId::Call(10).to_string().len()
        );
    }
}
