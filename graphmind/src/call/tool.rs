//! The tool entry points of `__private`: `tool`, `tool_result`, `tool_stream`,
//! `tool_stream_result`.

use std::borrow::Cow;
use std::sync::Arc;

use futures_core::Stream;
use graphmind_protocol::{ErrorInfo, Extra, NodeKind, PausePoint, Status};
use serde_json::Value;

use super::Host;
use super::context::{Call, Offer};
use super::detached::{DetachedNode, Ending, RunRef};
use super::policy::{Policy, gated};
use super::scope::Scope;
use crate::call::expansion::{
    Body, CallFuture, Input, ItemDecode, Rejectable, Replayable, StreamItem, ToolError, ToolOutput,
};
use crate::call::node_run::{Finish, NodeRun, StartSpec};
use crate::call::tee::{Observer, Tee};
use crate::captured::Val;
use crate::captured::to_value;
use crate::errors::{error_info, short_type_name};
use crate::event::{InstanceId, Payload};
use crate::gate::{Resume, validator_for};
use crate::sites::ToolSite;

fn no_usage<O>(_: &O) -> (Option<crate::model::Usage>, Extra) {
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

/// Whether a call's input is kept for an edit: its body is editable and one of its gates
/// may hold (a breakpoint or step mode at `before`, `after` or `error` — an edit there
/// goes with a retry —, or the loop guard).
pub(crate) fn keeps_input(host: &dyn Host, editable: bool, kind: NodeKind, name: &str) -> bool {
    editable
        && host.attached()
        && !host.gates().edits_killed()
        && (host.loop_guard().on != crate::config::OnLoop::Off
            || [PausePoint::Before, PausePoint::After, PausePoint::Error]
                .into_iter()
                .any(|point| super::should_pause(host, kind, name, point).is_some()))
}

fn start_tool(
    parent: Option<crate::inline_str::SmallStr>,
    host: Arc<dyn Host>,
    run_id: crate::ids::RunId,
    site: &ToolSite,
    input: Payload,
    editable: bool,
) -> NodeRun {
    let instance_id = instance_id(site, &input);
    let loop_fp = (host.attached() && host.loop_guard().on != crate::config::OnLoop::Off)
        .then(|| crate::loop_guard::fingerprint(site.node_id, &input));
    let keep = keeps_input(&*host, editable, NodeKind::Tool, site.name)
        .then(|| serde_json::to_value(&input));
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
            extra: Extra::new(),
        },
    );
    node.loop_fp = loop_fp;
    if let Some(Ok(Value::Object(live))) = keep {
        node.edit = Some(Box::new(crate::call::node_run::EditState {
            live,
            before: None,
            bare: None,
        }));
    }
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
    done: fn(&B::Output) -> Ending,
    full: impl FnOnce(Payload, B, Call, Arc<dyn Host>, crate::ids::RunId) -> F,
) -> CallFuture<B::Fut, F>
where
    B: Body,
    F: Future<Output = B::Output>,
{
    let run = match Scope::run() {
        Some(run) => RunRef::Run(run),
        None => RunRef::Implicit(super::default_host()),
    };
    let host = match &run {
        RunRef::Run(r) => &*r.host,
        RunRef::Implicit(h) => &**h,
    };
    if host.attached() || host.needs_first_use() || crate::replay::any() {
        let (call, host, run_id) = Call::current(
            NodeKind::Tool,
            Cow::Borrowed(site.name),
            site.retry && B::RETRY,
        );
        return CallFuture::full(move || full(input, body, call, host, run_id));
    }
    let instance_id = instance_id(site, &input);
    let node = DetachedNode::start(run, site, input, instance_id);
    CallFuture::detached(&mut body, node, done)
}

fn finish_tool<R: ToolOutput>(out: &R) -> Ending {
    Ending {
        status: Status::Ok,
        output: Some(Val::of(out)),
        error: None,
    }
}

fn finish_tool_result<T: ToolOutput, E: ToolError>(out: &Result<T, E>) -> Ending {
    match out {
        Ok(v) => finish_tool(v),
        Err(e) => Ending {
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
#[inline]
pub fn tool<B, R>(
    site: &'static ToolSite,
    input: Input,
    mut body: B,
) -> CallFuture<B::Fut, impl Future<Output = R>>
where
    B: Body<Output = R>,
    R: ToolOutput,
{
    match input.0 {
        None => CallFuture::direct(&mut body),
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
    run_id: crate::ids::RunId,
) -> R
where
    B: Body<Output = R>,
    R: ToolOutput,
{
    let node = start_tool(call.parent(), host, run_id, site, input, B::EDIT);
    let policy = Policy::<R> {
        error: |_| None,
        encode: |r| Some(to_value(r)),
        inject: Some((validator_for::<R>, |v| serde_json::from_value(v).ok())),
        after: true,
        usage: no_usage,
        reencode: false,
        reject: None,
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
#[inline]
pub fn tool_result<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
) -> CallFuture<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError,
{
    result_call(site, input, body, ResultOptions::PLAIN)
}

/// [`tool_result`] for a `#[graphmind::tool(reject)]`: at its `before` gate a person may
/// reject the call with a reason; it then does not run and returns
/// `Err(E::from(Rejection))`.
#[inline]
pub fn tool_result_reject<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
) -> CallFuture<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError + Rejectable,
{
    let options = ResultOptions {
        reject: Some(|r| Err(E::from(r))),
        replay_error: None,
    };
    result_call(site, input, body, options)
}

/// [`tool_result`] for a `#[graphmind::tool(replay_errors)]`: a replay answers a call whose
/// recorded outcome is an error with `Err(E::from(RecordedError))`, without running it.
#[inline]
pub fn tool_result_replay<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
) -> CallFuture<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError + Replayable,
{
    let options = ResultOptions {
        reject: None,
        replay_error: Some(E::from),
    };
    result_call(site, input, body, options)
}

/// [`tool_result_reject`] and [`tool_result_replay`] at once: `#[graphmind::tool(reject,
/// replay_errors)]`.
#[inline]
pub fn tool_result_reject_replay<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
) -> CallFuture<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError + Rejectable + Replayable,
{
    let options = ResultOptions {
        reject: Some(|r| Err(E::from(r))),
        replay_error: Some(E::from),
    };
    result_call(site, input, body, options)
}

/// What a `Result` tool's attribute asked for beyond the plain gates; the public entry
/// points differ only in these (and in the bounds that make them possible).
struct ResultOptions<T, E> {
    /// `reject`: what a rejected call returns.
    reject: Option<fn(crate::Rejection) -> Result<T, E>>,
    /// `replay_errors`: the error a replay answers a recorded error with.
    replay_error: Option<fn(crate::RecordedError) -> E>,
}

impl<T, E> ResultOptions<T, E> {
    const PLAIN: Self = Self {
        reject: None,
        replay_error: None,
    };
}

/// The one body of the four `tool_result*` entry points: a detached call records, an
/// attached one goes through its gates.
fn result_call<B, T, E>(
    site: &'static ToolSite,
    input: Input,
    mut body: B,
    options: ResultOptions<T, E>,
) -> CallFuture<B::Fut, impl Future<Output = Result<T, E>>>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError,
{
    match input.0 {
        None => CallFuture::direct(&mut body),
        Some(input) => recorded(
            site,
            input,
            body,
            finish_tool_result::<T, E>,
            move |i, b, c, h, r| tool_result_full(site, i, b, c, h, r, options),
        ),
    }
}

fn result_policy<T: ToolOutput, E: ToolError>() -> Policy<Result<T, E>> {
    Policy::<Result<T, E>> {
        error: result_error::<T, E>,
        encode: |r| r.as_ref().ok().map(to_value),
        inject: Some((validator_for::<T>, |v| {
            serde_json::from_value(v).ok().map(Ok)
        })),
        after: true,
        usage: no_usage,
        reencode: false,
        reject: None,
    }
}

/// A gated `Result` tool call: a replay serves a recorded error when the tool opted in;
/// the rest as [`tool_result`] (with reject support when the tool opted in).
async fn tool_result_full<B, T, E>(
    site: &'static ToolSite,
    input: Payload,
    body: B,
    call: Call,
    host: Arc<dyn Host>,
    run_id: crate::ids::RunId,
    options: ResultOptions<T, E>,
) -> Result<T, E>
where
    B: Body<Output = Result<T, E>>,
    T: ToolOutput,
    E: ToolError,
{
    let mut node = start_tool(call.parent(), host, run_id, site, input, B::EDIT);
    if let Some(replay_error) = options.replay_error
        && let Some(recorded) = super::replayed::served_error(&mut node)
    {
        return Err(replay_error(recorded));
    }
    let mut policy = result_policy::<T, E>();
    policy.reject = options.reject;
    gated(&call, node, body, &policy, false).await.0
}

/// A streaming tool: gated before start only; items are observed as token previews and
/// counted; `node.finished` (`streaming: true`, `chunks`, the items as JSON in
/// `recordedChunks`) when the stream ends or is dropped. `decode` rebuilds an item from its
/// JSON (the expansion passes one when the item type deserializes): a replay then hands the
/// caller the recorded items, in order, without running the body.
pub async fn tool_stream<B, S>(
    site: &'static ToolSite,
    input: Input,
    body: B,
    decode: ItemDecode<S::Item>,
) -> Tee<S>
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
    let mut node = start_tool(call.parent(), host, run_id, site, input, B::EDIT);
    if let Some((items, step)) = super::replayed::stream_items(&mut node, decode) {
        let observer = super::replayed::served_observer(node, step);
        return Tee::replayed(items, observer, observe_item::<S::Item>);
    }
    let policy = Policy::<S> {
        error: |_| None,
        encode: |_| None,
        inject: None,
        after: false,
        usage: no_usage,
        reencode: false,
        reject: None,
    };
    let (stream, node) = gated(&call, node, body, &policy, true).await;
    match node {
        Some(node) => Tee::new(stream, Observer::new(node), observe_item::<S::Item>),
        None => Tee::passthrough(stream),
    }
}

/// A streaming tool returning `Result<impl Stream, E>`: an `Err` at creation is recorded
/// (node.error, finished `error`) without an error gate. `decode` as for [`tool_stream`]: a
/// replay of a stream created `Ok` hands back the recorded items.
pub async fn tool_stream_result<B, S, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
    decode: ItemDecode<S::Item>,
) -> Result<Tee<S>, E>
where
    B: Body<Output = Result<S, E>>,
    S: Stream,
    S::Item: StreamItem,
    E: ToolError,
{
    stream_result(site, input, body, decode, None).await
}

/// [`tool_stream_result`] for a `#[graphmind::tool(reject)]`: at its `before` gate a person
/// may reject the call with a reason; the stream is then never created and the call returns
/// `Err(E::from(Rejection))`.
pub async fn tool_stream_result_reject<B, S, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
    decode: ItemDecode<S::Item>,
) -> Result<Tee<S>, E>
where
    B: Body<Output = Result<S, E>>,
    S: Stream,
    S::Item: StreamItem,
    E: ToolError + Rejectable,
{
    stream_result(site, input, body, decode, Some(|r| E::from(r))).await
}

async fn stream_result<B, S, E>(
    site: &'static ToolSite,
    input: Input,
    body: B,
    decode: ItemDecode<S::Item>,
    reject: Option<fn(crate::Rejection) -> E>,
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
    let mut node = start_tool(call.parent(), host, run_id, site, input, false);
    if let Some((items, step)) = super::replayed::stream_items(&mut node, decode) {
        let observer = super::replayed::served_observer(node, step);
        return Ok(Tee::replayed(items, observer, observe_item::<S::Item>));
    }
    let (mut node, forced) = super::replayed::unanswerable(&call, node).await;
    if node.host.needs_first_use() {
        node.host.first_use().await;
    }
    // Only a before gate: an error at creation is recorded, not gated.
    let offer = Offer {
        edit: None,
        reject: reject.is_some(),
    };
    match call
        .gate_offering(
            &mut node,
            PausePoint::Before,
            None,
            Extra::new(),
            forced,
            offer,
        )
        .await
    {
        Resume::Abort => {
            node.finish(Status::Aborted, Finish::default());
            call.abort().await;
        }
        Resume::Reject(reason) => {
            if let Some(reject) = reject {
                super::policy::finish_rejected(node, reason.clone());
                return Err(reject(crate::Rejection::new(reason)));
            }
        }
        Resume::Continue | Resume::Retry | Resume::Inject(_) | Resume::Edit { .. } => {}
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
/// an item serialized as `{"Err": …}` is recorded as an error. The item's JSON is kept for
/// replay (`recordedChunks`).
pub(crate) fn observe_item<I: StreamItem>(obs: &mut Observer, item: &I) {
    obs.chunks += 1;
    let value = to_value(item);
    obs.recorded.get_or_insert_default().push(value.clone());
    match value {
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
