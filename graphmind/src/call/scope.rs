//! The task-local scope a gated call runs in: its run (if any) and the hold clocks of the
//! `graphmind::time::timeout`s around it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::task::AtomicWaker;

use super::Host;
use crate::clock::HoldClock;
use crate::recording::Recording;

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
        Self::ask(false, |host| host.enabled(), crate::call::default_enabled)
    }

    /// How the running task's session records a node started now (a run's session, else the
    /// default session): [`Recording::Off`] while it is disabled, else
    /// [`Recording::Attached`] while a debugger that may control the app is attached (its
    /// gates may hold), else [`Recording::Detached`]. Replays are not read here.
    #[inline]
    pub(crate) fn recording_now() -> Recording {
        Self::ask(Recording::Off, Self::recording_of, || {
            if crate::call::default_enabled() {
                Self::recording_of(&*crate::call::default_host())
            } else {
                Recording::Off
            }
        })
    }

    fn recording_of(host: &dyn Host) -> Recording {
        if !host.enabled() {
            Recording::Off
        } else if host.attached() {
            Recording::Attached
        } else {
            Recording::Detached
        }
    }

    /// What `of` reads from the running task's run's host, else what `of_default` reads from
    /// the default session; `off` at once while the default session is off and no run of
    /// another session is alive anywhere (two relaxed loads, no thread-local).
    #[inline]
    fn ask<T>(off: T, of: impl Fn(&dyn Host) -> T, of_default: impl FnOnce() -> T) -> T {
        if !crate::call::default_enabled() && ACTIVE_RUNS.load(Ordering::Relaxed) == 0 {
            return off;
        }
        match SCOPE.try_with(|s| s.run.as_ref().map(|r| of(&*r.host))) {
            Ok(Some(answer)) => answer,
            _ => of_default(),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use super::{RunCtx, Scope};
    use crate::call::Host;
    use crate::call::recorder::Recorder;
    use crate::recording::Recording;

    #[tokio::test]
    async fn recording_now_reads_the_run_hosts_enabled_and_attached_flags() {
        let rec = Arc::new(Recorder::default());
        rec.disabled.store(true, Ordering::Relaxed);
        let host: Arc<dyn Host> = rec.clone();
        let scope = Scope {
            run: Some(Arc::new(RunCtx::new(
                host,
                "run_scope".into(),
                "scope".into(),
            ))),
            clock: None,
        };
        let seen = scope
            .enter(async {
                let mut seen = vec![(Scope::recording_now(), Scope::enabled_now())];
                rec.disabled.store(false, Ordering::Relaxed);
                seen.push((Scope::recording_now(), Scope::enabled_now()));
                rec.attached.store(true, Ordering::Relaxed);
                seen.push((Scope::recording_now(), Scope::enabled_now()));
                seen
            })
            .await;
        assert_eq!(
            seen,
            [
                (Recording::Off, false),
                (Recording::Detached, true),
                (Recording::Attached, true),
            ]
        );
    }
}
