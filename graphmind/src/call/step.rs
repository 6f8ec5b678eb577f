//! The model-step entry points of `__private`: node `llm:step`, instanceId
//! `<invocationId>:s<N>`, invocation grouping, graph.hint on an invocation's first step.

use std::sync::{Arc, Mutex, PoisonError};

use futures_core::Stream;
use graphmind_protocol::{Extra, GraphHint, GraphNodeHint, Message, NodeKind};
use serde_json::Value;

use super::Host;
use super::context::Call;
use super::policy::{Policy, gated};
use super::scope::{Invocation, StepState};
use crate::call::expansion::{Body, CallFuture, StepCapture, StepInput, StepOutput, ToolError};
use crate::call::node_run::{NodeRun, StartSpec};
use crate::call::tee::{Observer, Tee};
use crate::captured::to_value;
use crate::clock::Instant;
use crate::errors::{error_info, short_type_name};
use crate::event::Payload;
use crate::gate::{Validator, validator_for};
use crate::model::{ChunkCodec, DeltaKind, Grouping, Reply, ResponseCodec, Usage, hash_str};
use crate::sites::StepSite;
use serde_json::value::RawValue;

pub(crate) use super::context::STEP_NODE;

/// The invocations of model steps made outside any run.
static OUTSIDE: Mutex<StepState> = Mutex::new(StepState {
    invocation: None,
    hinted: Vec::new(),
});

/// Grouping key from a captured input: its `messages` array (top level, or one level down).
fn auto_key(input: &Value) -> Option<(u64, usize)> {
    fn find(v: &Value) -> Option<&Vec<Value>> {
        v.get("messages").and_then(Value::as_array)
    }
    let messages =
        find(input).or_else(|| input.as_object().and_then(|m| m.values().find_map(find)))?;
    let first = messages.first().map(Value::to_string).unwrap_or_default();
    Some((hash_str(&first), messages.len()))
}

/// [`auto_key`] for an input held as JSON text: the first message's text is hashed (so the
/// key is stable between the steps of one conversation captured this way). Nothing is built
/// but the list of the messages' places in the text.
fn auto_key_raw(input: &RawValue) -> Option<(u64, usize)> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        messages: Option<Vec<&'a RawValue>>,
    }
    fn key(messages: &[&RawValue]) -> (u64, usize) {
        let first = messages.first().map_or("", |m| m.get());
        (hash_str(first), messages.len())
    }
    /// The first value of an object that has a `messages` array.
    struct Nested;
    impl<'de> serde::de::Visitor<'de> for Nested {
        type Value = Option<(u64, usize)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some((serde::de::IgnoredAny, v)) =
                map.next_entry::<serde::de::IgnoredAny, &'de RawValue>()?
            {
                if found.is_none()
                    && let Ok(Top {
                        messages: Some(m), ..
                    }) = serde_json::from_str::<Top<'_>>(v.get())
                {
                    found = Some(key(&m));
                }
            }
            Ok(found)
        }
    }
    match serde_json::from_str::<Top<'_>>(input.get()) {
        Ok(Top {
            messages: Some(m), ..
        }) => Some(key(&m)),
        _ => {
            use serde::Deserializer;
            let mut de = serde_json::Deserializer::from_str(input.get());
            de.deserialize_map(Nested).ok().flatten()
        }
    }
}

/// The grouping key of a captured input, for [`Grouping::Auto`].
fn payload_key(input: &Payload) -> Option<(u64, usize)> {
    match input {
        Payload::Json(v) => auto_key(v),
        Payload::Raw(r) => auto_key_raw(r),
        Payload::Lazy(l) => auto_key_raw(l.text()),
        Payload::Fields(_) => None,
    }
}

/// Whether `hint` is new to the run `run_id` of `state` (then it is to be sent).
pub(crate) fn first_hint(state: &mut StepState, run_id: &str, hint: &GraphHint) -> bool {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    run_id.hash(&mut h);
    for n in &hint.nodes {
        (&n.node_id, &n.name, &n.parent_id, n.kind as u8).hash(&mut h);
        n.extra.len().hash(&mut h);
        for (k, v) in &n.extra {
            (k, v.to_string()).hash(&mut h);
        }
    }
    state.first_hint(h.finish())
}

/// Emits `hint` into the node's run unless an identical one was sent to that run before.
pub(crate) fn hint_once(
    call: &Call,
    host: &dyn Host,
    run_id: &str,
    hint: GraphHint,
) -> Option<u64> {
    let new = match &call.run {
        Some(run) => first_hint(
            &mut run.steps.lock().unwrap_or_else(PoisonError::into_inner),
            run_id,
            &hint,
        ),
        None => first_hint(
            &mut OUTSIDE.lock().unwrap_or_else(PoisonError::into_inner),
            run_id,
            &hint,
        ),
    };
    if !new {
        return None;
    }
    host.emit(run_id, Message::GraphHint(hint))
}

/// Picks the invocation for a step and returns (instanceId, first step of the invocation).
fn place(
    state: &mut StepState,
    grouping: &Grouping,
    auto: impl FnOnce() -> Option<(u64, usize)>,
) -> (String, bool) {
    let (key, first, len) = match grouping {
        Grouping::Explicit(k) => (Some(k.clone()), None, 0),
        Grouping::Messages(h, n) => (None, Some(*h), *n),
        Grouping::Auto => match auto() {
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
    let id = crate::ids::next_id("inv");
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
    run_id: crate::ids::RunId,
    site: &StepSite,
    input: Payload,
    grouping: &Grouping,
    at: Instant,
) -> NodeRun {
    let auto = || payload_key(&input);
    let (instance_id, first) = match &call.run {
        Some(run) => place(
            &mut run.steps.lock().unwrap_or_else(PoisonError::into_inner),
            grouping,
            auto,
        ),
        None => place(
            &mut OUTSIDE.lock().unwrap_or_else(PoisonError::into_inner),
            grouping,
            auto,
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
        // The step's own roster only: every tool linked into the binary would draw other
        // agents' tools under this step.
        let mut tools = site.tools.to_vec();
        tools.sort_unstable();
        tools.dedup();
        nodes.extend(tools.into_iter().map(|t| GraphNodeHint {
            node_id: format!("tool:{t}"),
            kind: NodeKind::Tool,
            name: t.to_owned(),
            parent_id: Some(STEP_NODE.into()),
            extra: Extra::new(),
        }));
        hint_once(
            call,
            &*host,
            &run_id,
            GraphHint {
                nodes,
                extra: Extra::new(),
            },
        );
    }
    NodeRun::start_at(
        host,
        run_id,
        StartSpec {
            node_id: STEP_NODE.into(),
            kind: NodeKind::Llm,
            name: "step".into(),
            instance_id: crate::event::InstanceId::Text(instance_id.into()),
            parent_id: parent,
            input: Some(input),
            extra: Extra::new(),
        },
        at,
    )
}

/// A model step started by hand ([`Node::start_step`](crate::node::Node::start_step)):
/// grouped, hinted and parented as a `#[model_step]` call is. `None` when the session is
/// disabled.
pub(crate) fn begin_by_hand(
    input: Payload,
    grouping: &Grouping,
    at: Instant,
) -> Option<(Call, NodeRun)> {
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
    let node = start_step(&call, host, run_id, &BY_HAND, input, grouping, at);
    Some((call, node))
}

/// Usage and the loose fields of a response, read through its codec. The finish reason is
/// said once: in the output when the codec reads the text (`finishReason` normalized,
/// `rawFinishReason` the provider's spelling, all a GraphMind viewer reads), else, the
/// output being the response as it serializes, as the loose `finishReason`.
fn response_usage<K: ResponseCodec<R>, R>(r: &R) -> (Option<Usage>, Extra) {
    let mut extra = Extra::new();
    if K::text(r).is_none()
        && let Some(reason) = K::finish_reason(r)
    {
        extra.insert("finishReason".into(), reason.into_owned().into());
    }
    if let Some(model) = K::model(r) {
        extra.insert("model".into(), model.into_owned().into());
    }
    if let Some(id) = K::response_id(r) {
        extra.insert("responseId".into(), id.into_owned().into());
    }
    (K::usage(r), extra)
}

/// The recorded output: GraphMind 0.6's `{text, finishReason, rawFinishReason, toolCalls}`
/// with the full response under `response` when the codec reads the text, else the response
/// as it serializes.
fn encode_response<K: ResponseCodec<R>, R: serde::Serialize>(r: &R) -> Value {
    match Reply::parts::<K, R>(r) {
        Some(reply) => reply.response(to_value(r)).into_value(),
        None => to_value(r),
    }
}

/// An injected response: the function's return type itself, or a recorded 0.6 output
/// (edited) whose `response` is one.
fn inject_response<R: serde::de::DeserializeOwned>(v: Value) -> Option<R> {
    if let Some(inner) = v.get("response").filter(|_| is_reply(&v))
        && let Ok(r) = serde_json::from_value(inner.clone())
    {
        return Some(r);
    }
    serde_json::from_value(v).ok()
}

/// Whether `v` looks like a recorded 0.6 output (`text` and `response` keys).
fn is_reply(v: &Value) -> bool {
    v.get("text").is_some_and(Value::is_string) && v.get("response").is_some()
}

/// The validator of an injected response: see [`inject_response`].
fn response_validator<R: serde::de::DeserializeOwned>() -> Validator {
    let direct = validator_for::<R>();
    let inner = validator_for::<R>();
    Box::new(
        move |v: &Value| match v.get("response").filter(|_| is_reply(v)) {
            Some(response) => inner(response).or_else(|_| direct(v)),
            None => direct(v),
        },
    )
}

/// Remembers the response id a step answered with, so that a request naming it as its
/// previous response continues the invocation ([`Grouping::After`]).
pub(crate) fn note_response(call: &Call, instance_id: &str, response_id: &str) {
    let mut state = match &call.run {
        Some(run) => run.steps.lock().unwrap_or_else(PoisonError::into_inner),
        None => OUTSIDE.lock().unwrap_or_else(PoisonError::into_inner),
    };
    if let Some(inv) = state.invocation.as_mut()
        && instance_id.strip_prefix(inv.id.as_str()) == Some(&format!(":s{}", inv.steps))
    {
        inv.response = Some(response_id.to_owned());
    }
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
    editable: bool,
    capture: StepCapture,
) -> (Call, NodeRun, String) {
    let StepCapture {
        input,
        grouping,
        api,
        bare,
    } = capture;
    let (call, host, run_id) = Call::current(
        NodeKind::Llm,
        std::borrow::Cow::Borrowed("step"),
        site.retry && retry,
    );
    let keep = match &input {
        Value::Object(map) if super::tool::keeps_input(&*host, editable, NodeKind::Llm, "step") => {
            Some(map.clone())
        }
        _ => None,
    };
    let mut node = start_step(
        &call,
        host,
        run_id,
        site,
        Payload::Json(Box::new(input)),
        &grouping,
        Instant::now(),
    );
    node.api = api;
    if let Some(live) = keep {
        node.edit = Some(Box::new(crate::call::node_run::EditState {
            live,
            before: None,
            bare,
        }));
    }
    let instance = node.instance_id.to_string();
    (call, node, instance)
}

fn step_policy<K, R>() -> Policy<R>
where
    K: ResponseCodec<R>,
    R: StepOutput,
{
    Policy::<R> {
        error: |_| None,
        encode: |r| Some(encode_response::<K, R>(r)),
        inject: Some((response_validator::<R>, inject_response::<R>)),
        after: true,
        usage: response_usage::<K, R>,
        reencode: true,
        reject: None,
    }
}

/// A model step returning a response: gates before (nothing in flight while held), after,
/// no error gate. The response is read through the codec `K` ([`Native`](crate::model::Native)
/// unless the attribute names one).
pub fn model_step<K, B, R>(
    site: &'static StepSite,
    input: StepInput,
    mut body: B,
) -> CallFuture<B::Fut, impl Future<Output = R>>
where
    K: ResponseCodec<R>,
    B: Body<Output = R>,
    R: StepOutput,
{
    match input.0 {
        None => CallFuture::direct(&mut body),
        Some(capture) => CallFuture::full(move || model_step_full::<K, B, R>(site, capture, body)),
    }
}

async fn model_step_full<K, B, R>(site: &'static StepSite, capture: StepCapture, body: B) -> R
where
    K: ResponseCodec<R>,
    B: Body<Output = R>,
    R: StepOutput,
{
    let (call, node, instance) = begin(site, B::RETRY, B::EDIT, capture);
    let out = gated(&call, node, body, &step_policy::<K, R>(), false)
        .await
        .0;
    if let Some(id) = K::response_id(&out) {
        note_response(&call, &instance, &id);
    }
    out
}

/// A model step returning `Result<R, E>`: gates before, after (on `Ok`), and error (retry
/// re-runs the body in the same node execution; inject substitutes the response).
pub fn model_step_result<K, B, R, E>(
    site: &'static StepSite,
    input: StepInput,
    mut body: B,
) -> CallFuture<B::Fut, impl Future<Output = Result<R, E>>>
where
    K: ResponseCodec<R>,
    B: Body<Output = Result<R, E>>,
    R: StepOutput,
    E: ToolError,
{
    match input.0 {
        None => CallFuture::direct(&mut body),
        Some(capture) => {
            CallFuture::full(move || model_step_result_full::<K, B, R, E>(site, capture, body))
        }
    }
}

async fn model_step_result_full<K, B, R, E>(
    site: &'static StepSite,
    capture: StepCapture,
    body: B,
) -> Result<R, E>
where
    K: ResponseCodec<R>,
    B: Body<Output = Result<R, E>>,
    R: StepOutput,
    E: ToolError,
{
    let (call, node, instance) = begin(site, B::RETRY, B::EDIT, capture);
    let policy = Policy::<Result<R, E>> {
        error: |r| {
            r.as_ref()
                .err()
                .map(|e| error_info(short_type_name::<E>(), e.to_string()))
        },
        encode: |r| r.as_ref().ok().map(encode_response::<K, R>),
        inject: Some((response_validator::<R>, |v| inject_response(v).map(Ok))),
        after: true,
        usage: |r| {
            r.as_ref()
                .map_or_else(|_| (None, Extra::new()), response_usage::<K, R>)
        },
        reencode: true,
        reject: None,
    };
    let out = gated(&call, node, body, &policy, false).await.0;
    if let Ok(r) = &out
        && let Some(id) = K::response_id(r)
    {
        note_response(&call, &instance, &id);
    }
    out
}

/// Observes one chunk of a streamed model response, read through the codec `K`.
pub(crate) fn observe_chunk<K: ChunkCodec<C>, C>(obs: &mut Observer, chunk: &C) {
    obs.chunks += 1;
    if let Some(v) = K::to_recorded(chunk) {
        obs.recorded.get_or_insert_default().push(v);
    }
    let node = &mut obs.node;
    let reply = &mut obs.reply;
    K::stream_deltas(chunk, &mut obs.codec, &mut |delta| {
        node.push_delta(&delta);
        if matches!(delta.kind, DeltaKind::Text | DeltaKind::ToolArgs) {
            reply.get_or_insert_default().push(&delta);
        }
    });
    if let Some(u) = K::usage(chunk) {
        obs.usage = Some(u);
    }
    if let Some(r) = K::finish_reason(chunk) {
        obs.finish_reason = Some(r.into_owned());
    }
    if let Some(e) = K::error(chunk) {
        obs.errors += 1;
        obs.node.error(error_info("StreamError", e));
    }
}

/// A streamed step's recorded chunks, rebuilt, with the observer that finishes its node.
struct ReplayedChunks<C> {
    items: Vec<C>,
    observer: Observer,
    observe: fn(&mut Observer, &C),
}

impl<C> ReplayedChunks<C> {
    fn into_tee<S: Stream<Item = C>>(self) -> Tee<S> {
        Tee::replayed(self.items, self.observer, self.observe)
    }
}

/// Answers a streamed step from its recorded chunks when the replayer served it and every
/// chunk rebuilds through the codec; otherwise hands the node back to run live (with the
/// decision left for its `before` gate: a fork may hold there, a divergence stops there).
async fn replayed_chunks<K: ChunkCodec<C>, C>(
    call: &Call,
    mut node: NodeRun,
) -> Result<ReplayedChunks<C>, NodeRun> {
    let Some(decision) = node.replay.take() else {
        return Err(node);
    };
    let served = match *decision {
        crate::replay::Decision::Serve(served) => served,
        crate::replay::Decision::Stop(d) => {
            return Err(super::replayed::stop(call, node, &d).await);
        }
        other => {
            node.replay = Some(Box::new(other));
            return Err(node);
        }
    };
    let items: Option<Vec<C>> = served
        .chunks
        .unwrap_or_default()
        .into_iter()
        .map(K::from_recorded)
        .collect();
    match items {
        Some(items) if !items.is_empty() => {
            let mut observer = Observer::new(node);
            observer.extra = super::replayed::served_extra(served.step);
            Ok(ReplayedChunks {
                items,
                observer,
                observe: observe_chunk::<K, C>,
            })
        }
        _ => {
            if let Some(r) = node.host.replayer() {
                r.unserved(served.step, crate::replay::LiveReason::NoOutput);
            }
            Err(node)
        }
    }
}

/// A streaming model step: gate before only; the stream is teed (token batches, usage and
/// finish reason on node.finished, also when the consumer drops it).
pub async fn model_step_stream<K, B, S>(
    site: &'static StepSite,
    input: StepInput,
    body: B,
) -> Tee<S>
where
    K: ChunkCodec<S::Item>,
    B: Body<Output = S>,
    S: Stream,
{
    let StepInput(Some(capture)) = input else {
        return Tee::passthrough(first(body).await);
    };
    let (call, mut node, _) = begin(site, B::RETRY, B::EDIT, capture);
    if node.replay.is_some() {
        match replayed_chunks::<K, S::Item>(&call, node).await {
            Ok(tee) => return tee.into_tee(),
            Err(live) => node = live,
        }
    }
    let policy = Policy::<S> {
        error: |_| None,
        encode: |_| None,
        inject: None,
        after: false,
        usage: |_| (None, Extra::new()),
        reencode: false,
        reject: None,
    };
    match gated(&call, node, body, &policy, true).await {
        (stream, Some(node)) => Tee::new(stream, Observer::new(node), observe_chunk::<K, S::Item>),
        (stream, None) => Tee::passthrough(stream),
    }
}

/// A streaming model step returning `Result<impl Stream, E>`: gates before, and error when
/// the stream cannot be created (retry re-runs the body; inject is refused).
pub async fn model_step_stream_result<K, B, S, E>(
    site: &'static StepSite,
    input: StepInput,
    body: B,
) -> Result<Tee<S>, E>
where
    K: ChunkCodec<S::Item>,
    B: Body<Output = Result<S, E>>,
    S: Stream,
    E: ToolError,
{
    let StepInput(Some(capture)) = input else {
        return first(body).await.map(Tee::passthrough);
    };
    let (call, mut node, _) = begin(site, B::RETRY, B::EDIT, capture);
    if node.replay.is_some() {
        match replayed_chunks::<K, S::Item>(&call, node).await {
            Ok(tee) => return Ok(tee.into_tee()),
            Err(live) => node = live,
        }
    }
    let policy = Policy::<Result<S, E>> {
        error: |r| {
            r.as_ref()
                .err()
                .map(|e| error_info(short_type_name::<E>(), e.to_string()))
        },
        encode: |_| None,
        inject: None,
        after: false,
        usage: |_| (None, Extra::new()),
        reencode: false,
        reject: None,
    };
    match gated(&call, node, body, &policy, true).await {
        (Ok(stream), Some(node)) => Ok(Tee::new(
            stream,
            Observer::new(node),
            observe_chunk::<K, S::Item>,
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
        let (a, first) = place(&mut state, &Grouping::Messages(1, 2), || auto_key(&input));
        assert!(first && a.ends_with(":s1"));
        let (b, first) = place(&mut state, &Grouping::Messages(1, 4), || auto_key(&input));
        assert!(!first && b.ends_with(":s2"));
        assert_eq!(
            a.rsplit_once(':').map(|x| x.0),
            b.rsplit_once(':').map(|x| x.0)
        );
        let (c, first) = place(&mut state, &Grouping::Messages(1, 4), || auto_key(&input));
        assert!(first && c.ends_with(":s1"), "not grown: a new invocation");
        let (d, first) = place(&mut state, &Grouping::Messages(2, 9), || auto_key(&input));
        assert!(first && d.ends_with(":s1"), "another first message");
    }

    #[test]
    fn after_grouping_continues_the_invocation_that_answered_with_the_id() {
        let mut state = StepState::default();
        let (a, first) = place(&mut state, &Grouping::after("resp_0"), || None);
        assert!(first, "no step answered resp_0 yet");
        if let Some(inv) = state.invocation.as_mut() {
            inv.response = Some("resp_1".into());
        }
        let (b, first) = place(&mut state, &Grouping::after("resp_1"), || None);
        assert!(!first && b.ends_with(":s2"), "{a} then {b}");
        let (_, first) = place(&mut state, &Grouping::after("resp_1"), || None);
        assert!(
            first,
            "the answer of step 2 is not known yet: resp_1 is no longer the latest"
        );
    }

    #[test]
    fn auto_key_of_an_input_held_as_text_finds_its_messages() {
        let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap();
        let top =
            raw(serde_json::json!({"model": "m", "messages": [{"role": "user"}, {"role": "x"}]}));
        let (h, n) = auto_key_raw(&top).unwrap();
        assert_eq!(n, 2);
        let down = raw(serde_json::json!({"x": 1, "req": {"messages": [{"role": "user"}, 3, 4]}}));
        assert_eq!(
            auto_key_raw(&down),
            Some((h, 3)),
            "one level down, same first message"
        );
        assert_eq!(
            auto_key_raw(&raw(serde_json::json!({"messages": "no"}))),
            None
        );
        assert_eq!(auto_key_raw(&raw(serde_json::json!([1]))), None);
        assert_eq!(auto_key_raw(&raw(serde_json::json!({"a": {"b": 1}}))), None);
    }

    #[test]
    fn an_identical_graph_hint_is_sent_once_per_run() {
        let hint = |tool: &str| GraphHint {
            nodes: vec![GraphNodeHint {
                node_id: format!("tool:{tool}"),
                kind: NodeKind::Tool,
                name: tool.into(),
                parent_id: Some(STEP_NODE.into()),
                extra: Extra::new(),
            }],
            extra: Extra::new(),
        };
        let mut state = StepState::default();
        assert!(first_hint(&mut state, "run_1", &hint("a")));
        assert!(!first_hint(&mut state, "run_1", &hint("a")), "sent already");
        assert!(first_hint(&mut state, "run_2", &hint("a")), "another run");
        assert!(first_hint(&mut state, "run_1", &hint("b")), "other nodes");
        for i in 0..10 {
            first_hint(&mut state, "run_1", &hint(&format!("t{i}")));
        }
        assert!(state.hinted.len() <= 8, "a bounded memory");
        assert!(
            first_hint(&mut state, "run_1", &hint("a")),
            "forgotten: sent again"
        );
    }

    #[test]
    fn explicit_and_auto_grouping() {
        let mut state = StepState::default();
        let (_, first) = place(&mut state, &Grouping::explicit("t-1"), || None);
        assert!(first);
        let (b, first) = place(&mut state, &Grouping::explicit("t-1"), || None);
        assert!(!first && b.ends_with(":s2"));
        let msgs = |n: usize| serde_json::json!({"req": {"messages": vec!["sys"; n]}});
        let (_, first) = place(&mut state, &Grouping::Auto, || auto_key(&msgs(1)));
        assert!(first);
        let (c, first) = place(&mut state, &Grouping::Auto, || auto_key(&msgs(3)));
        assert!(
            !first && c.ends_with(":s2"),
            "messages found one level down"
        );
        let (_, first) = place(&mut state, &Grouping::Auto, || None);
        assert!(first, "no messages: every step is its own invocation");
    }
}
