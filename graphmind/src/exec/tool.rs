//! The gate policy shared by tools and model steps (PROTOCOL.md's action table), and the
//! tool entry points of `__private`.

use std::borrow::Cow;
use std::sync::Arc;

use futures_core::Stream;
use graphmind_protocol::{
    ErrorInfo, Extra, NodeKind, PausePoint, PauseReason, ResumeAction, Status, TokenUsage,
};
use serde_json::Value;

use super::Host;
use super::detached::{Outcome, Owner, QuickNode};
use super::scope::{RunCtx, Scope};
use crate::__private::{Body, Fast, Input, StreamItem, ToolError, ToolOutput, ToolSite};
use crate::capture::Val;
use crate::gate::{GateSpec, Validator, decide, validator_for};
use crate::node::{Finish, NodeRun, StartSpec, error_info, held_extra, short_type_name, to_value};
use crate::record::{InstanceId, Payload};
use crate::tee::{Observer, Tee};

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
    pub(crate) usage: fn(&O) -> (Option<TokenUsage>, Extra),
    /// Whether an injected output is recorded as [`encode`](Policy::encode) records a real
    /// one (model steps: the same shape whoever produced it), rather than as sent.
    pub(crate) reencode: bool,
}

/// Everything known about one call before it starts (its host and run id go to its
/// [`NodeRun`], which the gates read them from).
pub(crate) struct Call {
    pub(crate) scope: Scope,
    pub(crate) run: Option<Arc<RunCtx>>,
    pub(crate) kind: NodeKind,
    pub(crate) name: Cow<'static, str>,
    pub(crate) retry: bool,
}

impl Call {
    /// The scope and run of the running task, with its host and run id.
    pub(crate) fn current(
        kind: NodeKind,
        name: Cow<'static, str>,
        retry: bool,
    ) -> (Self, Arc<dyn Host>, super::RunId) {
        let scope = Scope::current();
        let run = scope.run.clone();
        let host = run
            .as_ref()
            .map_or_else(super::default_host, |r| Arc::clone(&r.host));
        let run_id = match &run {
            Some(r) => Arc::clone(&r.run_id),
            None => super::implicit_run(&host),
        };
        (
            Self {
                scope,
                run,
                kind,
                name,
                retry,
            },
            host,
            run_id,
        )
    }

    /// The parent of the call's node: `llm:step` once the run has had a model step (its
    /// graph hint drew the tools there, and the reference clients parent tool calls under
    /// the model step too), else the run's agent node.
    fn parent(&self) -> Option<crate::small::SmallStr> {
        self.run.as_ref().map(|r| {
            let stepped = r
                .steps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .invocation
                .is_some();
            if stepped {
                crate::small::SmallStr::from(super::step::STEP_NODE)
            } else {
                r.agent_node.clone()
            }
        })
    }

    async fn gate(
        &self,
        node: &mut NodeRun,
        point: PausePoint,
        inject: Option<fn() -> Validator>,
        held_value: Extra,
        forced: Option<PauseReason>,
    ) -> Act {
        // Detached: continue at once, without building the hold machinery.
        if !node.host.attached() {
            return Act::Continue;
        }
        // Boxed: the hold machinery is only built when attached, and keeps the detached
        // policy future small.
        let out = Box::pin(decide(GateSpec {
            host: &node.host,
            run_id: &node.run_id,
            node_id: &node.node_id,
            kind: self.kind,
            name: &self.name,
            point,
            retry: self.retry,
            inject,
            abort: self.run.is_some(),
            clock: self.scope.clock.clone(),
            run_clock: self.run.as_ref().map(|r| Arc::clone(&r.held)),
            held_value,
            forced,
        }))
        .await;
        node.add_held(out.held);
        match out.decision.action {
            ResumeAction::Continue => Act::Continue,
            ResumeAction::Retry => Act::Retry,
            ResumeAction::Inject => Act::Inject(out.decision.output.unwrap_or(Value::Null)),
            ResumeAction::Abort => Act::Abort,
        }
    }

    /// What a gate at `point` holds, for its `exec.paused` (built only when it will hold;
    /// synchronous, so nothing borrowed from the output lives in the gate's future).
    fn held_value(
        &self,
        node: &NodeRun,
        point: PausePoint,
        build: impl FnOnce() -> Extra,
    ) -> Extra {
        if super::should_pause(&*node.host, self.kind, &self.name, point).is_some() {
            build()
        } else {
            Extra::new()
        }
    }

    /// Ends the run from inside: the run scope drops the future that awaits this.
    async fn abort(&self) -> ! {
        if let Some(run) = &self.run {
            run.abort();
        }
        std::future::pending::<()>().await;
        unreachable!("the run scope drops an aborted call before it is polled again")
    }
}

/// A gate's decision as the policy uses it (inject carries its value).
enum Act {
    Continue,
    Retry,
    Inject(Value),
    Abort,
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
    let mut attempts: u32 = 0;
    loop {
        // before
        // Detached: continue at once, without even building the gate's future.
        let act = if node.host.attached() {
            // The loop guard looks at each call once, at its first `before` gate.
            let (forced, held) = match (attempts, call.kind) {
                (0, NodeKind::Tool) => super::loops::check(call, &node)
                    .map_or((None, Extra::new()), |(r, extra)| (Some(r), extra)),
                _ => (None, Extra::new()),
            };
            call.gate(
                &mut node,
                PausePoint::Before,
                validator(policy),
                held,
                forced,
            )
            .await
        } else {
            Act::Continue
        };
        match act {
            Act::Continue | Act::Retry => {}
            Act::Inject(v) => {
                if let Some(out) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                    finish_injected(node, policy, v, &out, injected_extra(false));
                    return (out, None);
                }
            }
            Act::Abort => {
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
                call.gate(&mut node, PausePoint::Error, validator(policy), held, None)
                    .await
            } else {
                node.error(err);
                Act::Continue
            };
            match act {
                Act::Continue => {
                    node.finish(
                        Status::Error,
                        Finish {
                            extra: attempts_extra(attempts),
                            ..Finish::default()
                        },
                    );
                    return (out, None);
                }
                Act::Retry => continue,
                Act::Inject(v) => {
                    if let Some(fixed) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                        let mut extra = attempts_extra(attempts);
                        extra.extend(injected_extra(true));
                        finish_injected(node, policy, v, &fixed, extra);
                        return (fixed, None);
                    }
                    node.finish(Status::Error, Finish::default());
                    return (out, None);
                }
                Act::Abort => {
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
            call.gate(&mut node, PausePoint::After, validator(policy), held, None)
                .await
        } else {
            Act::Continue
        };
        let status = match act {
            Act::Continue => Status::Ok,
            Act::Retry => continue,
            Act::Inject(v) => {
                if let Some(other) = policy.inject.and_then(|(_, conv)| conv(v.clone())) {
                    let mut extra = attempts_extra(attempts);
                    extra.extend(injected_extra(false));
                    finish_injected(node, policy, v, &other, extra);
                    return (other, None);
                }
                Status::Ok
            }
            Act::Abort => Status::Aborted,
        };
        let (usage, extra) = usage_and_reason(policy, &out, attempts_extra(attempts));
        node.finish(
            status,
            Finish {
                output: (policy.encode)(&out),
                usage,
                extra,
            },
        );
        if status == Status::Aborted {
            call.abort().await;
        }
        return (out, None);
    }
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
) -> (Option<TokenUsage>, Extra) {
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
            output,
            usage,
            extra,
        },
    );
}

fn no_usage<O>(_: &O) -> (Option<TokenUsage>, Extra) {
    (None, Extra::new())
}

/// The node's instanceId: the model's tool-call id when `call_id = <arg>` names a non-empty
/// string, else a fresh `call_…` id.
fn instance_id(site: &ToolSite, input: &Payload) -> InstanceId {
    site.call_id
        .and_then(|k| input.get_str(k))
        .filter(|s| !s.is_empty())
        .map_or_else(InstanceId::next_call, |s| InstanceId::Text(s.into()))
}

fn start_tool(
    parent: Option<crate::small::SmallStr>,
    host: Arc<dyn Host>,
    run_id: super::RunId,
    site: &ToolSite,
    input: Payload,
) -> NodeRun {
    let instance_id = instance_id(site, &input);
    let loop_fp = (host.attached() && host.loop_guard().on != crate::config::OnLoop::Off)
        .then(|| super::loops::fingerprint(site.node_id, &input));
    let mut node = NodeRun::start(
        host,
        run_id,
        StartSpec {
            node_id: Cow::Borrowed(site.node_id),
            kind: NodeKind::Tool,
            name: Cow::Borrowed(site.name),
            instance_id,
            parent_id: parent,
            input: Some(input),
        },
    );
    node.loop_fp = loop_fp;
    node
}

/// The recording half of a tool entry point: when the session is detached at the call's
/// start (and its first use is done), node.started now, the body's own future, and `done`
/// at its end — no gates, no policy future; otherwise the boxed policy built by `full`.
#[inline(never)]
#[cold]
fn recorded<B, F>(
    site: &'static ToolSite,
    input: Payload,
    mut body: B,
    done: fn(&B::Output) -> Outcome,
    full: impl FnOnce(Payload, B, Call, Arc<dyn Host>, super::RunId) -> F,
) -> Fast<B::Fut, F>
where
    B: Body,
    F: Future<Output = B::Output>,
{
    let run = match Scope::run() {
        Some(run) => Owner::Run(run),
        None => Owner::Implicit(super::default_host()),
    };
    let host = match &run {
        Owner::Run(r) => &*r.host,
        Owner::Implicit(h) => &**h,
    };
    if host.attached() || host.needs_first_use() {
        let (call, host, run_id) = Call::current(
            NodeKind::Tool,
            Cow::Borrowed(site.name),
            site.retry && B::RETRY,
        );
        return Fast::full(move || full(input, body, call, host, run_id));
    }
    let instance_id = instance_id(site, &input);
    let node = QuickNode::start(run, site, input, instance_id);
    Fast::detached(&mut body, node, done)
}

fn finish_tool<R: ToolOutput>(out: &R) -> Outcome {
    Outcome {
        status: Status::Ok,
        output: Some(Val::of(out)),
        error: None,
    }
}

fn finish_tool_result<T: ToolOutput, E: ToolError>(out: &Result<T, E>) -> Outcome {
    match out {
        Ok(v) => finish_tool(v),
        Err(e) => Outcome {
            status: Status::Error,
            output: None,
            error: Some(error_info(short_type_name::<E>(), e.to_string())),
        },
    }
}

async fn first<B: Body>(mut body: B) -> B::Output {
    let Some(fut) = body.attempt() else {
        unreachable!("a body always runs at least once")
    };
    fut.await
}

/// A tool returning a plain value: gates before and after.
///
/// A call that starts while its session is detached runs ungated to its end, even if a
/// debugger attaches meanwhile (its events still land in the replay ring).
pub fn tool<B, R>(
    site: &'static ToolSite,
    input: Input,
    mut body: B,
) -> Fast<B::Fut, impl Future<Output = R>>
where
    B: Body<Output = R>,
    R: ToolOutput,
{
    match input.0 {
        None => Fast::direct(&mut body),
        Some(input) => recorded(site, input, body, finish_tool::<R>, move |i, b, c, h, r| {
            tool_full(site, i, b, c, h, r)
        }),
    }
}

async fn tool_full<B, R>(
    site: &'static ToolSite,
    input: Payload,
    body: B,
    call: Call,
    host: Arc<dyn Host>,
    run_id: super::RunId,
) -> R
where
    B: Body<Output = R>,
    R: ToolOutput,
{
    let node = start_tool(call.parent(), host, run_id, site, input);
    let policy = Policy::<R> {
        error: |_| None,
        encode: |r| Some(to_value(r)),
        inject: Some((validator_for::<R>, |v| serde_json::from_value(v).ok())),
        after: true,
        usage: no_usage,
        reencode: false,
    };
    gated(&call, node, body, &policy, false).await.0
}

fn result_error<T, E: ToolError>(r: &Result<T, E>) -> Option<ErrorInfo> {
    r.as_ref()
        .err()
        .map(|e| error_info(short_type_name::<E>(), e.to_string()))
}

/// A tool returning `Result<T, E>`: gates before, after (on `Ok`) and error (on `Err`).
///
/// A call that starts while its session is detached runs ungated to its end, even if a
/// debugger attaches meanwhile (its events still land in the replay ring).
pub fn tool_result<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    mut body: B,
) -> Fast<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError,
{
    match input.0 {
        None => Fast::direct(&mut body),
        Some(input) => recorded(
            site,
            input,
            body,
            finish_tool_result::<T, E>,
            move |i, b, c, h, r| tool_result_full(site, i, b, c, h, r),
        ),
    }
}

async fn tool_result_full<B, T, E>(
    site: &'static ToolSite,
    input: Payload,
    body: B,
    call: Call,
    host: Arc<dyn Host>,
    run_id: super::RunId,
) -> Result<T, E>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError,
{
    let node = start_tool(call.parent(), host, run_id, site, input);
    let policy = Policy::<Result<T, E>> {
        error: result_error::<T, E>,
        encode: |r| r.as_ref().ok().map(to_value),
        inject: Some((validator_for::<T>, |v| {
            serde_json::from_value(v).ok().map(Ok)
        })),
        after: true,
        usage: no_usage,
        reencode: false,
    };
    gated(&call, node, body, &policy, false).await.0
}

/// A streaming tool: gated before start only; items are observed as token previews and
/// counted; `node.finished` (`streaming: true`, `chunks`) when the stream ends or is dropped.
pub async fn tool_stream<B, S>(site: &'static ToolSite, input: Input, body: B) -> Tee<S>
where
    B: Body<Output = S>,
    S: Stream,
    S::Item: StreamItem,
{
    let Input(Some(input)) = input else {
        return Tee::passthrough(first(body).await);
    };
    let (call, host, run_id) = Call::current(
        NodeKind::Tool,
        Cow::Borrowed(site.name),
        site.retry && B::RETRY,
    );
    let node = start_tool(call.parent(), host, run_id, site, input);
    let policy = Policy::<S> {
        error: |_| None,
        encode: |_| None,
        inject: None,
        after: false,
        usage: no_usage,
        reencode: false,
    };
    let (stream, node) = gated(&call, node, body, &policy, true).await;
    match node {
        Some(node) => Tee::new(stream, Observer::new(node), observe_item::<S::Item>),
        None => Tee::passthrough(stream),
    }
}

/// A streaming tool returning `Result<impl Stream, E>`: an `Err` at creation is recorded
/// (node.error, finished `error`) without an error gate.
pub async fn tool_stream_result<B, S, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
) -> Result<Tee<S>, E>
where
    B: Body<Output = Result<S, E>>,
    S: Stream,
    S::Item: StreamItem,
    E: ToolError,
{
    let Input(Some(input)) = input else {
        return first(body).await.map(Tee::passthrough);
    };
    let (call, host, run_id) = Call::current(
        NodeKind::Tool,
        Cow::Borrowed(site.name),
        site.retry && B::RETRY,
    );
    let mut node = start_tool(call.parent(), host, run_id, site, input);
    if node.host.needs_first_use() {
        node.host.first_use().await;
    }
    // Only a before gate: an error at creation is recorded, not gated.
    match call
        .gate(&mut node, PausePoint::Before, None, Extra::new(), None)
        .await
    {
        Act::Abort => {
            node.finish(Status::Aborted, Finish::default());
            call.abort().await;
        }
        Act::Continue | Act::Retry | Act::Inject(_) => {}
    }
    match first(body).await {
        Ok(stream) => Ok(Tee::new(
            stream,
            Observer::new(node),
            observe_item::<S::Item>,
        )),
        Err(e) => {
            node.error(error_info(short_type_name::<E>(), e.to_string()));
            node.finish(Status::Error, Finish::default());
            Err(e)
        }
    }
}

/// Previews one streamed tool item: strings as they are, other values as compact JSON;
/// an item serialized as `{"Err": …}` is recorded as an error.
pub(crate) fn observe_item<I: StreamItem>(obs: &mut Observer, item: &I) {
    obs.chunks += 1;
    match to_value(item) {
        Value::String(s) => obs.node.push_token(graphmind_protocol::DeltaKind::Text, &s),
        Value::Object(map) if map.len() == 1 && map.contains_key("Err") => {
            let msg = match &map["Err"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            obs.errors += 1;
            obs.node.error(error_info("StreamError", msg));
        }
        Value::Object(map) if map.len() == 1 && map.contains_key("Ok") => {
            let text = match &map["Ok"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            obs.node
                .push_token(graphmind_protocol::DeltaKind::Text, &text);
        }
        other => obs
            .node
            .push_token(graphmind_protocol::DeltaKind::Text, &other.to_string()),
    }
}
