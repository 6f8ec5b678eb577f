//! The gate policy shared by tools and model steps (PROTOCOL.md's action table): the gates
//! before, after and on error around each attempt of a body, and what each decision does.

use graphmind_protocol::{ErrorInfo, Extra, NodeKind, PausePoint, PauseReason, Status};
use serde_json::Value;

use super::context::{Call, Offer};
use crate::call::expansion::Body;
use crate::call::node_run::{Finish, NodeRun, held_extra};
use crate::gate::{Resume, Validator};
use crate::replay::{Decision, LiveReason};

/// Inject support: a validator factory and the conversion of an accepted value.
pub(crate) type InjectSupport<O> = (fn() -> Validator, fn(Value) -> Option<O>);

/// How the policy reads one kind of output `O`.
pub(crate) struct Policy<O> {
    /// `Some` if the output is an error (gated at `error`).
    pub(crate) error: fn(&O) -> Option<ErrorInfo>,
    /// The recorded output of a successful call.
    pub(crate) encode: fn(&O) -> Option<Value>,
    /// Inject support: a validator and the conversion of an accepted value.
    pub(crate) inject: Option<InjectSupport<O>>,
    /// Whether there is an `after` gate.
    pub(crate) after: bool,
    /// Usage and the loose fields read from the output (finishReason, model, responseId)
    /// for node.finished.
    pub(crate) usage: fn(&O) -> (Option<crate::model::Usage>, Extra),
    /// Whether an injected output is recorded as [`encode`](Policy::encode) records a real
    /// one (model steps: the same shape whoever produced it), rather than as sent.
    pub(crate) reencode: bool,
    /// Reject support: the caller's error built from the person's reason.
    pub(crate) reject: Option<fn(crate::Rejection) -> O>,
}

fn injected_extra(recovered: bool) -> Extra {
    let mut extra = Extra::new();
    extra.insert("injected".into(), true.into());
    if recovered {
        extra.insert("recoveredFromError".into(), true.into());
    }
    extra
}

/// Runs the gates and the body per the action table. Finishes the node, except when
/// `keep_open` and the call succeeded: then the open node is returned (streams).
pub(crate) async fn gated<B: Body>(
    call: &Call,
    mut node: NodeRun,
    mut body: B,
    policy: &Policy<B::Output>,
    keep_open: bool,
) -> (B::Output, Option<NodeRun>) {
    if node.host.needs_first_use() {
        node.host.first_use().await;
    }
    let validator = |p: &Policy<B::Output>| p.inject.map(|(v, _)| v);
    let mut hold_fork = false;
    if let Some(decision) = node.replay.take() {
        match *decision {
            Decision::Serve(served) => {
                let conv = policy.inject.map(|(_, conv)| conv);
                match conv.and_then(|conv| conv(served.output.clone())) {
                    Some(out) => {
                        let extra = super::replayed::served_extra(served.step);
                        finish_injected(node, policy, served.output, &out, extra);
                        return (out, None);
                    }
                    None => unserved(&node, served.step),
                }
            }
            Decision::ServeError(served) => super::replayed::unserved_error(&node, &served),
            Decision::Fork { hold } => hold_fork = hold,
            Decision::Stop(d) => node = super::replayed::stop(call, node, &d).await,
            Decision::Live => {}
        }
    }
    let mut attempts: u32 = 0;
    loop {
        // before
        // Detached: continue at once, without even building the gate's future.
        let act = if node.host.attached() {
            // The loop guard looks at each call once, at its first `before` gate.
            let (forced, held) = match (attempts, call.kind) {
                (0, NodeKind::Tool) => super::loop_check::check(call, &node)
                    .map_or((None, Extra::new()), |(r, extra)| (Some(r), extra)),
                _ => (None, Extra::new()),
            };
            // A replay's fork point holds here first when asked to.
            let forced = match std::mem::take(&mut hold_fork) {
                true => forced.or(Some(PauseReason::Replay)),
                false => forced,
            };
            let edit = if B::EDIT {
                call.edit_offer(&node, PausePoint::Before, forced.is_some(), || {
                    body.edit_checks()
                })
            } else {
                None
            };
            let offer = Offer {
                edit,
                reject: policy.reject.is_some(),
            };
            call.gate_offering(
                &mut node,
                PausePoint::Before,
                validator(policy),
                held,
                forced,
                offer,
            )
            .await
        } else {
            Resume::Continue
        };
        match act {
            Resume::Continue | Resume::Retry => {}
            Resume::Edit { input, changed } => {
                node.edited(&input);
                body.edit(node.edit_args(input, changed));
            }
            Resume::Reject(reason) => {
                if let Some(reject) = policy.reject {
                    let out = reject(crate::Rejection::new(reason.clone()));
                    finish_rejected(node, reason);
                    return (out, None);
                }
            }
            Resume::Inject(v) => {
                if let Some(out) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                    finish_injected(node, policy, v, &out, injected_extra(false));
                    return (out, None);
                }
            }
            Resume::Abort => {
                node.finish(Status::Aborted, Finish::default());
                call.abort().await;
            }
        }
        attempts += 1;
        let Some(fut) = body.attempt() else {
            unreachable!("retry is refused at the gate for a body that runs once")
        };
        let out = fut.await;
        // Extras are built after each gate, so they are not part of the state held across it.
        if let Some(err) = (policy.error)(&out) {
            let act = if node.host.attached() {
                let held =
                    call.held_value(&node, PausePoint::Error, || held_extra(None, Some(&err)));
                node.error(err);
                let offer = retry_edit_offer(call, &node, &body, PausePoint::Error);
                call.gate_offering(
                    &mut node,
                    PausePoint::Error,
                    validator(policy),
                    held,
                    None,
                    offer,
                )
                .await
            } else {
                node.error(err);
                Resume::Continue
            };
            match act {
                // Retry with an edited input (GraphMind 0.6: `retry` + `input`).
                Resume::Edit { input, changed } => {
                    node.edited(&input);
                    body.edit(node.edit_args(input, changed));
                    continue;
                }
                Resume::Continue | Resume::Reject(_) => {
                    node.finish(
                        Status::Error,
                        Finish {
                            extra: attempts_extra(attempts).into(),
                            ..Finish::default()
                        },
                    );
                    return (out, None);
                }
                Resume::Retry => continue,
                Resume::Inject(v) => {
                    if let Some(fixed) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                        let mut extra = attempts_extra(attempts);
                        extra.extend(injected_extra(true));
                        finish_injected(node, policy, v, &fixed, extra);
                        return (fixed, None);
                    }
                    node.finish(Status::Error, Finish::default());
                    return (out, None);
                }
                Resume::Abort => {
                    node.finish(Status::Aborted, Finish::default());
                    call.abort().await;
                }
            }
        }
        if keep_open {
            return (out, Some(node));
        }
        let act = if policy.after && node.host.attached() {
            let held = call.held_value(&node, PausePoint::After, || {
                held_extra((policy.encode)(&out), None)
            });
            let offer = retry_edit_offer(call, &node, &body, PausePoint::After);
            call.gate_offering(
                &mut node,
                PausePoint::After,
                validator(policy),
                held,
                None,
                offer,
            )
            .await
        } else {
            Resume::Continue
        };
        let status = match act {
            // Retry with an edited input (GraphMind 0.6: `retry` + `input`).
            Resume::Edit { input, changed } => {
                node.edited(&input);
                body.edit(node.edit_args(input, changed));
                continue;
            }
            Resume::Continue | Resume::Reject(_) => Status::Ok,
            Resume::Retry => continue,
            Resume::Inject(v) => {
                if let Some(other) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                    let mut extra = attempts_extra(attempts);
                    extra.extend(injected_extra(false));
                    finish_injected(node, policy, v, &other, extra);
                    return (other, None);
                }
                Status::Ok
            }
            Resume::Abort => Status::Aborted,
        };
        let (usage, extra) = usage_and_reason(policy, &out, attempts_extra(attempts));
        node.finish(
            status,
            Finish {
                output: (policy.encode)(&out).map(crate::captured::Val::from_value),
                usage,
                extra: extra.into(),
            },
        );
        if status == Status::Aborted {
            call.abort().await;
        }
        return (out, None);
    }
}

/// What the `after` or `error` gate at `point` offers: an edit of the input that goes with a
/// retry, for an editable body that may run again (built only when the gate will hold).
fn retry_edit_offer<B: Body>(call: &Call, node: &NodeRun, body: &B, point: PausePoint) -> Offer {
    let edit = if B::EDIT && B::RETRY {
        call.edit_offer(node, point, false, || body.edit_checks())
    } else {
        None
    };
    Offer {
        edit,
        reject: false,
    }
}

/// A served answer that does not fit the call's type: the call runs live.
fn unserved(node: &NodeRun, step: usize) {
    if let Some(r) = node.host.replayer() {
        r.unserved(step, LiveReason::NoOutput);
    }
}

/// Finishes a node whose call a person rejected: `node.error` named `Rejected` with the
/// reason, then `node.finished` `error` with `rejected: {reason}`.
pub(crate) fn finish_rejected(node: NodeRun, reason: String) {
    node.error(ErrorInfo {
        name: "Rejected".into(),
        message: crate::Rejection::new(reason.clone()).to_string(),
        stack: None,
        extra: Extra::new(),
    });
    let mut rejected = Extra::new();
    rejected.insert("reason".into(), Value::String(reason));
    let mut extra = Extra::new();
    extra.insert("rejected".into(), Value::Object(rejected));
    node.finish(
        Status::Error,
        Finish {
            extra: extra.into(),
            ..Finish::default()
        },
    );
}

/// `attempts` on node.finished when the body ran more than once.
fn attempts_extra(attempts: u32) -> Extra {
    let mut extra = Extra::new();
    if attempts > 1 {
        extra.insert("attempts".into(), attempts.into());
    }
    extra
}

/// The usage of `out`, with its loose fields (finish reason, …) added to `extra`.
fn usage_and_reason<O>(
    policy: &Policy<O>,
    out: &O,
    mut extra: Extra,
) -> (Option<crate::model::Usage>, Extra) {
    let (usage, loose) = (policy.usage)(out);
    extra.extend(loose);
    (usage, extra)
}

/// Finishes a node whose output was injected. Usage and finish reason are read from the
/// injected output: a response it replaced must not lend it its counts or reason.
fn finish_injected<O>(node: NodeRun, policy: &Policy<O>, v: Value, out: &O, extra: Extra) {
    let (usage, extra) = usage_and_reason(policy, out, extra);
    let output = match policy.reencode {
        true => (policy.encode)(out).or(Some(v)),
        false => Some(v),
    };
    node.finish(
        Status::Ok,
        Finish {
            output: output.map(crate::captured::Val::from_value),
            usage,
            extra: extra.into(),
        },
    );
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
