//! graphmind.
