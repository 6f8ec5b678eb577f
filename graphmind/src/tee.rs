//! Stream tee: every item of a wrapped stream is observed (token deltas, chunk count, usage,
//! errors) without changing what the consumer gets or when; the node finishes when the
//! stream ends, and also when the consumer drops it half-way.

pub use crate::call::expansion::Restream;
pub use crate::call::tee::{Observer, Tee};
