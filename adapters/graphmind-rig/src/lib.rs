//! graphmind for [rig](https://docs.rs/rig-agent): every model call and every tool call of a
//! rig agent run becomes a node of the run, live in the debugger and held at its gates.
//! Built on rig's public extension point, its `AgentHook` ([`GraphmindHook`]); no fork, no
//! wrapper around the provider.
//!
//! ```
//! use graphmind_rig::Instrument;
//! use rig_agent::AgentBuilder;
//! use rig_core::test_utils::MockCompletionModel;
//!
//! # async fn demo() -> Result<(), rig_agent::completion::PromptError> {
//! let _gm = graphmind::init(graphmind::Config::new("my-agent"));
//! let agent = AgentBuilder::new(MockCompletionModel::text("Hello!")).name("helper").build();
//! let response = agent.graphmind().prompt("Hi").await?; // rig's own PromptResponse
//! # let _ = response; Ok(())
//! # }
//! ```
//!
//! # Per model call (one execution of `llm:step`)
//! - `node.started` (the `CompletionRequest` as input) when rig dispatches the completion,
//!   before the provider is called; the run's first step sends a `graph.hint` naming the
//!   agent's tools, so the viewer draws them before anything runs.
//! - The `before` gate holds before the request leaves. Inject there is the turn's content
//!   (`"text"`, or `{text, toolCalls: [{id, name, input}]}`) when the agent's model is
//!   served through [`gated_model`] / [`GateModelErrors::gate_model_errors`] (not streamed):
//!   graphmind's layer answers the call with it and the provider is not called; a replay's
//!   recorded answer is given the same way. rig's hooks cannot answer a completion dispatch
//!   themselves, so elsewhere an inject there is refused with that reason, and a replay runs
//!   the call live and says so.
//! - Streamed text, reasoning and tool-argument deltas (per call, by the call's part index and
//!   tool name) go out batched as `node.token`.
//! - The `after` gate holds the accepted answer before rig acts on it: inject replaces its
//!   content, retry repeats a turn without tool calls (rig refuses to repeat a turn whose tool
//!   calls are unanswered: there retry continues), abort ends the run.
//! - `node.finished`: `{text, finishReason, rawFinishReason, toolCalls}` (finishReason
//!   normalized), usage, `model`, `responseId`, `attempts`, `injected`, `streamed`.
//! - A failed model call (a provider or HTTP error) reaches no hook in rig: rig returns it
//!   from the prompt call at once, and its step finishes `error` with the error as
//!   `node.error`. Built with [`GateModelErrors::gate_model_errors`] (or [`gated_model`]),
//!   the agent's model is served through a layer of graphmind's that holds a failed call at
//!   the `error` gate first: retry calls the model again, inject answers with the injected
//!   turn, continue passes rig's error on, abort ends the run. A streamed call's error is not
//!   gated (rig lets a layer replace only the error of a streamed answer).
//!
//! # Per tool call (one execution of `tool:<name>`, instanceId = rig's tool-call id)
//! - `before` before the tool runs: inject skips it and hands rig the value as the tool's
//!   *successful* result (the model's next turn sees it). Edit (GraphMind 0.6 `edit-input`)
//!   runs the tool with the edited arguments (a JSON object).
//!   Reject (a person's reason) skips it too and hands the model the rejection ("the call was
//!   rejected by a person: `<reason>`") as the call's failed result.
//! - `after` when it returns, `error` when it failed, before rig sees the result: inject
//!   answers with the value as a success, retry runs the tool again (on the run's bus),
//!   continue passes rig's result (or error) on, abort ends the run.
//! - Parallel tool calls (`tool_concurrency`) are separate nodes gated independently.
//!
//! # The run
//! [`Instrument::graphmind`] makes a prompt call a graphmind run named after the agent
//! (`agent:<name>`), or joins the enclosing `graphmind::run!`. Steps of one prompt call are
//! one invocation; two concurrent prompt calls never share one (their state lives in each
//! rig run's own scratchpad). `max_turns` exhausted ends the run `error` with rig's
//! message; a run rig cancels finishes what it left open `aborted`. Nothing is left running.
//!
//! # What an abort looks like to your app
//! - A prompt call that is its own run returns `Err(PromptError::Report(report))` with
//!   `report.kind == ErrorKind::Cancelled` and graphmind's `Aborted` message ("run `…` (run_…)
//!   was aborted from the debugger"); nothing after the aborted gate runs.
//! - Inside `graphmind::run!`: the enclosing run's block is dropped at the gate and the run
//!   returns `Err(graphmind::Aborted)`, as for every other graphmind gate.
//! - A run with the hook added by hand and outside any graphmind run: rig stops the run
//!   (rig 0.44: `PromptError::Cancelled`, 0.43: `PromptError::PromptCancelled`, reason
//!   `graphmind: the debugger aborted this run`).
//!
//! # Fail-open
//! A dead or hung debugger never breaks a run (gates continue at once when detached). The
//! adapter's own bookkeeping runs under `catch_unwind`: should it panic, the call goes on
//! uninstrumented and a warning is printed, once a minute at most. With graphmind disabled
//! the hook returns at its first check.

mod hook;
mod model_call;
mod model_error;
mod output;
mod prompt;
mod state;
mod tool_call;
mod turn_gate;

pub use hook::GraphmindHook;
pub use model_error::{GateModelErrors, gated_model};
pub use prompt::{Graphmind, Instrument, Prompt};

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Runs adapter bookkeeping fail-open ([`graphmind::node::fail_open`] under this crate's name):
/// `None` after a rate-limited warning when it panicked, and the call goes on uninstrumented.
fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    graphmind::node::fail_open(env!("CARGO_PKG_NAME"), what, f)
}
