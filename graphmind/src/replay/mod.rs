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
        let load = Load::start(path.trim().to_owned(), warn);
        Some(Self::with_load(load, until, on_diverge, hold))
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

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Decides one live call of node `node_id` (`name`) whose input is `input`.
    pub(crate) fn take(&self, node_id: &str, name: &str, input: Option<&Value>) -> Decision {
        let Some(loaded) = self.load.wait() else {
            // The recording could not be read (warned about): the call runs live.
            return Decision::Live;
        };
        let mut st = self.lock();
        if st.taken.len() != loaded.recording.steps.len() {
            st.taken = vec![false; loaded.recording.steps.len()];
        }
        let at = Self::pick(loaded, &mut st, node_id, name, input);
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
            live(&mut st, at.map(|i| i + 1), LiveReason::AfterFork);
            return Decision::Live;
        }
        let Some(at) = at else {
            live(&mut st, None, LiveReason::NotRecorded);
            return Decision::Live;
        };
        let step = &loaded.recording.steps[at];
        if self.until.reached(step) {
            st.forked = Some(step.index);
            live(&mut st, Some(step.index), LiveReason::Fork);
            return Decision::Fork { hold: self.hold };
        }
        if let Some(d) = divergence(step, name, input) {
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
                live(&mut st, Some(step.index), reason);
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
        if forked.is_some() || divergence(&loaded.recording.steps[first], name, input).is_none() {
            return Some(first);
        }
        Some(
            free.find(|&i| divergence(&loaded.recording.steps[i], name, input).is_none())
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

fn divergence(step: &Step, name: &str, live: Option<&Value>) -> Option<Divergence> {
    let recorded = step
        .input
        .as_ref()
        .filter(|v| !redacted(v) && !truncated(v))?;
    let null = Value::Null;
    let d = first_diff(recorded, live.unwrap_or(&null))?;
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
