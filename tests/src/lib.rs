//! End-to-end tests across graphmind crates; see the files under `tests/`.
