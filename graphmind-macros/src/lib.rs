//! Attribute macros for graphmind: `#[graphmind::tool]` and `#[graphmind::model_step]`.
//!
//! Use them through the `graphmind` crate, which re-exports them. The macros are thin: they
//! check the signature, paste the body once and make one call into the runtime, where every
//! policy (gates, retry, inject, abort, events) lives. With feature `enabled` off they check
//! their arguments and return the item untouched.

#![cfg_attr(not(feature = "enabled"), allow(dead_code))]

mod args;
#[cfg(feature = "enabled")]
mod expand;
mod sig;

use proc_macro::TokenStream;

use crate::args::{Args, Kind};

/// Instruments an async fn as a tool: node `tool:<name>`, gates before, after and on error.
///
/// Arguments: `name = "…"` (default: the fn's name), `skip(arg, …)` (arguments left out of the
/// recorded input), `call_id = arg` (the argument holding the model's tool-call id),
/// `retry = false` (refuse the debugger's retry). See the `graphmind` crate for details.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    instrument(Kind::Tool, attr.into(), item.into()).into()
}

/// Instruments the async fn that calls a model: node `llm:step`, grouped into invocations.
///
/// Arguments: `skip(arg, …)`, `retry = false`, `tools = [tool_fn, …]` (the tool roster drawn
/// before anything runs), `invocation = <expr>` (an explicit invocation key). See the
/// `graphmind` crate for details.
#[proc_macro_attribute]
pub fn model_step(attr: TokenStream, item: TokenStream) -> TokenStream {
    instrument(Kind::ModelStep, attr.into(), item.into()).into()
}

fn instrument(
    kind: Kind,
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(_) => return with_error(not_a_fn(kind, item.clone()), item),
    };
    let args = Args::parse(kind, attr);
    let analysis = sig::analyze(kind, &func, args.as_ref().unwrap_or(&Args::default()));
    let (args, analysis) = match (args, analysis) {
        (Ok(args), Ok(analysis)) => (args, analysis),
        (args, analysis) => {
            let mut errors = args.err();
            if let Err(err) = analysis {
                match &mut errors {
                    Some(all) => all.combine(err),
                    None => errors = Some(err),
                }
            }
            let err = errors.unwrap_or_else(|| {
                syn::Error::new(proc_macro2::Span::call_site(), "invalid arguments")
            });
            return with_error(err, item);
        }
    };
    finish(kind, &args, func, &analysis)
}

#[cfg(feature = "enabled")]
fn finish(
    kind: Kind,
    args: &Args,
    func: syn::ItemFn,
    analysis: &sig::Analysis,
) -> proc_macro2::TokenStream {
    expand::expand(kind, args, func, analysis)
}

#[cfg(not(feature = "enabled"))]
fn finish(_: Kind, _: &Args, func: syn::ItemFn, _: &sig::Analysis) -> proc_macro2::TokenStream {
    quote::ToTokens::into_token_stream(func)
}

/// The original item beside the error, so that the IDE and the rest of the crate keep working.
fn with_error(err: syn::Error, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let mut out = err.to_compile_error();
    out.extend(item);
    out
}

fn not_a_fn(kind: Kind, item: proc_macro2::TokenStream) -> syn::Error {
    let attr = kind.attr();
    if let Ok(trait_fn) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
        return syn::Error::new_spanned(
            &trait_fn.sig.ident,
            format!(
                "{attr} needs a body; put it on the method in each `impl`, not on the trait's declaration"
            ),
        );
    }
    if let Ok(imp) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return syn::Error::new_spanned(
            imp.impl_token,
            format!("{attr} goes on each async method, not on the `impl` block"),
        );
    }
    let first = item.into_iter().next();
    let span = first.map_or_else(proc_macro2::Span::call_site, |tt| tt.span());
    syn::Error::new(span, format!("{attr} goes on an `async fn`"))
}
