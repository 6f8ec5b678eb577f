//! The hub a control command talks to ([`graphmind_connect::Hub`]), and its failures mapped to
//! the commands' exit codes.

pub use graphmind_connect::{DEFAULT_PORT, Hub as TargetHub};
use graphmind_connect::{ErrorKind, HubError};

use super::{Exit, Fail};

impl From<HubError> for Fail {
    fn from(e: HubError) -> Self {
        let code = match e.kind {
            ErrorKind::Usage => Exit::Usage,
            ErrorKind::Timeout => Exit::Timeout,
            ErrorKind::Unreachable => Exit::Unreachable,
            ErrorKind::Unauthorized => Exit::Unauthorized,
        };
        Fail::new(code, e.message)
    }
}
