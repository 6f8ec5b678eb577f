//! `Resume`, the one decision type of the runtime, in a leaf module: the gate registry
//! (`gate.rs`) and `node` return it with feature `enabled` on, and the compiled-out `node`
//! twin (`disabled/node.rs`) re-exports the same type, so code matching on it compiles the
//! same both ways.

use serde_json::Value;

/// What the debugger decided at a gate: the one decision type of the runtime (the wire's
/// [`ResumeAction`](graphmind_protocol::ResumeAction) plus the injected value). Every automatic release is
/// [`Resume::Continue`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Resume {
    /// Go on (also every automatic release: detached, disconnect, timeout, dispose).
    Continue,
    /// Run the call again (only when the gate allowed retry).
    Retry,
    /// Use this value instead (already validated when the gate was given a type).
    Inject(Value),
    /// The debugger aborted the run. A [`Node`](crate::node::Node) calls
    /// [`Node::abort_run`](crate::node::Node::abort_run) to finish the node and cancel the
    /// run, or finishes the node itself.
    Abort,
    /// Run the call with an edited input (at a `before` gate made editable, e.g. with
    /// [`Node::editable`](crate::node::Node::editable), or — as `retry` with an input — at
    /// the `after` / `error` gate of a `#[tool]` or `#[model_step]` that may run again;
    /// already checked against its type).
    Edit {
        /// The whole input that runs: the edit merged over the call's input.
        input: Value,
        /// The keys the person sent, with their values.
        changed: serde_json::Map<String, Value>,
    },
    /// Do not run the call: a person rejected it with this reason (only at a `before`
    /// gate that allowed it, e.g. with [`Node::rejectable`](crate::node::Node::rejectable)).
    /// The caller gets an error carrying the reason, see [`Rejection`](crate::Rejection).
    Reject(String),
}
