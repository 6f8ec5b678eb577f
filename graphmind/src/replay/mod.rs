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
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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
    recording: Recording,
    /// Indexes into `recording.steps` per node id, in order.
    by_node: HashMap<String, Vec<usize>>,
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
}

impl Replayer {
    /// A replayer of `recording`.
    pub(crate) fn new(
        recording: Recording,
        until: Until,
        on_diverge: OnDiverge,
        hold: bool,
    ) -> Self {
        ANY.store(true, Ordering::Relaxed);
        let mut by_node: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, s) in recording.steps.iter().enumerate() {
            by_node.entry(s.node_id.clone()).or_default().push(i);
        }
        let taken = vec![false; recording.steps.len()];
        Self {
            recording,
            by_node,
            until,
            on_diverge,
            hold,
            state: Mutex::new(State {
                taken,
                ..State::default()
            }),
        }
    }

    /// The replayer the environment asks for (`GRAPHMIND_REPLAY` and friends), read through
    /// `var`. `Err` names what is wrong (the session warns and runs without replay).
    pub(crate) fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Option<Result<Self, String>> {
        let path = var("GRAPHMIND_REPLAY").filter(|p| !p.trim().is_empty())?;
        let text = match std::fs::read_to_string(path.trim()) {
            Ok(t) => t,
            Err(e) => return Some(Err(format!("GRAPHMIND_REPLAY: cannot read {path}: {e}"))),
        };
        let recording = match Recording::parse(&text, None) {
            Ok(r) => r,
            Err(e) => return Some(Err(format!("GRAPHMIND_REPLAY: {path}: {}", e.0))),
        };
        let until = match var("GRAPHMIND_REPLAY_UNTIL") {
            Some(u) if !u.trim().is_empty() => Until::parse(&u),
            _ => Until::End,
        };
        let on_diverge = match var("GRAPHMIND_REPLAY_ON_DIVERGE").as_deref().map(str::trim) {
            Some("live") => OnDiverge::Live,
            _ => OnDiverge::Stop,
        };
        let hold = var("GRAPHMIND_REPLAY_HOLD").is_some_and(|v| matches!(v.trim(), "1" | "true"));
        Some(Ok(Self::new(recording, until, on_diverge, hold)))
    }

    /// The recorded run's id.
    pub(crate) fn source_run(&self) -> &str {
        &self.recording.run_id
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
        let mut st = self.lock();
        let at = self.pick(&st, node_id, name, input);
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
        let step = &self.recording.steps[at];
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
    fn pick(&self, st: &State, node_id: &str, name: &str, input: Option<&Value>) -> Option<usize> {
        let mut free = self
            .by_node
            .get(node_id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&i| !st.taken[i]);
        let first = free.next()?;
        if st.forked.is_some() || divergence(&self.recording.steps[first], name, input).is_none() {
            return Some(first);
        }
        Some(
            free.find(|&i| divergence(&self.recording.steps[i], name, input).is_none())
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

/// The replayer of a session whose environment configures one, with `replayOf` (the
/// recorded run) and `replayUntil` (the fork point) added to the session's run meta. A
/// recording that cannot be read is warned about and the session runs without replay.
pub(crate) fn session_replayer(
    config: &mut crate::config::Config,
) -> Option<std::sync::Arc<Replayer>> {
    let made = Replayer::from_env(&|k| config.var(k))?;
    match made {
        Ok(r) => {
            config.meta.insert("replayOf".into(), r.source_run().into());
            if let Some(until) = r.until().to_meta() {
                config.meta.insert("replayUntil".into(), until);
            }
            Some(std::sync::Arc::new(r))
        }
        Err(e) => {
            config.warn(&format!("{e}; running without replay"));
            None
        }
    }
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
