//! [`ToolChunks`]: the tool calls of one stream as its `ToolCallChunk`s name them, each new
//! piece of a call's arguments as one tool-argument delta naming the call (its index in the
//! reply, its id, the tool's name). The wrapped client's tee keeps one per stream; so does
//! the codec, in the stream's [`ChunkState`](graphmind::model::ChunkState).
//!
//! genai's providers fill `ToolCallChunk` differently: OpenAI-style streams send each piece
//! of the arguments and name later pieces `call_<index>` instead of the call's id;
//! Anthropic-style streams (and OpenAI's with `capture_tool_calls`) send the arguments so
//! far. A chunk's call is found by id, else by that index; a piece that extends what was
//! seen is the arguments so far, and only what is new goes out.

use graphmind::model::Delta;

use crate::output::{Call, arguments_text};

/// The tool calls seen so far in one stream, in the order they first appeared.
#[derive(Debug, Default)]
pub(crate) struct ToolChunks {
    pub(crate) calls: Vec<Call>,
}

impl ToolChunks {
    /// Reads one `ToolCallChunk`'s call; `emit` gets the new piece of its arguments (none
    /// when the chunk adds nothing).
    pub(crate) fn chunk(&mut self, tc: &genai::chat::ToolCall, emit: &mut dyn FnMut(Delta<'_>)) {
        let args = arguments_text(&tc.fn_arguments);
        let by_index = tc
            .call_id
            .strip_prefix("call_")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < self.calls.len() && self.calls[*n].id != tc.call_id);
        let pos = self
            .calls
            .iter()
            .position(|c| c.id == tc.call_id)
            .or(by_index);
        let pos = match pos {
            Some(p) => p,
            None => {
                self.calls.push(Call {
                    id: tc.call_id.clone(),
                    name: tc.fn_name.clone(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if call.name.is_empty() && !tc.fn_name.is_empty() {
            call.name.clone_from(&tc.fn_name);
        }
        let start = if !call.arguments.is_empty() && args.starts_with(call.arguments.as_str()) {
            call.arguments.len()
        } else {
            0
        };
        let piece = &args[start..];
        if piece.is_empty() {
            return;
        }
        call.arguments.push_str(piece);
        let mut d = Delta::tool_args(pos as u64, piece).with_call_id(&call.id);
        if !call.name.is_empty() {
            d = d.with_tool_name(&call.name);
        }
        emit(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, name: &str, args: serde_json::Value) -> genai::chat::ToolCall {
        genai::chat::ToolCall {
            call_id: id.into(),
            fn_name: name.into(),
            fn_arguments: args,
            thought_signatures: None,
        }
    }

    fn read(chunks: &[genai::chat::ToolCall]) -> Vec<(u64, String, String, String)> {
        let mut t = ToolChunks::default();
        let mut out = Vec::new();
        for c in chunks {
            t.chunk(c, &mut |d| {
                out.push((
                    d.index.unwrap_or(99),
                    d.call_id.unwrap_or("-").to_owned(),
                    d.tool_name.unwrap_or("-").to_owned(),
                    d.text.to_owned(),
                ));
            });
        }
        out
    }

    #[test]
    fn pieces_named_call_index_join_the_call_announced_with_its_id() {
        let got = read(&[
            chunk("call_w", "get_weather", "".into()),
            chunk("call_t", "get_time", "".into()),
            chunk("call_0", "", "{\"city\":".into()),
            chunk("call_1", "", "{\"tz\":".into()),
            chunk("call_0", "", "\"Lisbon\"}".into()),
        ]);
        let w = |t: &str| {
            (
                0,
                "call_w".to_owned(),
                "get_weather".to_owned(),
                t.to_owned(),
            )
        };
        let t = |s: &str| (1, "call_t".to_owned(), "get_time".to_owned(), s.to_owned());
        assert_eq!(got, [w("{\"city\":"), t("{\"tz\":"), w("\"Lisbon\"}")]);
    }

    #[test]
    fn arguments_so_far_go_out_as_what_is_new_only() {
        let got = read(&[
            chunk("toolu_w", "get_weather", "{\"city\":".into()),
            chunk("toolu_w", "get_weather", "{\"city\":\"Lis".into()),
            chunk("toolu_w", "get_weather", "{\"city\":\"Lis".into()),
            chunk("toolu_w", "get_weather", "{\"city\":\"Lisbon\"}".into()),
        ]);
        let texts: Vec<&str> = got.iter().map(|g| g.3.as_str()).collect();
        assert_eq!(texts, ["{\"city\":", "\"Lis", "bon\"}"]);
        assert!(got.iter().all(|g| g.0 == 0 && g.1 == "toolu_w"));
    }
}
