//! `graphmind tui`: a terminal debugger for graphmind apps. It watches runs through a hub's
//! `/ws/ui` feed and acts on held calls through its HTTP API, keyboard first.
//!
//! The parts: [`state`] (what is known of the hub; applies feed frames, no I/O), [`access`]
//! (what the agent token may do), [`overlay`] and [`ui`] (key handling as a state machine that
//! emits [`event::AppEvent`]s), [`views`] (drawing), and the live app (terminal, feed
//! connection, the loop) behind [`run`].

pub mod access;
mod app;
pub mod conn;
pub mod event;
pub mod overlay;
pub mod state;
pub mod term;
pub mod ui;
pub mod views;

pub use app::{Options, resume_result, run};
