//! A recorded run read back: the node executions of one run from the NDJSON `graphmind
//! record` writes ([`Recording`], [`Step`]), and where two JSON values first differ
//! ([`first_diff`]). The runtime's replayer and `graphmind diff` both read runs this way.

mod json_path;
mod line;
mod steps;

pub use json_path::{FirstDiff, SHOWN_JSON_BYTES, ShownJson, first_diff, shown_json};
pub use steps::{BadRecording, CHUNKS_KEY, Recording, Step};
