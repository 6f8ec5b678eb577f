//! The replayer: a recorded run answers the live run's calls. Each tool call and model step
//! is matched to the recording by node and order within the run (the 3rd live call of
//! `tool:lookup` takes the 3rd recorded one), its live input is checked against the recorded
//! one, and, up to the fork point, its recorded output is injected at its `before` gate (the
//! body does not run). From the fork point on — a step number or a node — the run is live.
//!
//! Concurrent calls of one node may start in another order than they were recorded in: a
//! call takes the first recorded call of its node not yet taken whose input equals its own,
//! and only when there is none the first not yet taken (whose input is then checked, and
//! reported as a divergence when it differs). So two parallel `lookup_order` calls that swap
//! places are each answered with their own recorded output, not reported as diverged.
//!
//! Configured by the environment of a session (`GRAPHMIND_REPLAY=<recording.ndjson>`,
//! `GRAPHMIND_REPLAY_UNTIL=<step N | node>`, `GRAPHMIND_REPLAY_ON_DIVERGE=stop|live`,
//! `GRAPHMIND_REPLAY_HOLD=1`), or by `graphmind::testing` (no hub, no socket).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

pub use self::outcome::{Divergence, LiveReason, OnDiverge, Outcome, Until};
use graphmind_protocol::recording::{Recording, Step, first_diff};

mod outcome;

/// Whether any replayer was ever made in this process: the one branch the call paths pay
/// when no replay is configured.
static ANY: AtomicBool = AtomicBool::new(false);

/// Whether a replayer exists anywhere (one relaxed load).
#[inline]
pub(crate) fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

/// What the replayer decided for one live call.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Answer with the recorded output (and chunks, for a stream); the body does not run.
    Serve(Served),
    /// Answer with the recorded error, when the call's error type is built from one (a
    /// `#[tool(replay_errors)]`); other calls run live.
    ServeError(ServedError),
    /// Run the body.
    Live,
    /// The fork point: run the body, holding at the `before` gate first when asked to.
    Fork {
        /// Hold at the gate (a real pause on the hub) so a person can edit or inject.
        hold: bool,
    },
    /// The live input differs from the recorded one and the replay stops: the run is
    /// aborted at this call.
    Stop(Box<Divergence>),
}

/// A recorded answer.
#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) step: usize,
    pub(crate) output: Value,
    pub(crate) chunks: Option<Vec<Value>>,
}

/// A recorded error.
#[derive(Debug)]
pub(crate) struct ServedError {
    pub(crate) step: usize,
    pub(crate) error: crate::RecordedError,
}

/// One recording being replayed.
#[derive(Debug)]
pub(crate) struct Replayer {
    /// The recording, once read (`GRAPHMIND_REPLAY` is read off the caller's thread).
    load: Arc<Load>,
    until: Until,
    on_diverge: OnDiverge,
    hold: bool,
    /// `GRAPHMIND_REPLAY_SUMMARY`: where the replay's summary is kept up to date (see
    /// [`Replayer::write_summary`]).
    summary: Option<std::path::PathBuf>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Per recorded step (by position): whether a live call took it.
    taken: Vec<bool>,
    /// The step the live part began at (fork point or divergence).
    forked: Option<usize>,
    outcomes: Vec<Outcome>,
    /// Per node id: how many of its recorded calls (in order) are all taken, so a pick
    /// starts past them (scanning them again made replaying many calls of one node
    /// quadratic).
    taken_prefix: HashMap<String, usize>,
    /// Calls answered from the recording that finished with an error the recorded call did
    /// not have (the app could not use the answer): the recorded step and its node.
    failed: Vec<(usize, String)>,
}

/// A recording read and indexed.
#[derive(Debug)]
struct Loaded {
    recording: Recording,
    /// Indexes into `recording.steps` per node id, in order.
    by_node: HashMap<String, Vec<usize>>,
}

impl Loaded {
    fn new(recording: Recording) -> Self {
        let mut by_node: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, s) in recording.steps.iter().enumerate() {
            by_node.entry(s.node_id.clone()).or_default().push(i);
        }
        Self { recording, by_node }
    }
}

/// A recording being read on its own thread: the recorded run's id as soon as the first step
/// names it, then the whole recording. `None` in either: it could not be read (warned about
/// once; every call runs live).
#[derive(Debug, Default)]
struct Load {
    run_id: OnceLock<Option<String>>,
    loaded: OnceLock<Option<Loaded>>,
}

/// How long reading a recording may take before the session says it is still reading.
const SLOW_LOAD: Duration = Duration::from_secs(1);

impl Load {
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    fn ready(recording: Recording) -> Self {
        let load = Self::default();
        let _ = load.run_id.set(Some(recording.run_id.clone()));
        let _ = load.loaded.set(Some(Loaded::new(recording)));
        load
    }

    /// Reads and indexes the recording at `path` on a thread of its own (`init` does not
    /// wait for it: a recording of 200,000 steps takes seconds); `warn` says, once, when it
    /// cannot be read, or when it is still being read after [`SLOW_LOAD`].
    fn start(path: String, warn: WarnFn) -> Arc<Self> {
        let load = Arc::new(Self::default());
        let read = {
            let load = Arc::clone(&load);
            let warn = Arc::clone(&warn);
            let path = path.clone();
            move || load.read(&path, &*warn)
        };
        let spawned = std::thread::Builder::new()
            .name("graphmind-replay-load".into())
            .spawn(read.clone());
        if spawned.is_err() {
            read();
            return load;
        }
        let slow = Arc::downgrade(&load);
        crate::delay_queue::after(SLOW_LOAD, move || {
            if let Some(load) = slow.upgrade()
                && load.loaded.get().is_none()
            {
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                warn(&format!(
                    "GRAPHMIND_REPLAY: still reading {path} ({:.1} MB) after {} s; replayed calls wait for it",
                    size as f64 / 1e6,
                    SLOW_LOAD.as_secs()
                ));
            }
        });
        load
    }

    fn read(&self, path: &str, warn: &dyn Fn(&str)) {
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("GRAPHMIND_REPLAY: cannot read {path}: {e}"))?;
            let _ = self.run_id.set(first_run_id(&text));
            Recording::parse(&text, None).map_err(|e| format!("GRAPHMIND_REPLAY: {path}: {}", e.0))
        }))
        .unwrap_or_else(|_| Err(format!("GRAPHMIND_REPLAY: {path}: reading it failed")));
        match read {
            Ok(recording) => {
                let _ = self.run_id.set(Some(recording.run_id.clone()));
                let _ = self.loaded.set(Some(Loaded::new(recording)));
            }
            Err(e) => {
                let _ = self.run_id.set(None);
                let _ = self.loaded.set(None);
                warn(&format!("{e}; running without replay"));
            }
        }
    }

    /// The recording, waiting for it to be read.
    fn wait(&self) -> Option<&Loaded> {
        self.loaded.wait().as_ref()
    }
}

/// How a replayer warns (the session's warning hook, or stderr).
type WarnFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The run id a recording's steps are read from (see [`Recording::parse`]): that of its
/// first tool or model step. Reads lines only up to it.
fn first_run_id(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let v: Value = serde_json::from_str(line.trim()).ok()?;
        let p = v.get("payload")?;
        (v.get("type")?.as_str()? == "node.started"
            && p.get("kind").and_then(Value::as_str) != Some("agent"))
        .then(|| {
            v.get("runId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
    })
}

impl Replayer {
    /// A replayer of `recording`.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    pub(crate) fn new(
        recording: Recording,
        until: Until,
        on_diverge: OnDiverge,
        hold: bool,
    ) -> Self {
        Self::with_load(Arc::new(Load::ready(recording)), until, on_diverge, hold)
    }

    fn with_load(load: Arc<Load>, until: Until, on_diverge: OnDiverge, hold: bool) -> Self {
        ANY.store(true, Ordering::Relaxed);
        Self {
            load,
            until,
            on_diverge,
            hold,
            summary: None,
            state: Mutex::new(State::default()),
        }
    }

    /// The replayer the environment asks for (`GRAPHMIND_REPLAY` and friends), read through
    /// `var`; the recording is read on a thread of its own (see [`Load::start`]), and `warn`
    /// says when it cannot be read (the session then runs without replay) or is slow to read.
    pub(crate) fn from_env(var: &dyn Fn(&str) -> Option<String>, warn: WarnFn) -> Option<Self> {
        let path = var("GRAPHMIND_REPLAY").filter(|p| !p.trim().is_empty())?;
        let until = match var("GRAPHMIND_REPLAY_UNTIL") {
            Some(u) if !u.trim().is_empty() => Until::parse(&u),
            _ => Until::End,
        };
        let on_diverge = match var("GRAPHMIND_REPLAY_ON_DIVERGE").as_deref().map(str::trim) {
            Some("live") => OnDiverge::Live,
            _ => OnDiverge::Stop,
        };
        let hold = var("GRAPHMIND_REPLAY_HOLD").is_some_and(|v| matches!(v.trim(), "1" | "true"));
        let summary = var("GRAPHMIND_REPLAY_SUMMARY")
            .filter(|p| !p.trim().is_empty())
            .map(|p| std::path::PathBuf::from(p.trim()));
        let load = Load::start(path.trim().to_owned(), warn);
        let mut r = Self::with_load(load, until, on_diverge, hold);
        r.summary = summary;
        Some(r)
    }

    /// The recorded run's id, waiting until the recording names it; `None` when the
    /// recording could not be read.
    pub(crate) fn source_run(&self) -> Option<&str> {
        self.load.run_id.wait().as_deref()
    }

    /// The fork point as configured.
    pub(crate) fn until(&self) -> &Until {
        &self.until
    }

    /// What happened to each live call so far.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) fn outcomes(&self) -> Vec<Outcome> {
        self.lock().outcomes.clone()
    }

    /// The step the live part began at, if it began.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) fn forked_at(&self) -> Option<usize> {
        self.lock().forked
    }

    /// The recorded steps (1-based) that ended in an error; empty while the recording is
    /// unread or could not be read.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) fn error_steps(&self) -> Vec<usize> {
        self.load
            .loaded
            .get()
            .and_then(Option::as_ref)
            .map(|l| {
                l.recording
                    .steps
                    .iter()
                    .filter(|s| s.status == "error")
                    .map(|s| s.index)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A call answered from recorded step `step` finished with an error: counted as failed
    /// unless the recorded call ended in an error too.
    pub(crate) fn finished_with_error(&self, step: usize, node_id: &str) {
        let recorded_error = self
            .load
            .loaded
            .get()
            .and_then(Option::as_ref)
            .and_then(|l| l.recording.steps.get(step.wrapping_sub(1)))
            .is_some_and(|s| s.status == "error");
        if recorded_error {
            return;
        }
        let mut st = self.lock();
        st.failed.push((step, node_id.to_owned()));
        self.write_summary(&st);
    }

    /// Keeps the replay's summary at `GRAPHMIND_REPLAY_SUMMARY` (when set) up to date: one
    /// JSON object — `recordedRun`, `recordedSteps`, `served`, `live`, `unanswered`,
    /// `diverged`, `failed`, and `problems` (at most 20 lines naming the steps) — rewritten
    /// after every decision, so that `graphmind replay` can tell whether the replay was whole
    /// even when the app exits without closing its session. Written under the state's lock,
    /// through a temporary file renamed over it.
    fn write_summary(&self, st: &State) {
        let Some(path) = &self.summary else {
            return;
        };
        let loaded = self.load.loaded.get().and_then(Option::as_ref);
        let mut served = 0usize;
        let mut live = 0usize;
        let mut unanswered = 0usize;
        let mut diverged = 0usize;
        let mut problems: Vec<String> = Vec::new();
        for o in &st.outcomes {
            match o {
                Outcome::Served { .. } => served += 1,
                Outcome::Diverged(d) => {
                    diverged += 1;
                    problems.push(d.to_string());
                }
                Outcome::Live {
                    step,
                    node_id,
                    reason,
                } => {
                    live += 1;
                    if reason.unanswered() {
                        unanswered += 1;
                        let at = step
                            .map_or_else(|| node_id.clone(), |s| format!("step {s} ({node_id})"));
                        problems.push(format!("{at} ran live: {}", reason.describe()));
                    }
                }
            }
        }
        for (step, node_id) in &st.failed {
            problems.push(format!(
                "step {step} ({node_id}) was answered from the recording but finished with an error"
            ));
        }
        problems.truncate(20);
        let summary = serde_json::json!({
            "recordedRun": loaded.map(|l| l.recording.run_id.as_str()),
            "recordedSteps": loaded.map_or(0, |l| l.recording.steps.len()),
            "served": served,
            "live": live,
            "unanswered": unanswered,
            "diverged": diverged,
            "failed": st.failed.len(),
            "problems": problems,
        });
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, summary.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    /// Decides one live call of node `node_id` (`name`) whose input is `input`; the fields at
    /// `minted` (provider-minted, see [`crate::model::provider_minted`]) are not compared.
    pub(crate) fn take(
        &self,
        node_id: &str,
        name: &str,
        input: Option<&Value>,
        minted: &[&str],
    ) -> Decision {
        let Some(loaded) = self.load.wait() else {
            // The recording could not be read (warned about): the call runs live.
            return Decision::Live;
        };
        let mut st = self.lock();
        let decision = self.decide(loaded, &mut st, node_id, name, input, minted);
        self.write_summary(&st);
        decision
    }

    fn decide(
        &self,
        loaded: &Loaded,
        st: &mut State,
        node_id: &str,
        name: &str,
        input: Option<&Value>,
        minted: &[&str],
    ) -> Decision {
        if st.taken.len() != loaded.recording.steps.len() {
            st.taken = vec![false; loaded.recording.steps.len()];
        }
        let at = Self::pick(loaded, st, node_id, name, input, minted);
        if let Some(i) = at {
            st.taken[i] = true;
        }
        let live = |st: &mut State, step: Option<usize>, reason: LiveReason| {
            st.outcomes.push(Outcome::Live {
                step,
                node_id: node_id.to_owned(),
                reason,
            });
        };
        if st.forked.is_some() {
            live(st, at.map(|i| i + 1), LiveReason::AfterFork);
            return Decision::Live;
        }
        let Some(at) = at else {
            live(st, None, LiveReason::NotRecorded);
            return Decision::Live;
        };
        let step = &loaded.recording.steps[at];
        if self.until.reached(step) {
            st.forked = Some(step.index);
            live(st, Some(step.index), LiveReason::Fork);
            return Decision::Fork { hold: self.hold };
        }
        if let Some(d) = divergence(step, name, input, minted) {
            st.forked = Some(step.index);
            st.outcomes.push(Outcome::Diverged(d.clone()));
            return match self.on_diverge {
                OnDiverge::Stop => Decision::Stop(Box::new(d)),
                OnDiverge::Live => Decision::Live,
            };
        }
        match answer(step) {
            Some(output) => {
                st.outcomes.push(Outcome::Served {
                    step: step.index,
                    node_id: node_id.to_owned(),
                });
                Decision::Serve(Served {
                    step: step.index,
                    output,
                    chunks: step.chunks.clone(),
                })
            }
            None if step.status == "error" && step.error.is_some() => {
                let e = step.error.as_ref().map_or_else(
                    || crate::RecordedError::new("", ""),
                    |e| crate::RecordedError::new(e.name.clone(), e.message.clone()),
                );
                st.outcomes.push(Outcome::Served {
                    step: step.index,
                    node_id: node_id.to_owned(),
                });
                Decision::ServeError(ServedError {
                    step: step.index,
                    error: e,
                })
            }
            None => {
                let reason = if step.status == "ok" {
                    LiveReason::NoOutput
                } else {
                    LiveReason::RecordedError
                };
                live(st, Some(step.index), reason);
                Decision::Live
            }
        }
    }

    /// The recorded step (by position) a live call of `node_id` takes: the first not yet
    /// taken whose input equals `input` (before the fork point), else the first not yet taken.
    fn pick(
        loaded: &Loaded,
        st: &mut State,
        node_id: &str,
        name: &str,
        input: Option<&Value>,
        minted: &[&str],
    ) -> Option<usize> {
        let list = loaded.by_node.get(node_id)?;
        let State {
            taken,
            taken_prefix,
            forked,
            ..
        } = st;
        let skip = match taken_prefix.get_mut(node_id) {
            Some(n) => n,
            None => taken_prefix.entry(node_id.to_owned()).or_insert(0),
        };
        while list.get(*skip).is_some_and(|&i| taken[i]) {
            *skip += 1;
        }
        let mut free = list[*skip..].iter().copied().filter(|&i| !taken[i]);
        let first = free.next()?;
        if forked.is_some()
            || divergence(&loaded.recording.steps[first], name, input, minted).is_none()
        {
            return Some(first);
        }
        Some(
            free.find(|&i| divergence(&loaded.recording.steps[i], name, input, minted).is_none())
                .unwrap_or(first),
        )
    }

    /// A served answer could not be used after all (it does not fit the call's type, a
    /// stream step recorded no chunks, or a recorded error the call's error type is not
    /// built from): the call runs live, and the report says so.
    pub(crate) fn unserved(&self, step: usize, reason: LiveReason) {
        let mut st = self.lock();
        if let Some(o) = st
            .outcomes
            .iter_mut()
            .rev()
            .find(|o| matches!(o, Outcome::Served { step: s, .. } if *s == step))
        {
            let node_id = match o {
                Outcome::Served { node_id, .. } => std::mem::take(node_id),
                _ => String::new(),
            };
            *o = Outcome::Live {
                step: Some(step),
                node_id,
                reason,
            };
        }
        self.write_summary(&st);
    }
}

/// The replayer of a session whose environment configures one, with `replayUntil` (the fork
/// point) added to the session's run meta (`replayOf`, the recorded run, is added when a run
/// starts: see [`Replayer::source_run`]). The recording is read off the caller's thread: one
/// that cannot be read is warned about and the session runs without replay.
pub(crate) fn session_replayer(config: &mut crate::config::Config) -> Option<Arc<Replayer>> {
    let warn: WarnFn = match config.warn.clone() {
        Some(hook) => hook,
        None => Arc::new(|m: &str| eprintln!("[graphmind] {m}")),
    };
    let r = Replayer::from_env(&|k| config.var(k), warn)?;
    if let Some(until) = r.until().to_meta() {
        config.meta.insert("replayUntil".into(), until);
    }
    Some(Arc::new(r))
}

/// Whether a recorded value was hidden by redaction (then it is not compared or served).
fn redacted(v: &Value) -> bool {
    v.as_str() == Some(crate::redact::PLACEHOLDER)
}

/// Whether a recorded value was cut to the payload budget.
fn truncated(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("__graphmindTruncated") || m.values().any(truncated),
        Value::Array(a) => a.iter().any(truncated),
        _ => false,
    }
}

fn divergence(
    step: &Step,
    name: &str,
    live: Option<&Value>,
    minted: &[&str],
) -> Option<Divergence> {
    let recorded = step
        .input
        .as_ref()
        .filter(|v| !redacted(v) && !truncated(v))?;
    let null = Value::Null;
    let live = live.unwrap_or(&null);
    let d = match minted {
        [] => first_diff(recorded, live)?,
        _ => {
            // Compared without what the provider minted.
            let r = crate::model::without_minted(recorded, minted);
            let l = crate::model::without_minted(live, minted);
            first_diff(r.as_ref().unwrap_or(recorded), l.as_ref().unwrap_or(live))?
        }
    };
    Some(Divergence {
        step: step.index,
        node_id: step.node_id.clone(),
        name: if step.name.is_empty() {
            name.to_owned()
        } else {
            step.name.clone()
        },
        path: d.path,
        recorded: d.left,
        live: d.right,
    })
}

fn answer(step: &Step) -> Option<Value> {
    if step.status != "ok" {
        return None;
    }
    if step.streaming {
        // A stream is answered from its chunks; the output only says it was recorded.
        return step
            .chunks
            .as_ref()
            .map(|_| step.output.clone().unwrap_or(Value::Null));
    }
    step.output
        .clone()
        .filter(|v| !redacted(v) && !truncated(v))
}

#[cfg(test)]
mod tests;
