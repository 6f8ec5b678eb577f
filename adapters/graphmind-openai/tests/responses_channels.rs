//! Every Responses stream event that carries a delta lands on its token channel, read by the
//! codec as the wrapped client's tee reads it: output text and refusal → text; reasoning
//! summary and reasoning text → reasoning; function-call arguments, custom tool input, MCP
//! call arguments and code-interpreter code → tool arguments by output index.

use async_openai::types::responses::ResponseStreamEvent;
use graphmind::model::{ChunkCodec, DeltaKind};
use graphmind_openai::codec::Responses;
use serde_json::json;

fn event(kind: &str, output_index: u32, delta: &str) -> ResponseStreamEvent {
    let raw = json!({
        "type": kind,
        "sequence_number": 1,
        "item_id": format!("item_{output_index}"),
        "output_index": output_index,
        "content_index": 0,
        "summary_index": 0,
        "delta": delta,
        "logprobs": [],
        "obfuscation": "x",
    });
    serde_json::from_value(raw).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

fn deltas(e: &ResponseStreamEvent) -> Vec<(DeltaKind, String, Option<u64>)> {
    let mut out = Vec::new();
    <Responses as ChunkCodec<ResponseStreamEvent>>::call_deltas(e, &mut |d| {
        out.push((d.kind, d.text.to_owned(), d.index));
    });
    out
}

#[test]
fn every_responses_delta_event_lands_on_its_channel() {
    let cases = [
        ("response.output_text.delta", DeltaKind::Text, None),
        ("response.refusal.delta", DeltaKind::Text, None),
        (
            "response.reasoning_summary_text.delta",
            DeltaKind::Reasoning,
            None,
        ),
        ("response.reasoning_text.delta", DeltaKind::Reasoning, None),
        (
            "response.function_call_arguments.delta",
            DeltaKind::ToolArgs,
            Some(2),
        ),
        (
            "response.custom_tool_call_input.delta",
            DeltaKind::ToolArgs,
            Some(2),
        ),
        (
            "response.mcp_call_arguments.delta",
            DeltaKind::ToolArgs,
            Some(2),
        ),
        (
            "response.code_interpreter_call_code.delta",
            DeltaKind::ToolArgs,
            Some(2),
        ),
    ];
    for (kind, channel, index) in cases {
        assert_eq!(
            deltas(&event(kind, 2, "piece")),
            [(channel, "piece".to_owned(), index)],
            "{kind}"
        );
    }
}

#[test]
fn a_done_event_carries_no_delta() {
    let done: ResponseStreamEvent = serde_json::from_value(json!({
        "type": "response.function_call_arguments.done",
        "sequence_number": 2,
        "item_id": "item_0",
        "output_index": 0,
        "name": "get_weather",
        "arguments": "{\"city\":\"Lisbon\"}",
    }))
    .expect("a done event");
    assert!(deltas(&done).is_empty());
}
