//! Payload structs for the known message types, and the small enums they share.
//!
//! Every struct keeps unknown fields in `extra` (flattened), so nothing is stripped.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::Extra;

/// Deserializes a field that may legitimately be JSON `null` (e.g. a tool that returned
/// nothing): a present `null` becomes `Some(Value::Null)` so it survives a round trip.
fn is_false(b: &bool) -> bool {
    !*b
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $wire)] $variant),+
        }
        impl $name {
            /// The wire spelling.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $wire),+ }
            }
            /// Parses the wire spelling.
            #[must_use]
            #[allow(clippy::should_implement_trait)]
            pub fn from_str(s: &str) -> Option<Self> {
                match s { $($wire => Some(Self::$variant),)+ _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// What a node is.
    NodeKind {
        /// The run's agent node.
        Agent = "agent",
        /// A model step.
        Llm = "llm",
        /// A tool call.
        Tool = "tool",
        /// A chain.
        Chain = "chain",
        /// A retriever.
        Retriever = "retriever",
        /// A server.
        Server = "server",
        /// A resource.
        Resource = "resource",
        /// A prompt.
        Prompt = "prompt",
        /// Anything else.
        Custom = "custom",
    }
);

string_enum!(
    /// How a run or node ended.
    Status {
        /// Finished normally.
        Ok = "ok",
        /// Failed.
        Error = "error",
        /// Aborted from the debugger.
        Aborted = "aborted",
    }
);

string_enum!(
    /// Where a gate sits relative to the call.
    PausePoint {
        /// Before the call runs.
        Before = "before",
        /// After it returned successfully.
        After = "after",
        /// After it failed.
        Error = "error",
    }
);

string_enum!(
    /// What the debugger tells a held gate to do.
    ResumeAction {
        /// Go on.
        Continue = "continue",
        /// Run the call again.
        Retry = "retry",
        /// Substitute a result.
        Inject = "inject",
        /// End the run.
        Abort = "abort",
        /// Do not run the call; its caller gets an error carrying `reason` (a graphmind
        /// extension: sent only to a client whose `hello` lists the `reject` capability, at
        /// a gate whose `exec.paused.actions` lists `reject`).
        Reject = "reject",
    }
);

string_enum!(
    /// The debugger's mode.
    Mode {
        /// Pause only at breakpoints.
        Run = "run",
        /// Pause at every `before` and `error` gate.
        Step = "step",
    }
);

string_enum!(
    /// Why a gate paused.
    PauseReason {
        /// A breakpoint matched.
        Breakpoint = "breakpoint",
        /// An error breakpoint matched.
        Error = "error",
        /// Step mode.
        Step = "step",
        /// A loop was detected.
        Loop = "loop",
        /// A replay's fork point (`graphmind replay --until … --hold`): from this call on the
        /// run is live. graphmind's hub and viewer only: on the wire the app sends
        /// `breakpoint` with the loose extra `replayFork: true` (the reference peers' schema
        /// knows the four above), which a reference viewer shows as an ordinary hold ("Paused
        /// before call").
        Replay = "replay",
    }
);

string_enum!(
    /// Why an `exec.resume` was refused (the gate stays held).
    RefusedCode {
        /// The output does not fit the call's return type.
        Schema = "schema",
        /// The output has the wrong shape.
        Shape = "shape",
        /// The output contains a redaction placeholder.
        Placeholder = "placeholder",
        /// The output was truncated.
        Truncated = "truncated",
        /// The feature is disabled.
        Disabled = "disabled",
        /// The action is not supported at this gate.
        Unsupported = "unsupported",
    }
);

string_enum!(
    /// The kind of a streamed delta.
    DeltaKind {
        /// Answer text.
        Text = "text",
        /// Reasoning text.
        Reasoning = "reasoning",
        /// Tool-call arguments being streamed.
        ToolArgs = "tool-args",
    }
);

/// `{name, version}` of the SDK that produced the frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SdkInfo {
    /// SDK name, e.g. `rust`.
    pub name: String,
    /// SDK version.
    pub version: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An error as reported on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// Error type name.
    pub name: String,
    /// Human-readable message.
    pub message: String,
    /// Stack or cause chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token counts of a model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Unknown and optional fields (inclusive, cacheReadTokens, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One streamed delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenDelta {
    /// Kind of text.
    pub t: DeltaKind,
    /// The text.
    pub v: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A node of the static graph, drawn grey before it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphNodeHint {
    /// Logical node id, e.g. `tool:search`.
    pub node_id: String,
    /// Kind.
    pub kind: NodeKind,
    /// Display name.
    pub name: String,
    /// Parent node id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A breakpoint matcher: matches when every present field equals the gate's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BreakpointMatcher {
    /// Node kind to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<NodeKind>,
    /// Node NAME (not nodeId) to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Gate point; absent means `before`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<PausePoint>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl BreakpointMatcher {
    /// A matcher for one point, any node.
    #[must_use]
    pub fn at(point: PausePoint) -> Self {
        Self {
            point: Some(point),
            ..Self::default()
        }
    }

    /// Whether this matcher holds a gate at `point` of a node of `kind` named `name`.
    #[must_use]
    pub fn matches(&self, kind: NodeKind, name: &str, point: PausePoint) -> bool {
        self.point.unwrap_or(PausePoint::Before) == point
            && self.kind.is_none_or(|k| k == kind)
            && self.name.as_deref().is_none_or(|n| n == name)
    }

    /// Equality on the three protocol fields only (`breakpoint.clear` semantics).
    #[must_use]
    pub fn same_rule(&self, other: &Self) -> bool {
        self.kind == other.kind && self.name == other.name && self.point == other.point
    }

    /// Whether the two hold exactly the same gates: [`BreakpointMatcher::same_rule`] with an
    /// absent `point` read as `before` (so `{kind: tool}` and `{kind: tool, point: before}`
    /// are one breakpoint to whoever sets and clears them by hand).
    #[must_use]
    pub fn same_gates(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.name == other.name
            && self.point.unwrap_or(PausePoint::Before) == other.point.unwrap_or(PausePoint::Before)
    }
}

/// `run.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// App name.
    pub app: String,
    /// SDK.
    pub sdk: SdkInfo,
    /// Free-form metadata; the run name is `meta.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Extra>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `run.finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFinished {
    /// How the run ended.
    pub status: Status,
    /// The error, when it failed or was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `graph.hint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphHint {
    /// The static nodes.
    pub nodes: Vec<GraphNodeHint>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `node.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStarted {
    /// Logical node id.
    pub node_id: String,
    /// Kind.
    pub kind: NodeKind,
    /// Name.
    pub name: String,
    /// This execution's id.
    pub instance_id: String,
    /// Parent node id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Input (arguments).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<Value>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `node.token`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeToken {
    /// Logical node id.
    pub node_id: String,
    /// Batched deltas.
    pub deltas: Vec<TokenDelta>,
    /// Unknown fields (graphmind sends `instanceId` here).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `node.finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFinished {
    /// Logical node id.
    pub node_id: String,
    /// This execution's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Wall time including holds.
    pub duration_ms: f64,
    /// Outcome.
    pub status: Status,
    /// Output.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Time spent held at gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_ms: Option<f64>,
    /// Unknown fields and loose extras (`injected`, `attempts`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `node.error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeError {
    /// Logical node id.
    pub node_id: String,
    /// This execution's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The error.
    pub error: ErrorInfo,
    /// Time spent held at gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_ms: Option<f64>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `exec.paused`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecPaused {
    /// Opaque pause id.
    pub pause_id: String,
    /// Held node.
    pub node_id: String,
    /// Where.
    pub point: PausePoint,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
    /// Whether the held call's input may be replaced by `exec.resume.input` (GraphMind 0.6;
    /// on the wire only when true).
    #[serde(default, skip_serializing_if = "is_false")]
    pub editable: bool,
    /// Unknown fields (`actions`, `instanceId`, the held `output` / `error`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `exec.resumed.edited`: the input the call actually ran with after an accepted edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edited {
    /// The whole input that ran (the edit merged over the call's arguments).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub after: Option<Value>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `exec.resumed`: sent for every release, automatic ones too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecResumed {
    /// Which pause.
    pub pause_id: String,
    /// What was done.
    pub action: ResumeAction,
    /// Present when the call runs with an edited input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Edited>,
    /// The person's reason, for `reject` (graphmind extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `exec.resume.requestId`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Unknown fields (`auto`, hub-stamped `principal` / `operator`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `exec.refused`: the gate stays held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRefused {
    /// Which pause.
    pub pause_id: String,
    /// Why.
    pub code: RefusedCode,
    /// Readable explanation (at most 200 characters; never quotes the refused values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `exec.resume.requestId`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `exec.resume` (hub → client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecResume {
    /// Which pause.
    pub pause_id: String,
    /// What to do.
    pub action: ResumeAction,
    /// Substitute result for `inject`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    /// Edited input (edit-input capability).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<Value>,
    /// Correlation id, echoed in `exec.resumed` / `exec.refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The person's reason, for `reject` (graphmind extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `breakpoint.set` / `breakpoint.clear`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakpointChange {
    /// The matcher to add or remove.
    pub matcher: BreakpointMatcher,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `mode.set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeSet {
    /// New mode.
    pub mode: Mode,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `versions` of a `hello`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientVersions {
    /// Protocol major.
    pub protocol: u64,
    /// Client version.
    pub client: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `hello` (client → hub, first frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// Versions.
    pub versions: ClientVersions,
    /// What the client can do (`pause`, `step`, `inject`, …).
    pub capabilities: Vec<String>,
    /// App name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// SDK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk: Option<SdkInfo>,
    /// Session token from a previous `hello.ack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_token: Option<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `versions` of a `hello.ack`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubVersions {
    /// Protocol major.
    pub protocol: u64,
    /// Viewer/hub version.
    pub viewer: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `hello.ack` (hub → client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloAck {
    /// Versions.
    pub versions: HubVersions,
    /// Echo of the client's capabilities.
    pub capabilities: Vec<String>,
    /// Breakpoints to adopt (replace).
    pub breakpoints: Vec<BreakpointMatcher>,
    /// Mode to adopt.
    pub mode: Mode,
    /// Token to send back as `resumeToken` on reconnect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token: Option<String>,
    /// What the hub can do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_capabilities: Option<Vec<String>>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Extra,
}
