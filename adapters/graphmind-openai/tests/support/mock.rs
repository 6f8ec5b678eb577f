//! The mock OpenAI server of the crate `graphmind-openai-mock` (real HTTP on 127.0.0.1, SSE,
//! answers from its JSON fixtures, picked by the request's `model`; its docs list them),
//! under the name the adapter's tests and benchmark use.
#![allow(unused_imports)]

pub use graphmind_openai_mock::{Mock, Seen, fixture, fixture_json};
