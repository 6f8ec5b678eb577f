//! Finding a running graphmind hub and talking to it, for the tools that act on one: the
//! `graphmind` control commands, `graphmind demo`, the terminal UI and the MCP server.
//!
//! A hub is found by its port (`--port`, else `GRAPHMIND_PORT`, else 4747, else the one live
//! hub of the run files in `$GRAPHMIND_HOME/run`), and acted on with the agent token its run
//! file holds. What that token may do is the hub's `--allow-control` level, also read from the
//! run file ([`Hub::allow_control`]).

pub mod example;
pub mod http;
mod hub;
pub mod paths;

pub use http::{Answer, HttpError};
pub use hub::{DEFAULT_PORT, ErrorKind, Hub, HubError, default_port, env_port, live_hubs};
