//! Attribute macros for graphmind: `#[graphmind::tool]` and `#[graphmind::model_step]`.
//!
//! Use them through the `graphmind` crate, which re-exports them. The macros are thin: they
//! check the signature, paste the body once and make one call into the runtime, where every
//! policy (gates, retry, inject, abort, events) lives. With feature `enabled` off they check
//! their arguments and return the item untouched.

#![cfg_attr(not(feature = "enabled"), allow(dead_code))]

mod args;
mod errors;
mod item;
#[cfg(feature = "enabled")]
mod plan;
#[cfg(feature = "enabled")]
mod print;
mod sig;

use proc_macro::TokenStream;

use crate::args::{Args, Kind};

/// Instruments an async fn as a tool: node `tool:<name>`, gates before, after and — when it
/// returns a `Result` — on error.
///
/// ```ignore
/// #[graphmind::tool(call_id = call_id, skip(db))]
/// async fn lookup_order(db: &Db, call_id: String, order_id: String) -> Result<Order, ToolError> {
///     db.order(&order_id).await
/// }
/// ```
///
/// Works on free fns, `&self` / `&mut self` methods, generic fns, `impl Trait` arguments,
/// native `async fn` in trait impls and `#[async_trait]` impls (put `#[graphmind::tool]` on
/// the method; the impl's `#[async_trait]` runs first and this attribute wraps the boxed
/// future it leaves). The shapes are compiled by `ui-tests/ui/pass`.
///
/// - Input: the arguments as a JSON object keyed by parameter name; each must be
///   `Serialize` unless listed in `skip(…)`. Output: the return value (or its `Ok`), which
///   must be `Serialize + DeserializeOwned` so that the debugger can inject one.
/// - Retry re-runs the body with fresh clones of the by-value arguments (they must be
///   `Clone`). A `&mut` argument, `self` by value, or `retry = false` turns retry off: the
///   debugger's retry is then refused (`exec.refused`, code unsupported).
/// - A return type of `impl Stream` or `Result<impl Stream, E>` streams: gated before start
///   only, items previewed as `node.token`, counted on `node.finished`.
///
/// Arguments: `name = "…"` (default: the fn's name), `skip(arg, …)`, `call_id = arg` (the
/// argument holding the model's tool-call id, used as the instanceId), `retry = false`,
/// `result = true` (the return type is a `Result` under another name, e.g.
/// `type Res<T> = Result<T, MyError>`: the error gate and `node.error` then apply; a type
/// whose last path segment is `Result` — `Result<T, E>`, `io::Result<T>`, `anyhow::Result<T>`
/// — is recognised without it; `result = false` says such a type is not a `Result`),
/// `stream = true` (the return type, or its `Ok`, is a stream under another name, e.g.
/// `type Items = Pin<Box<dyn Stream<Item = u32> + Send>>`: it is teed and handed back in that
/// type; `impl Stream`, `BoxStream` and `Pin<Box<dyn Stream…>>` are recognised without it;
/// `stream = false` returns a type that looks like a stream as one value),
/// `reject` (a person may reject the call at its before gate with a reason: the tool must
/// return `Result<T, E>` — a streaming tool `Result<impl Stream, E>` — with
/// `E: From<graphmind::Rejection>` and then returns `Err(E::from(rejection))` without running;
/// a stream returned bare cannot carry a rejection and is refused at compile time),
/// `replay_errors` (a replay answers a call whose recorded outcome is an error with
/// `Err(E::from(graphmind::RecordedError))` without running it: the tool must return
/// `Result<T, E>` with `E: From<graphmind::RecordedError>`; without it such a call runs
/// live), `edit = false` (never offer the arguments for editing; by default a tool whose
/// recorded arguments are all owned — no `&`, lifetime or `impl Trait` — and deserialize is
/// editable at its before gate, and with a retry at its after and error gates; a type hiding
/// its lifetime, `Name` for `Name<'a>`, cannot be an `async fn` argument (E0726), so the
/// lifetime is always written and seen).
/// With feature `enabled` off, the arguments are checked and the fn is returned untouched.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    instrument(Kind::Tool, attr.into(), item.into()).into()
}

/// Instruments the async fn that calls a model: node `llm:step`, instanceId
/// `<invocation>:s<N>`, under the run's agent node.
///
/// ```ignore
/// #[graphmind::model_step(tools = [lookup_order, issue_refund])]
/// async fn call_model(request: ChatRequest) -> Result<impl Stream<Item = Chunk> + Send, ModelError> {
///     client.stream(request).await
/// }
/// ```
///
/// - Gates: before (nothing is in flight while held), after (non-streaming returns only),
///   error (retry re-runs the body in the same node; inject substitutes the response). With a
///   streaming return, inject is refused at every gate (`exec.refused`, code unsupported).
/// - Invocations: a step continues the run's current invocation when its request (the first
///   argument after `self` not listed in `skip(…)`) has the same first message and more messages — through
///   the codec's `graphmind::model::RequestCodec` (by default `graphmind::model::StepRequest`)
///   if it reads the request, else through a `messages` field of the captured input — or when
///   `invocation = <expr>` gives the same key, or when the request names the response id of
///   the invocation's latest step as its previous response (`RequestCodec::previous_response_id`).
/// - Codecs: the request, response and chunks are read through `codec = path::To::Codec`, a
///   type implementing `graphmind::model::{ResponseCodec, ChunkCodec, RequestCodec}` for
///   another crate's types (an SDK's, which cannot implement graphmind's traits: the orphan
///   rule); without it, through the types' own `StepResponse` / `StepChunk` / `StepRequest`
///   impls (`graphmind::model::Native`). A codec that reads the text records the output in
///   GraphMind 0.6's shape `{text, finishReason, rawFinishReason, toolCalls, response}`. A
///   codec's `RequestCodec` may name the request's `api` (recorded on `node.finished`) and
///   have the request recorded as the whole input (`RequestCodec::bare_input`, when it is
///   the one argument recorded), as an adapter's wrapped client records the same request.
/// - Streaming returns are teed: every item reaches the caller unchanged and when it would
///   have; deltas (`graphmind::model::StepChunk`) are batched into `node.token` every 34 ms,
///   and `node.finished` carries usage and finish reason, also when the stream is dropped.
/// - The invocation's first step sends `graph.hint`: the agent, `llm:step` and the step's
///   own roster, the names in `tools = [...]` (never every `#[graphmind::tool]` in the
///   binary, which may hold other agents' tools).
///
/// Arguments: `skip(arg, …)`, `retry = false`, `tools = [tool_fn, "tool name", …]` (a path
/// to a fn must resolve — a misspelt one is a compile error; name a tool renamed with
/// `name = "…"` by that string), `invocation = <expr>` (any `Display`), `result = true` and
/// `stream = true` (as for [`macro@tool`]; an SDK's stream alias such as
/// `-> Result<ChatCompletionResponseStream, OpenAIError>` needs `stream = true`),
/// `codec = path::To::Codec` (see above). With
/// feature `enabled` off, the arguments are checked and the fn is returned untouched.
#[proc_macro_attribute]
pub fn model_step(attr: TokenStream, item: TokenStream) -> TokenStream {
    instrument(Kind::ModelStep, attr.into(), item.into()).into()
}

/// Parse → plan → print. Parsing collects every error (arguments and signature) and returns
/// the original item beside them; with feature `enabled` off, a valid item comes back
/// untouched.
fn instrument(
    kind: Kind,
    attr: proc_macro2::TokenStream,
    tokens: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let item = match item::parse(kind, tokens.clone()) {
        Ok(item) => item,
        Err(err) => return with_error(err, tokens),
    };
    let (args, args_error) = Args::parse(kind, attr);
    let mut errors = errors::Errors::default();
    if let Some(err) = args_error {
        errors.add(err);
    }
    let analysis = sig::analyze(kind, &item.sig, &args);
    match (errors.into_result(), analysis) {
        (Ok(()), Ok(analysis)) => finish(kind, &args, item, &analysis),
        (first, second) => {
            let mut all = errors::Errors::default();
            for err in [first.err(), second.err()].into_iter().flatten() {
                all.add(err);
            }
            let err = all.into_result().err().unwrap_or_else(|| {
                syn::Error::new(proc_macro2::Span::call_site(), "invalid arguments")
            });
            with_error(err, tokens)
        }
    }
}

#[cfg(feature = "enabled")]
fn finish(
    kind: Kind,
    args: &Args,
    item: item::Item,
    analysis: &sig::Analysis,
) -> proc_macro2::TokenStream {
    print::print(&plan::plan(kind, args, item, analysis))
}

#[cfg(not(feature = "enabled"))]
fn finish(_: Kind, _: &Args, item: item::Item, _: &sig::Analysis) -> proc_macro2::TokenStream {
    quote::ToTokens::into_token_stream(item)
}

/// The original item beside the error, so that the IDE and the rest of the crate keep working.
fn with_error(err: syn::Error, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut out = err.to_compile_error();
    out.extend(item);
    out
}

#[cfg(all(test, not(feature = "enabled")))]
mod compiled_out_tests {
    use quote::quote;

    use super::{Kind, instrument};

    #[test]
    fn the_item_comes_back_untouched() {
        let item = quote!(
            async fn add(a: &mut i64, b: i64) -> i64 {
                *a + b
            }
        );
        let out = instrument(Kind::Tool, quote!(name = "plus", skip(b)), item.clone());
        assert_eq!(out.to_string(), item.to_string());
    }

    #[test]
    fn arguments_are_still_checked() {
        let item = quote!(
            async fn add(a: i64) -> i64 {
                a
            }
        );
        let out = instrument(Kind::Tool, quote!(skip(c)), item).to_string();
        assert!(
            out.contains("compile_error") && out.contains("`skip(c)` names no argument"),
            "{out}"
        );
        assert!(
            out.ends_with("async fn add (a : i64) -> i64 { a }"),
            "{out}"
        );
    }
}

#[cfg(all(test, feature = "enabled"))]
mod tests {
    use quote::quote;

    use super::{Kind, instrument};

    fn expand(
        kind: Kind,
        attr: proc_macro2::TokenStream,
        item: proc_macro2::TokenStream,
    ) -> String {
        instrument(kind, attr, item).to_string()
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn the_body_is_pasted_exactly_once_and_never_rewritten() {
        let out = expand(
            Kind::Tool,
            quote!(),
            quote!(
                async fn add(a: i64, b: i64) -> i64 {
                    __body_marker(a, b)
                }
            ),
        );
        assert_eq!(count(&out, "__body_marker"), 1, "{out}");
        assert!(out.contains("__body_marker (a , b)"), "{out}");
        assert_eq!(
            count(&out, ":: graphmind :: __private :: tool ("),
            1,
            "one call into the runtime"
        );
    }

    #[test]
    fn by_value_arguments_are_cloned_per_attempt_in_a_factory() {
        let out = expand(
            Kind::Tool,
            quote!(),
            quote!(
                async fn f(&self, mut a: String, b: &str) -> u8 {
                    1
                }
            ),
        );
        assert!(out.contains("Repeat (move ||"), "{out}");
        assert!(
            out.contains("let mut a = :: graphmind :: __private :: retry_clone (& a)"),
            "{out}"
        );
        assert!(
            out.contains("let b = :: graphmind :: __private :: retry_clone (& b)"),
            "{out}"
        );
        assert!(
            out.contains("async fn f (& self , a : String"),
            "the outer `mut` moves to the clone: {out}"
        );
        assert!(out.contains("retry : true"), "{out}");
    }

    #[test]
    fn a_mut_argument_turns_retry_off() {
        let out = expand(
            Kind::Tool,
            quote!(),
            quote!(
                async fn f(a: &mut Vec<u8>, mut n: u8) -> u8 {
                    n += 1;
                    n
                }
            ),
        );
        assert!(out.contains("retry : false"), "{out}");
        assert!(out.contains("Once :: new (move || async move"), "{out}");
        assert!(
            out.contains("mut n : u8"),
            "the user's `mut` stays where the body uses it: {out}"
        );
        assert!(!out.contains("retry_clone"), "{out}");
    }

    #[test]
    fn impl_trait_is_erased_in_the_type_annotation() {
        let out = expand(
            Kind::ModelStep,
            quote!(),
            quote!(
                async fn s(p: String) -> Result<impl Stream<Item = String>, E> {
                    todo()
                }
            ),
        );
        assert!(
            out.contains("let __graphmind_out : Result < _ , E >"),
            "{out}"
        );
        assert!(out.contains("model_step_stream_result"), "{out}");
    }

    #[test]
    fn skipped_arguments_are_not_captured_but_the_call_id_always_is() {
        let out = expand(
            Kind::Tool,
            quote!(skip(secret, id), call_id = id),
            quote!(
                async fn f(id: String, secret: String, q: u8) -> u8 {
                    q
                }
            ),
        );
        assert!(!out.contains("(\"secret\""), "{out}");
        assert!(
            out.contains("(\"id\" , :: graphmind :: __private :: arg (& id))"),
            "{out}"
        );
        assert!(
            out.contains("call_id : :: core :: option :: Option :: Some (\"id\")"),
            "{out}"
        );
    }

    #[test]
    fn an_error_keeps_the_original_item_beside_compile_error() {
        let out = expand(
            Kind::Tool,
            quote!(nmae = "x"),
            quote!(
                async fn add(a: i64) -> i64 {
                    __body_marker(a)
                }
            ),
        );
        assert_eq!(count(&out, "compile_error"), 1, "{out}");
        assert!(
            out.contains("async fn add (a : i64) -> i64 { __body_marker (a) }"),
            "{out}"
        );
        assert!(!out.contains("__private"), "{out}");
    }

    #[test]
    fn a_half_typed_body_still_expands_with_its_tokens_as_written() {
        let out = expand(
            Kind::Tool,
            quote!(name = "lookup"),
            quote!(
                async fn add(a: i64) -> i64 {
                    let b = a * ;
                    b
                }
            ),
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("let b = a * ;"), "{out}");
        assert!(
            out.contains("tool_result") || out.contains(":: tool ("),
            "{out}"
        );
    }

    #[test]
    fn an_argument_of_the_other_attribute_is_named_as_such() {
        let out = expand(
            Kind::ModelStep,
            quote!(call_id = id),
            quote!(
                async fn step(id: String) -> String {
                    id
                }
            ),
        );
        assert!(
            out.contains("unknown argument `call_id` for #[graphmind::model_step] (it is an argument of #[graphmind::tool])"),
            "{out}"
        );
    }

    #[test]
    fn every_key_parses_through_the_one_table() {
        for key in crate::args::KEYS {
            let value = match key.name {
                "name" => quote!(name = "x"),
                "skip" => quote!(skip(a)),
                "call_id" => quote!(call_id = a),
                "tools" => quote!(tools = ["t"]),
                "invocation" => quote!(invocation = a),
                "codec" => quote!(codec = my::Codec),
                other => {
                    let ident = proc_macro2::Ident::new(other, proc_macro2::Span::call_site());
                    quote!(#ident = false)
                }
            };
            let kind = match key.name {
                "name" | "call_id" | "reject" | "replay_errors" => Kind::Tool,
                _ => Kind::ModelStep,
            };
            let out = expand(
                kind,
                value,
                quote!(
                    async fn f(a: String) -> String {
                        a
                    }
                ),
            );
            assert!(!out.contains("compile_error"), "{}: {out}", key.name);
        }
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let out = expand(
            Kind::Tool,
            quote!(nmae = "x", retry = true, retry = false, skip(zz)),
            quote!(
                fn add(a: &mut i64) -> i64 {
                    *a
                }
            ),
        );
        assert_eq!(
            count(&out, "compile_error"),
            4,
            "unknown, duplicate, skip, not async: {out}"
        );
    }
}
