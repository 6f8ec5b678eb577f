//! [`Recording`]: how a node started now would be recorded, the one question an adapter's
//! wrapped call asks before it does anything. A leaf, so that `node` and its compiled-out twin
//! return the same type.

/// How a node started now would be recorded ([`Node::recording`](crate::node::Node::recording)):
/// the one check a wrapped model call makes to choose its path.
///
/// ```no_run
/// use graphmind::node::{Node, Recording};
///
/// match Node::recording() {
///     Recording::Off => { /* call the SDK straight through */ }
///     Recording::Detached => { /* may send the request first, then start the node */ }
///     Recording::Attached => { /* start the node and gate before sending */ }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recording {
    /// Not recorded: the running task's session is disabled (or graphmind is compiled out).
    /// Call straight through.
    Off,
    /// Recorded, and its `before` gate could not hold: the session is enabled, no debugger
    /// that may control the app is attached, and no replay decides calls. An adapter may send
    /// its request before it starts the node
    /// ([`Node::start_step_lazy_since`](crate::node::Node::start_step_lazy_since)).
    Detached,
    /// Recorded, and its gates may hold: a debugger that may control the app is attached, or
    /// a replay decides calls. Start the node and pass its `before` gate before sending.
    Attached,
}
