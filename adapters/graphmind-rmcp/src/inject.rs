//! A value injected from the debugger, lifted into the result an MCP method must answer
//! with (as the GraphMind reference's MCP adapter does): a value already of the result's
//! shape is taken as it is, anything else becomes the smallest valid result carrying it.

use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContents, Role,
};
use serde::Deserialize;
use serde::de::Error as _;
use serde_json::Value;

fn is_object_with(v: &Value, keys: &[&str]) -> bool {
    v.as_object()
        .is_some_and(|m| keys.iter().any(|k| m.contains_key(*k)))
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An injected `tools/call` answer: `{"content": [...]}` (or anything with
/// `structuredContent`) is a `CallToolResult` as typed; a string is its one text block;
/// `null` is no content; an object is its JSON text plus `structuredContent` (so a tool
/// with an `outputSchema` is answered validly); any other value is its JSON text.
#[derive(Debug)]
pub(crate) struct ToolInject;

impl<'de> Deserialize<'de> for ToolInject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        tool_result(v).map(|_| Self).map_err(D::Error::custom)
    }
}

pub(crate) fn tool_result(v: Value) -> Result<CallToolResult, String> {
    if is_object_with(&v, &["content", "structuredContent"]) {
        return serde_json::from_value(v).map_err(|e| format!("not a CallToolResult: {e}"));
    }
    Ok(match v {
        Value::Null => CallToolResult::success(Vec::new()),
        Value::String(s) => CallToolResult::success(vec![ContentBlock::text(s)]),
        Value::Object(_) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
            r.structured_content = Some(v);
            r
        }
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    })
}

/// An injected `resources/read` answer: `{"contents": [...]}` as typed, else one text
/// content at the read's URI (JSON text, `application/json`, for a non-string).
pub(crate) fn resource_result(v: Value, uri: &str) -> Result<ReadResourceResult, String> {
    if is_object_with(&v, &["contents"]) {
        return serde_json::from_value(v).map_err(|e| format!("not a ReadResourceResult: {e}"));
    }
    let contents = match &v {
        Value::String(s) => ResourceContents::text(s.clone(), uri),
        other => ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".into()),
            text: other.to_string(),
            meta: None,
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// An injected `prompts/get` answer: `{"messages": [...]}` as typed, else one user message
/// with the value's text.
pub(crate) fn prompt_result(v: Value) -> Result<GetPromptResult, String> {
    if is_object_with(&v, &["messages"]) {
        return serde_json::from_value(v).map_err(|e| format!("not a GetPromptResult: {e}"));
    }
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text_of(&v),
    )]))
}

/// An injected `resources/read` answer, checked at the gate (its URI is filled in after).
#[derive(Debug)]
pub(crate) struct ResourceInject;

impl<'de> Deserialize<'de> for ResourceInject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        resource_result(v, "graphmind://injected")
            .map(|_| Self)
            .map_err(D::Error::custom)
    }
}

/// An injected `prompts/get` answer, checked at the gate.
#[derive(Debug)]
pub(crate) struct PromptInject;

impl<'de> Deserialize<'de> for PromptInject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        prompt_result(v).map(|_| Self).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_becomes_one_text_block() {
        let r = tool_result(json!("done")).expect("valid");
        assert_eq!(
            serde_json::to_value(&r).expect("serializes")["content"],
            json!([{"type": "text", "text": "done"}])
        );
        assert_eq!(r.is_error, Some(false));
    }

    #[test]
    fn an_object_also_lands_in_structured_content() {
        let r = tool_result(json!({"price": 42})).expect("valid");
        assert_eq!(r.structured_content, Some(json!({"price": 42})));
    }

    #[test]
    fn a_call_tool_result_is_taken_as_typed_and_a_broken_one_refused() {
        let r = tool_result(json!({"content": [], "isError": true})).expect("valid");
        assert_eq!(r.is_error, Some(true));
        assert!(tool_result(json!({"content": 3})).is_err());
    }

    #[test]
    fn resources_and_prompts_are_lifted() {
        let r = resource_result(json!({"a": 1}), "mem://x").expect("valid");
        let v = serde_json::to_value(&r).expect("serializes");
        assert_eq!(v["contents"][0]["uri"], "mem://x");
        assert_eq!(v["contents"][0]["text"], "{\"a\":1}");
        let p = prompt_result(json!("hello")).expect("valid");
        let v = serde_json::to_value(&p).expect("serializes");
        assert_eq!(v["messages"][0]["content"]["text"], "hello");
    }
}
