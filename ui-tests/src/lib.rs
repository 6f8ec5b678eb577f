//! trybuild cases for the graphmind attribute macros; see `tests/ui.rs`.
