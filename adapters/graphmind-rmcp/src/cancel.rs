//! A call's node while the call is in flight: dropped unfinished, it is a cancellation.

use graphmind::node::Node;
use graphmind::protocol::{Extra, Status};
use serde_json::Value;

/// The node of a call in flight: dropped unfinished (the caller dropped the call's future,
/// at a held gate or during the request), it finishes `aborted` with `cancelled: true`.
pub(crate) struct Cancel(pub(crate) Option<Node>);

impl Cancel {
    pub(crate) fn get(&mut self) -> &mut Node {
        self.0
            .as_mut()
            .expect("the node is taken only to finish it")
    }

    pub(crate) fn take(&mut self) -> Node {
        self.0.take().expect("the node is taken only once")
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        if let Some(node) = self.0.take() {
            let mut extra = Extra::new();
            extra.insert("cancelled".into(), Value::Bool(true));
            node.finish_with(Status::Aborted, None, None, extra);
        }
    }
}
