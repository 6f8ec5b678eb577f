//! A session's implicit run: the run of calls outside any run scope, announced with
//! `run.started {meta:{name:"implicit", implicit:true}}` on first use and finished when the
//! session is disposed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::ids::RunId;
use crate::loop_guard::Streak;

/// The implicit run's id (once started), whether it ended, and its loop-guard streak.
#[derive(Default)]
pub(crate) struct ImplicitRun {
    id: OnceLock<RunId>,
    ended: AtomicBool,
    /// The loop guard's streak of the implicit run.
    pub(crate) streak: Mutex<Streak>,
}

impl ImplicitRun {
    /// The run's id; `start` makes it (and announces the run) on first use.
    pub(crate) fn get_or_start(&self, start: impl FnOnce() -> RunId) -> &RunId {
        self.id.get_or_init(start)
    }

    /// The id of a started run the first time this is called, so its caller announces its end
    /// exactly once; `None` if it never started or already ended.
    pub(crate) fn end(&self) -> Option<&RunId> {
        let id = self.id.get()?;
        (!self.ended.swap(true, Ordering::Relaxed)).then_some(id)
    }
}
