//! graphmind: a live debugger for AI agents. Instrument an agent's model steps and tool
//! calls; a debugger (`graphmind serve`, or any GraphMind v1 viewer) draws each run as a live
//! graph and can hold execution at gates (before a call, after it, or when it fails) and
//! resume with continue, retry, inject or abort.
//!
//! # The model
//! - A [`Session`] is one connection to one debugger. Most apps use the process default:
//!   [`init`] sets it from a [`Config`] and returns its [`InitGuard`], which flushes and
//!   closes the session when dropped (bind it for the life of `main`: `let _gm =
//!   graphmind::init(…);`); [`session`] returns it (built from the environment if `init`
//!   was never called). More sessions can be made with [`Session::new`]; one closes the
//!   same way when its last handle is dropped.
//! - Instrumented code records events (run started, node started/finished, tokens, pauses)
//!   into the session's replay ring as plain structs. The app never waits for the socket: a
//!   transport thread with its own small runtime serializes and sends them, and replays the
//!   whole ring (5,000 events / 8 MiB, oldest dropped first and counted) with the original
//!   sequence numbers every time a debugger attaches. With `graphmind serve` (which
//!   acknowledges what it committed) an event leaves the ring's account only once stored:
//!   one evicted before that is counted lost ([`Stats::lost`]) and its seq announced to the
//!   hub, which marks its run incomplete — recorded = stored + announced lost, even when the
//!   hub dies with more than the ring in flight.
//! - The transport connects lazily, on the first event, gate or [`Session::ready`]. Until a
//!   debugger has answered the handshake the session is detached: every gate continues at
//!   once and nothing waits. When the debugger goes away, every held gate continues at once.
//! - Everything fails open: a missing, slow, hung or incompatible debugger never breaks or
//!   blocks the app, and bad frames from it are ignored.
//! - Switches: `GRAPHMIND_DISABLED=1` turns instrumentation off; a production environment
//!   (`GRAPHMIND_ENV`, `ENVIRONMENT`, `APP_ENV`, `RUST_ENV`, `ENV` or `NODE_ENV` =
//!   `production`/`prod`, first one set wins) turns it off unless `GRAPHMIND=1`;
//!   `GRAPHMIND_URL` names the debugger (default `ws://127.0.0.1:4747/ingest`). A disabled
//!   session opens no socket, starts no thread and allocates no buffer. With the cargo
//!   feature `enabled` off, the whole API stays but does nothing.
//!
//! # Gates, seen from the app
//! An instrumented call (`#[tool]`, `#[model_step]`, or a [`node`] handle) has three gates:
//! `before` it runs, `after` it returns, and `error` when it returns `Err`. A gate holds only
//! while a debugger is attached and one of its breakpoints (or step mode, or the loop guard)
//! matches; the call's future simply stays pending meanwhile, so other tasks go on. What the
//! caller gets back depends on how the debugger releases it:
//!
//! | action | at `before` | at `after` | at `error` |
//! |---|---|---|---|
//! | continue | the call runs | the real result | the real error |
//! | retry | the call runs | the call runs again (from `before`) | the call runs again |
//! | inject | the value, without running the call | the value instead | the value instead of the error |
//! | abort | the run's future is dropped; the run scope returns [`Err(Aborted)`](Aborted) | same | same |
//! | continue with an edited input | the call runs with the edited arguments (or model request) | — | — |
//! | reject with a reason | a `#[tool(reject)]` returns `Err(E::from(`[`Rejection`]`))` without running | — | — |
//!
//! Editing (GraphMind 0.6 `edit-input`, honoured only from a hub that announces it, off
//! with `GRAPHMIND_DISABLE_EDIT_INPUT=1`): the edited values replace the arguments of the
//! same names and must deserialize into their types, else the edit is refused and the gate
//! stays held; a function whose recorded arguments borrow (`&str`, a lifetime, `impl
//! Trait`) or whose attribute says `edit = false` is not editable. Reject: opt in with
//! `#[graphmind::tool(reject)]` on a tool returning `Result<T, E>` where
//! `E: From<graphmind::Rejection>`; elsewhere a reject is refused. See `docs/PROTOCOL.md`.
//!
//! An injected value is deserialized into the function's return type (its `Ok` type for a
//! `Result`, returned as `Ok`); one that does not fit is refused back to the debugger and the
//! gate stays held, so the app never sees a value of the wrong shape. A streaming return
//! (`impl Stream`) has no `after` gate and refuses inject the same way. Retry runs the body
//! again with fresh clones of its arguments; where it cannot (a `&mut` argument, `self` by
//! value, or `retry = false` on the attribute) it is refused the same way. A held gate continues by itself when
//! the debugger disconnects, stops answering pings (3 s by default), when
//! [`Config::pause_timeout`] runs out, on [`Session::dispose`], or when the caller drops the
//! call's future. Timeouts around held calls should use [`time::timeout`], whose clock stops
//! while a gate inside it is held.
//!
//! # Where things are
//! - [`Config`]: every setting (debugger URL, meta, ring limits, token interval, timeouts,
//!   redaction with `hide_*`, the loop guard with `on_loop`), each with its environment
//!   variable where one exists.
//! - [`run()`], [`run_result`], [`in_current_run`], [`current_run_id`] and [`run!`]: run
//!   scopes.
//! - [`model`]: the traits that let a model SDK's request, response and stream chunks show up
//!   in a model step.
//! - [`node`], [`tee`], [`Session::emit`]: the low-level API the macros are built on, for
//!   adapters and hand-written instrumentation.
//! - [`Session::stats`]: what is buffered, dropped, held and sent.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! # async fn demo() {
//! let gm = graphmind::init(graphmind::Config::new("support-agent"));
//! let attached = gm.ready(Duration::from_millis(500)).await; // optional; false = detached
//! println!("attached: {attached}, {:?}", gm.stats());
//! gm.dispose().await;
//! # }
//! ```

#[cfg(feature = "enabled")]
mod clock;
mod config;
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
mod env;
#[cfg(feature = "enabled")]
mod errors;
#[cfg(feature = "enabled")]
mod ids;
#[cfg(feature = "enabled")]
mod implicit_run;
#[cfg(feature = "enabled")]
mod loop_guard;
#[cfg(feature = "enabled")]
mod session;
#[cfg(not(feature = "enabled"))]
#[path = "disabled/session.rs"]
mod session;
#[cfg(feature = "enabled")]
mod sites;
#[cfg(feature = "enabled")]
mod transport;

pub use config::{
    Config, LOOP_THRESHOLD, OnLoop, RING_BYTES, RING_EVENTS, TOKEN_INTERVAL, TrustHub, WarnHook,
};
pub use env::{DEFAULT_URL, PRODUCTION_VARS};
pub use session::{InitGuard, Session, Stats, init, session, shutdown};

/// The wire protocol types (messages, payloads, matchers), for [`Session::emit`] and adapters.
pub use graphmind_protocol as protocol;

#[cfg(feature = "enabled")]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[cfg(feature = "enabled")]
mod breakpoints;
#[cfg(feature = "enabled")]
mod call;
#[cfg(feature = "enabled")]
mod captured;
mod delay_queue;
#[cfg(feature = "enabled")]
mod edit;
#[cfg(feature = "enabled")]
mod event;
mod extras;
mod fail_open;
#[cfg(feature = "enabled")]
mod gate;
#[cfg(feature = "enabled")]
mod inline_str;
#[cfg(feature = "enabled")]
mod lazy;
pub mod model;
#[cfg(feature = "enabled")]
pub mod node;
#[cfg(not(feature = "enabled"))]
#[path = "disabled/node.rs"]
pub mod node;
mod poll_once;
mod recorded_error;
mod recording;
#[cfg(feature = "enabled")]
mod redact;
mod rejection;
#[cfg(feature = "enabled")]
mod replay;
mod resume;
mod roster;
mod run;
#[cfg(feature = "enabled")]
pub mod tee;
#[cfg(not(feature = "enabled"))]
#[path = "disabled/tee.rs"]
pub mod tee;
#[cfg(all(feature = "enabled", feature = "testing"))]
pub mod testing;
pub mod time;
pub use recorded_error::RecordedError;
pub use rejection::Rejection;
pub use roster::tools as tool_roster;
pub use run::{Aborted, current_run_id, in_current_run, run, run_result};

pub use graphmind_macros::{model_step, tool};
mod run_macro;

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
