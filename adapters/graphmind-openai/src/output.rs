//! What a step's `node.finished` says, read from the JSON of async-openai's types: the
//! GraphMind 0.6 output `{text, finishReason, rawFinishReason, toolCalls}`, usage, model and
//! response id. Read by field name from the serialized value, so that the adapter follows the
//! API's wire names rather than one async-openai minor's Rust types.

use std::collections::BTreeMap;

use graphmind::model::{Delta, DeltaKind, Reply, Usage};
use serde_json::Value;

/// One tool call the model asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// What one model step produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StepOut {
    pub(crate) text: String,
    pub(crate) raw_finish: Option<String>,
    pub(crate) tool_calls: Vec<ToolCall>,
    pub(crate) usage: Option<Usage>,
    pub(crate) model: Option<String>,
    pub(crate) response_id: Option<String>,
}

impl StepOut {
    /// `{text, finishReason, rawFinishReason, toolCalls: [{id, name, input, inputText?}], response}`,
    /// built by graphmind's [`Reply`] exactly as a `#[graphmind::model_step]` read through
    /// a codec records it (so an answer that ended normally, `stop` or a Responses answer
    /// `completed`, with tool calls in it is `tool-calls` on both paths).
    pub(crate) fn to_json(&self, response: Option<Value>) -> Value {
        let mut reply = Reply::new(self.text.as_str());
        if let Some(raw) = &self.raw_finish {
            reply = reply.finish_reason(raw);
        }
        for c in &self.tool_calls {
            let call = graphmind::model::ToolCall::new(c.name.as_str(), c.arguments.as_str());
            reply = reply.tool_call(if c.id.is_empty() {
                call
            } else {
                call.with_id(c.id.as_str())
            });
        }
        if let Some(r) = response {
            reply = reply.response(r);
        }
        reply.into_value()
    }
}

/// The tool calls of one stream, by index (chat) or output index (Responses): each keeps
/// the id and tool name it was first named with (a chat call's first piece, a Responses
/// `output_item.added` event), so that every later piece, which has only the index, names
/// them too. Shared by the wrapped client's tee and the codecs' `stream_deltas`.
#[derive(Debug, Default)]
pub(crate) struct StreamedCalls(pub(crate) BTreeMap<u64, ToolCall>);

impl StreamedCalls {
    /// Remembers what a piece of call `index` names, keeps its `args` when `keep_args`
    /// (the wrapped client builds the output from them), and returns the piece as a delta
    /// naming the call's id and tool as known so far.
    pub(crate) fn piece<'a>(
        &'a mut self,
        index: u64,
        id: Option<&str>,
        name: Option<&str>,
        args: &'a str,
        keep_args: bool,
    ) -> Delta<'a> {
        let call = self.0.entry(index).or_default();
        if let Some(id) = id.filter(|i| !i.is_empty() && call.id.is_empty()) {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = name.filter(|n| !n.is_empty() && call.name.is_empty()) {
            name.clone_into(&mut call.name);
        }
        if keep_args {
            call.arguments.push_str(args);
        }
        let mut d = Delta::tool_args(index, args);
        if !call.id.is_empty() {
            d = d.with_call_id(&call.id);
        }
        if !call.name.is_empty() {
            d = d.with_tool_name(&call.name);
        }
        d
    }
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn u64_of(v: &Value, path: &[&str]) -> Option<u64> {
    let mut cur = v;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_u64()
}

/// Chat usage: `prompt_tokens` (cached included), `completion_tokens` (reasoning included),
/// `total_tokens`, `prompt_tokens_details.cached_tokens`,
/// `completion_tokens_details.reasoning_tokens`.
pub(crate) fn chat_usage(usage: &Value) -> Option<Usage> {
    let input = u64_of(usage, &["prompt_tokens"])?;
    let output = u64_of(usage, &["completion_tokens"]).unwrap_or(0);
    Some(with_details(
        Usage::inclusive(input, output),
        u64_of(usage, &["total_tokens"]),
        u64_of(usage, &["prompt_tokens_details", "cached_tokens"]),
        u64_of(usage, &["completion_tokens_details", "reasoning_tokens"]),
    ))
}

/// Responses usage: `input_tokens`, `output_tokens`, `total_tokens`,
/// `input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens`.
pub(crate) fn responses_usage(usage: &Value) -> Option<Usage> {
    let input = u64_of(usage, &["input_tokens"])?;
    let output = u64_of(usage, &["output_tokens"]).unwrap_or(0);
    Some(with_details(
        Usage::inclusive(input, output),
        u64_of(usage, &["total_tokens"]),
        u64_of(usage, &["input_tokens_details", "cached_tokens"]),
        u64_of(usage, &["output_tokens_details", "reasoning_tokens"]),
    ))
}

fn with_details(
    mut usage: Usage,
    total: Option<u64>,
    cached: Option<u64>,
    reasoning: Option<u64>,
) -> Usage {
    if let Some(n) = total {
        usage = usage.with_total(n);
    }
    if let Some(n) = cached {
        usage = usage.with_cache_read(n);
    }
    if let Some(n) = reasoning {
        usage = usage.with_reasoning(n);
    }
    usage
}

/// A chat completion (`CreateChatCompletionResponse` as JSON): the first choice's content
/// (or refusal), tool calls and finish reason.
pub(crate) fn from_chat(resp: &Value) -> StepOut {
    let choice = resp.pointer("/choices/0").unwrap_or(&Value::Null);
    let message = choice.get("message").unwrap_or(&Value::Null);
    let text = str_of(message, "content")
        .or_else(|| str_of(message, "refusal"))
        .unwrap_or_default();
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| ToolCall {
                    id: str_of(c, "id").unwrap_or_default(),
                    name: c
                        .pointer("/function/name")
                        .or_else(|| c.pointer("/custom/name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    arguments: c
                        .pointer("/function/arguments")
                        .or_else(|| c.pointer("/custom/input"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    StepOut {
        text,
        raw_finish: str_of(choice, "finish_reason"),
        tool_calls,
        usage: resp.get("usage").and_then(chat_usage),
        model: str_of(resp, "model"),
        response_id: str_of(resp, "id"),
    }
}

/// The built-in tools of the Responses API, by output item type: (item type, tool name).
pub(crate) const BUILTIN_ITEMS: [(&str, &str); 6] = [
    ("web_search_call", "web_search"),
    ("file_search_call", "file_search"),
    ("code_interpreter_call", "code_interpreter"),
    ("image_generation_call", "image_generation"),
    ("mcp_call", "mcp"),
    ("local_shell_call", "local_shell"),
];

/// The tool name of a built-in output item, if it is one.
pub(crate) fn builtin_name(item: &Value) -> Option<&'static str> {
    let kind = item.get("type")?.as_str()?;
    BUILTIN_ITEMS
        .iter()
        .find(|(t, _)| *t == kind)
        .map(|(_, name)| *name)
}

/// A Responses API response (`Response` as JSON): output text (and refusals), function and
/// custom tool calls, status as the raw finish reason (`incomplete_details.reason` when
/// incomplete).
pub(crate) fn from_response(resp: &Value) -> StepOut {
    let mut out = StepOut {
        usage: resp.get("usage").and_then(responses_usage),
        model: str_of(resp, "model"),
        response_id: str_of(resp, "id"),
        ..StepOut::default()
    };
    for item in resp
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(t) = part.get("text").or_else(|| part.get("refusal")) {
                        out.text.push_str(t.as_str().unwrap_or_default());
                    }
                }
            }
            Some("function_call") => out.tool_calls.push(ToolCall {
                id: str_of(item, "call_id").unwrap_or_default(),
                name: str_of(item, "name").unwrap_or_default(),
                arguments: str_of(item, "arguments").unwrap_or_default(),
            }),
            Some("custom_tool_call") => out.tool_calls.push(ToolCall {
                id: str_of(item, "call_id").unwrap_or_default(),
                name: str_of(item, "name").unwrap_or_default(),
                arguments: str_of(item, "input").unwrap_or_default(),
            }),
            _ => {}
        }
    }
    out.raw_finish = match resp.get("status").and_then(Value::as_str) {
        Some("incomplete") => resp
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| Some("incomplete".to_owned())),
        other => other.map(str::to_owned),
    };
    out
}

/// The tool names a request offers (`tools[].function.name` for chat, `tools[].name` or the
/// built-in tool's type for responses), each with whether the provider runs it.
pub(crate) fn request_tools(tools: &[Value]) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    for tool in tools {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = tool
            .pointer("/function/name")
            .or_else(|| tool.pointer("/custom/name"))
            .or_else(|| tool.get("name"))
            .and_then(Value::as_str)
        {
            names.push((name.to_owned(), false));
        } else if !kind.is_empty() && kind != "function" && kind != "custom" {
            // A built-in tool: `web_search`, `web_search_preview`, `file_search`, …
            let name = kind.strip_suffix("_preview").unwrap_or(kind);
            names.push((name.to_owned(), true));
        }
    }
    names
}

/// The delta a Responses stream event carries, if any: (kind, text, output index, item id).
pub(crate) fn event_delta(v: &Value) -> Option<(DeltaKind, &str, u64, Option<&str>)> {
    let kind = match v.get("type")?.as_str()? {
        "response.output_text.delta" | "response.refusal.delta" => DeltaKind::Text,
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
            DeltaKind::Reasoning
        }
        "response.function_call_arguments.delta"
        | "response.custom_tool_call_input.delta"
        | "response.mcp_call_arguments.delta"
        | "response.code_interpreter_call_code.delta" => DeltaKind::ToolArgs,
        _ => return None,
    };
    let text = v.get("delta")?.as_str()?;
    let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
    Some((kind, text, index, v.get("item_id").and_then(Value::as_str)))
}

/// Whether the raw text of an item async-openai could not deserialize is an event of a
/// type it does not know (JSON with a string `type`), rather than a broken line.
pub(crate) fn is_unknown_event(raw: &str) -> bool {
    serde_json::from_str::<Value>(raw)
        .ok()
        .is_some_and(|v| v.get("type").is_some_and(Value::is_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_normal_end_with_tool_calls_is_tool_calls() {
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let out = |raw: &str, calls: Vec<ToolCall>| {
            StepOut {
                raw_finish: Some(raw.into()),
                tool_calls: calls,
                ..StepOut::default()
            }
            .to_json(None)
        };
        assert_eq!(
            out("completed", vec![call.clone()])["finishReason"],
            "tool-calls"
        );
        assert_eq!(
            out("completed", vec![call.clone()])["rawFinishReason"],
            "completed"
        );
        assert_eq!(out("completed", vec![])["finishReason"], "stop");
        assert_eq!(
            out("max_output_tokens", vec![call])["finishReason"],
            "length"
        );
        assert_eq!(
            out("content_filter", vec![])["finishReason"],
            "content-filter"
        );
    }

    #[test]
    fn chat_usage_keeps_cached_and_reasoning_tokens() {
        let u = chat_usage(&json!({
            "prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
            "prompt_tokens_details": {"cached_tokens": 1000},
            "completion_tokens_details": {"reasoning_tokens": 30}
        }))
        .expect("usage");
        assert_eq!(
            u,
            Usage::inclusive(1200, 80)
                .with_total(1280)
                .with_cache_read(1000)
                .with_reasoning(30)
        );
    }

    #[test]
    fn tool_arguments_that_are_not_json_keep_their_text_as_input_text() {
        let out = StepOut {
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "t".into(),
                arguments: "{\"cut".into(),
            }],
            raw_finish: Some("tool_calls".into()),
            ..StepOut::default()
        };
        assert_eq!(out.to_json(None)["toolCalls"][0]["input"], Value::Null);
        assert_eq!(out.to_json(None)["toolCalls"][0]["inputText"], "{\"cut");
        assert_eq!(out.to_json(None)["finishReason"], "tool-calls");
    }
}
