//! What a replay reports: the fork point, the divergence policy, and what happened to each
//! live call.

use serde_json::Value;

/// Where the live part of a replay begins.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Until {
    /// Every recorded call is answered from the recording.
    #[default]
    End,
    /// Steps before this one (1-based, in the order the recorded calls started) are
    /// answered from the recording; this one and all after it run live.
    Step(usize),
    /// The first call of this node (`tool:lookup_order`, or its name `lookup_order`, or
    /// `llm:step`) and everything after it run live.
    Node(String),
}

impl Until {
    /// `step N`, `N`, or a node id / name.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let t = text.trim();
        let num = t.strip_prefix("step").map_or(t, str::trim);
        match num.parse::<usize>() {
            Ok(n) => Self::Step(n),
            Err(_) => Self::Node(t.to_owned()),
        }
    }

    /// The fork point for a run's meta: the step number or the node; `None` for [`Until::End`].
    pub(crate) fn to_meta(&self) -> Option<Value> {
        match self {
            Self::End => None,
            Self::Step(n) => Some((*n).into()),
            Self::Node(n) => Some(n.clone().into()),
        }
    }

    pub(crate) fn reached(&self, step: &graphmind_protocol::recording::Step) -> bool {
        match self {
            Self::End => false,
            Self::Step(n) => step.index >= *n,
            Self::Node(n) => step.node_id == *n || step.name == *n,
        }
    }
}

/// What a replay does when a live input differs from the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDiverge {
    /// Abort the run at that call (its node finishes `aborted` with a `ReplayDiverged`
    /// error naming the step, the node and the field).
    #[default]
    Stop,
    /// Run that call and everything after it live.
    Live,
}

/// The first difference between a live call's input and the recorded one.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// The recorded step (1-based).
    pub step: usize,
    /// Its node id (`llm:step`, `tool:lookup_order`).
    pub node_id: String,
    /// Its name.
    pub name: String,
    /// The JSON path of the first differing field of the input (`$.request.messages[0].content`).
    pub path: String,
    /// The recorded value there (`None`: absent).
    pub recorded: Option<Value>,
    /// The live value there (`None`: absent).
    pub live: Option<Value>,
}

/// One line naming the step, the node, the field and both values there; a value longer than
/// [`SHOWN_JSON_BYTES`](graphmind_protocol::recording::SHOWN_JSON_BYTES) bytes of JSON is cut
/// (a 20 MB input must not become a 20 MB line on stderr and in the run's `node.error`), and
/// then both values' whole lengths are given.
impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use graphmind_protocol::recording::{SHOWN_JSON_BYTES, ShownJson, shown_json};
        let show = |v: &Option<Value>| {
            v.as_ref().map_or_else(
                || ShownJson {
                    text: "(absent)".to_owned(),
                    len: 0,
                    cut: false,
                },
                |v| shown_json(v, SHOWN_JSON_BYTES),
            )
        };
        let (recorded, live) = (show(&self.recorded), show(&self.live));
        write!(
            f,
            "replay diverged at step {} ({} `{}`): input field {} was recorded as {} but is {} live",
            self.step, self.node_id, self.name, self.path, recorded.text, live.text
        )?;
        if recorded.cut || live.cut {
            write!(
                f,
                " (values cut to {SHOWN_JSON_BYTES} bytes of JSON; recorded {} bytes, live {} bytes)",
                recorded.len, live.len
            )?;
        }
        Ok(())
    }
}

/// Why a call ran live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveReason {
    /// The fork point.
    Fork,
    /// After the fork point (or after a divergence with [`OnDiverge::Live`]).
    AfterFork,
    /// The recording has no such call (more calls of the node than recorded).
    NotRecorded,
    /// The recorded call ended in an error, and the call's error type is not built from a
    /// [`RecordedError`](crate::RecordedError) (a `#[tool(replay_errors)]` opts in), or the
    /// recording has no `node.error` for it.
    RecordedError,
    /// The recorded call has no usable output (hidden, cut to the payload budget, a stream
    /// without recorded chunks, or a value that does not fit the call's type).
    NoOutput,
    /// The adapter cannot answer this call from a recording without calling its provider
    /// ([`Node::decline_replay`](crate::node::Node::decline_replay)).
    NotAnswerable,
}

impl LiveReason {
    /// Whether the call ran live because the recording could not answer it (not because a
    /// fork point asked for it).
    #[must_use]
    pub fn unanswered(self) -> bool {
        matches!(
            self,
            Self::NotRecorded | Self::NoOutput | Self::RecordedError | Self::NotAnswerable
        )
    }

    /// Why the call ran live, in words.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::NotRecorded => "the recording has no such call",
            Self::NoOutput => {
                "its recorded answer cannot be used (hidden, cut, a stream without recorded chunks, or a value that does not fit)"
            }
            Self::RecordedError => {
                "it recorded an error its error type is not built from (see #[graphmind::tool(replay_errors)])"
            }
            Self::NotAnswerable => {
                "its adapter cannot answer it without calling the provider (see the adapter's README)"
            }
            Self::Fork => "the fork point",
            Self::AfterFork => "after the fork point",
        }
    }
}

/// What happened to one live call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Answered from the recording: the body did not run.
    Served {
        /// The recorded step.
        step: usize,
        /// Its node id.
        node_id: String,
    },
    /// Its input differed from the recorded one.
    Diverged(Divergence),
    /// It ran live.
    Live {
        /// The recorded step it matched, if any.
        step: Option<usize>,
        /// Its node id.
        node_id: String,
        /// Why.
        reason: LiveReason,
    },
}
