//! Runnable instrumented agents; see `support_agent.rs`.
