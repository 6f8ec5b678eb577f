//! GraphMind wire protocol v1: the envelope, the 16 known message types, parse outcomes,
//! compact serialization and payload shrinking.
//!
//! One WebSocket text frame carries one [`Envelope`]. [`parse`] turns a frame into a
//! [`Parsed`] outcome and never panics; [`Envelope::to_json`] writes compact JSON with the
//! envelope fields in the order `gm, seq, ts, runId, type, payload`. Every payload struct keeps
//! the fields it does not know in `extra`, so a parse/serialize round trip loses nothing.
//!
//! ```
//! use graphmind_protocol::{parse, Message, Parsed};
//!
//! let frame = r#"{"gm":1,"seq":3,"ts":1,"runId":"run_1","type":"run.finished","payload":{"status":"ok","note":"kept"}}"#;
//! let Parsed::Ok(env) = parse(frame) else { panic!("not ok") };
//! assert!(matches!(env.message, Message::RunFinished(_)));
//! assert_eq!(env.to_json(), frame);
//! ```

pub mod control;
mod envelope;
pub mod feed;
pub mod hub_auth;
mod parse;
mod payloads;
pub mod recording;
mod shrink;
pub mod trace;

pub use envelope::{Envelope, Message, RUN_ANY};
pub use parse::{MAX_DEPTH, Parsed, parse, parse_value, within_depth};
pub use payloads::*;
pub use shrink::{
    PAYLOAD_BUDGET, PREVIEW_CHARS, SHRINK_DEPTH, ShrinkReport, TRUNCATED_KEY, TRUNCATION_SUFFIX,
    json_len, shrink_payload, shrink_value,
};

/// The protocol major this crate speaks; the `gm` field of every envelope.
pub const PROTOCOL_VERSION: u64 = 1;

/// A JSON object, as used for unknown fields kept through a round trip.
pub type Extra = serde_json::Map<String, serde_json::Value>;
