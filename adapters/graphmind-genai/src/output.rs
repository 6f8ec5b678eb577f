//! What a step's `node.finished` says, read from genai's types: the GraphMind 0.6 output
//! `{text, finishReason, rawFinishReason, toolCalls}`, usage, model and response id.

use genai::chat::{ChatRequest, ChatResponse, StopReason, ToolCall as GenaiToolCall};
use graphmind::model::{FinishReason, Reply, ToolCall, Usage};
use serde_json::Value;

/// One tool call the model asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// What one model step produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StepOut {
    pub(crate) text: String,
    pub(crate) raw_finish: Option<String>,
    pub(crate) tool_calls: Vec<Call>,
    pub(crate) usage: Option<Usage>,
    pub(crate) model: Option<String>,
    pub(crate) response_id: Option<String>,
}

impl StepOut {
    /// `{text, finishReason, rawFinishReason, toolCalls: [{id, name, input, inputText?}], response}`,
    /// built by graphmind's [`Reply`] as a `#[graphmind::model_step]` read through the
    /// [`Genai`](crate::Genai) codec records it. An answer that ended normally with tool calls
    /// in it stopped for them: `tool-calls`.
    pub(crate) fn to_json(&self, response: Option<Value>) -> Value {
        let mut reply = Reply::new(self.text.as_str());
        if let Some(raw) = &self.raw_finish {
            reply = reply.finish_reason(raw);
        }
        for c in &self.tool_calls {
            let call = ToolCall::new(c.name.as_str(), c.arguments.as_str());
            reply = reply.tool_call(if c.id.is_empty() {
                call
            } else {
                call.with_id(c.id.as_str())
            });
        }
        if let Some(r) = response {
            reply = reply.response(r);
        }
        let mut out = reply.into_value();
        if !self.tool_calls.is_empty() && out["finishReason"] == "stop" {
            out["finishReason"] = FinishReason::ToolCalls.as_str().into();
        }
        out
    }
}

/// A tool call's arguments as text: genai keeps them as JSON, a string while streaming.
pub(crate) fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A genai tool call, recorded as the output's `{id, name, input, inputText?}`.
pub(crate) fn call_of(c: &GenaiToolCall) -> Call {
    Call {
        id: c.call_id.clone(),
        name: c.fn_name.clone(),
        arguments: arguments_text(&c.fn_arguments),
    }
}

/// The provider's own finish reason inside genai's normalized one.
pub(crate) fn raw_finish(r: &StopReason) -> String {
    r.raw().to_owned()
}

/// genai's usage: `prompt_tokens` (cached included), `completion_tokens` (reasoning
/// included), `total_tokens`, cached / cache-creation and reasoning details. `None` when
/// the provider reported nothing.
pub(crate) fn usage_of(u: &genai::chat::Usage) -> Option<Usage> {
    let n = |v: Option<i32>| v.and_then(|v| u64::try_from(v).ok());
    let input = n(u.prompt_tokens);
    let output = n(u.completion_tokens);
    if input.is_none() && output.is_none() && u.total_tokens.is_none() {
        return None;
    }
    let mut usage = Usage::inclusive(input.unwrap_or(0), output.unwrap_or(0));
    if let Some(t) = n(u.total_tokens) {
        usage = usage.with_total(t);
    }
    if let Some(d) = &u.prompt_tokens_details {
        if let Some(t) = n(d.cached_tokens) {
            usage = usage.with_cache_read(t);
        }
        if let Some(t) = n(d.cache_creation_tokens) {
            usage = usage.with_cache_write(t);
        }
    }
    if let Some(t) = u
        .completion_tokens_details
        .as_ref()
        .and_then(|d| n(d.reasoning_tokens))
    {
        usage = usage.with_reasoning(t);
    }
    Some(usage)
}

/// A whole `ChatResponse`: its texts, tool calls, stop reason, usage, the provider's model
/// name and the response id (OpenAI Responses).
pub(crate) fn from_response(r: &ChatResponse) -> StepOut {
    StepOut {
        text: r.content.texts().concat(),
        raw_finish: r.stop_reason.as_ref().map(raw_finish),
        tool_calls: r.content.tool_calls().into_iter().map(call_of).collect(),
        usage: usage_of(&r.usage),
        model: Some(r.provider_model_iden.model_name.to_string()),
        response_id: r.response_id.clone(),
    }
}

/// A `ChatResponse` as JSON that deserializes back into one (what a debugger edits and
/// injects): genai serializes a model name as `{"Shared": name}` but reads only the bare
/// string, so model names are written bare.
pub(crate) fn response_json(r: &ChatResponse) -> Option<Value> {
    let mut v = serde_json::to_value(r).ok()?;
    for key in ["model_iden", "provider_model_iden"] {
        if let Some(name) = v.pointer_mut(&format!("/{key}/model_name"))
            && let Some(bare) = name
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(Value::as_str)
                .map(str::to_owned)
        {
            *name = Value::String(bare);
        }
    }
    Some(v)
}

/// The tool names a request offers (for the `graph.hint` of an invocation's first step).
pub(crate) fn request_tools(req: &ChatRequest) -> Vec<String> {
    req.tools
        .iter()
        .flatten()
        .map(|t| t.name.as_str().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[test]
    fn a_normal_end_with_tool_calls_is_tool_calls() {
        let out = StepOut {
            raw_finish: Some("end_turn".into()),
            tool_calls: vec![Call {
                id: "toolu_1".into(),
                name: "t".into(),
                arguments: "{\"a\":1}".into(),
            }],
            ..StepOut::default()
        }
        .to_json(None);
        assert_eq!(out["finishReason"], "tool-calls");
        assert_eq!(out["rawFinishReason"], "end_turn");
        assert_eq!(out["toolCalls"][0]["input"], json!({"a": 1}));
    }

    /// Regression: a recorded response did not deserialize back into genai's type (genai
    /// writes a model name as `{"Shared": name}` and reads only the string), so a debugger
    /// could not inject an edited copy of it.
    #[test]
    fn a_recorded_response_deserializes_back_into_a_chat_response() {
        let r = ChatResponse {
            content: genai::chat::MessageContent::from_text("hi"),
            reasoning_content: None,
            model_iden: genai::ModelIden::new(genai::adapter::AdapterKind::OpenAI, "m"),
            provider_model_iden: genai::ModelIden::new(genai::adapter::AdapterKind::OpenAI, "m-1"),
            stop_reason: None,
            usage: genai::chat::Usage::default(),
            captured_raw_body: None,
            response_id: None,
        };
        let v = response_json(&r).expect("json");
        assert_eq!(v["provider_model_iden"]["model_name"], "m-1");
        let back = ChatResponse::deserialize(&v).expect("deserializes");
        assert_eq!(back.first_text(), Some("hi"));
    }

    #[test]
    fn usage_without_any_count_is_none_and_details_are_kept() {
        assert_eq!(usage_of(&genai::chat::Usage::default()), None);
        let u: genai::chat::Usage = serde_json::from_value(json!({
            "prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 100, "cache_creation_tokens": 7},
            "completion_tokens_details": {"reasoning_tokens": 12}
        }))
        .expect("usage");
        assert_eq!(
            usage_of(&u),
            Some(
                Usage::inclusive(120, 30)
                    .with_total(150)
                    .with_cache_read(100)
                    .with_cache_write(7)
                    .with_reasoning(12)
            )
        );
    }
}
