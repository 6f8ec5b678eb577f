//! The task-local scope a gated call runs in: its run (if any) and the hold clocks of the
//! `graphmind::time::timeout`s around it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::task::AtomicWaker;

use super::Host;
use crate::clock::HoldClock;

tokio::task_local! {
    static SCOPE: Scope;
}

/// What a future inside `graphmind::run` / `graphmind::time::timeout` sees.
#[derive(Clone, Default)]
pub(crate) struct Scope {
    pub(crate) run: Option<Arc<RunCtx>>,
    pub(crate) clock: Option<Arc<HoldClock>>,
}

impl Scope {
    /// The scope of the running task (empty outside any run or timeout).
    pub(crate) fn current() -> Self {
        SCOPE.try_with(Clone::clone).unwrap_or_default()
    }

    /// The running task's run, if any (one refcount increment, not a clone of the scope).
    pub(crate) fn run() -> Option<Arc<RunCtx>> {
        SCOPE.try_with(|s| s.run.clone()).ok().flatten()
    }

    /// Whether the running task's session records events: a run's session, else the default
    /// session. One thread-local read and one or two relaxed loads.
    #[inline]
    pub(crate) fn enabled_now() -> bool {
        // The disabled fast path: default session off and no run of another session alive
        // anywhere — two relaxed loads, no thread-local.
        if !crate::call::default_enabled() && ACTIVE_RUNS.load(Ordering::Relaxed) == 0 {
            return false;
        }
        match SCOPE.try_with(|s| s.run.as_ref().map(|r| r.host.enabled())) {
            Ok(Some(on)) => on,
            _ => crate::call::default_enabled(),
        }
    }

    /// Whether the running task's session is enabled with no debugger attached that may
    /// control the app (its gates cannot hold).
    pub(crate) fn detached_now() -> bool {
        if !crate::call::default_enabled() && ACTIVE_RUNS.load(Ordering::Relaxed) == 0 {
            return false;
        }
        match SCOPE.try_with(|s| {
            s.run
                .as_ref()
                .map(|r| r.host.enabled() && !r.host.attached())
        }) {
            Ok(Some(detached)) => detached,
            _ => {
                let host = crate::call::default_host();
                host.enabled() && !host.attached()
            }
        }
    }

    /// Runs `fut` with this scope installed.
    pub(crate) fn enter<F: Future>(self, fut: F) -> tokio::task::futures::TaskLocalFuture<Self, F> {
        SCOPE.scope(self, fut)
    }
}

/// Run scopes of enabled sessions alive right now (any session).
pub(crate) static ACTIVE_RUNS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// One run scope.
pub(crate) struct RunCtx {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) run_id: crate::ids::RunId,
    pub(crate) name: String,
    /// `agent:<name>`.
    pub(crate) agent_node: crate::inline_str::SmallStr,
    aborted: AtomicBool,
    waker: AtomicWaker,
    /// Invocation grouping state for model steps.
    pub(crate) steps: Mutex<StepState>,
    /// Time any gate of the run was held (union of overlapping holds).
    pub(crate) held: Arc<HoldClock>,
    /// The loop guard's streak of this run.
    pub(crate) streak: Mutex<crate::loop_guard::Streak>,
}

/// The last model-step invocation of a run, and the `graph.hint`s its steps sent.
#[derive(Default)]
pub(crate) struct StepState {
    pub(crate) invocation: Option<Invocation>,
    /// Fingerprints (run id and nodes) of the latest `graph.hint`s sent: an identical one is
    /// not sent again (a hint only declares nodes, and the run has them already).
    pub(crate) hinted: Vec<u64>,
}

impl StepState {
    /// How many hint fingerprints are kept.
    const HINTS_KEPT: usize = 8;

    /// Whether a hint with fingerprint `fp` is new (then it is remembered).
    pub(crate) fn first_hint(&mut self, fp: u64) -> bool {
        if self.hinted.contains(&fp) {
            return false;
        }
        if self.hinted.len() >= Self::HINTS_KEPT {
            self.hinted.remove(0);
        }
        self.hinted.push(fp);
        true
    }
}

/// One invocation: consecutive model steps of one conversation.
pub(crate) struct Invocation {
    pub(crate) id: String,
    pub(crate) key: Option<String>,
    pub(crate) first: Option<u64>,
    pub(crate) len: usize,
    pub(crate) steps: u32,
    /// The response id of the invocation's latest step, once it answered with one
    /// ([`Grouping::After`](crate::model::Grouping::After) continues it).
    pub(crate) response: Option<String>,
}

impl Drop for RunCtx {
    fn drop(&mut self) {
        ACTIVE_RUNS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl RunCtx {
    pub(crate) fn new(host: Arc<dyn Host>, run_id: crate::ids::RunId, name: String) -> Self {
        ACTIVE_RUNS.fetch_add(1, Ordering::Relaxed);
        Self {
            host,
            agent_node: format!("agent:{name}").into(),
            run_id,
            name,
            aborted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            steps: Mutex::new(StepState::default()),
            held: Arc::new(HoldClock::new(None)),
            streak: Mutex::new(crate::loop_guard::Streak::default()),
        }
    }

    /// Marks the run aborted and wakes its scope, which drops the run's future.
    pub(crate) fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
        self.waker.wake();
    }

    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    pub(crate) fn register_waker(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }
}
