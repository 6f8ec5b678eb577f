//! The envelope and the message enum, with compact serialization in wire field order.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::payloads::{
    BreakpointChange, ExecPaused, ExecRefused, ExecResume, ExecResumed, GraphHint, Hello, HelloAck,
    ModeSet, NodeError, NodeFinished, NodeStarted, NodeToken, RunFinished, RunStarted,
};
use crate::{Extra, PROTOCOL_VERSION};

/// The `runId` of run-independent frames (hello, hello.ack, breakpoint.*, mode.set).
pub const RUN_ANY: &str = "*";

/// One frame: `{"gm":1,"seq":N,"ts":MS,"runId":"…","type":"…","payload":{…}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Protocol major; always 1 for a parsed-ok envelope.
    pub gm: u64,
    /// Sender's sequence number.
    pub seq: u64,
    /// Epoch milliseconds.
    pub ts: u64,
    /// The run, or [`RUN_ANY`].
    pub run_id: String,
    /// Type and payload.
    pub message: Message,
    /// Unknown envelope-level fields, kept after `payload`.
    pub extra: Extra,
}

/// The typed message of an envelope: its `type` and `payload`.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Message {
    RunStarted(RunStarted),
    RunFinished(RunFinished),
    GraphHint(GraphHint),
    NodeStarted(NodeStarted),
    NodeToken(NodeToken),
    NodeFinished(NodeFinished),
    NodeError(NodeError),
    ExecPaused(ExecPaused),
    ExecResumed(ExecResumed),
    ExecRefused(ExecRefused),
    ExecResume(ExecResume),
    BreakpointSet(BreakpointChange),
    BreakpointClear(BreakpointChange),
    ModeSet(ModeSet),
    Hello(Hello),
    HelloAck(HelloAck),
    /// A type this version does not know: kept opaque.
    Unknown {
        /// The `type` string.
        kind: String,
        /// The payload as received; `Null` when the frame had no `payload` key (allowed
        /// for an unknown type only), and then none is written back.
        payload: Value,
    },
}

impl Message {
    /// Every `type` string this version knows.
    pub const KNOWN_TYPES: [&'static str; 16] = [
        "run.started",
        "run.finished",
        "graph.hint",
        "node.started",
        "node.token",
        "node.finished",
        "node.error",
        "exec.paused",
        "exec.resumed",
        "exec.refused",
        "exec.resume",
        "breakpoint.set",
        "breakpoint.clear",
        "mode.set",
        "hello",
        "hello.ack",
    ];

    /// The wire `type`.
    #[must_use]
    pub fn type_name(&self) -> &str {
        match self {
            Self::RunStarted(_) => "run.started",
            Self::RunFinished(_) => "run.finished",
            Self::GraphHint(_) => "graph.hint",
            Self::NodeStarted(_) => "node.started",
            Self::NodeToken(_) => "node.token",
            Self::NodeFinished(_) => "node.finished",
            Self::NodeError(_) => "node.error",
            Self::ExecPaused(_) => "exec.paused",
            Self::ExecResumed(_) => "exec.resumed",
            Self::ExecRefused(_) => "exec.refused",
            Self::ExecResume(_) => "exec.resume",
            Self::BreakpointSet(_) => "breakpoint.set",
            Self::BreakpointClear(_) => "breakpoint.clear",
            Self::ModeSet(_) => "mode.set",
            Self::Hello(_) => "hello",
            Self::HelloAck(_) => "hello.ack",
            Self::Unknown { kind, .. } => kind,
        }
    }

    /// Serializes the payload alone.
    ///
    /// # Errors
    /// Only if a payload holds a non-finite float, which JSON cannot carry.
    pub fn payload_serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::RunStarted(p) => p.serialize(s),
            Self::RunFinished(p) => p.serialize(s),
            Self::GraphHint(p) => p.serialize(s),
            Self::NodeStarted(p) => p.serialize(s),
            Self::NodeToken(p) => p.serialize(s),
            Self::NodeFinished(p) => p.serialize(s),
            Self::NodeError(p) => p.serialize(s),
            Self::ExecPaused(p) => p.serialize(s),
            Self::ExecResumed(p) => p.serialize(s),
            Self::ExecRefused(p) => p.serialize(s),
            Self::ExecResume(p) => p.serialize(s),
            Self::BreakpointSet(p) | Self::BreakpointClear(p) => p.serialize(s),
            Self::ModeSet(p) => p.serialize(s),
            Self::Hello(p) => p.serialize(s),
            Self::HelloAck(p) => p.serialize(s),
            Self::Unknown { payload, .. } => payload.serialize(s),
        }
    }

    /// The payload as a JSON value.
    #[must_use]
    pub fn payload_value(&self) -> Value {
        self.payload_serialize(serde_json::value::Serializer)
            .unwrap_or(Value::Null)
    }
}

struct PayloadRef<'a>(&'a Message);

impl Serialize for PayloadRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.payload_serialize(s)
    }
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(6 + self.extra.len()))?;
        m.serialize_entry("gm", &self.gm)?;
        m.serialize_entry("seq", &self.seq)?;
        m.serialize_entry("ts", &self.ts)?;
        m.serialize_entry("runId", &self.run_id)?;
        m.serialize_entry("type", self.message.type_name())?;
        let absent = matches!(&self.message, Message::Unknown { payload, .. } if payload.is_null());
        if !absent {
            m.serialize_entry("payload", &PayloadRef(&self.message))?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Envelope {
    /// A v1 envelope with no extra fields.
    #[must_use]
    pub fn new(seq: u64, ts: u64, run_id: impl Into<String>, message: Message) -> Self {
        Self {
            gm: PROTOCOL_VERSION,
            seq,
            ts,
            run_id: run_id.into(),
            message,
            extra: Extra::new(),
        }
    }

    /// Compact JSON in wire field order. Non-finite floats (which JSON cannot carry) are
    /// written as `null` rather than failing.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Appends compact JSON in wire field order to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let mut ser = serde_json::Serializer::new(&mut *out);
        if self.serialize(&mut ser).is_err() {
            // serde_json only fails on non-finite floats; fall back through Value, which
            // maps them to null.
            out.truncate(start);
            let v = serde_json::to_value(self).unwrap_or(Value::Null);
            let _ = serde_json::to_writer(&mut *out, &v);
        }
    }

    /// The whole envelope as a JSON value.
    #[must_use]
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
