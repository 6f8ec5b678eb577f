//! Redaction: the `hide_*` switches of [`Config`](crate::Config) (and `GRAPHMIND_HIDE_INPUTS`,
//! `GRAPHMIND_HIDE_OUTPUTS`, `GRAPHMIND_HIDE_TOOL_ARGS`, `GRAPHMIND_HIDE_TOOL_RESULTS`) replace
//! what an app would rather not show — inputs, outputs, streamed deltas — with the family's
//! placeholder `"__REDACTED__"` before an event reaches the replay ring, so a redacted value
//! is never stored, sent or replayed. Each affected payload says so:
//! `"redaction": {"count": n, "keys": ["input" | "output" | "deltas"]}`.
//!
//! | switch | hides |
//! |---|---|
//! | inputs | every node's `input` (and an edited input: `node.finished.edited`, `exec.resumed.edited.after`); `tool-args` deltas; a loop hold's input `fingerprint` |
//! | outputs | every node's `output` (also the output an `after` gate holds); every delta |
//! | tool args | the `input` of tool nodes (and their `node.finished.edited`; every `exec.resumed.edited.after`, which names no node); `tool-args` deltas; a tool's loop `fingerprint` |
//! | tool results | the `output` of tool nodes (also at their `after` gate); their deltas |
//!
//! A hidden delta keeps its kind and becomes `{"t": …, "v": "", "chars": <UTF-16 length>}`.
//! A stream's `recordedChunks` (kept for replay) are dropped wherever any of its deltas
//! would be hidden. `node.error` is never redacted; absent fields and values that already are the
//! placeholder are left alone.

use std::sync::Arc;

use graphmind_protocol::{DeltaKind, Extra, Message, NodeKind};
use serde_json::Value;

use crate::config::Hide;
use crate::event::Record;

/// The redaction placeholder.
pub(crate) const PLACEHOLDER: &str = "__REDACTED__";

impl Hide {
    fn input_of(self, kind: NodeKind) -> bool {
        self.inputs || (self.tool_args && kind == NodeKind::Tool)
    }

    fn output_of(self, node_id: &str) -> bool {
        self.outputs || (self.tool_results && is_tool(node_id))
    }

    fn delta_of(self, node_id: &str, t: DeltaKind) -> bool {
        self.outputs
            || (self.tool_results && is_tool(node_id))
            || ((self.inputs || self.tool_args) && t == DeltaKind::ToolArgs)
    }

    /// `record` as it may be stored: unchanged when nothing in it is hidden, else the
    /// redacted message.
    pub(crate) fn record(self, record: Record) -> Record {
        let affected = match &record {
            Record::Started(p) => p.input.is_some() && self.input_of(p.label.kind()),
            // Loose fields may hold what is hidden (an edited input, recorded chunks).
            Record::Finished(p) => {
                (p.output.is_some() && self.output_of(p.node_id.as_ref())) || p.more.is_some()
            }
            // Split into its two records before redaction (`Inner::record_call`); were one
            // to arrive, it is redacted as its `node.started` (nothing hidden is kept).
            // Shared only after redaction (`Inner::push`).
            Record::Message(_) | Record::Call(_) | Record::Shared(_) => true,
        };
        if !affected {
            return record;
        }
        let mut message = match record {
            Record::Message(m) => Arc::unwrap_or_clone(m),
            other => other.into_message(),
        };
        self.message(&mut message);
        Record::Message(Arc::new(message))
    }

    /// Redacts `message` in place.
    pub(crate) fn message(self, message: &mut Message) {
        match message {
            Message::NodeStarted(p) if self.input_of(p.kind) => {
                let count = usize::from(hide(&mut p.input));
                note(&mut p.extra, count, "input");
            }
            Message::NodeFinished(p) => {
                if self.output_of(&p.node_id) {
                    let count = usize::from(hide(&mut p.output));
                    note(&mut p.extra, count, "output");
                }
                // A stream's recorded chunks (for replay) hold its deltas: they go wherever
                // any of its deltas would.
                let deltas = self.delta_of(&p.node_id, DeltaKind::Text)
                    || self.delta_of(&p.node_id, DeltaKind::ToolArgs);
                if deltas
                    && p.extra
                        .shift_remove(graphmind_protocol::recording::CHUNKS_KEY)
                        .is_some()
                {
                    note(&mut p.extra, 1, graphmind_protocol::recording::CHUNKS_KEY);
                }
                // An edited input is the node's input: it goes where the input goes.
                if (self.inputs || (self.tool_args && is_tool(&p.node_id)))
                    && let Some(Value::Object(edited)) = p.extra.get_mut("edited")
                {
                    let mut count = 0;
                    for key in ["before", "after"] {
                        if let Some(v) = edited.get_mut(key) {
                            let mut held = Some(std::mem::take(v));
                            count += usize::from(hide(&mut held));
                            *v = held.unwrap_or_default();
                        }
                    }
                    note(&mut p.extra, count, "edited");
                }
            }
            // `exec.resumed` does not name its node: an edited input is hidden by either
            // input switch.
            Message::ExecResumed(p) if self.inputs || self.tool_args => {
                if let Some(edited) = &mut p.edited {
                    let count = usize::from(hide(&mut edited.after));
                    note(&mut p.extra, count, "edited");
                }
            }
            Message::NodeToken(p) => {
                let mut count = 0;
                for d in &mut p.deltas {
                    if self.delta_of(&p.node_id, d.t) && !d.v.is_empty() {
                        let chars = d.v.encode_utf16().count();
                        d.v.clear();
                        d.extra.insert("chars".into(), chars.into());
                        count += 1;
                    }
                }
                note(&mut p.extra, count, "deltas");
            }
            Message::ExecPaused(p) => {
                if self.output_of(&p.node_id) {
                    let mut held = p.extra.remove("output");
                    let count = usize::from(hide(&mut held));
                    note(&mut p.extra, count, "output");
                    if let Some(v) = held {
                        p.extra.insert("output".into(), v);
                    }
                }
                // A loop hold's fingerprint is a hash of the call's input: with few possible
                // inputs it gives them away, so it goes where the input goes.
                let hidden = self.inputs || (self.tool_args && is_tool(&p.node_id));
                if hidden
                    && let Some(Value::Object(summary)) = p.extra.get_mut("loop")
                    && let Some(fp) = summary.get_mut("fingerprint")
                {
                    *fp = Value::String(PLACEHOLDER.to_owned());
                }
            }
            _ => {}
        }
    }
}

fn is_tool(node_id: &str) -> bool {
    node_id.starts_with("tool:")
}

/// Replaces a present value that is not the placeholder yet; whether it did.
fn hide(field: &mut Option<Value>) -> bool {
    match field {
        Some(Value::String(s)) if s == PLACEHOLDER => false,
        Some(v) => {
            *v = Value::String(PLACEHOLDER.to_owned());
            true
        }
        None => false,
    }
}

/// Adds `count` redactions of `key` to the payload's `redaction` summary (merged with one
/// already there); nothing when `count` is 0.
fn note(extra: &mut Extra, count: usize, key: &str) {
    if count == 0 {
        return;
    }
    let summary = extra
        .entry("redaction")
        .or_insert_with(|| serde_json::json!({"count": 0, "keys": []}));
    if !summary.is_object() {
        *summary = serde_json::json!({"count": 0, "keys": []});
    }
    let before = summary["count"].as_u64().unwrap_or(0);
    summary["count"] = (before + count as u64).into();
    if !summary["keys"].is_array() {
        summary["keys"] = Value::Array(Vec::new());
    }
    if let Some(keys) = summary["keys"].as_array_mut()
        && !keys.iter().any(|k| k == key)
    {
        keys.push(key.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphmind_protocol::{
        ErrorInfo, NodeError, NodeFinished, NodeStarted, NodeToken, PausePoint, Status, TokenDelta,
    };
    use serde_json::json;

    fn started(kind: NodeKind, input: Option<Value>) -> Message {
        Message::NodeStarted(NodeStarted {
            node_id: format!("{}:n", kind.as_str()),
            kind,
            name: "n".into(),
            instance_id: "i".into(),
            parent_id: None,
            input,
            extra: Extra::new(),
        })
    }

    fn finished(node_id: &str, output: Option<Value>) -> Message {
        Message::NodeFinished(NodeFinished {
            node_id: node_id.into(),
            instance_id: Some("i".into()),
            duration_ms: 1.0,
            status: Status::Ok,
            output,
            usage: None,
            held_ms: None,
            extra: Extra::new(),
        })
    }

    fn payload(m: &Message) -> Value {
        let mut out = Vec::new();
        m.payload_serialize(&mut serde_json::Serializer::new(&mut out))
            .unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    fn redacted(hide: Hide, mut m: Message) -> Value {
        hide.message(&mut m);
        payload(&m)
    }

    const INPUTS: Hide = Hide {
        inputs: true,
        outputs: false,
        tool_args: false,
        tool_results: false,
    };
    const OUTPUTS: Hide = Hide {
        inputs: false,
        outputs: true,
        tool_args: false,
        tool_results: false,
    };
    const TOOL_ARGS: Hide = Hide {
        inputs: false,
        outputs: false,
        tool_args: true,
        tool_results: false,
    };
    const TOOL_RESULTS: Hide = Hide {
        inputs: false,
        outputs: false,
        tool_args: false,
        tool_results: true,
    };

    #[test]
    fn inputs_are_hidden_by_kind_and_say_so() {
        let p = redacted(INPUTS, started(NodeKind::Llm, Some(json!({"q": "secret"}))));
        assert_eq!(p["input"], PLACEHOLDER);
        assert_eq!(p["redaction"], json!({"count": 1, "keys": ["input"]}));
        let p = redacted(TOOL_ARGS, started(NodeKind::Tool, Some(json!({"q": 1}))));
        assert_eq!(p["input"], PLACEHOLDER);
        let p = redacted(TOOL_ARGS, started(NodeKind::Llm, Some(json!({"q": 1}))));
        assert_eq!(
            p["input"],
            json!({"q": 1}),
            "tool args hide tool inputs only"
        );
        assert!(p.get("redaction").is_none());
        let p = redacted(INPUTS, started(NodeKind::Tool, None));
        assert!(p.get("input").is_none() && p.get("redaction").is_none());
        let p = redacted(
            INPUTS,
            started(NodeKind::Tool, Some(Value::String(PLACEHOLDER.into()))),
        );
        assert!(p.get("redaction").is_none(), "already the placeholder");
        let p = redacted(OUTPUTS, started(NodeKind::Tool, Some(json!(1))));
        assert_eq!(p["input"], 1);
    }

    #[test]
    fn recorded_chunks_are_dropped_wherever_a_delta_would_be_hidden() {
        let with_chunks = |node: &str| {
            let Message::NodeFinished(mut p) = finished(node, None) else {
                unreachable!()
            };
            p.extra.insert(
                graphmind_protocol::recording::CHUNKS_KEY.into(),
                json!([{"Text": "secret"}]),
            );
            Message::NodeFinished(p)
        };
        for hide in [OUTPUTS, INPUTS, TOOL_ARGS] {
            let p = redacted(hide, with_chunks("llm:step"));
            assert!(p.get("recordedChunks").is_none(), "{hide:?}: {p}");
            assert_eq!(
                p["redaction"]["keys"],
                json!(["recordedChunks"]),
                "{hide:?}"
            );
        }
        let p = redacted(TOOL_RESULTS, with_chunks("llm:step"));
        assert_eq!(
            p["recordedChunks"],
            json!([{"Text": "secret"}]),
            "a model step's chunks are no tool result"
        );
        let p = redacted(TOOL_RESULTS, with_chunks("tool:t"));
        assert!(p.get("recordedChunks").is_none());
    }

    #[test]
    fn outputs_are_hidden_by_node_and_held_outputs_too() {
        let p = redacted(OUTPUTS, finished("llm:m", Some(json!("answer"))));
        assert_eq!(p["output"], PLACEHOLDER);
        assert_eq!(p["redaction"], json!({"count": 1, "keys": ["output"]}));
        let p = redacted(TOOL_RESULTS, finished("tool:t", Some(json!([1]))));
        assert_eq!(p["output"], PLACEHOLDER);
        let p = redacted(TOOL_RESULTS, finished("llm:m", Some(json!([1]))));
        assert_eq!(p["output"], json!([1]));
        let mut extra = Extra::new();
        extra.insert("output".into(), json!({"card": "4111"}));
        let paused = Message::ExecPaused(graphmind_protocol::ExecPaused {
            pause_id: "p".into(),
            node_id: "tool:t".into(),
            point: PausePoint::After,
            reason: None,
            editable: false,
            extra,
        });
        let p = redacted(TOOL_RESULTS, paused);
        assert_eq!(p["output"], PLACEHOLDER);
        assert_eq!(p["redaction"], json!({"count": 1, "keys": ["output"]}));
    }

    #[test]
    fn a_loop_fingerprint_is_hidden_with_the_input_it_hashes() {
        let loop_hold = |node: &str| {
            let mut extra = Extra::new();
            extra.insert(
                "loop".into(),
                json!({"repeats": 3, "firstSeq": 1, "lastSeq": 5, "fingerprint": "00ab", "kind": "repeat"}),
            );
            Message::ExecPaused(graphmind_protocol::ExecPaused {
                pause_id: "p".into(),
                node_id: node.into(),
                point: PausePoint::Before,
                reason: Some(graphmind_protocol::PauseReason::Loop),
                editable: false,
                extra,
            })
        };
        for (hide, node, hidden) in [
            (TOOL_ARGS, "tool:t", true),
            (INPUTS, "tool:t", true),
            (TOOL_RESULTS, "tool:t", false),
            (OUTPUTS, "tool:t", false),
            (TOOL_ARGS, "llm:m", false),
        ] {
            let p = redacted(hide, loop_hold(node));
            let expected = if hidden {
                json!(PLACEHOLDER)
            } else {
                json!("00ab")
            };
            assert_eq!(p["loop"]["fingerprint"], expected, "{hide:?} {node}");
            assert_eq!(p["loop"]["repeats"], 3, "the rest of the summary stays");
        }
    }

    #[test]
    fn hidden_deltas_keep_their_kind_and_length() {
        let tokens = |node: &str| {
            Message::NodeToken(NodeToken {
                node_id: node.into(),
                deltas: vec![
                    TokenDelta {
                        t: DeltaKind::Text,
                        v: "héllo 😀".into(),
                        extra: Extra::new(),
                    },
                    TokenDelta {
                        t: DeltaKind::ToolArgs,
                        v: "{\"a\":1}".into(),
                        extra: Extra::new(),
                    },
                ],
                extra: Extra::new(),
            })
        };
        let p = redacted(OUTPUTS, tokens("llm:m"));
        assert_eq!(
            p["deltas"],
            json!([{"t": "text", "v": "", "chars": 8}, {"t": "tool-args", "v": "", "chars": 7}])
        );
        assert_eq!(p["redaction"], json!({"count": 2, "keys": ["deltas"]}));
        let p = redacted(INPUTS, tokens("llm:m"));
        assert_eq!(p["deltas"][0]["v"], "héllo 😀");
        assert_eq!(p["deltas"][1]["v"], "");
        let p = redacted(TOOL_RESULTS, tokens("tool:t"));
        assert_eq!(p["redaction"]["count"], 2);
        let p = redacted(TOOL_RESULTS, tokens("llm:m"));
        assert!(p.get("redaction").is_none());
    }

    #[test]
    fn errors_are_never_hidden_and_summaries_merge() {
        let all = Hide {
            inputs: true,
            outputs: true,
            tool_args: true,
            tool_results: true,
        };
        let error = Message::NodeError(NodeError {
            node_id: "tool:t".into(),
            instance_id: None,
            error: ErrorInfo {
                name: "E".into(),
                message: "card 4111".into(),
                stack: None,
                extra: Extra::new(),
            },
            held_ms: None,
            extra: Extra::new(),
        });
        assert_eq!(redacted(all, error.clone()), payload(&error));
        let mut m = finished("tool:t", Some(json!(1)));
        if let Message::NodeFinished(p) = &mut m {
            p.extra
                .insert("redaction".into(), json!({"count": 2, "keys": ["input"]}));
        }
        let p = redacted(all, m);
        assert_eq!(
            p["redaction"],
            json!({"count": 3, "keys": ["input", "output"]})
        );
    }

    #[test]
    fn the_environment_is_a_floor() {
        let env = |k: &str| (k == "GRAPHMIND_HIDE_OUTPUTS").then(|| " TRUE ".to_owned());
        let h = Hide::resolve(INPUTS, &env);
        assert!(h.inputs && h.outputs && !h.tool_args && !h.tool_results);
        let none = |_: &str| Some("0".to_owned());
        assert!(!Hide::resolve(Hide::default(), &none).any());
    }
}
