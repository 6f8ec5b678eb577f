//! Signature analysis: what kind of fn this is, what it returns, which arguments it captures.
//! Every check that can fail lives here, so that the compiled-out build reports the same errors.

use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, GenericArgument, Ident, LitBool, Pat, PathArguments, ReturnType, Signature, Type,
    TypeParamBound,
};

use crate::args::{Args, Kind};
use crate::errors::Errors;

/// How the fn produces its future.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// `async fn`.
    Async,
    /// A plain fn returning a boxed future, as `#[async_trait]` writes it (the impl's attribute
    /// runs first and leaves `#[graphmind::tool]` on the desugared method).
    Boxed,
}

/// What the future resolves to, decided from the written return type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ret {
    Value,
    Result,
    Stream,
    StreamResult,
}

/// One named argument.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) mutable: bool,
    pub(crate) skipped: bool,
}

/// The checked signature.
pub(crate) struct Analysis {
    pub(crate) shape: Shape,
    pub(crate) ret: Ret,
    /// The future's output type with `impl Trait` erased to `_`; `None` for `()`.
    pub(crate) output: Option<Type>,
    pub(crate) params: Vec<Param>,
    /// A streaming return written as a named type (not `impl Stream`): the tee is converted
    /// back into that type.
    pub(crate) restream: bool,
    /// Retry allowed: not switched off, no `&mut` argument, no `self` by value.
    pub(crate) retry: bool,
    /// The item type written in a streaming return (`impl Stream<Item = X>`, `BoxStream<'_,
    /// X>`, …), for the decoder a replay rebuilds recorded items with; `None` when the return
    /// does not stream, does not write it (an alias) or writes it with `impl Trait`.
    pub(crate) stream_item: Option<Type>,
}

/// A `&mut` argument or a `self` taken by value, which a retry cannot give afresh: its name
/// (`self`, `&mut self` or the argument's) and the tokens an error points at.
type Unclonable = (String, proc_macro2::TokenStream);

/// Checks the signature against the attribute's arguments; every error is reported at once.
pub(crate) fn analyze(kind: Kind, sig: &Signature, args: &Args) -> syn::Result<Analysis> {
    let mut errors = Errors::default();
    let attr = kind.attr();
    unsupported(attr, sig, &mut errors);
    let (shape, output) = shape_of(attr, sig, &mut errors);
    let ret = output.as_ref().map_or(Ret::Value, |ty| ret_of(ty, args));
    let (mut params, unclonable) = params_of(attr, sig, &mut errors);
    mark_skipped(sig, args, &mut params, &mut errors);
    check_call_id(sig, args, &params, &mut errors);
    let retry = retry_of(args, &unclonable, &mut errors);
    if let Some(reject) = &args.reject
        && reject.value()
        && !matches!(ret, Ret::Result | Ret::StreamResult)
    {
        let at = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.ident.span(),
        };
        errors.push(
            at,
            format!(
                "`reject` needs a tool returning `Result<T, E>` (a streaming one: `Result<impl Stream, E>`) \
                 with `E: From<graphmind::Rejection>`, so that a person's rejection reaches the caller \
                 as an `Err`; {attr} here does not return one"
            ),
        );
    }
    if let Some(replay) = &args.replay_errors
        && replay.value()
        && ret != Ret::Result
    {
        let at = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.ident.span(),
        };
        errors.push(
            at,
            format!(
                "`replay_errors` needs a tool returning `Result<T, E>` with `E: From<graphmind::RecordedError>`, \
                 so that a recorded error can be replayed as an `Err`; {attr} here does not return one"
            ),
        );
    }
    errors.into_result().map(|()| Analysis {
        shape,
        ret,
        restream: matches!(ret, Ret::Stream | Ret::StreamResult)
            && output.as_ref().is_some_and(|ty| !has_impl_trait(ty)),
        stream_item: match ret {
            Ret::Stream | Ret::StreamResult => output.as_ref().and_then(stream_item),
            Ret::Value | Ret::Result => None,
        },
        output: output.map(erase_impl_trait),
        params,
        retry,
    })
}

fn unsupported(attr: &str, sig: &Signature, errors: &mut Errors) {
    if let Some(constness) = &sig.constness {
        errors.push(
            constness.span,
            format!("{attr} cannot instrument a `const fn`; remove `const` and make it `async fn`"),
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(
            variadic.span(),
            format!("{attr} does not support variadic arguments"),
        );
    }
}

/// How the fn makes its future, and the future's output type.
fn shape_of(attr: &str, sig: &Signature, errors: &mut Errors) -> (Shape, Option<Type>) {
    let output_ty = match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => Some((**ty).clone()),
    };
    if sig.asyncness.is_some() || sig.constness.is_some() {
        return (Shape::Async, output_ty);
    }
    if let Some(inner) = output_ty.as_ref().and_then(boxed_future_output) {
        return (Shape::Boxed, Some(inner));
    }
    errors.push(
        sig.fn_token.span,
        format!(
            "{attr} needs an `async fn`; write `async fn {}` (or return a boxed future, as `#[async_trait]` does)",
            sig.ident
        ),
    );
    (Shape::Async, output_ty)
}

/// What the output is, from its written type corrected by `result = …` and `stream = …`.
fn ret_of(ty: &Type, args: &Args) -> Ret {
    let ret = match (classify(ty), args.result.as_ref().map(LitBool::value)) {
        (Ret::Value, Some(true)) => Ret::Result,
        (Ret::Result, Some(false)) => Ret::Value,
        (Ret::StreamResult, Some(false)) => Ret::Stream,
        (ret, _) => ret,
    };
    // Applied after `result`, so that `result = true, stream = true` reads an alias of a
    // `Result` whose `Ok` is a stream alias.
    match (ret, args.stream.as_ref().map(LitBool::value)) {
        (Ret::Value, Some(true)) => Ret::Stream,
        (Ret::Result, Some(true)) => Ret::StreamResult,
        (Ret::Stream, Some(false)) => Ret::Value,
        (Ret::StreamResult, Some(false)) => Ret::Result,
        (ret, _) => ret,
    }
}

/// The named arguments, and those a retry cannot give afresh.
fn params_of(attr: &str, sig: &Signature, errors: &mut Errors) -> (Vec<Param>, Vec<Unclonable>) {
    let mut params = Vec::new();
    let mut unclonable = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(recv) => match (&recv.reference, &recv.mutability) {
                (Some(_), None) => {}
                (Some(_), Some(_)) => {
                    unclonable.push(("&mut self".to_owned(), quote::quote!(#recv)))
                }
                (None, _) => unclonable.push(("self".to_owned(), quote::quote!(#recv))),
            },
            FnArg::Typed(typed) => {
                if let Some(param) = param_of(attr, typed, errors) {
                    if matches!(&*typed.ty, Type::Reference(r) if r.mutability.is_some()) {
                        let ty = &typed.ty;
                        unclonable.push((param.ident.to_string(), quote::quote!(#ty)));
                    }
                    params.push(param);
                }
            }
        }
    }
    (params, unclonable)
}

/// One typed argument bound to a name; `None` for `_` (never bound, so never recorded nor
/// cloned) and for a pattern (an error).
fn param_of(attr: &str, typed: &syn::PatType, errors: &mut Errors) -> Option<Param> {
    let (ident, mutable) = match &*typed.pat {
        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
            (pat.ident.clone(), pat.mutability.is_some())
        }
        Pat::Wild(_) => return None,
        other => {
            errors.push(
                other.span(),
                format!(
                    "{attr} records arguments by name; bind this argument to a name (`args: Type`) and destructure it in the body"
                ),
            );
            return None;
        }
    };
    Some(Param {
        ident,
        ty: (*typed.ty).clone(),
        mutable,
        skipped: false,
    })
}

fn mark_skipped(sig: &Signature, args: &Args, params: &mut [Param], errors: &mut Errors) {
    for name in &args.skip {
        match params.iter_mut().find(|p| p.ident == *name) {
            Some(param) => param.skipped = true,
            None if name == "self" => {}
            None => errors.push(
                name.span(),
                format!(
                    "`skip({name})` names no argument of `{}`; list argument names only{}",
                    sig.ident,
                    known(params)
                ),
            ),
        }
    }
}

fn check_call_id(sig: &Signature, args: &Args, params: &[Param], errors: &mut Errors) {
    if let Some(call_id) = &args.call_id
        && !params.iter().any(|p| p.ident == *call_id)
    {
        errors.push(
            call_id.span(),
            format!(
                "`call_id = {call_id}` names no argument of `{}`; name the argument that holds the model's tool-call id{}",
                sig.ident,
                known(params)
            ),
        );
    }
}

/// Whether the body may re-run: not switched off and every argument can be given afresh;
/// `retry = true` with an argument that cannot is an error at that argument.
fn retry_of(args: &Args, unclonable: &[Unclonable], errors: &mut Errors) -> bool {
    if args.retry.as_ref().is_some_and(|lit| lit.value) {
        for (name, tokens) in unclonable {
            let what = match name.as_str() {
                "self" => "`self` is taken by value".to_owned(),
                "&mut self" => "`self` is `&mut`".to_owned(),
                _ => format!("argument `{name}` is `&mut`"),
            };
            errors.push_spanned(
                tokens,
                format!(
                    "`retry = true` cannot re-run this body: {what}, so it cannot be given afresh to a second attempt; remove `retry = true` (the debugger's retry is then refused at run time) or take it by shared reference or by value"
                ),
            );
        }
    }
    args.retry.as_ref().is_none_or(|lit| lit.value) && unclonable.is_empty()
}

fn known(params: &[Param]) -> String {
    if params.is_empty() {
        return " (it has none)".to_owned();
    }
    let names: Vec<String> = params.iter().map(|p| format!("`{}`", p.ident)).collect();
    format!(" (it has {})", names.join(", "))
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Paren(paren) => last_segment(&paren.elem),
        Type::Group(group) => last_segment(&group.elem),
        _ => None,
    }
}

fn type_args(seg: &syn::PathSegment) -> impl Iterator<Item = &Type> {
    let args = match &seg.arguments {
        PathArguments::AngleBracketed(args) => Some(args.args.iter()),
        _ => None,
    };
    args.into_iter().flatten().filter_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

fn bounds_name(
    bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>,
    names: &[&str],
) -> bool {
    bounds.iter().any(|bound| match bound {
        TypeParamBound::Trait(tr) => tr
            .path
            .segments
            .last()
            .is_some_and(|seg| names.iter().any(|n| seg.ident == n)),
        _ => false,
    })
}

/// `Output` of `Pin<Box<dyn Future<Output = T> + …>>` or `BoxFuture<'_, T>`.
fn boxed_future_output(ty: &Type) -> Option<Type> {
    let seg = last_segment(ty)?;
    if seg.ident == "BoxFuture" || seg.ident == "LocalBoxFuture" {
        return type_args(seg).next().cloned();
    }
    if seg.ident != "Pin" {
        return None;
    }
    let boxed = last_segment(type_args(seg).next()?)?;
    if boxed.ident != "Box" {
        return None;
    }
    let Type::TraitObject(object) = type_args(boxed).next()? else {
        return None;
    };
    object.bounds.iter().find_map(|bound| match bound {
        TypeParamBound::Trait(tr) => {
            let seg = tr.path.segments.last()?;
            if seg.ident != "Future" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                    Some(assoc.ty.clone())
                }
                _ => None,
            })
        }
        _ => None,
    })
}

fn is_stream(ty: &Type) -> bool {
    const STREAMS: &[&str] = &["Stream", "TryStream"];
    match ty {
        Type::ImplTrait(imp) => bounds_name(&imp.bounds, STREAMS),
        Type::TraitObject(object) => bounds_name(&object.bounds, STREAMS),
        Type::Paren(paren) => is_stream(&paren.elem),
        Type::Group(group) => is_stream(&group.elem),
        _ => last_segment(ty).is_some_and(|seg| {
            seg.ident == "BoxStream"
                || seg.ident == "LocalBoxStream"
                || ((seg.ident == "Pin" || seg.ident == "Box")
                    && type_args(seg).next().is_some_and(is_stream))
        }),
    }
}

/// Decides from the written type whether the error gate applies and whether items stream.
fn classify(ty: &Type) -> Ret {
    if is_stream(ty) {
        return Ret::Stream;
    }
    match last_segment(ty) {
        Some(seg) if seg.ident == "Result" => {
            if type_args(seg).next().is_some_and(is_stream) {
                Ret::StreamResult
            } else {
                Ret::Result
            }
        }
        _ => Ret::Value,
    }
}

/// The item type written in a stream type: `Item = X` of `impl Stream` / `dyn Stream`
/// (through `Pin`, `Box` and a `Result`'s `Ok`), or `X` of `BoxStream<'_, X>`; `None` when it is
/// not written there or holds `impl Trait` (which an expression cannot name).
fn stream_item(ty: &Type) -> Option<Type> {
    let item = match ty {
        Type::ImplTrait(imp) => item_in(&imp.bounds),
        Type::TraitObject(object) => item_in(&object.bounds),
        Type::Paren(paren) => return stream_item(&paren.elem),
        Type::Group(group) => return stream_item(&group.elem),
        _ => {
            let seg = last_segment(ty)?;
            if seg.ident == "BoxStream" || seg.ident == "LocalBoxStream" {
                type_args(seg).next().cloned()
            } else if seg.ident == "Pin" || seg.ident == "Box" || seg.ident == "Result" {
                return stream_item(type_args(seg).next()?);
            } else {
                None
            }
        }
    }?;
    (!has_impl_trait(&item)).then_some(item)
}

/// `X` of a `Stream<Item = X>` bound.
fn item_in(bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>) -> Option<Type> {
    bounds.iter().find_map(|bound| match bound {
        TypeParamBound::Trait(tr) => {
            let seg = tr.path.segments.last()?;
            if seg.ident != "Stream" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::AssocType(assoc) if assoc.ident == "Item" => {
                    Some(assoc.ty.clone())
                }
                _ => None,
            })
        }
        _ => None,
    })
}

fn has_impl_trait(ty: &Type) -> bool {
    struct Find(bool);
    impl VisitMut for Find {
        fn visit_type_impl_trait_mut(&mut self, _: &mut syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut find = Find(false);
    find.visit_type_mut(&mut ty.clone());
    find.0
}

/// `impl Trait` cannot be written in a `let` annotation; `_` lets inference fill it in.
fn erase_impl_trait(mut ty: Type) -> Type {
    struct Erase;
    impl VisitMut for Erase {
        fn visit_type_mut(&mut self, ty: &mut Type) {
            if let Type::ImplTrait(imp) = ty {
                *ty = Type::Infer(syn::TypeInfer {
                    underscore_token: syn::Token![_](imp.impl_token.span),
                });
            } else {
                syn::visit_mut::visit_type_mut(self, ty);
            }
        }
    }
    Erase.visit_type_mut(&mut ty);
    ty
}
