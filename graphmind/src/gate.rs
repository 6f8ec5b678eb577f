//! HeldGate gates: the registry the transport thread resolves `exec.resume` frames against.
//!
//! A gate that decides to hold registers a [`HeldGate`] entry (with a one-shot channel back to the
//! waiting future) and emits `exec.paused`. Whoever removes the entry from the map releases
//! the gate, exactly once: the debugger (`resolve`), the transport on disconnect and
//! `dispose()` (`release_all`), the pause timeout, or the waiting future's drop guard. The
//! releaser emits `exec.resumed` before the waiter wakes. Nothing here blocks or awaits, so
//! the transport thread can call it while the app runtime is busy.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use graphmind_protocol::{
    Edited, ExecRefused, ExecResume, ExecResumed, Extra, Message, PausePoint, RefusedCode,
    ResumeAction,
};
use serde_json::Value;
use tokio::sync::oneshot;

/// Where the registry sends `exec.resumed` / `exec.refused`: the session's emitter.
pub(crate) trait GateSink: Send + Sync {
    /// Stamps and records one event (never blocks).
    fn emit_event(&self, run_id: &str, message: Message);
}

/// Why every held gate was released at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReleaseReason {
    /// The debugger went away (socket closed, liveness lost, version mismatch, …).
    Disconnect,
    /// `dispose()` was called.
    Dispose,
}

/// Checks an injected value against the gated call's return type; `Err` = refuse.
pub(crate) type Validator = Box<dyn Fn(&Value) -> Result<(), (RefusedCode, String)> + Send + Sync>;

pub use crate::resume::Resume;

/// The longest reject reason kept (characters); a longer one is cut.
pub(crate) const REASON_CHARS: usize = 2000;

/// One held gate.
pub(crate) struct HeldGate {
    pub(crate) run_id: String,
    pub(crate) node_id: String,
    pub(crate) point: PausePoint,
    /// Whether `retry` is allowed here.
    pub(crate) retry: bool,
    /// Whether `inject` is allowed here, and how to check the value.
    pub(crate) inject: Option<Validator>,
    /// Whether `abort` is allowed here (the gate is inside a run scope it can cancel).
    pub(crate) abort: bool,
    /// Whether `input` may replace the call's input here, and how to check it.
    pub(crate) edit: Option<crate::edit::EditGate>,
    /// Whether `reject` is allowed here.
    pub(crate) reject: bool,
    pub(crate) sink: Arc<dyn GateSink>,
    pub(crate) tx: oneshot::Sender<Resume>,
}

/// Every gate held right now, by pause id.
pub(crate) struct Registry {
    held: Mutex<HashMap<String, HeldGate>>,
    count: AtomicUsize,
    /// `GRAPHMIND_DISABLE_EDIT_INPUT=1`: no edit is announced or honoured.
    edit_killed: AtomicBool,
    /// The attached hub announced `edit-input` in `hello.ack.hubCapabilities`.
    hub_edits: AtomicBool,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self {
            held: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            edit_killed: AtomicBool::new(false),
            hub_edits: AtomicBool::new(false),
        }
    }

    /// Turns editing off for the session (the kill switch).
    pub(crate) fn kill_edits(&self) {
        self.edit_killed.store(true, Ordering::Relaxed);
    }

    /// Whether the kill switch is on (then `hello` does not announce `edit-input`).
    pub(crate) fn edits_killed(&self) -> bool {
        self.edit_killed.load(Ordering::Relaxed)
    }

    /// Records whether the hub just attached announced `edit-input`.
    pub(crate) fn set_hub_edits(&self, on: bool) {
        self.hub_edits.store(on, Ordering::Relaxed);
    }

    /// Whether an edited input is honoured now (kill switch off, the hub announced it).
    pub(crate) fn edits_allowed(&self) -> bool {
        !self.edits_killed() && self.hub_edits.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HeldGate>> {
        // A panic while holding this lock cannot leave the map inconsistent.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Number of gates held right now (for `stats()`).
    pub(crate) fn held_count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Registers a held gate under `pause_id`.
    pub(crate) fn insert(&self, pause_id: String, held: HeldGate) {
        let mut map = self.lock();
        map.insert(pause_id, held);
        self.count.store(map.len(), Ordering::Relaxed);
    }

    /// Removes a gate without telling anyone; the caller releases it. `None` if another
    /// releaser won.
    pub(crate) fn take(&self, pause_id: &str) -> Option<HeldGate> {
        let mut map = self.lock();
        let held = map.remove(pause_id);
        self.count.store(map.len(), Ordering::Relaxed);
        held
    }

    /// Releases one gate with `continue` (pause timeout, dropped future, detach race):
    /// emits `exec.resumed` and wakes the waiter. False if it was already released.
    pub(crate) fn release(&self, pause_id: &str) -> bool {
        match self.take(pause_id) {
            Some(held) => {
                release_with(
                    pause_id,
                    held,
                    Resume::Continue,
                    ResumeAction::Continue,
                    ReleaseInfo::default(),
                );
                true
            }
            None => false,
        }
    }

    /// Applies one `exec.resume` from the debugger. Unknown pause ids are ignored; an action
    /// the gate cannot take, or an inject value that does not fit, is answered with
    /// `exec.refused` and the gate stays held. Never blocks.
    pub(crate) fn resolve(&self, resume: ExecResume, run_id: &str) {
        let _ = run_id; // pause ids are unique per process; the run id is informational
        let mut map = self.lock();
        let Some(held) = map.get(&resume.pause_id) else {
            return;
        };
        let refusal = match resume.action {
            ResumeAction::Retry if !held.retry => Some((
                RefusedCode::Unsupported,
                format!(
                    "retry is turned off for {} (retry = false, or a `&mut` argument)",
                    held.node_id
                ),
            )),
            ResumeAction::Abort if !held.abort => Some((
                RefusedCode::Unsupported,
                format!(
                    "abort needs a run scope to cancel; {} was called outside graphmind::run",
                    held.node_id
                ),
            )),
            ResumeAction::Inject => match &held.inject {
                None => Some((
                    RefusedCode::Unsupported,
                    // Only a streaming return has no validator: its caller gets a stream,
                    // which one JSON value cannot stand in for.
                    format!(
                        "inject is not supported at the {} gate of {}: it returns a stream \
                         (`impl Stream`), which one JSON value cannot stand in for; continue, \
                         retry or abort it",
                        held.point, held.node_id
                    ),
                )),
                Some(check) => {
                    let value = resume.output.as_ref().unwrap_or(&Value::Null);
                    if contains_placeholder(value, 0) {
                        Some((
                            RefusedCode::Placeholder,
                            "the injected value contains the redaction placeholder \"__REDACTED__\""
                                .to_owned(),
                        ))
                    } else {
                        check(value).err()
                    }
                }
            },
            ResumeAction::Reject if !held.reject => Some((
                RefusedCode::Unsupported,
                crate::edit::short(format!(
                    "reject is not supported at the {} gate of {}: opt in with #[tool(reject)] on a \
                     tool returning Result<_, E> where E: From<graphmind::Rejection>",
                    held.point, held.node_id
                )),
            )),
            _ => None,
        };
        let mut accepted = None;
        let refusal = match (refusal, &resume.input) {
            (None, Some(input)) => match self.check_edit(held, resume.action, input) {
                Ok(ok) => {
                    accepted = Some(ok);
                    None
                }
                Err(refused) => Some(refused),
            },
            (refusal, _) => refusal,
        };
        let request_id = resume.request_id.clone();
        if let Some((code, message)) = refusal {
            let sink = Arc::clone(&held.sink);
            let gate_run = held.run_id.clone();
            drop(map);
            sink.emit_event(
                &gate_run,
                Message::ExecRefused(ExecRefused {
                    pause_id: resume.pause_id,
                    code,
                    message: Some(message),
                    request_id,
                    extra: Extra::new(),
                }),
            );
            return;
        }
        let held = map.remove(&resume.pause_id);
        self.count.store(map.len(), Ordering::Relaxed);
        drop(map);
        if let Some(held) = held {
            let mut info = ReleaseInfo {
                request_id,
                ..ReleaseInfo::default()
            };
            let decision = match (resume.action, accepted) {
                (_, Some(ok)) => {
                    info.edited = Some(ok.after.clone());
                    Resume::Edit {
                        input: ok.after,
                        changed: ok.changed,
                    }
                }
                (ResumeAction::Continue, None) => Resume::Continue,
                (ResumeAction::Retry, None) => Resume::Retry,
                (ResumeAction::Inject, None) => {
                    Resume::Inject(resume.output.unwrap_or(Value::Null))
                }
                (ResumeAction::Abort, None) => Resume::Abort,
                (ResumeAction::Reject, None) => {
                    let reason: String = resume
                        .reason
                        .unwrap_or_default()
                        .chars()
                        .take(REASON_CHARS)
                        .collect();
                    info.reason = Some(reason.clone());
                    Resume::Reject(reason)
                }
            };
            release_with(&resume.pause_id, held, decision, resume.action, info);
        }
    }

    /// Checks an `exec.resume.input` at `held`: refused `disabled` without the capability
    /// on both sides, `unsupported` where the gate is not editable or the action does not
    /// run the call, else the edit's own checks.
    fn check_edit(
        &self,
        held: &HeldGate,
        action: ResumeAction,
        input: &Value,
    ) -> Result<crate::edit::Accepted, (RefusedCode, String)> {
        if self.edits_killed() {
            return Err((
                RefusedCode::Disabled,
                "editing inputs is turned off in this app (GRAPHMIND_DISABLE_EDIT_INPUT=1)".into(),
            ));
        }
        if !self.hub_edits.load(Ordering::Relaxed) {
            return Err((
                RefusedCode::Disabled,
                "this hub did not announce edit-input, so the app does not take edited inputs from it"
                    .into(),
            ));
        }
        let edit = match (&held.edit, held.point, action) {
            (Some(edit), PausePoint::Before, ResumeAction::Continue | ResumeAction::Retry)
            | (Some(edit), _, ResumeAction::Retry) => edit,
            (Some(_), PausePoint::Before, other) => {
                return Err((
                    RefusedCode::Unsupported,
                    format!("an edited input goes with continue or retry, not {other}"),
                ));
            }
            (Some(_), point, other) => {
                // GraphMind 0.6: at after / error the call already ran; only a retry runs it
                // again, with the edit.
                return Err((
                    RefusedCode::Shape,
                    format!(
                        "at the {point} gate an edited input goes with retry (the call runs \
                         again with it), not {other}"
                    ),
                ));
            }
            (None, _, _) => {
                return Err((
                    RefusedCode::Unsupported,
                    crate::edit::short(format!(
                        "the {} gate of {} is not editable (only calls whose arguments all \
                         deserialize: at before, and with retry at after or error)",
                        held.point, held.node_id
                    )),
                ));
            }
        };
        crate::edit::check(edit, input)
    }

    /// Releases every held gate with `continue` (each emits `exec.resumed`). Call it after
    /// the session counts as detached, so no new gate can be registered behind it.
    pub(crate) fn release_all(&self, reason: ReleaseReason) {
        let drained: Vec<(String, HeldGate)> = {
            let mut map = self.lock();
            let all = map.drain().collect();
            self.count.store(0, Ordering::Relaxed);
            all
        };
        let why = match reason {
            ReleaseReason::Disconnect => "disconnect",
            ReleaseReason::Dispose => "dispose",
        };
        for (pause_id, held) in drained {
            let mut info = ReleaseInfo::default();
            info.extra.insert("auto".into(), Value::String(why.into()));
            release_with(
                &pause_id,
                held,
                Resume::Continue,
                ResumeAction::Continue,
                info,
            );
        }
    }
}

/// What `exec.resumed` says besides the action.
#[derive(Default)]
struct ReleaseInfo {
    request_id: Option<String>,
    /// The input that runs after an accepted edit.
    edited: Option<Value>,
    /// A reject's reason.
    reason: Option<String>,
    extra: Extra,
}

/// Emits `exec.resumed` (reporting `action`), then wakes the waiter.
fn release_with(
    pause_id: &str,
    held: HeldGate,
    decision: Resume,
    action: ResumeAction,
    info: ReleaseInfo,
) {
    held.sink.emit_event(
        &held.run_id,
        Message::ExecResumed(ExecResumed {
            pause_id: pause_id.to_owned(),
            action,
            edited: info.edited.map(|after| Edited {
                after: Some(after),
                extra: Extra::new(),
            }),
            reason: info.reason,
            request_id: info.request_id,
            extra: info.extra,
        }),
    );
    // The waiter may be gone (its future dropped): nothing to wake then.
    let _ = held.tx.send(decision);
}

/// Whether the redaction placeholder appears anywhere in `v` (depth-capped walk).
pub(crate) fn contains_placeholder(v: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match v {
        Value::String(s) => s == "__REDACTED__",
        Value::Array(items) => items.iter().any(|x| contains_placeholder(x, depth + 1)),
        Value::Object(map) => map
            .iter()
            .any(|(k, x)| k == "__REDACTED__" || contains_placeholder(x, depth + 1)),
        _ => false,
    }
}

/// A validator that accepts any JSON (the placeholder check still applies).
pub(crate) fn any_json() -> Validator {
    Box::new(|_: &Value| Ok(()))
}

/// A validator that accepts what deserializes into `T`.
pub(crate) fn validator_for<T: serde::de::DeserializeOwned>() -> Validator {
    Box::new(|v: &Value| {
        // The path names the field that does not fit (`celsius: invalid type: …`).
        serde_path_to_error::deserialize::<_, T>(v)
            .map(drop)
            .map_err(|e| {
                let path = e.path().to_string();
                let at = if path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                };
                (
                    RefusedCode::Schema,
                    format!(
                        "the injected value does not fit `{}`: {at}{}",
                        std::any::type_name::<T>(),
                        e.inner()
                    ),
                )
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Message>>);

    impl GateSink for Recorder {
        fn emit_event(&self, _run_id: &str, message: Message) {
            self.0.lock().expect("lock").push(message);
        }
    }

    fn held(
        sink: &Arc<Recorder>,
        retry: bool,
        inject: Option<Validator>,
    ) -> (HeldGate, oneshot::Receiver<Resume>) {
        let (tx, rx) = oneshot::channel();
        let sink: Arc<dyn GateSink> = sink.clone();
        (
            HeldGate {
                run_id: "run_1".into(),
                node_id: "tool:add".into(),
                point: PausePoint::Before,
                retry,
                inject,
                abort: true,
                edit: None,
                reject: false,
                sink,
                tx,
            },
            rx,
        )
    }

    fn resume(id: &str, action: ResumeAction, output: Option<Value>) -> ExecResume {
        ExecResume {
            pause_id: id.into(),
            action,
            output,
            input: None,
            request_id: Some("req-1".into()),
            reason: None,
            extra: Extra::new(),
        }
    }

    #[test]
    fn unknown_pause_ids_are_ignored() {
        let reg = Registry::new();
        reg.resolve(resume("nope", ResumeAction::Continue, None), "*");
        assert_eq!(reg.held_count(), 0);
    }

    #[test]
    fn refusals_keep_the_gate_and_echo_the_request_id() {
        let sink = Arc::new(Recorder::default());
        let reg = Registry::new();
        let (h, mut rx) = held(&sink, false, Some(validator_for::<i64>()));
        reg.insert("p1".into(), h);
        reg.resolve(resume("p1", ResumeAction::Retry, None), "run_1");
        reg.resolve(
            resume("p1", ResumeAction::Inject, Some(Value::from("x"))),
            "run_1",
        );
        reg.resolve(
            resume(
                "p1",
                ResumeAction::Inject,
                Some(serde_json::json!(["__REDACTED__"])),
            ),
            "run_1",
        );
        assert_eq!(reg.held_count(), 1);
        assert!(rx.try_recv().is_err(), "still held");
        let codes: Vec<RefusedCode> = sink
            .0
            .lock()
            .expect("lock")
            .iter()
            .map(|m| match m {
                Message::ExecRefused(r) => {
                    assert_eq!(r.request_id.as_deref(), Some("req-1"));
                    r.code
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            codes,
            [
                RefusedCode::Unsupported,
                RefusedCode::Schema,
                RefusedCode::Placeholder
            ]
        );
        reg.resolve(
            resume("p1", ResumeAction::Inject, Some(Value::from(5))),
            "run_1",
        );
        assert_eq!(reg.held_count(), 0);
        let d = rx.try_recv().expect("released");
        assert_eq!(d, Resume::Inject(Value::from(5)));
        let last = sink.0.lock().expect("lock").last().cloned();
        assert!(matches!(last, Some(Message::ExecResumed(r)) if r.action == ResumeAction::Inject));
    }

    #[test]
    fn release_all_continues_every_gate_with_exec_resumed() {
        let sink = Arc::new(Recorder::default());
        let reg = Registry::new();
        let mut rxs = Vec::new();
        for i in 0..5 {
            let (h, rx) = held(&sink, true, None);
            reg.insert(format!("p{i}"), h);
            rxs.push(rx);
        }
        assert_eq!(reg.held_count(), 5);
        reg.release_all(ReleaseReason::Disconnect);
        assert_eq!(reg.held_count(), 0);
        for mut rx in rxs {
            assert_eq!(rx.try_recv().expect("woken"), Resume::Continue);
        }
        let resumed = sink
            .0
            .lock()
            .expect("lock")
            .iter()
            .filter(|m| matches!(m, Message::ExecResumed(r) if r.action == ResumeAction::Continue))
            .count();
        assert_eq!(resumed, 5);
        assert!(!reg.release("p0"), "each gate is released once");
    }

    #[test]
    fn placeholder_is_found_at_any_depth_but_the_walk_is_capped() {
        assert!(contains_placeholder(
            &serde_json::json!({"a": [{"b": "__REDACTED__"}]}),
            0
        ));
        assert!(!contains_placeholder(
            &serde_json::json!({"a": "__REDACTED__x"}),
            0
        ));
        let mut deep = Value::from("__REDACTED__");
        for _ in 0..200 {
            deep = Value::Array(vec![deep]);
        }
        assert!(
            !contains_placeholder(&deep, 0),
            "beyond the cap nothing is walked"
        );
    }
}
