//! [`Rejection`]: a held call a person rejected with a reason, as the caller receives it.

/// A person rejected a held call at its `before` gate, with this reason; the call did not
/// run. A `#[graphmind::tool(reject)]` returning `Result<T, E>` returns
/// `Err(E::from(rejection))`, so its error type opts in with `From<Rejection>`:
///
/// ```
/// #[derive(Debug)]
/// enum SendError {
///     Smtp(String),
///     Rejected(String),
/// }
///
/// impl From<graphmind::Rejection> for SendError {
///     fn from(r: graphmind::Rejection) -> Self {
///         SendError::Rejected(r.reason)
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The reason the person gave (possibly empty; at most 2,000 characters).
    pub reason: String,
}

impl Rejection {
    /// A rejection with this reason.
    #[must_use]
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reason.is_empty() {
            f.write_str("the call was rejected by a person")
        } else {
            write!(f, "the call was rejected by a person: {}", self.reason)
        }
    }
}

impl std::error::Error for Rejection {}
