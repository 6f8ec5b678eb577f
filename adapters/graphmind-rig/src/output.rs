//! rig's types in graphmind's words: a turn's content as GraphMind 0.6's step output, rig's
//! usage and finish reason, and what the debugger injects turned back into rig's types.

use graphmind::model::{Reply, ToolCall, Usage};
use rig_core::completion::{AssistantContent, FinishReason};
use rig_core::tool::ToolOutput;
use serde::Deserialize;
use serde_json::Value;

/// rig's finish reason in the provider-neutral spelling graphmind normalizes.
pub(crate) fn raw_finish(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Other(raw) => raw.clone(),
        #[allow(unreachable_patterns)]
        _ => "other".into(),
    }
}

/// `{text, finishReason, rawFinishReason, toolCalls}` of one accepted turn.
pub(crate) fn reply(content: &[AssistantContent], finish: Option<&FinishReason>) -> Value {
    let mut text = String::new();
    for part in content {
        if let AssistantContent::Text(t) = part {
            text.push_str(&t.text);
        }
    }
    let mut out = Reply::new(text);
    if let Some(reason) = finish {
        out = out.finish_reason(&raw_finish(reason));
    }
    for part in content {
        if let AssistantContent::ToolCall(call) = part {
            let args = serde_json::to_string(&call.function.arguments).unwrap_or_default();
            out = out.tool_call(
                ToolCall::new(call.function.name.to_string(), args).with_id(call.id.to_string()),
            );
        }
    }
    out.into_value()
}

/// Whether a turn asks for tools.
pub(crate) fn has_tool_calls(content: &[AssistantContent]) -> bool {
    content
        .iter()
        .any(|c| matches!(c, AssistantContent::ToolCall(_)))
}

/// rig's usage as graphmind's: rig counts cached prompt tokens inside `input_tokens`.
pub(crate) fn usage(u: &rig_core::completion::Usage) -> Option<Usage> {
    let (input, output) = (u.input_tokens?, u.output_tokens.unwrap_or(0));
    let mut out = Usage::inclusive(input, output);
    if let Some(t) = u.total_tokens {
        out = out.with_total(t);
    }
    if let Some(t) = u.cached_input_tokens {
        out = out.with_cache_read(t);
    }
    if let Some(t) = u.cache_creation_input_tokens {
        out = out.with_cache_write(t);
    }
    if let Some(t) = u.reasoning_tokens {
        out = out.with_reasoning(t);
    }
    Some(out)
}

/// What the debugger may inject for a model turn: its text, as a string or as the step
/// output's shape `{text}`. rig 0.44 refuses to replace a turn with one that calls tools (and
/// a turn that called tools), so an inject naming tool calls is refused at the gate.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawInject")]
pub(crate) struct TurnInject(pub(crate) String);

#[derive(Deserialize)]
#[serde(untagged)]
enum RawInject {
    Text(String),
    Reply {
        #[serde(default)]
        text: String,
        #[serde(default, rename = "toolCalls")]
        tool_calls: Vec<Value>,
    },
}

impl TryFrom<RawInject> for TurnInject {
    type Error = &'static str;

    fn try_from(raw: RawInject) -> Result<Self, Self::Error> {
        match raw {
            RawInject::Text(text) => Ok(Self(text)),
            RawInject::Reply { text, tool_calls } if tool_calls.is_empty() => Ok(Self(text)),
            RawInject::Reply { .. } => Err(
                "rig cannot replace a model turn with tool calls; inject at the tools' gates instead",
            ),
        }
    }
}

impl TurnInject {
    /// The turn's content in rig's types.
    pub(crate) fn into_content(self) -> Vec<AssistantContent> {
        vec![AssistantContent::text(self.0)]
    }
}

/// A whole model turn, for a `before` gate whose answer graphmind's model layer gives
/// ([`gated_model`](crate::gated_model)): its text, as a string or as the step output's shape
/// `{text, toolCalls: [{id, name, arguments}]}` (`input` is read as well as `arguments`, as
/// JSON or as its text), tool calls included: rig then runs the tools it names.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawTurn")]
pub(crate) struct ModelTurn(pub(crate) Vec<AssistantContent>);

#[derive(Deserialize)]
#[serde(untagged)]
enum RawTurn {
    Text(String),
    Reply {
        #[serde(default)]
        text: String,
        #[serde(default, rename = "toolCalls")]
        tool_calls: Vec<RawCall>,
    },
}

#[derive(Deserialize)]
struct RawCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    input: Option<Value>,
}

impl TryFrom<RawTurn> for ModelTurn {
    type Error = String;

    fn try_from(raw: RawTurn) -> Result<Self, Self::Error> {
        let (text, calls) = match raw {
            RawTurn::Text(text) => (text, Vec::new()),
            RawTurn::Reply { text, tool_calls } => (text, tool_calls),
        };
        let mut content = Vec::new();
        if !text.is_empty() || calls.is_empty() {
            content.push(AssistantContent::text(text));
        }
        for (i, call) in calls.into_iter().enumerate() {
            let name = rig_core::completion::message::ToolName::new(call.name)
                .map_err(|e| format!("toolCalls[{i}].name: {e}"))?;
            let args = match call.input.or(call.arguments) {
                Some(Value::String(text)) => args_value(&text),
                Some(v) => v,
                None => Value::Object(serde_json::Map::new()),
            };
            let id = call.id.unwrap_or_else(|| format!("graphmind_call_{i}"));
            content.push(AssistantContent::tool_call(id, name, args));
        }
        Ok(Self(content))
    }
}

/// The inject of a turn that called tools: always refused (rig keeps such a turn as it is).
#[derive(Debug)]
pub(crate) struct NoInject;

impl<'de> Deserialize<'de> for NoInject {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "rig cannot replace a model turn that called tools; inject at the tools' gates instead",
        ))
    }
}

/// An injected tool result: a string stays text, anything else is JSON.
pub(crate) fn tool_output(v: Value) -> ToolOutput {
    match v {
        Value::String(s) => ToolOutput::text(s),
        v => ToolOutput::json(v),
    }
}

/// A tool output as recorded on `node.finished` (JSON when the tool answered JSON).
pub(crate) fn output_value(out: &ToolOutput) -> Value {
    if let Some(v) = out.as_json() {
        return v.clone();
    }
    if let Some(t) = out.as_text() {
        return serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_owned()));
    }
    serde_json::to_value(out).unwrap_or(Value::Null)
}

/// A tool's raw JSON arguments as recorded (parsed when they are JSON).
pub(crate) fn args_value(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inject_with_tool_calls_is_refused_and_text_is_taken() {
        let calls = serde_json::json!({"text": "", "toolCalls": [{"name": "add"}]});
        assert!(serde_json::from_value::<TurnInject>(calls).is_err());
        let text: TurnInject = serde_json::from_value(serde_json::json!("hi")).expect("text");
        let reply_shape: TurnInject =
            serde_json::from_value(serde_json::json!({"text": "yo", "toolCalls": []}))
                .expect("shape");
        assert_eq!(reply_shape.0, "yo");
        let content = text.into_content();
        assert_eq!(reply(&content, Some(&FinishReason::Stop))["text"], "hi");
        assert!(!has_tool_calls(&content));
        assert!(serde_json::from_value::<NoInject>(serde_json::json!("x")).is_err());
    }

    #[test]
    fn a_whole_turn_keeps_its_tool_calls_in_either_recorded_shape() {
        let turn: ModelTurn = serde_json::from_value(serde_json::json!({
            "text": "",
            "finishReason": "tool-calls",
            "toolCalls": [
                {"id": "call_1", "name": "add", "arguments": {"x": 2, "y": 3}},
                {"id": "call_2", "name": "add", "input": "{\"x\":1,\"y\":1}"}
            ]
        }))
        .expect("a turn");
        assert!(has_tool_calls(&turn.0));
        let out = reply(&turn.0, Some(&FinishReason::ToolCalls));
        assert_eq!(out["toolCalls"][0]["id"], "call_1");
        assert_eq!(out["toolCalls"][0]["name"], "add");
        assert_eq!(out["toolCalls"][1]["id"], "call_2");
        assert_eq!(out["text"], "");
        let text: ModelTurn = serde_json::from_value(serde_json::json!("5")).expect("text");
        assert_eq!(reply(&text.0, None)["text"], "5");
        assert!(
            serde_json::from_value::<ModelTurn>(serde_json::json!({"toolCalls": [{"name": ""}]}))
                .is_err()
        );
    }
}
