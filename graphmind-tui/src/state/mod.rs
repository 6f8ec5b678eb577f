//! What the terminal UI knows of the hub: the run list, the open pauses, the debug state, the
//! subscribed run's executions and the link. Applies feed frames; no I/O, no drawing.

mod run;

pub use run::{Exec, ExecStatus, RunData, Tokens};

use graphmind_protocol::feed::{DebugState, FeedFrame, PauseInfo, PauseState, RunSummary};
use graphmind_protocol::{Envelope, Mode};

/// The state of the feed connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// Connecting for the first time.
    Connecting,
    /// Connected and authorized.
    Live,
    /// The connection dropped (or never came up); trying again.
    Lost {
        /// Why, in one line.
        reason: String,
        /// Attempts since it was last live.
        attempts: u32,
    },
    /// The hub refused the token; no retry until the run file changes.
    Unauthorized(String),
}

/// Everything the views draw from.
#[derive(Debug, Clone)]
pub struct State {
    /// The hub's port.
    pub port: u16,
    /// The feed link.
    pub link: Link,
    /// The hub's version (from `hello`).
    pub version: Option<String>,
    /// Breakpoints and mode.
    pub debug: DebugState,
    /// Runs, newest first.
    pub runs: Vec<RunSummary>,
    /// Open pauses, oldest first (as the hub lists them).
    pub pauses: Vec<PauseInfo>,
    /// Decisions remembered for runs.
    pub remembered: Vec<graphmind_protocol::control::Remembered>,
    /// The subscribed run's executions, when one is subscribed.
    pub run: Option<RunData>,
    /// Epoch ms "now", for held times (set by the app; fixed in tests).
    pub now_ms: u64,
}

impl State {
    /// A state before anything arrived.
    #[must_use]
    pub fn new(port: u16) -> Self {
        Self {
            port,
            link: Link::Connecting,
            version: None,
            debug: DebugState {
                breakpoints: Vec::new(),
                mode: Mode::Run,
            },
            runs: Vec::new(),
            pauses: Vec::new(),
            remembered: Vec::new(),
            run: None,
            now_ms: 0,
        }
    }

    /// Applies one typed frame of the feed.
    pub fn apply(&mut self, frame: FeedFrame) {
        match frame {
            FeedFrame::Hello {
                version,
                debug,
                runs,
                pauses,
                remembered,
            } => {
                self.link = Link::Live;
                self.version = Some(version);
                self.debug = debug;
                self.runs = runs;
                self.pauses = pauses;
                self.remembered = remembered;
            }
            FeedFrame::Run { run } => {
                match self.runs.iter_mut().find(|r| r.run_id == run.run_id) {
                    Some(r) => *r = run,
                    None => self.runs.insert(0, run),
                }
                self.runs.sort_by_key(|r| std::cmp::Reverse(r.started_at));
            }
            FeedFrame::Pauses { pauses, remembered } => {
                self.pauses = pauses;
                self.remembered = remembered;
            }
            FeedFrame::Debug(d) => self.debug = d,
            FeedFrame::Removed { run_ids } => {
                self.runs.retain(|r| !run_ids.contains(&r.run_id));
                if self
                    .run
                    .as_ref()
                    .is_some_and(|r| run_ids.contains(&r.run_id))
                {
                    self.run = None;
                }
            }
            FeedFrame::Replayed { run_id } => {
                if let Some(r) = self.run.as_mut().filter(|r| r.run_id == run_id) {
                    r.replayed = true;
                }
            }
            FeedFrame::Unauthorized { message } => self.link = Link::Unauthorized(message),
        }
    }

    /// Applies stored or live events of a run; ignored unless that run is subscribed.
    pub fn apply_events(&mut self, run_id: &str, events: Vec<Envelope>) {
        if let Some(r) = self.run.as_mut().filter(|r| r.run_id == run_id) {
            for e in events {
                r.apply(e);
            }
        }
    }

    /// Starts showing `run_id` (its events come after a subscribe).
    pub fn subscribe(&mut self, run_id: &str) {
        if self.run.as_ref().is_none_or(|r| r.run_id != run_id) {
            self.run = Some(RunData::new(run_id));
        }
    }

    /// The link dropped.
    pub fn lost(&mut self, reason: impl Into<String>) {
        let attempts = match &self.link {
            Link::Lost { attempts, .. } => attempts + 1,
            _ => 1,
        };
        self.link = Link::Lost {
            reason: reason.into(),
            attempts,
        };
    }

    /// The open pauses, newest first (the order of the holds panel).
    #[must_use]
    pub fn holds_newest_first(&self) -> Vec<&PauseInfo> {
        let mut v: Vec<&PauseInfo> = self.pauses.iter().collect();
        v.sort_by(|a, b| b.since.cmp(&a.since).then(b.pause_id.cmp(&a.pause_id)));
        v
    }

    /// The open pause `pause_id` of `run_id`.
    #[must_use]
    pub fn pause(&self, run_id: &str, pause_id: &str) -> Option<&PauseInfo> {
        self.pauses
            .iter()
            .find(|p| p.run_id == run_id && p.pause_id == pause_id)
    }

    /// Open pauses of `run_id` that no resume is in flight for.
    #[must_use]
    pub fn held_in(&self, run_id: &str) -> usize {
        self.pauses
            .iter()
            .filter(|p| p.run_id == run_id && p.state == PauseState::Open)
            .count()
    }

    /// Whether a breakpoint holds every error (`pause on error`).
    #[must_use]
    pub fn pause_on_error(&self) -> bool {
        self.debug.breakpoints.iter().any(|m| {
            m.kind.is_none()
                && m.name.is_none()
                && m.point == Some(graphmind_protocol::PausePoint::Error)
        })
    }
}
