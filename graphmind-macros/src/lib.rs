//! graphmind macros.
#![allow(missing_docs)]
