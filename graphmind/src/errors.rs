//! Errors as events carry them: `{name, message}` from any displayable error.

use graphmind_protocol::{ErrorInfo, Extra};

/// `{name, message}` for `node.error` from any displayable error.
pub(crate) fn error_info(name: &str, message: String) -> ErrorInfo {
    ErrorInfo {
        name: name.to_owned(),
        message,
        stack: None,
        extra: Extra::new(),
    }
}

/// The last path segment of a type name, generics dropped (`my::Error<T>` → `Error`).
pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}
