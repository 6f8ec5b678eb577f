//! What the attribute macros expand to. Not public API: no stability promise outside
//! `graphmind-macros` of the same version. The contract is written down in
//! `docs/dev/private-api.md`.
//!
//! An expansion makes two calls: [`capture`] (or [`capture_step`]) builds the node input
//! from borrowed arguments, lazily and only when the session records events; then one
//! policy entry point ([`tool`], [`tool_result`], [`tool_stream`], [`tool_stream_result`],
//! [`model_step`], …) runs the gates, the body and the events. Bounds the expansion adds are
//! graphmind traits with `#[diagnostic::on_unimplemented]` messages.

pub use serde_json::Value;

pub use crate::call::expansion::{
    Arg, ArgCheck, ArgChecks, Body, CallFuture, CallId, Ed, EditArgs, EditOnce, EditRepeat, Fields,
    Input, ItemDecode, ItemDecoder, Once, Rejectable, Repeat, Replayable, Req, RequestShape,
    Restream, RetryArg, StepInput, StepOutput, StreamItem, ToolError, ToolOutput, ViaAuto,
    ViaDecode, ViaEdit, ViaNoDecode, ViaNoEdit, ViaStepRequest, arg, arg_checks, assert_call_id,
    capture, capture_step, object, restream, restream_result, retry_clone,
};
pub use crate::call::step::{
    model_step, model_step_result, model_step_stream, model_step_stream_result,
};
pub use crate::call::tee::Tee;
pub use crate::call::tool::{
    tool, tool_result, tool_result_reject, tool_result_reject_replay, tool_result_replay,
    tool_stream, tool_stream_result, tool_stream_result_reject,
};
pub use crate::captured::Val as Captured;
pub use crate::model::{
    ChunkCodec, Grouping, Native, RequestCodec, ResponseCodec, StepChunk, StepRequest, StepResponse,
};
pub use crate::roster::RosterEntry;
pub use crate::sites::{StepSite, ToolSite};
pub use inventory;

/// Registers a tool in the binary's roster ([`crate::tool_roster`]).
#[macro_export]
#[doc(hidden)]
macro_rules! __graphmind_register_tool {
    ($name:expr) => {
        ::graphmind::__private::inventory::submit! {
            ::graphmind::__private::RosterEntry::new($name)
        }
    };
}
