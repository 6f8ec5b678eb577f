//! `AppEvent`: every side effect a view may ask for, and the answers that come back.

use graphmind_protocol::control::ResumeRequest;
use graphmind_protocol::{BreakpointMatcher, Mode};

use crate::access::Action;

/// What the views ask the app to do; the app does it off the UI loop and answers with an
/// [`Outcome`].
#[derive(Debug, Clone, PartialEq)]
pub enum AppEvent {
    /// Show this run: replay its events, then tail it.
    Subscribe(String),
    /// Stop tailing the run shown.
    Unsubscribe,
    /// Release a held gate.
    Resume {
        /// The run.
        run_id: String,
        /// The pause.
        pause_id: String,
        /// The overlay's choice (step turns step mode on first).
        action: Action,
        /// The request body.
        request: ResumeRequest,
    },
    /// Open `$EDITOR` on this text for an inject or an edited input.
    OpenEditor {
        /// The pause it is for.
        pause_id: String,
        /// Inject or edit.
        action: Action,
        /// The text the editor starts with.
        prefill: String,
    },
    /// Look up the shape of an output the held node returned before (an inject's prefill).
    FetchExample {
        /// The run.
        run_id: String,
        /// The pause.
        pause_id: String,
        /// The held node.
        node_id: String,
    },
    /// Set the mode.
    SetMode(Mode),
    /// Add a breakpoint.
    BreakpointSet(BreakpointMatcher),
    /// Remove a breakpoint (`None`: all of them).
    BreakpointClear(Option<BreakpointMatcher>),
    /// Leave.
    Quit,
}

/// How a resume ended, as the hub answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeResult {
    /// The app released the gate.
    Resumed,
    /// The app (or hub) refused; the gate stays held.
    Refused(String),
    /// Sent, but the app did not confirm in time.
    Sent,
    /// No such open pause, or another resume took it.
    Gone(String),
    /// Any other failure (forbidden, unreachable, invalid).
    Failed(String),
}

/// An answer to an [`AppEvent`], back to the views.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The hub answered a resume.
    Resume {
        /// The pause.
        pause_id: String,
        /// The answer.
        result: ResumeResult,
    },
    /// The editor closed: the text saved, or `None` when nothing was saved.
    Editor {
        /// The pause.
        pause_id: String,
        /// The text.
        text: Option<String>,
    },
    /// The shape of an output the held node returned before, if one is stored.
    Example {
        /// The pause.
        pause_id: String,
        /// The shape.
        value: Option<serde_json::Value>,
    },
    /// A breakpoint or mode change ended (`Err`: why it failed).
    Debug(Result<String, String>),
}
