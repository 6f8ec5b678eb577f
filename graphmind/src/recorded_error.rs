//! [`RecordedError`]: a call's error as a recording holds it, rebuilt by a replay.

/// The error a recorded call ended with (its `node.error`: the error type's short name and
/// its message), handed back by a replay instead of running the call. A
/// `#[graphmind::tool(replay_errors)]` returning `Result<T, E>` returns
/// `Err(E::from(recorded))` for a call whose recorded outcome is an error, so its error type
/// opts in with `From<RecordedError>`; without it such a call runs live (errors are recorded
/// only as text, so a replay cannot rebuild another type's value):
///
/// ```
/// #[derive(Debug)]
/// struct LookupError(String);
///
/// impl std::fmt::Display for LookupError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str(&self.0)
///     }
/// }
///
/// impl From<graphmind::RecordedError> for LookupError {
///     fn from(e: graphmind::RecordedError) -> Self {
///         LookupError(e.message)
///     }
/// }
///
/// #[graphmind::tool(replay_errors)]
/// async fn lookup_order(order_id: String) -> Result<String, LookupError> {
///     Err(LookupError(format!("no order {order_id}")))
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedError {
    /// The recorded error type's short name (`LookupError`).
    pub name: String,
    /// The recorded message (the error's `Display`).
    pub message: String,
}

impl RecordedError {
    /// A recorded error of type `name` with this message.
    #[must_use]
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RecordedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RecordedError {}
