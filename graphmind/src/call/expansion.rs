//! The types and functions the attribute macros' expansions use (re-exported as
//! `graphmind::__private`; the contract is in `docs/dev/private-api.md`): captured inputs,
//! argument bounds, bodies, the entry points' future, invocation grouping.

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call::tee::Tee;
use crate::model::{Grouping, RequestCodec};

/// A captured node input: `None` when nothing is recorded (disabled session).
#[derive(Debug)]
pub struct Input(pub(crate) Option<crate::event::Payload>);

/// A captured model-step input with its invocation grouping.
#[derive(Debug)]
pub struct StepInput(pub(crate) Option<StepCapture>);

/// What a model step records before it runs.
#[derive(Debug)]
pub(crate) struct StepCapture {
    /// The input: the arguments (`{param: value}`), or the request itself.
    pub(crate) input: Value,
    pub(crate) grouping: Grouping,
    /// The `api` extra of `node.finished` ([`RequestCodec::api`]).
    pub(crate) api: Option<&'static str>,
    /// The argument recorded as the whole input ([`RequestCodec::bare_input`]): an edit
    /// names the request's fields and runs as this argument.
    pub(crate) bare: Option<&'static str>,
}

/// What a codec says of a model step's request besides its grouping (see [`Req`]): its
/// `api` and whether it is recorded as the whole input.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestShape {
    api: Option<&'static str>,
    bare: bool,
}

/// Builds the input (`{param: value}`) only if the running task's session records events.
#[inline]
pub fn capture(build: impl FnOnce() -> Fields) -> Input {
    if crate::call::scope::Scope::enabled_now() {
        Input(Some(crate::event::Payload::Fields(out_of_line(build).0)))
    } else {
        Input(None)
    }
}

/// [`capture`] for model steps; `group` says which invocation the step belongs to (see
/// [`Grouping`] and [`Req`]), `shape` what the codec says of the request.
#[inline]
pub fn capture_step(
    build: impl FnOnce() -> Fields,
    group: impl FnOnce() -> Grouping,
    shape: impl FnOnce() -> RequestShape,
) -> StepInput {
    if crate::call::scope::Scope::enabled_now() {
        StepInput(Some(out_of_line(|| {
            step_capture(build(), group(), shape())
        })))
    } else {
        StepInput(None)
    }
}

fn step_capture(fields: Fields, grouping: Grouping, shape: RequestShape) -> StepCapture {
    let mut fields = fields.0.into_vec();
    // The request as the whole input: only when it is the one recorded argument.
    let (input, bare) = match (shape.bare, fields.len()) {
        (true, 1) => {
            let (key, value) = fields.remove(0);
            (value.into_value(), Some(key))
        }
        _ => {
            let fields = crate::event::Payload::Fields(fields.into_boxed_slice());
            (fields.into_value(), None)
        }
    };
    StepCapture {
        input,
        grouping,
        api: shape.api,
        bare,
    }
}

/// Keeps the recording-only code out of the caller's frame, so the disabled path of an
/// instrumented function stays as small as the function itself.
#[inline(never)]
#[cold]
fn out_of_line<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// The captured arguments of one call: a JSON object's `(parameter name, value)` pairs, in
/// order, recorded as that object without building a map.
#[derive(Debug)]
pub struct Fields(Box<[(&'static str, crate::captured::Val)]>);

/// A JSON object from `(parameter name, value)` pairs, in order (one allocation).
pub fn object<const N: usize>(fields: [(&'static str, Captured); N]) -> Fields {
    Fields(Box::new(fields))
}

/// One captured argument (see [`arg`]).
use crate::captured::Val as Captured;

/// An argument of an instrumented function, recorded in the node's input.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be recorded as a graphmind node input",
    label = "this argument must implement `serde::Serialize`",
    note = "derive `serde::Serialize` for it, or leave the argument out with `skip(<argument name>)` on the attribute"
)]
pub trait Arg {
    /// The argument as recorded (scalars and strings as themselves, anything else as JSON).
    fn to_input(&self) -> Captured;
}

impl<T: Serialize + ?Sized> Arg for T {
    fn to_input(&self) -> Captured {
        Captured::of(self)
    }
}

/// One argument as recorded (for [`object`]).
#[inline]
pub fn arg<T: Arg + ?Sized>(value: &T) -> Captured {
    value.to_input()
}

/// A by-value argument of a retryable function: cloned afresh for every attempt.
#[diagnostic::on_unimplemented(
    message = "`{Self}` must be `Clone` so a retry can re-run the call with fresh arguments",
    label = "this argument is not `Clone`",
    note = "implement or derive `Clone`, or turn retry off with `#[graphmind::tool(retry = false)]`"
)]
pub trait RetryArg: Clone {}

impl<T: Clone> RetryArg for T {}

/// A fresh clone of a by-value argument for one attempt.
#[inline]
pub fn retry_clone<T: RetryArg>(value: &T) -> T {
    value.clone()
}

/// An argument named by `call_id = <arg>`: it holds the model's tool-call id.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool-call id",
    label = "`call_id` must name a `String`, `&str` or `Option<String>` argument"
)]
pub trait CallId {
    /// The id, if there is one.
    fn call_id(&self) -> Option<Cow<'_, str>>;
}

impl CallId for str {
    fn call_id(&self) -> Option<Cow<'_, str>> {
        (!self.is_empty()).then_some(Cow::Borrowed(self))
    }
}
impl CallId for String {
    fn call_id(&self) -> Option<Cow<'_, str>> {
        self.as_str().call_id()
    }
}
impl<T: CallId + ?Sized> CallId for &T {
    fn call_id(&self) -> Option<Cow<'_, str>> {
        (**self).call_id()
    }
}
impl<T: CallId> CallId for Option<T> {
    fn call_id(&self) -> Option<Cow<'_, str>> {
        self.as_ref().and_then(CallId::call_id)
    }
}

/// Type check for `call_id = <arg>` (the value itself is read from the captured input).
#[inline]
pub fn assert_call_id<T: CallId + ?Sized>(_: &T) {}

/// The value type of a tool (its return type, or the `Ok` type of a `Result`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of a #[graphmind::tool]",
    label = "the return type must implement `serde::Serialize` and `serde::Deserialize`",
    note = "graphmind records the output and deserializes injected values into it",
    note = "if it is a stream under another name (a type alias such as `type Items = Pin<Box<dyn Stream<…> + Send>>`), write `stream = true` on the attribute: `#[graphmind::tool(stream = true)]`"
)]
pub trait ToolOutput: Serialize + DeserializeOwned {}

impl<T: Serialize + DeserializeOwned> ToolOutput for T {}

/// The error type of a tool or model step returning `Result`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be reported as a graphmind node error",
    label = "the error type must implement `std::fmt::Display`"
)]
pub trait ToolError: std::fmt::Display {}

impl<T: std::fmt::Display + ?Sized> ToolError for T {}

/// The error type of a `#[graphmind::tool(reject)]`: a person's rejection becomes its `Err`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a rejection of a #[graphmind::tool(reject)]",
    label = "the error type must implement `From<graphmind::Rejection>`",
    note = "implement `From<graphmind::Rejection>` for it (the rejection carries the person's reason), or drop `reject` from the attribute"
)]
pub trait Rejectable: From<crate::Rejection> {}

impl<T: From<crate::Rejection>> Rejectable for T {}

/// The error type of a `#[graphmind::tool(replay_errors)]`: a replay answers a call whose
/// recorded outcome is an error with `Err(E::from(RecordedError))`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a recorded error of a #[graphmind::tool(replay_errors)]",
    label = "the error type must implement `From<graphmind::RecordedError>`",
    note = "implement `From<graphmind::RecordedError>` for it (the recorded error carries the type name and message), or drop `replay_errors` from the attribute"
)]
pub trait Replayable: From<crate::RecordedError> {}

impl<T: From<crate::RecordedError>> Replayable for T {}

/// An item of a streaming tool: previewed as a token delta.
#[diagnostic::on_unimplemented(
    message = "items of a streaming #[graphmind::tool] must implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`"
)]
pub trait StreamItem: Serialize {}

impl<T: Serialize> StreamItem for T {}

/// The response type of a `#[graphmind::model_step]` (or the `Ok` type of its `Result`); it is
/// read through the step's codec (`codec = …`, else [`Native`](crate::model::Native)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the response of a #[graphmind::model_step]",
    label = "it must implement `serde::Serialize` and `serde::Deserialize`",
    note = "graphmind records the response and deserializes injected values into it",
    note = "if it is a stream under another name (a type alias such as an SDK's `ChatCompletionResponseStream`), write `stream = true` on the attribute: `#[graphmind::model_step(stream = true)]`"
)]
pub trait StepOutput: Serialize + DeserializeOwned {}

impl<T: Serialize + DeserializeOwned> StepOutput for T {}

/// A stream written as a named type (`Pin<Box<dyn Stream<…> + Send>>`, `BoxStream`, an SDK's
/// alias of one), handed back to the caller in that type: the teed stream is boxed once more.
/// A stream written as `impl Stream` needs no conversion, the tee itself is returned.
///
/// A stream type of your own crate (an adapter's stream that can hold a boxed stream)
/// implements it to be returned by a `#[graphmind::model_step(stream = true)]` in its own
/// type: `restream` wraps the tee, which yields the items of the stream the step returned.
///
/// ```
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
///
/// use futures_core::Stream;
/// use graphmind::tee::{Restream, Tee};
///
/// /// A stream type of an adapter: anything that yields `u32`s, boxed.
/// pub struct Numbers(Pin<Box<dyn Stream<Item = u32> + Send>>);
///
/// impl Stream for Numbers {
///     type Item = u32;
///     fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
///         self.0.as_mut().poll_next(cx)
///     }
/// }
///
/// impl Restream for Numbers {
///     fn restream(tee: Tee<Self>) -> Self {
///         Self(Box::pin(tee))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a stream graphmind cannot hand back in its own type",
    label = "a stream returned under a name must be `Pin<Box<dyn Stream<Item = …> + Send>>` (or without `Send`), or implement `graphmind::tee::Restream`",
    note = "graphmind tees the stream and must return the tee as this type; return `impl Stream<Item = …>` or a boxed `dyn Stream` instead"
)]
pub trait Restream: futures_core::Stream + Sized {
    /// Wraps the tee in the written type.
    fn restream(tee: Tee<Self>) -> Self;
}

impl<'a, I> Restream for std::pin::Pin<Box<dyn futures_core::Stream<Item = I> + Send + 'a>>
where
    Tee<Self>: Send + 'a,
{
    fn restream(tee: Tee<Self>) -> Self {
        Box::pin(tee)
    }
}

impl<'a, I> Restream for std::pin::Pin<Box<dyn futures_core::Stream<Item = I> + 'a>>
where
    Tee<Self>: 'a,
{
    fn restream(tee: Tee<Self>) -> Self {
        Box::pin(tee)
    }
}

/// A streaming return written as a named type: the tee in that type.
#[inline]
pub fn restream<S: Restream>(tee: Tee<S>) -> S {
    S::restream(tee)
}

/// A `Result` of a streaming return written as a named type.
#[inline]
pub fn restream_result<S: Restream, E>(result: Result<Tee<S>, E>) -> Result<S, E> {
    result.map(S::restream)
}

/// A body the policy may run once or several times.
pub trait Body {
    /// What one attempt yields.
    type Output;
    /// One attempt.
    type Fut: Future<Output = Self::Output>;
    /// Whether the body can run more than once.
    const RETRY: bool;
    /// Whether the body's arguments may be edited (see [`EditRepeat`]).
    const EDIT: bool = false;
    /// Starts the next attempt; `None` if the body cannot run again.
    fn attempt(&mut self) -> Option<Self::Fut>;
    /// The arguments an edit may name, with their type checks (`None`: not editable).
    fn edit_checks(&self) -> Option<ArgChecks> {
        None
    }
    /// Runs the next attempt with these edited arguments (already checked).
    fn edit(&mut self, changed: EditArgs) {
        let _ = changed;
    }
}

/// A retryable body: a factory that clones by-value arguments for every attempt.
pub struct Repeat<F>(pub F);

impl<F: FnMut() -> Fut, Fut: Future> Body for Repeat<F> {
    type Output = Fut::Output;
    type Fut = Fut;
    const RETRY: bool = true;
    fn attempt(&mut self) -> Option<Fut> {
        Some((self.0)())
    }
}

/// A body that runs at most once (`retry = false`, `&mut` arguments).
pub struct Once<F>(Option<F>);

impl<F> Once<F> {
    /// Wraps the body.
    pub const fn new(body: F) -> Self {
        Self(Some(body))
    }
}

impl<F: FnOnce() -> Fut, Fut: Future> Body for Once<F> {
    type Output = Fut::Output;
    type Fut = Fut;
    const RETRY: bool = false;
    fn attempt(&mut self) -> Option<Fut> {
        self.0.take().map(|f| f())
    }
}

pin_project_lite::pin_project! {
    /// The future of a policy entry point: the body itself when nothing is recorded (no
    /// policy state, no allocation); the body recorded around (node.started before,
    /// node.finished / node.error after, no gates) when the session is detached at the
    /// call's start; else the boxed policy.
    #[project = CallFutureProj]
    pub enum CallFuture<D: Future, F> {
        /// Disabled: the body's own future.
        Direct {
            #[pin]
            fut: D,
        },
        /// Detached at the start: the body's own future and its open node, in one allocation
        /// (inline they would make every entry point's future larger, which costs the
        /// disabled path several ns).
        Detached {
            fut: std::pin::Pin<Box<crate::call::detached::Recording<D>>>,
        },
        /// Recording: the policy future.
        Full {
            fut: std::pin::Pin<Box<F>>,
        },
    }
}

impl<D: Future, F> CallFuture<D, F> {
    pub(crate) fn direct<B: Body<Fut = D>>(body: &mut B) -> Self {
        let Some(fut) = body.attempt() else {
            unreachable!("a body always runs at least once")
        };
        Self::Direct { fut }
    }

    /// The body's own future, recorded around by `node` and `done`.
    pub(crate) fn detached<B: Body<Fut = D>>(
        body: &mut B,
        node: crate::call::detached::DetachedNode,
        done: fn(&D::Output) -> crate::call::detached::Ending,
    ) -> Self {
        let Some(fut) = body.attempt() else {
            unreachable!("a body always runs at least once")
        };
        // Allocated first, so the recording is written in place rather than built on the
        // stack and copied.
        let slot = Box::new_uninit();
        Self::Detached {
            fut: Box::into_pin(Box::write(
                slot,
                crate::call::detached::Recording::new(fut, node, done),
            )),
        }
    }

    /// Builds the policy future in its own frame, so the direct path's frame stays small.
    #[inline(never)]
    #[cold]
    pub(crate) fn full(make: impl FnOnce() -> F) -> Self {
        // Allocated first, so the policy future is built in place rather than on the stack
        // and copied (it is about a kilobyte, mostly state of later await points).
        let slot = Box::new_uninit();
        Self::Full {
            fut: Box::into_pin(Box::write(slot, make())),
        }
    }
}

impl<D: Future, F: Future<Output = D::Output>> Future for CallFuture<D, F> {
    type Output = D::Output;

    #[inline]
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<D::Output> {
        match self.project() {
            CallFutureProj::Direct { fut } => fut.poll(cx),
            CallFutureProj::Detached { fut } => fut.as_mut().poll(cx),
            CallFutureProj::Full { fut } => fut.as_mut().poll(cx),
        }
    }
}

/// Invocation grouping by autoref specialization: `(&&Req::<K, _>::new(&req)).gm_group()`
/// uses the codec's [`RequestCodec`] impl for the request when it has one (for
/// [`Native`](crate::model::Native): the request's [`StepRequest`](crate::model::StepRequest) impl), else
/// [`Grouping::Auto`].
pub struct Req<'a, K: ?Sized, T: ?Sized>(pub &'a T, std::marker::PhantomData<fn() -> K>);

impl<'a, K: ?Sized, T: ?Sized> Req<'a, K, T> {
    /// The request, read through codec `K`.
    #[inline]
    pub fn new(request: &'a T) -> Self {
        Self(request, std::marker::PhantomData)
    }
}

/// Picked when the codec reads the request.
pub trait ViaStepRequest {
    /// The grouping.
    fn gm_group(&self) -> Grouping;
    /// The codec's `api` and input shape.
    fn gm_shape(&self) -> RequestShape;
}

impl<K: RequestCodec<T> + ?Sized, T: ?Sized> ViaStepRequest for &Req<'_, K, T> {
    fn gm_group(&self) -> Grouping {
        K::grouping(self.0)
    }
    fn gm_shape(&self) -> RequestShape {
        RequestShape {
            api: K::api(),
            bare: K::bare_input(),
        }
    }
}

/// The fallback: group by the captured input's `messages`.
pub trait ViaAuto {
    /// The grouping.
    fn gm_group(&self) -> Grouping;
    /// No `api`, the arguments as the input.
    fn gm_shape(&self) -> RequestShape;
}

impl<K: ?Sized, T: ?Sized> ViaAuto for &&Req<'_, K, T> {
    fn gm_group(&self) -> Grouping {
        Grouping::Auto
    }
    fn gm_shape(&self) -> RequestShape {
        RequestShape::default()
    }
}

// ---- edited arguments (GraphMind 0.6 `edit-input`) -------------------------------------------

/// The edited arguments handed to an editable body's next attempt: argument name → value
/// (checked against the argument's type before the gate released).
pub type EditArgs = serde_json::Map<String, Value>;

/// The type check of one edited argument: `Some(message)` when the value does not fit
/// (the message names the argument and the type, never the value).
pub type ArgCheck = fn(&str, &Value) -> Option<String>;

/// The arguments an edit may name, each with its type check (`None`: the argument's type
/// cannot be deserialized, so the call is not editable).
pub struct ArgChecks(Vec<(&'static str, Option<ArgCheck>)>);

/// [`ArgChecks`] from the expansion's array.
pub fn arg_checks<const N: usize>(checks: [(&'static str, Option<ArgCheck>); N]) -> ArgChecks {
    ArgChecks(checks.into())
}

impl ArgChecks {
    /// The gate's edit support over `base` (the call's input now), when every argument can
    /// be deserialized. With `bare` (the input is that argument itself, a model step's
    /// request) an edit names the argument's fields, and the merged whole is checked.
    pub(crate) fn into_gate(
        self,
        base: serde_json::Map<String, Value>,
        bare: Option<&'static str>,
    ) -> Option<crate::edit::EditGate> {
        if self.0.is_empty() || self.0.iter().any(|(_, c)| c.is_none()) {
            return None;
        }
        if let Some(name) = bare {
            let (_, check) = self.0.into_iter().find(|(k, _)| *k == name)?;
            let check = check?;
            return Some(crate::edit::EditGate {
                base,
                keys: None,
                check: Box::new(move |merged, _changed| {
                    check(name, &Value::Object(merged.clone())).map_or(Ok(()), Err)
                }),
            });
        }
        let keys = self.0.iter().map(|(k, _)| *k).collect();
        let checks = self.0;
        Some(crate::edit::EditGate {
            base,
            keys: Some(keys),
            check: Box::new(move |_merged, changed| {
                for (key, value) in changed {
                    let check = checks.iter().find(|(k, _)| *k == key.as_str());
                    if let Some((_, Some(check))) = check
                        && let Some(message) = check(key, value)
                    {
                        return Err(message);
                    }
                }
                Ok(())
            }),
        })
    }
}

/// The type of one argument, for [`ViaEdit`] / [`ViaNoEdit`] (a zero-sized copy: it borrows
/// nothing, so the body can still move the argument).
pub struct Ed<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Clone for Ed<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ed<T> {}

impl<T> Ed<T> {
    /// The type of `value`.
    #[inline]
    pub fn of(value: &T) -> Self {
        let _ = value;
        Self(std::marker::PhantomData)
    }
}

/// Picked for an argument whose type deserializes: it can be edited.
pub trait ViaEdit<T> {
    /// Its type check.
    fn gm_check(&self) -> Option<ArgCheck>;
    /// Replaces `slot` with the edited value of `key`, if the edit names it.
    fn gm_apply(&self, edit: &EditArgs, key: &str, slot: &mut T);
}

impl<T: DeserializeOwned> ViaEdit<T> for &Ed<T> {
    fn gm_check(&self) -> Option<ArgCheck> {
        Some(crate::edit::schema_message::<T>)
    }
    fn gm_apply(&self, edit: &EditArgs, key: &str, slot: &mut T) {
        if let Some(v) = edit.get(key)
            && let Ok(value) = T::deserialize(v)
        {
            *slot = value;
        }
    }
}

/// The fallback: an argument that cannot be edited.
pub trait ViaNoEdit<T> {
    /// No type check: the call is not editable.
    fn gm_check(&self) -> Option<ArgCheck>;
    /// Nothing to apply.
    fn gm_apply(&self, edit: &EditArgs, key: &str, slot: &mut T);
}

impl<T> ViaNoEdit<T> for &&Ed<T> {
    fn gm_check(&self) -> Option<ArgCheck> {
        None
    }
    fn gm_apply(&self, _edit: &EditArgs, _key: &str, _slot: &mut T) {}
}

/// How a replay rebuilds a streaming tool's recorded item from its JSON; `None`: it cannot
/// (the call runs live).
pub type ItemDecode<T> = Option<fn(Value) -> Option<T>>;

/// The item type of a streaming tool, for [`ViaDecode`] / [`ViaNoDecode`]: the expansion
/// asks it for the decoder a replay rebuilds recorded items with.
pub struct ItemDecoder<T>(std::marker::PhantomData<fn() -> T>);

impl<T> ItemDecoder<T> {
    /// The marker of item type `T`.
    #[inline]
    #[must_use]
    pub const fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<T> Default for ItemDecoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Picked for an item type that deserializes: a replay rebuilds recorded items.
pub trait ViaDecode<T> {
    /// The decoder of a recorded item.
    fn gm_decoder(&self) -> ItemDecode<T>;
}

impl<T: DeserializeOwned> ViaDecode<T> for &ItemDecoder<T> {
    fn gm_decoder(&self) -> ItemDecode<T> {
        Some(|v| serde_json::from_value(v).ok())
    }
}

/// The fallback: items that do not deserialize; a replay runs the stream live.
pub trait ViaNoDecode<T> {
    /// No decoder.
    fn gm_decoder(&self) -> ItemDecode<T>;
}

impl<T> ViaNoDecode<T> for &&ItemDecoder<T> {
    fn gm_decoder(&self) -> ItemDecode<T> {
        None
    }
}

/// A retryable body whose arguments can be edited at its `before` gate: `F` gets the edit
/// (when there is one) before it clones the arguments for an attempt; `C` lists the
/// arguments with their type checks.
pub struct EditRepeat<F, C> {
    body: F,
    checks: C,
    /// Boxed: dropping `None` is then a null check inline, not a call into the map's drop
    /// (the disabled path drops an empty one on every call).
    pending: Option<Box<EditArgs>>,
}

impl<F, C> EditRepeat<F, C> {
    /// The body and its argument checks.
    pub const fn new(body: F, checks: C) -> Self {
        Self {
            body,
            checks,
            pending: None,
        }
    }
}

impl<F, Fut, C> Body for EditRepeat<F, C>
where
    F: FnMut(Option<&EditArgs>) -> Fut,
    Fut: Future,
    C: Fn() -> ArgChecks,
{
    type Output = Fut::Output;
    type Fut = Fut;
    const RETRY: bool = true;
    const EDIT: bool = true;
    fn attempt(&mut self) -> Option<Fut> {
        let edit = self.pending.take();
        Some((self.body)(edit.as_deref()))
    }
    fn edit_checks(&self) -> Option<ArgChecks> {
        Some((self.checks)())
    }
    fn edit(&mut self, changed: EditArgs) {
        // Two edits before one attempt (after an `after` / `error` gate's, the `before`
        // gate's): both apply.
        self.pending.get_or_insert_default().extend(changed);
    }
}

/// [`EditRepeat`] for a body that runs at most once.
pub struct EditOnce<F, C> {
    body: Option<F>,
    checks: C,
    /// Boxed: dropping `None` is then a null check inline, not a call into the map's drop
    /// (the disabled path drops an empty one on every call).
    pending: Option<Box<EditArgs>>,
}

impl<F, C> EditOnce<F, C> {
    /// The body and its argument checks.
    pub const fn new(body: F, checks: C) -> Self {
        Self {
            body: Some(body),
            checks,
            pending: None,
        }
    }
}

impl<F, Fut, C> Body for EditOnce<F, C>
where
    F: FnOnce(Option<&EditArgs>) -> Fut,
    Fut: Future,
    C: Fn() -> ArgChecks,
{
    type Output = Fut::Output;
    type Fut = Fut;
    const RETRY: bool = false;
    const EDIT: bool = true;
    fn attempt(&mut self) -> Option<Fut> {
        let edit = self.pending.take();
        self.body.take().map(|f| f(edit.as_deref()))
    }
    fn edit_checks(&self) -> Option<ArgChecks> {
        Some((self.checks)())
    }
    fn edit(&mut self, changed: EditArgs) {
        self.pending = Some(Box::new(changed));
    }
}
