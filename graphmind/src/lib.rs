//! graphmind.

#[cfg(feature = "enabled")]
mod gate;
