//! The low-level [`Node`] API for adapters and hand-written instrumentation: start a node
//! execution, gate it, stream tokens into it, and finish it.

use std::sync::Arc;

use graphmind_protocol::{DeltaKind, Extra, NodeKind, PausePoint, Status};
use serde::de::DeserializeOwned;
use serde_json::Value;

use std::borrow::Cow;

use crate::call::node_run::{Finish, NodeRun, StartSpec};
use crate::captured::Val;
use crate::errors::error_info;
use crate::event::{InstanceId, Payload};
pub use crate::extras::Extras;
pub use crate::fail_open::fail_open;
pub use crate::lazy::json_len;
pub use crate::poll_once::poll_once_then;
pub use crate::recording::Recording;

pub use crate::gate::Resume;

/// An instant on graphmind's clock: when a node's work began, for a node started after it
/// ([`Node::start_step_lazy_since`]).
#[derive(Debug, Clone, Copy)]
pub struct Moment(crate::clock::Instant);

impl Moment {
    /// Now.
    #[must_use]
    pub fn now() -> Self {
        Self(crate::clock::Instant::now())
    }
}

/// One execution of a node, for adapters and hand-written instrumentation: start it, gate it,
/// stream tokens into it, and finish it. A `Node` dropped unfinished finishes `aborted`.
///
/// ```no_run
/// use graphmind::node::{Node, Resume};
/// use graphmind::protocol::{NodeKind, PausePoint, Status};
///
/// # async fn demo() {
/// if let Some(mut node) = Node::start(NodeKind::Retriever, "docs", Some(serde_json::json!({"q": "refunds"}))) {
///     let hits = match node.gate(PausePoint::Before).await {
///         Resume::Inject(v) => v,
///         _ => serde_json::json!(["doc-1", "doc-2"]), // the real work
///     };
///     node.finish(Status::Ok, Some(hits));
/// }
/// # }
/// ```
pub struct Node {
    call: crate::call::context::Call,
    run: NodeRun,
    instance_id: String,
    /// [`Node::editable`]: how the next `before` gate checks an edited input.
    edit: Option<fn() -> crate::edit::EditCheck>,
    /// [`Node::rejectable`].
    reject: bool,
    /// [`Node::retryable`]: whether the next gates offer retry.
    retry: bool,
    /// [`Node::hold_before`]: why the next `before` gate holds.
    hold: Option<String>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node_id", &self.run.node_id)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Starts node `<kind>:<name>` in the running task's run (emits `node.started`; the
    /// parent is the run's agent node). Outside any run it goes to the session's implicit run
    /// (named `implicit`, no agent node, so no parent). `None` when the session is disabled:
    /// call straight through then.
    #[must_use]
    pub fn start(kind: NodeKind, name: &str, input: Option<Value>) -> Option<Self> {
        Self::start_with(kind, name, &format!("{kind}:{name}"), None, input)
    }

    /// Whether a node started now would be recorded (the running task's session is
    /// enabled): a cheap check an adapter makes before preparing a node's input.
    /// `Node::recording() != Recording::Off` ([`Node::recording`]).
    #[must_use]
    pub fn enabled() -> bool {
        // The cheaper half of `recording()`: whether a debugger is attached is not read.
        crate::call::scope::Scope::enabled_now()
    }

    /// How a node started now would be recorded: [`Recording::Off`] while the running task's
    /// session is disabled, [`Recording::Detached`] while it is enabled with no debugger that
    /// may control the app attached and no replay deciding calls, else
    /// [`Recording::Attached`]. The one check a wrapped model call makes to choose its path
    /// (one or two relaxed loads while nothing is enabled): straight through, request first
    /// ([`Node::start_step_lazy_since`]), or node and `before` gate first.
    #[must_use]
    #[inline]
    pub fn recording() -> Recording {
        match crate::call::scope::Scope::recording_now() {
            Recording::Detached if crate::replay::any() => Recording::Attached,
            recording => recording,
        }
    }

    /// Starts a model step by hand: node `llm:step` with instanceId `<invocation>:s<N>`,
    /// where `grouping` (e.g. [`Grouping::of`](crate::model::Grouping::of) the request)
    /// decides whether it continues the run's current invocation, exactly as for
    /// `#[graphmind::model_step]`; an invocation's first step sends `graph.hint`. `input` is
    /// the request as recorded. `None` when the session is disabled.
    #[must_use]
    pub fn start_step(input: Value, grouping: crate::model::Grouping) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        Self::step_of(Payload::Json(Box::new(input)), &grouping)
    }

    /// [`Node::start_step`] with the request serialized once, straight into the JSON text
    /// the node records (no `serde_json::Value` built; the replay ring sizes it by its
    /// length, and dropping it is one free). Recorded as
    /// `start_step(serde_json::to_value(request)?, grouping)` would record it (but for an
    /// `f32`, written as itself: `0.1`, where `to_value` widens it to `0.10000000149011612`); with
    /// [`Grouping::Auto`](crate::model::Grouping::Auto) the invocation is read from the
    /// text's `messages`. Check [`Node::enabled`] first only if building `request` costs.
    /// `None` when the session is disabled.
    ///
    /// ```no_run
    /// use graphmind::model::Grouping;
    /// use graphmind::node::Node;
    /// use graphmind::protocol::Status;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Request<'a> { model: &'a str, messages: Vec<&'a str> }
    ///
    /// let request = Request { model: "m", messages: vec!["hi"] };
    /// if let Some(node) = Node::start_step_serialized(&request, Grouping::Auto) {
    ///     node.finish_serialized(Status::Ok, &serde_json::json!({"text": "hello"}), None, Default::default());
    /// }
    /// ```
    #[must_use]
    pub fn start_step_serialized<T: serde::Serialize + ?Sized>(
        request: &T,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        let input = match Val::raw(request) {
            Val::Raw(raw) => Payload::Raw(raw),
            other => Payload::Json(Box::new(other.into_value())),
        };
        Self::step_of(input, &grouping)
    }

    /// [`Node::start_step_serialized`] with the request kept as it is (shared with the
    /// caller, who sends it; never changed) and serialized into the JSON text the node records only when something reads it: the transport sending
    /// it to a debugger (attached now or later, from the replay ring), a replay. A detached
    /// step — whose events may never be read — pays a move and a count of the text's length
    /// instead of a serialization. What reaches the wire is byte for byte what
    /// `start_step_serialized(&request, grouping)` sends. A request whose text would be
    /// longer than half the payload budget is serialized at once (and recorded as large
    /// values are). Pass an explicit grouping ([`Grouping::of`](crate::model::Grouping::of)
    /// the request, [`Grouping::after`](crate::model::Grouping::after)):
    /// [`Grouping::Auto`](crate::model::Grouping::Auto) reads the request's `messages`, so
    /// it serializes the request at once. `None` when the session is disabled.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use graphmind::model::Grouping;
    /// use graphmind::node::Node;
    /// use graphmind::protocol::Status;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Request { model: String, messages: Vec<String> }
    ///
    /// let request = Arc::new(Request { model: "m".into(), messages: vec!["hi".into()] });
    /// let grouping = Grouping::explicit("conversation-1");
    /// if let Some(node) = Node::start_step_lazy(Arc::clone(&request), grouping) {
    ///     // … send `request` …
    ///     let reply = Arc::new(serde_json::json!({"text": "hello"}));
    ///     node.finish_lazy(Status::Ok, reply, None, Default::default());
    /// }
    /// ```
    #[must_use]
    pub fn start_step_lazy<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        request: std::sync::Arc<T>,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        Self::start_step_lazy_since(request, grouping, Moment::now())
    }

    /// [`Node::start_step_lazy`] for a step whose request went out at `since`: its
    /// `node.started` is stamped then and its duration counts from then. For an adapter that,
    /// while [`Node::detached_now`], sends the request first and records the step while the
    /// request is in flight (the app's thread would otherwise only wait), so that what
    /// recording costs is not added to the request's latency. `None` when the session is
    /// disabled.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use graphmind::model::Grouping;
    /// # use graphmind::node::{Moment, Node};
    /// # async fn send(_: &serde_json::Value) {}
    /// let request = Arc::new(serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}));
    /// # async {
    /// let since = Moment::now();
    /// // A future does nothing until polled: an adapter polls it once (the request leaves)
    /// // before it starts the node, as graphmind-openai's wrapped `create` does.
    /// let in_flight = send(&request);
    /// let node = Node::start_step_lazy_since(Arc::clone(&request), Grouping::Auto, since);
    /// in_flight.await;
    /// # drop(node);
    /// # };
    /// ```
    #[must_use]
    pub fn start_step_lazy_since<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        request: std::sync::Arc<T>,
        grouping: crate::model::Grouping,
        since: Moment,
    ) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        let input = match Val::lazy(request, crate::call::node_run::RAW_COMPACT_MAX) {
            Val::Lazy(lazy) => Payload::Lazy(lazy),
            Val::Raw(raw) => Payload::Raw(raw),
            other => Payload::Json(Box::new(other.into_value())),
        };
        Self::step_at(input, &grouping, since.0)
    }

    /// Whether a node started now would be recorded and could not be held at its `before`
    /// gate: the running task's session is enabled, no debugger that may control the app is
    /// attached, and no replay decides calls. Then an adapter may send its request before it
    /// starts the node ([`Node::start_step_lazy_since`]): the gate it skips would have let the
    /// call go at once. A debugger that attaches meanwhile still holds the call's `after` and
    /// `error` gates.
    /// `Node::recording() == Recording::Detached` ([`Node::recording`]).
    #[must_use]
    pub fn detached_now() -> bool {
        Self::recording() == Recording::Detached
    }

    /// [`Node::start_step`] with the request already serialized (for an adapter that reads
    /// fields of the serialized request itself, so that it serializes it once): recorded as
    /// that text. `None` when the session is disabled.
    #[must_use]
    pub fn start_step_raw(
        request: Box<serde_json::value::RawValue>,
        grouping: crate::model::Grouping,
    ) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        Self::step_of(Payload::Raw(request), &grouping)
    }

    fn step_of(input: Payload, grouping: &crate::model::Grouping) -> Option<Self> {
        Self::step_at(input, grouping, crate::clock::Instant::now())
    }

    fn step_at(
        input: Payload,
        grouping: &crate::model::Grouping,
        at: crate::clock::Instant,
    ) -> Option<Self> {
        let (call, run) = crate::call::step::begin_by_hand(input, grouping, at)?;
        let instance_id = run.instance_id.to_string();
        Some(Self {
            call,
            run,
            instance_id,
            edit: None,
            reject: false,
            retry: true,
            hold: None,
        })
    }

    /// Emits `hint` into this node's run unless the run got an identical `graph.hint`
    /// already (from this or an earlier node; the latest few are remembered). An adapter
    /// naming a request's tools on every invocation sends them once per run this way.
    /// Returns its seq when recorded.
    pub fn emit_hint(&self, hint: graphmind_protocol::GraphHint) -> Option<u64> {
        crate::call::step::hint_once(&self.call, &*self.run.host, &self.run.run_id, hint)
    }

    /// [`Node::start`] with an explicit nodeId and instanceId (e.g. a model's tool-call id).
    #[must_use]
    pub fn start_with(
        kind: NodeKind,
        name: &str,
        node_id: &str,
        instance_id: Option<String>,
        input: Option<Value>,
    ) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        let (call, host, run_id) = crate::call::context::Call::current(
            kind,
            std::borrow::Cow::Owned(name.to_owned()),
            true,
        );
        if !host.enabled() {
            return None;
        }
        let instance_id = instance_id.unwrap_or_else(|| crate::ids::next_id("call"));
        let run = NodeRun::start(
            host,
            run_id,
            StartSpec {
                node_id: Cow::Owned(node_id.to_owned()),
                kind,
                name: Cow::Owned(name.to_owned()),
                instance_id: InstanceId::Text(instance_id.as_str().into()),
                parent_id: call.run.as_ref().map(|r| r.agent_node.clone()),
                input: input.map(|v| Payload::Json(Box::new(v))),
                extra: Extra::new(),
            },
        );
        Some(Self {
            call,
            run,
            instance_id,
            edit: None,
            reject: false,
            retry: true,
            hold: None,
        })
    }

    /// [`Node::start_with`] for a call an agent makes (a tool called over a protocol, say):
    /// parented as a `#[graphmind::tool]` call is (under `llm:step` once the run has had a
    /// model step, else under the run's agent node), with `extra` as loose fields of its
    /// `node.started` (for example the server that answers the call). `None` when the
    /// session is disabled.
    #[must_use]
    pub fn start_call(
        kind: NodeKind,
        name: &str,
        node_id: &str,
        instance_id: Option<String>,
        input: Option<Value>,
        extra: Extra,
    ) -> Option<Self> {
        if !crate::call::scope::Scope::enabled_now() {
            return None;
        }
        let (call, host, run_id) = crate::call::context::Call::current(
            kind,
            std::borrow::Cow::Owned(name.to_owned()),
            true,
        );
        if !host.enabled() {
            return None;
        }
        let instance_id = instance_id.unwrap_or_else(|| crate::ids::next_id("call"));
        let run = NodeRun::start(
            host,
            run_id,
            StartSpec {
                node_id: Cow::Owned(node_id.to_owned()),
                kind,
                name: Cow::Owned(name.to_owned()),
                instance_id: InstanceId::Text(instance_id.as_str().into()),
                parent_id: call.parent(),
                input: input.map(|v| Payload::Json(Box::new(v))),
                extra,
            },
        );
        Some(Self {
            call,
            run,
            instance_id,
            edit: None,
            reject: false,
            retry: true,
            hold: None,
        })
    }

    /// Holds this node's next `before` gate while a debugger that may control the app is
    /// attached, whatever the breakpoints say: a hold an adapter decides (graphmind-rmcp
    /// holds a tool its server marks destructive). `why` says so to the person: on the wire
    /// the hold is reason `breakpoint` (the reason every peer's schema knows) with the loose
    /// extra `holdReason: why`, left out when a breakpoint or step mode holds the gate
    /// anyway. Detached, the gate continues at once as ever.
    pub fn hold_before(&mut self, why: impl Into<String>) -> &mut Self {
        self.hold = Some(why.into());
        self
    }

    /// Whether a debugger that may control the app is attached to this node's session now
    /// (its gates may hold).
    #[must_use]
    pub fn attached(&self) -> bool {
        self.run.host.attached()
    }

    /// This execution's instanceId.
    #[must_use]
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// The W3C `traceparent` of this execution (`00-<trace id>-<span id>-01`): the trace id
    /// the hub's OTLP export gives the node's run and the span id it gives this execution
    /// ([`graphmind_protocol::trace`]). Hand it to a service the call reaches (an adapter
    /// writes it into the request's metadata), and that service's spans join the run's trace
    /// under this node.
    #[must_use]
    pub fn traceparent(&self) -> String {
        graphmind_protocol::trace::traceparent(
            &self.run.run_id,
            &self.run.node_id,
            &self.instance_id,
        )
    }

    /// A gate at `point`: continues at once unless a debugger is attached and a breakpoint
    /// or step mode holds it. `inject` is accepted as any JSON without the redaction
    /// placeholder; `retry` is allowed.
    pub async fn gate(&mut self, point: PausePoint) -> Resume {
        self.gate_inner(point, Some(crate::gate::any_json)).await
    }

    /// A gate whose `inject` must deserialize into `T` (otherwise `exec.refused`, code
    /// `schema`, and the gate stays held).
    pub async fn gate_typed<T: DeserializeOwned>(&mut self, point: PausePoint) -> Resume {
        self.gate_inner(point, Some(crate::gate::validator_for::<T>))
            .await
    }

    /// Lets a person edit this node's input at its next `before` gate (when the hub
    /// announced `edit-input`): `input` is what the call would run with now, and an edit,
    /// merged over it, must deserialize into `T` (else `exec.refused`, the gate stays held).
    /// The gate then returns [`Resume::Edit`]; run the call with
    /// `serde_json::from_value::<T>(input)`. The node's `node.finished` records
    /// `edited: {before, after}`.
    ///
    /// ```no_run
    /// # use graphmind::node::{Node, Resume};
    /// # use graphmind::protocol::{NodeKind, PausePoint, Status};
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Request { q: String }
    /// # async fn demo(mut request: Request) {
    /// let mut node = Node::start(NodeKind::Llm, "step", serde_json::to_value(&request).ok()).expect("enabled");
    /// node.editable(&request);
    /// if let Resume::Edit { input, .. } = node.gate(PausePoint::Before).await {
    ///     request = serde_json::from_value(input).expect("checked at the gate");
    /// }
    /// # }
    /// ```
    pub fn editable<T: serde::Serialize + DeserializeOwned>(&mut self, input: &T) -> &mut Self {
        if self.run.host.attached()
            && !self.run.host.gates().edits_killed()
            && let Ok(Value::Object(live)) = serde_json::to_value(input)
        {
            self.run.edit = Some(Box::new(crate::call::node_run::EditState {
                live,
                before: self.run.edit.take().and_then(|s| s.before),
                bare: None,
            }));
            self.edit = Some(crate::edit::whole::<T>);
        }
        self
    }

    /// Lets a person reject the call at the node's `before` gates: the gate then returns
    /// [`Resume::Reject`] with the reason. Do not run the call then; answer its caller with
    /// an error carrying the reason (an adapter answers the model with a tool result saying
    /// the call was rejected by a person and why), and finish the node with
    /// [`Node::reject`].
    pub fn rejectable(&mut self) -> &mut Self {
        self.reject = true;
        self
    }

    /// Tells a replay that this node's call cannot be answered from a recording: the adapter
    /// cannot keep the call from reaching its provider (rig's hooks cannot answer a model
    /// call themselves, a streamed rig call, …). A replay then runs it live and reports it
    /// (`LiveReason::NotAnswerable` in `graphmind::testing`, a live call in `graphmind
    /// replay`'s summary) instead of handing its `before` gate a
    /// recorded answer the adapter would apply after calling the provider all the same. A
    /// divergence still stops the run at the gate, and a fork point still holds there. Call
    /// it before the node's `before` gate; nothing happens when no replay decides calls.
    pub fn decline_replay(&mut self) -> &mut Self {
        if let Some(decision) = self.run.replay.take() {
            self.run.replay = crate::call::replayed::declined(&self.run, *decision).map(Box::new);
        }
        self
    }

    /// Whether the debugger may retry at this node's next gates (yes at first). A gate that
    /// may not leaves `retry` out of `exec.paused.actions` and answers a retry with
    /// `exec.refused`, the gate staying held. For a gate where running the call again cannot
    /// mean what it says (a stream whose consumer already read part of the reply).
    pub fn retryable(&mut self, yes: bool) -> &mut Self {
        self.retry = yes;
        self
    }

    /// Finishes a node whose call was rejected: `node.error` named `Rejected` with the
    /// reason, then `node.finished` `error` with `rejected: {reason}`.
    pub fn reject(self, reason: &str) {
        let message = crate::Rejection::new(reason).to_string();
        self.run.error(error_info("Rejected", message));
        let mut extra = Extra::new();
        extra.insert("rejected".into(), serde_json::json!({ "reason": reason }));
        self.run.finish(
            Status::Error,
            Finish {
                extra: extra.into(),
                ..Finish::default()
            },
        );
    }

    async fn gate_inner(
        &mut self,
        point: PausePoint,
        inject: Option<fn() -> crate::gate::Validator>,
    ) -> Resume {
        let mut forced = None;
        if point == PausePoint::Before
            && let Some(decision) = self.run.replay.take()
        {
            match crate::call::replayed::by_hand(&mut self.run, *decision, inject) {
                Ok(resume) => return resume,
                Err(hold) => forced = hold,
            }
        }
        let mut held_value = Extra::new();
        if point == PausePoint::Before
            && let Some(why) = self.hold.take()
            && forced.is_none()
            && self.run.host.attached()
        {
            if crate::call::should_pause(&*self.run.host, self.call.kind, &self.call.name, point)
                .is_none()
            {
                held_value.insert("holdReason".into(), Value::String(why));
            }
            forced = Some(graphmind_protocol::PauseReason::Breakpoint);
        }
        let edit = match (self.edit, &self.run.edit) {
            (Some(check), Some(state))
                if point == PausePoint::Before
                    && self.run.host.gates().edits_allowed()
                    && (forced.is_some()
                        || crate::call::should_pause(
                            &*self.run.host,
                            self.call.kind,
                            &self.call.name,
                            point,
                        )
                        .is_some()) =>
            {
                Some(crate::edit::EditGate {
                    base: state.live.clone(),
                    keys: None,
                    check: check(),
                })
            }
            _ => None,
        };
        let out = crate::call::hold::decide(crate::call::hold::GateSpec {
            host: &self.run.host,
            run_id: &self.run.run_id,
            node_id: &self.run.node_id,
            kind: self.call.kind,
            name: &self.call.name,
            point,
            retry: self.retry,
            inject,
            abort: true,
            clock: self.call.scope.clock.clone(),
            run_clock: self.call.run.as_ref().map(|r| Arc::clone(&r.held)),
            held_value,
            forced,
            edit,
            reject: self.reject,
            instance_id: Some(self.instance_id.clone()),
        })
        .await;
        self.run.add_held(out.held);
        if let Resume::Edit { input, .. } = &out.decision {
            self.run.edited(input);
        }
        out.decision
    }

    /// Queues a streamed delta (batched into one `node.token` per
    /// [`Config::token_interval`](crate::Config::token_interval), 34 ms by default).
    pub fn token(&mut self, kind: DeltaKind, text: &str) {
        self.run.push_token(kind, text);
    }

    /// Queues a streamed delta that may name its tool call (index, id, tool name), so that
    /// parallel tool calls stream apart; batched like [`Node::token`].
    pub fn delta(&mut self, delta: &crate::model::Delta<'_>) {
        self.run.push_delta(delta);
    }

    /// Emits a protocol message into this node's run, on the node's session (for example a
    /// `graph.hint` naming the tools a request offers). Returns its seq when recorded.
    pub fn emit(&self, message: graphmind_protocol::Message) -> Option<u64> {
        self.run.host.emit(&self.run.run_id, message)
    }

    /// Emits `node.error`; the node stays open (finish it after).
    pub fn error(&self, name: &str, message: impl Into<String>) {
        self.run.error(error_info(name, message.into()));
    }

    /// Finishes the node (tokens flushed first).
    pub fn finish(self, status: Status, output: Option<Value>) {
        self.finish_with(status, output, None, Extra::new());
    }

    /// Finishes the node with usage and loose fields: a raw [`Extra`] map, or typed
    /// [`Extras`] (`api`, `attempts`, `injected`, `streamed`, `providerExecuted`, `ungated`,
    /// `model`, `responseId`) turned into one with `.into()`.
    pub fn finish_with(
        self,
        status: Status,
        output: Option<Value>,
        usage: Option<crate::model::Usage>,
        extra: Extra,
    ) {
        self.finish_val(status, output.map(Val::from_value), usage, extra.into());
    }

    /// [`Node::finish_with`] with the output serialized once, straight into the JSON text
    /// the node records (no `serde_json::Value` built): recorded as
    /// `finish_with(status, Some(serde_json::to_value(output)?), usage, extra)` would (an
    /// `f32` written as itself, see [`Node::start_step_serialized`]).
    pub fn finish_serialized<T: serde::Serialize + ?Sized>(
        self,
        status: Status,
        output: &T,
        usage: Option<crate::model::Usage>,
        extra: Extra,
    ) {
        self.finish_val(status, Some(Val::raw(output)), usage, extra.into());
    }

    /// [`Node::finish_serialized`] with the output kept as it is (shared, never changed) and
    /// serialized only when something reads it (see [`Node::start_step_lazy`]): recorded
    /// byte for byte as `finish_serialized(status, &*output, usage, extra.into())` records
    /// it. Its loose fields stay typed ([`Extras`]) until the event is written.
    pub fn finish_lazy<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        self,
        status: Status,
        output: std::sync::Arc<T>,
        usage: Option<crate::model::Usage>,
        extra: Extras,
    ) {
        let output = Val::lazy(output, crate::call::node_run::RAW_COMPACT_MAX);
        self.finish_val(status, Some(output), usage, extra);
    }

    /// [`Node::finish_lazy`] for an output whose `Serialize` does real work (builds the
    /// recorded shape from a response, say): `max_len` bounds the length of its JSON text
    /// (for example twice the response's [`json_len`] plus the few fields added), so it is
    /// not walked to count it. Should the text come out longer than the bound and than half
    /// the payload budget, the output is recorded as the truncation marker with its size.
    pub fn finish_lazy_within<T: serde::Serialize + Send + Sync + ?Sized + 'static>(
        self,
        status: Status,
        output: std::sync::Arc<T>,
        max_len: usize,
        usage: Option<crate::model::Usage>,
        extra: Extras,
    ) {
        let output = Val::lazy_within(output, max_len, crate::call::node_run::RAW_COMPACT_MAX);
        self.finish_val(status, Some(output), usage, extra);
    }

    fn finish_val(
        self,
        status: Status,
        output: Option<Val>,
        usage: Option<crate::model::Usage>,
        extra: Extras,
    ) {
        // A step that answered with a response id: a later request naming it as its
        // previous response continues this invocation (`Grouping::After`).
        if self.run.node_id == crate::call::step::STEP_NODE
            && let Some(id) = extra.response_id_str()
        {
            crate::call::step::note_response(&self.call, &self.instance_id, id);
        }
        self.run.finish(
            status,
            Finish {
                output,
                usage,
                extra,
            },
        );
    }

    /// Finishes the node `aborted` and cancels the running task's run: the run scope drops
    /// its future and returns [`Aborted`](crate::Aborted). Outside a run this only finishes
    /// the node and returns.
    pub async fn abort_run(self) {
        let Self { call, run, .. } = self;
        run.finish(Status::Aborted, Finish::default());
        if let Some(ctx) = &call.run {
            ctx.abort();
            std::future::pending::<()>().await;
        }
    }

    /// Hands the node to a stream: every item is observed by `observe` on its way to the
    /// consumer; the node finishes when the stream ends or is dropped (`streaming: true`,
    /// `chunks`, and `dropped: true` when dropped before its end; the status stays `ok` unless
    /// `observe` reported an error, or the stream was dropped because the debugger aborted its
    /// run: then `aborted` with `cancelled: true`). `chunks` counts the
    /// [`Observer::chunk`](crate::call::tee::Observer::chunk) calls that `observe` makes.
    pub fn tee<S: futures_core::Stream>(
        self,
        stream: S,
        observe: fn(&mut crate::call::tee::Observer, &S::Item),
    ) -> crate::call::tee::Tee<S> {
        crate::call::tee::Tee::new(stream, crate::call::tee::Observer::new(self.run), observe)
    }

    /// [`Node::tee`] for a stream of model chunks: each item's
    /// [`StepChunk`](crate::model::StepChunk) deltas, usage, finish reason and error are
    /// recorded as those of a `#[graphmind::model_step]` stream are.
    pub fn tee_chunks<S>(self, stream: S) -> crate::call::tee::Tee<S>
    where
        S: futures_core::Stream,
        S::Item: crate::model::StepChunk,
    {
        self.tee(
            stream,
            crate::call::step::observe_chunk::<crate::model::Native, S::Item>,
        )
    }

    /// [`Node::tee_chunks`] for chunks of another crate, read through the codec `K` (see
    /// [`ChunkCodec`](crate::model::ChunkCodec)): `node.tee_codec::<MyCodec, _>(stream)`.
    pub fn tee_codec<K, S>(self, stream: S) -> crate::call::tee::Tee<S>
    where
        S: futures_core::Stream,
        K: crate::model::ChunkCodec<S::Item>,
    {
        self.tee(stream, crate::call::step::observe_chunk::<K, S::Item>)
    }
}
