//! A recorded run as a `cargo test` fixture (feature `testing`).
//!
//! A test loads a recording — the NDJSON `graphmind record <runId> --out run.ndjson` writes,
//! committed next to the test — and runs the agent code against it in-process: every tool
//! call and model step is matched to the recording by node and order, its input is checked
//! against the recorded one, and its recorded output is injected at its `before` gate, so
//! the body does not run (no model is called, no tool has a side effect). Streamed model
//! steps get their recorded chunks back as a stream, in order. No hub, no socket, no
//! thread but the runtime's timer.
//!
//! ```no_run
//! # async fn support_agent(_: &str) -> String { String::new() }
//! # async fn demo() {
//! use graphmind::testing::Replay;
//!
//! let report = Replay::new("tests/recordings/support_agent.ndjson")
//!     .run("handle-ticket", support_agent("my order never arrived"))
//!     .await;
//! report.assert_replayed(); // names step, node, field, recorded vs live on a divergence
//! assert!(report.output().is_some_and(|answer| answer.contains("refunded")));
//! # }
//! ```
//!
//! **Re-recording**: with `GRAPHMIND_RECORD=1` in the environment (or
//! [`Replay::record`]`(true)`), the same test runs everything live and writes what it
//! recorded to the recording's path (`GRAPHMIND_RECORD=1 cargo test -p my-agent --test
//! replay`). The file is the format `graphmind record` writes, so a run recorded by the hub
//! serves as well.
//!
//! A call the recording cannot answer runs live and is reported: after the fork point
//! ([`Replay::until`]), a recorded error of a tool that does not opt in with
//! `#[graphmind::tool(replay_errors)]` (see [`RecordedError`](crate::RecordedError)), a stream whose
//! codec records no chunks ([`ChunkCodec::to_recorded`](crate::model::ChunkCodec::to_recorded)),
//! or a call the recording does not have ([`OnMissing`] decides whether that fails the
//! test).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use graphmind_protocol::{Envelope, Extra, Message, Mode, NodeKind, PausePoint, SdkInfo};
use serde_json::Value;

use crate::call::Host;
use crate::gate::{GateSink, Registry};
use crate::replay::Replayer;
pub use crate::replay::{Divergence, LiveReason, OnDiverge, Outcome, Until};
use graphmind_protocol::recording::Recording;

/// What a replay does with a call the recording does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMissing {
    /// The call runs live, and [`Report::check`] fails naming it; so does any call the
    /// recording could not answer (an unusable answer, a recorded error it cannot hand
    /// back), and a live call that fails.
    #[default]
    Fail,
    /// The call runs live, and the check lets it (and any call that ran live because the
    /// recording could not answer it, and its error) pass.
    Live,
}

/// A replay of one recording, configured, not yet run.
#[derive(Debug, Clone)]
pub struct Replay {
    path: PathBuf,
    until: Until,
    on_diverge: OnDiverge,
    on_missing: OnMissing,
    record: bool,
}

impl Replay {
    /// A replay of the recording at `path` (read when the replay runs). Records instead
    /// when `GRAPHMIND_RECORD` is `1` or `true`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let record =
            std::env::var("GRAPHMIND_RECORD").is_ok_and(|v| matches!(v.trim(), "1" | "true"));
        Self {
            path: path.into(),
            until: Until::End,
            on_diverge: OnDiverge::Stop,
            on_missing: OnMissing::Fail,
            record,
        }
    }

    /// Where the live part begins (default: nowhere, every recorded call is answered).
    #[must_use]
    pub fn until(mut self, until: Until) -> Self {
        self.until = until;
        self
    }

    /// What a divergence does (default: stop, the run is aborted at that call).
    #[must_use]
    pub fn on_diverge(mut self, on: OnDiverge) -> Self {
        self.on_diverge = on;
        self
    }

    /// What a call the recording does not have does (default: fail the check).
    #[must_use]
    pub fn on_missing(mut self, on: OnMissing) -> Self {
        self.on_missing = on;
        self
    }

    /// Records (runs everything live and writes the recording) instead of replaying,
    /// whatever `GRAPHMIND_RECORD` says.
    #[must_use]
    pub fn record(mut self, on: bool) -> Self {
        self.record = on;
        self
    }

    /// The recording's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `fut` as a run named `name` against the recording (or records it), in-process.
    ///
    /// # Panics
    /// When replaying and the recording cannot be read or parsed, or when recording and
    /// the recording cannot be written: the message names the file and how to re-record.
    pub async fn run<F: Future>(self, name: &str, fut: F) -> Report<F::Output> {
        let replayer = if self.record {
            None
        } else {
            let text = std::fs::read_to_string(&self.path).unwrap_or_else(|e| {
                panic!(
                    "cannot read the recording {}: {e}; record it with GRAPHMIND_RECORD=1",
                    self.path.display()
                )
            });
            let rec = Recording::parse(&text, None).unwrap_or_else(|e| {
                panic!(
                    "the recording {} is not readable: {}",
                    self.path.display(),
                    e.0
                )
            });
            Some(Replayer::new(
                rec,
                self.until.clone(),
                self.on_diverge,
                false,
            ))
        };
        let mut meta = Extra::new();
        if let Some(r) = &replayer {
            if let Some(source) = r.source_run() {
                meta.insert("replayOf".into(), source.into());
            }
            if let Some(u) = r.until().to_meta() {
                meta.insert("replayUntil".into(), u);
            }
        }
        let host = std::sync::Arc::new(TestHost {
            meta,
            replayer,
            events: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
            gates: Registry::new(),
            implicit: crate::implicit_run::ImplicitRun::default(),
        });
        let dyn_host: std::sync::Arc<dyn Host> = host.clone();
        let out = crate::run::run_in(Some(dyn_host), name.to_owned(), fut, |_: &F::Output| None)
            .await
            .ok();
        let events = std::mem::take(
            &mut *host
                .events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if self.record {
            write_recording(&self.path, &events);
        }
        let (outcomes, forked_at) = host
            .replayer
            .as_ref()
            .map_or((Vec::new(), None), |r| (r.outcomes(), r.forked_at()));
        let failed = match &host.replayer {
            Some(r) => failed_steps(&events, &r.error_steps(), self.on_missing, &self.until),
            None => Vec::new(),
        };
        Report {
            output: out,
            outcomes,
            forked_at,
            events,
            failed,
            recorded: self.record,
            on_missing: self.on_missing,
            path: self.path,
        }
    }
}

/// The tool calls and model steps of the replayed run that finished with an error the
/// recording does not have: a served answer the app could not use (a replayed node that
/// errs where the recorded call did not), and, unless live calls were asked for (a fork
/// point, or [`OnMissing::Live`]), a call that ran live and failed.
fn failed_steps(
    events: &[Value],
    recorded_errors: &[usize],
    on_missing: OnMissing,
    until: &Until,
) -> Vec<FailedStep> {
    let live_asked = on_missing == OnMissing::Live || *until != Until::End;
    let mut messages: std::collections::HashMap<(&str, &str), String> =
        std::collections::HashMap::new();
    let mut failed = Vec::new();
    for e in events {
        let p = &e["payload"];
        let key = || {
            (
                p["nodeId"].as_str().unwrap_or(""),
                p["instanceId"].as_str().unwrap_or(""),
            )
        };
        match e["type"].as_str() {
            Some("node.error") => {
                let err = &p["error"];
                let name = err["name"].as_str().unwrap_or("");
                let message = err["message"].as_str().unwrap_or("");
                messages.insert(key(), format!("{name}: {message}"));
            }
            Some("node.finished") if p["status"] == "error" => {
                let (node_id, instance) = key();
                if !(node_id.starts_with("tool:") || node_id.starts_with("llm:")) {
                    continue;
                }
                let step = p["replayStep"]
                    .as_u64()
                    .and_then(|s| usize::try_from(s).ok());
                let counted = match step {
                    Some(s) => !recorded_errors.contains(&s),
                    None => !live_asked,
                };
                if counted {
                    failed.push(FailedStep {
                        step,
                        node_id: node_id.to_owned(),
                        instance_id: instance.to_owned(),
                        error: messages.remove(&(node_id, instance)).unwrap_or_default(),
                    });
                }
            }
            _ => {}
        }
    }
    failed
}

/// A tool call or model step of a replay that finished with an error the recording does not
/// have ([`Report::failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedStep {
    /// The recorded step that answered it, when one did.
    pub step: Option<usize>,
    /// Its node id (`llm:step`, `tool:lookup_order`).
    pub node_id: String,
    /// Its instance id.
    pub instance_id: String,
    /// Its `node.error`, `Name: message` (empty when it recorded none).
    pub error: String,
}

impl std::fmt::Display for FailedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.step {
            Some(s) => write!(f, "step {s} ({} {})", self.node_id, self.instance_id)?,
            None => write!(f, "{} {}", self.node_id, self.instance_id)?,
        }
        if self.error.is_empty() {
            write!(f, " finished with an error")
        } else {
            write!(f, " finished with an error: {}", self.error)
        }
    }
}

fn write_recording(path: &Path, events: &[Value]) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    std::fs::write(path, text)
        .unwrap_or_else(|e| panic!("cannot write the recording {}: {e}", path.display()));
}

/// What a replay did: the run's output, what happened to each call, what the run recorded.
#[derive(Debug)]
pub struct Report<T> {
    output: Option<T>,
    outcomes: Vec<Outcome>,
    forked_at: Option<usize>,
    events: Vec<Value>,
    failed: Vec<FailedStep>,
    recorded: bool,
    on_missing: OnMissing,
    path: PathBuf,
}

impl<T> Report<T> {
    /// The run's output; `None` when the replay stopped at a divergence (the run was
    /// aborted there).
    #[must_use]
    pub fn output(&self) -> Option<&T> {
        self.output.as_ref()
    }

    /// [`Report::output`], by value.
    #[must_use]
    pub fn into_output(self) -> Option<T> {
        self.output
    }

    /// What happened to each live call, in call order.
    #[must_use]
    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    /// How many calls were answered from the recording.
    #[must_use]
    pub fn served(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Served { .. }))
            .count()
    }

    /// How many calls ran live, whatever the reason (the fork point and after it included).
    #[must_use]
    pub fn went_live(&self) -> usize {
        self.live().count()
    }

    /// How many calls the recording could not answer: it has no such call, its recorded
    /// answer is unusable (hidden, cut, a stream without chunks, a value that does not fit),
    /// or it recorded an error the call cannot be handed. Each ran live.
    #[must_use]
    pub fn unanswered(&self) -> usize {
        self.live().filter(|(_, _, r)| r.unanswered()).count()
    }

    /// How many calls diverged from the recording (0 or 1: the live part begins there).
    #[must_use]
    pub fn diverged(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Diverged(_)))
            .count()
    }

    /// The tool calls and model steps that finished with an error the recording does not
    /// have: a recorded answer the app could not use (the node is `replayed` but errs), and,
    /// unless live calls were asked for ([`Replay::until`], [`OnMissing::Live`]), a call that
    /// ran live and failed.
    #[must_use]
    pub fn failed(&self) -> &[FailedStep] {
        &self.failed
    }

    /// The first divergence, if any.
    #[must_use]
    pub fn divergence(&self) -> Option<&Divergence> {
        self.outcomes.iter().find_map(|o| match o {
            Outcome::Diverged(d) => Some(d),
            _ => None,
        })
    }

    /// The calls that ran live, with why.
    pub fn live(&self) -> impl Iterator<Item = (Option<usize>, &str, LiveReason)> {
        self.outcomes.iter().filter_map(|o| match o {
            Outcome::Live {
                step,
                node_id,
                reason,
            } => Some((*step, node_id.as_str(), *reason)),
            _ => None,
        })
    }

    /// The step the live part began at (fork point or divergence), if it began.
    #[must_use]
    pub fn forked_at(&self) -> Option<usize> {
        self.forked_at
    }

    /// The envelopes the replayed run recorded (`graphmind record`'s format, one JSON
    /// object each), e.g. to compare outputs with the recording's.
    #[must_use]
    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// Whether this run recorded (`GRAPHMIND_RECORD=1`) instead of replaying.
    #[must_use]
    pub fn was_recorded(&self) -> bool {
        self.recorded
    }

    /// `Ok` when the replay was whole: no divergence, no step that failed where the recorded
    /// one did not ([`Report::failed`]), and (with [`OnMissing::Fail`], the default) no call
    /// that ran live because the recording could not answer it ([`Report::unanswered`]).
    /// Calls at and after a fork point ([`Replay::until`]) run live as asked. `Err` is a
    /// readable message naming each step.
    ///
    /// # Errors
    /// The message of the first divergence (step, node, field path, recorded vs live), or the
    /// steps that ran live (with why) or failed, with how to re-record.
    pub fn check(&self) -> Result<(), String> {
        if self.recorded {
            return Ok(());
        }
        let hint = format!(
            "(recording {}; if the change is intended, re-record with GRAPHMIND_RECORD=1)",
            self.path.display()
        );
        if let Some(d) = self.divergence() {
            return Err(format!("{d} {hint}"));
        }
        let mut problems: Vec<String> = Vec::new();
        if self.on_missing == OnMissing::Fail {
            problems.extend(self.live().filter(|(_, _, r)| r.unanswered()).map(
                |(step, node, reason)| {
                    let at = step.map_or_else(|| node.to_owned(), |s| format!("step {s} ({node})"));
                    format!("{at} ran live: {}", reason.describe())
                },
            ));
        }
        problems.extend(self.failed.iter().map(ToString::to_string));
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the replay was not whole: {} {hint}",
            problems.join("; ")
        ))
    }

    /// Panics with [`Report::check`]'s message unless the replay matched the recording.
    ///
    /// # Panics
    /// See [`Report::check`].
    #[track_caller]
    pub fn assert_replayed(&self) {
        if let Err(message) = self.check() {
            panic!("{message}");
        }
    }
}

/// The in-process debugger of a replay: records into memory, never attached, answers calls
/// through its replayer.
struct TestHost {
    meta: Extra,
    replayer: Option<Replayer>,
    events: Mutex<Vec<Value>>,
    seq: AtomicU64,
    gates: Registry,
    implicit: crate::implicit_run::ImplicitRun,
}

impl GateSink for TestHost {
    fn emit_event(&self, run_id: &str, message: Message) {
        self.emit(run_id, message);
    }
}

impl Host for TestHost {
    fn enabled(&self) -> bool {
        true
    }
    fn attached(&self) -> bool {
        false
    }
    fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let env = Envelope::new(seq, ts, run_id, message);
        let value = serde_json::to_value(&env).unwrap_or(Value::Null);
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(value);
        Some(seq)
    }
    fn gate_rule(&self, _: NodeKind, _: &str, _: PausePoint) -> (bool, Mode) {
        (false, Mode::Run)
    }
    fn gates(&self) -> &Registry {
        &self.gates
    }
    fn pause_timeout(&self) -> Option<Duration> {
        None
    }
    fn token_interval(&self) -> Duration {
        crate::config::TOKEN_INTERVAL
    }
    fn app(&self) -> String {
        "graphmind-testing".into()
    }
    fn sdk(&self) -> SdkInfo {
        SdkInfo {
            name: "graphmind".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extra: Extra::new(),
        }
    }
    fn meta(&self) -> Extra {
        self.meta.clone()
    }
    fn implicit(&self) -> &crate::implicit_run::ImplicitRun {
        &self.implicit
    }
    fn replayer(&self) -> Option<&Replayer> {
        self.replayer.as_ref()
    }
}
