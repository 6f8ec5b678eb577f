//! The model-step entry points of `__private`: node `llm:step`, instanceId
//! `<invocationId>:s<N>`, invocation grouping, graph.hint on an invocation's first step.

use std::sync::{Arc, Mutex, PoisonError};

use futures_core::Stream;
use graphmind_protocol::{Extra, GraphHint, GraphNodeHint, Message, NodeKind, TokenUsage};
use serde_json::Value;

use super::Host;
use super::scope::{Invocation, StepState};
use super::tool::{Call, Policy, gated};
use crate::__private::{Body, Fast, StepInput, StepOutput, StepSite, ToolError};
use crate::gate::validator_for;
use crate::model::{Grouping, StepChunk, StepResponse, Usage, hash_str};
use crate::node::{NodeRun, StartSpec, error_info, short_type_name, to_value};
use crate::tee::{Observer, Tee};

pub(crate) const STEP_NODE: &str = "llm:step";

/// Grouping key from a captured input: its `messages` array (top level, or one level down).
fn auto_key(input: &Value) -> Option<(u64, usize)> {
    let find = |v: &Value| v.get("messages").and_then(Value::as_array).cloned();
    let messages =
        find(input).or_else(|| input.as_object().and_then(|m| m.values().find_map(find)))?;
    let first = messages.first().map(Value::to_string).unwrap_or_default();
    Some((hash_str(&first), messages.len()))
}

/// Picks the invocation for a step and returns (instanceId, first step of the invocation).
fn place(state: &mut StepState, grouping: &Grouping, input: &Value) -> (String, bool) {
    let (key, first, len) = match grouping {
        Grouping::Explicit(k) => (Some(k.clone()), None, 0),
        Grouping::Messages(h, n) => (None, Some(*h), *n),
        Grouping::Auto => match auto_key(input) {
            Some((h, n)) => (None, Some(h), n),
            None => (None, None, 0),
        },
        Grouping::After(_) => (None, None, 0),
    };
    let continues = state.invocation.as_ref().is_some_and(|inv| {
        if let Grouping::After(prev) = grouping {
            return inv.response.as_ref() == Some(prev);
        }
        match (&key, first) {
            (Some(k), _) => inv.key.as_ref() == Some(k),
            (None, Some(h)) => inv.first == Some(h) && len > inv.len,
            (None, None) => false,
        }
    });
    if continues && let Some(inv) = state.invocation.as_mut() {
        inv.steps += 1;
        inv.len = len;
        inv.response = None;
        return (format!("{}:s{}", inv.id, inv.steps), false);
    }
    let id = super::next_id("inv");
    let instance = format!("{id}:s1");
    state.invocation = Some(Invocation {
        id,
        key,
        first,
        len,
        steps: 1,
        response: None,
    });
    (instance, true)
}

fn start_step(
    call: &Call,
    host: Arc<dyn Host>,
    run_id: super::RunId,
    site: &StepSite,
    input: Value,
    grouping: &Grouping,
) -> NodeRun {
    static OUTSIDE: Mutex<StepState> = Mutex::new(StepState { invocation: None });
    let (instance_id, first) = match &call.run {
        Some(run) => place(
            &mut run.steps.lock().unwrap_or_else(PoisonError::into_inner),
            grouping,
            &input,
        ),
        None => place(
            &mut OUTSIDE.lock().unwrap_or_else(PoisonError::into_inner),
            grouping,
            &input,
        ),
    };
    let parent = call.run.as_ref().map(|r| r.agent_node.clone());
    if first {
        let mut nodes = Vec::new();
        if let Some(run) = &call.run {
            nodes.push(GraphNodeHint {
                node_id: run.agent_node.to_string(),
                kind: NodeKind::Agent,
                name: run.name.clone(),
                parent_id: None,
                extra: Extra::new(),
            });
        }
        nodes.push(GraphNodeHint {
            node_id: STEP_NODE.into(),
            kind: NodeKind::Llm,
            name: "step".into(),
            parent_id: parent.as_deref().map(str::to_owned),
            extra: Extra::new(),
        });
        let mut tools = crate::roster::tools();
        tools.extend(site.tools.iter().copied());
        tools.sort_unstable();
        tools.dedup();
        nodes.extend(tools.into_iter().map(|t| GraphNodeHint {
            node_id: format!("tool:{t}"),
            kind: NodeKind::Tool,
            name: t.to_owned(),
            parent_id: Some(STEP_NODE.into()),
            extra: Extra::new(),
        }));
        host.emit(
            &run_id,
            Message::GraphHint(GraphHint {
                nodes,
                extra: Extra::new(),
            }),
        );
    }
    NodeRun::start(
        host,
        run_id,
        StartSpec {
            node_id: STEP_NODE.into(),
            kind: NodeKind::Llm,
            name: "step".into(),
            instance_id: crate::record::InstanceId::Text(instance_id.into()),
            parent_id: parent,
            input: Some(crate::record::Payload::Json(Box::new(input))),
        },
    )
}

/// A model step started by hand ([`Node::start_step`](crate::node::Node::start_step)):
/// grouped, hinted and parented as a `#[model_step]` call is. `None` when the session is
/// disabled.
pub(crate) fn begin_by_hand(input: Value, grouping: &Grouping) -> Option<(Call, NodeRun)> {
    static BY_HAND: StepSite = StepSite {
        name: "step",
        tools: &[],
        retry: true,
    };
    let (call, host, run_id) =
        Call::current(NodeKind::Llm, std::borrow::Cow::Borrowed("step"), true);
    if !host.enabled() {
        return None;
    }
    let node = start_step(&call, host, run_id, &BY_HAND, input, grouping);
    Some((call, node))
}

fn response_usage<R: StepResponse>(r: &R) -> (Option<TokenUsage>, Option<String>) {
    (
        r.usage().map(Usage::to_wire),
        r.finish_reason().map(std::borrow::Cow::into_owned),
    )
}

async fn first<B: Body>(mut body: B) -> B::Output {
    let Some(fut) = body.attempt() else {
        unreachable!("a body always runs at least once")
    };
    fut.await
}

fn begin(
    site: &'static StepSite,
    retry: bool,
    input: Value,
    grouping: &Grouping,
) -> (Call, NodeRun) {
    let (call, host, run_id) = Call::current(
        NodeKind::Llm,
        std::borrow::Cow::Borrowed("step"),
        site.retry && retry,
    );
    let node = start_step(&call, host, run_id, site, input, grouping);
    (call, node)
}

/// A model step returning a response: gates before (nothing in flight while held), after,
/// no error gate.
pub fn model_step<B, R>(
    site: &'static StepSite,
    input: StepInput,
    mut body: B,
) -> Fast<B::Fut, impl Future<Output = R>>
where
    B: Body<Output = R>,
    R: StepOutput,
{
    match input.0 {
        None => Fast::direct(&mut body),
        Some((input, grouping)) => Fast::full(move || model_step_full(site, input, grouping, body)),
    }
}

async fn model_step_full<B, R>(
    site: &'static StepSite,
    input: Value,
    grouping: Grouping,
    body: B,
) -> R
where
    B: Body<Output = R>,
    R: StepOutput,
{
    let (call, node) = begin(site, B::RETRY, input, &grouping);
    let policy = Policy::<R> {
        error: |_| None,
        encode: |r| Some(to_value(r)),
        inject: Some((validator_for::<R>, |v| serde_json::from_value(v).ok())),
        after: true,
        usage: response_usage::<R>,
    };
    gated(&call, node, body, &policy, false).await.0
}

/// A model step returning `Result<R, E>`: gates before, after (on `Ok`), and error (retry
/// re-runs the body in the same node execution; inject substitutes the response).
pub fn model_step_result<B, R, E>(
    site: &'static StepSite,
    input: StepInput,
    mut body: B,
) -> Fast<B::Fut, impl Future<Output = Result<R, E>>>
where
    B: Body<Output = Result<R, E>>,
    R: StepOutput,
    E: ToolError,
{
    match input.0 {
        None => Fast::direct(&mut body),
        Some((input, grouping)) => {
            Fast::full(move || model_step_result_full(site, input, grouping, body))
        }
    }
}

async fn model_step_result_full<B, R, E>(
    site: &'static StepSite,
    input: Value,
    grouping: Grouping,
    body: B,
) -> Result<R, E>
where
    B: Body<Output = Result<R, E>>,
    R: StepOutput,
    E: ToolError,
{
    let (call, node) = begin(site, B::RETRY, input, &grouping);
    let policy = Policy::<Result<R, E>> {
        error: |r| {
            r.as_ref()
                .err()
                .map(|e| error_info(short_type_name::<E>(), e.to_string()))
        },
        encode: |r| r.as_ref().ok().map(to_value),
        inject: Some((validator_for::<R>, |v| {
            serde_json::from_value(v).ok().map(Ok)
        })),
        after: true,
        usage: |r| r.as_ref().map_or((None, None), response_usage::<R>),
    };
    gated(&call, node, body, &policy, false).await.0
}

/// Observes one chunk of a streamed model response.
pub(crate) fn observe_chunk<C: StepChunk>(obs: &mut Observer, chunk: &C) {
    obs.chunks += 1;
    let node = &mut obs.node;
    chunk.call_deltas(&mut |delta| node.push_delta(&delta));
    if let Some(u) = chunk.usage() {
        obs.usage = Some(u.to_wire());
    }
    if let Some(r) = chunk.finish_reason() {
        obs.finish_reason = Some(r.into_owned());
    }
    if let Some(e) = chunk.error() {
        obs.errors += 1;
        obs.node.error(error_info("StreamError", e));
    }
}

/// A streaming model step: gate before only; the stream is teed (token batches, usage and
/// finish reason on node.finished, also when the consumer drops it).
pub async fn model_step_stream<B, S>(site: &'static StepSite, input: StepInput, body: B) -> Tee<S>
where
    B: Body<Output = S>,
    S: Stream,
    S::Item: StepChunk,
{
    let StepInput(Some((input, grouping))) = input else {
        return Tee::passthrough(first(body).await);
    };
    let (call, node) = begin(site, B::RETRY, input, &grouping);
    let policy = Policy::<S> {
        error: |_| None,
        encode: |_| None,
        inject: None,
        after: false,
        usage: |_| (None, None),
    };
    match gated(&call, node, body, &policy, true).await {
        (stream, Some(node)) => Tee::new(stream, Observer::new(node), observe_chunk::<S::Item>),
        (stream, None) => Tee::passthrough(stream),
    }
}

/// A streaming model step returning `Result<impl Stream, E>`: gates before, and error when
/// the stream cannot be created (retry re-runs the body; inject is refused).
pub async fn model_step_stream_result<B, S, E>(
    site: &'static StepSite,
    input: StepInput,
    body: B,
) -> Result<Tee<S>, E>
where
    B: Body<Output = Result<S, E>>,
    S: Stream,
    S::Item: StepChunk,
    E: ToolError,
{
    let StepInput(Some((input, grouping))) = input else {
        return first(body).await.map(Tee::passthrough);
    };
    let (call, node) = begin(site, B::RETRY, input, &grouping);
    let policy = Policy::<Result<S, E>> {
        error: |r| {
            r.as_ref()
                .err()
                .map(|e| error_info(short_type_name::<E>(), e.to_string()))
        },
        encode: |_| None,
        inject: None,
        after: false,
        usage: |_| (None, None),
    };
    match gated(&call, node, body, &policy, true).await {
        (Ok(stream), Some(node)) => Ok(Tee::new(
            stream,
            Observer::new(node),
            observe_chunk::<S::Item>,
        )),
        (other, _) => other.map(Tee::passthrough),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_continues_on_a_grown_conversation_only() {
        let mut state = StepState::default();
        let input = Value::Null;
        let (a, first) = place(&mut state, &Grouping::Messages(1, 2), &input);
        assert!(first && a.ends_with(":s1"));
        let (b, first) = place(&mut state, &Grouping::Messages(1, 4), &input);
        assert!(!first && b.ends_with(":s2"));
        assert_eq!(
            a.rsplit_once(':').map(|x| x.0),
            b.rsplit_once(':').map(|x| x.0)
        );
        let (c, first) = place(&mut state, &Grouping::Messages(1, 4), &input);
        assert!(first && c.ends_with(":s1"), "not grown: a new invocation");
        let (d, first) = place(&mut state, &Grouping::Messages(2, 9), &input);
        assert!(first && d.ends_with(":s1"), "another first message");
    }

    #[test]
    fn after_grouping_continues_the_invocation_that_answered_with_the_id() {
        let mut state = StepState::default();
        let (a, first) = place(&mut state, &Grouping::after("resp_0"), &Value::Null);
        assert!(first, "no step answered resp_0 yet");
        if let Some(inv) = state.invocation.as_mut() {
            inv.response = Some("resp_1".into());
        }
        let (b, first) = place(&mut state, &Grouping::after("resp_1"), &Value::Null);
        assert!(!first && b.ends_with(":s2"), "{a} then {b}");
        let (_, first) = place(&mut state, &Grouping::after("resp_1"), &Value::Null);
        assert!(
            first,
            "the answer of step 2 is not known yet: resp_1 is no longer the latest"
        );
    }

    #[test]
    fn explicit_and_auto_grouping() {
        let mut state = StepState::default();
        let (_, first) = place(&mut state, &Grouping::explicit("t-1"), &Value::Null);
        assert!(first);
        let (b, first) = place(&mut state, &Grouping::explicit("t-1"), &Value::Null);
        assert!(!first && b.ends_with(":s2"));
        let msgs = |n: usize| serde_json::json!({"req": {"messages": vec!["sys"; n]}});
        let (_, first) = place(&mut state, &Grouping::Auto, &msgs(1));
        assert!(first);
        let (c, first) = place(&mut state, &Grouping::Auto, &msgs(3));
        assert!(
            !first && c.ends_with(":s2"),
            "messages found one level down"
        );
        let (_, first) = place(&mut state, &Grouping::Auto, &Value::Null);
        assert!(first, "no messages: every step is its own invocation");
    }
}
