//! Code generation. The body is pasted once, as opaque tokens; everything else is one call into
//! `::graphmind::__private`, where the policy lives.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitStr};

use crate::args::{Args, Kind, ToolRef};
use crate::sig::{Analysis, Ret, Shape};

pub(crate) fn expand(kind: Kind, args: &Args, item: ItemFn, an: &Analysis) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = item;
    let p = quote!(::graphmind::__private);
    // The codec that reads the request, response and chunks of a model step.
    let codec = match &args.codec {
        Some(ty) => quote!(#ty),
        None => quote!(::graphmind::model::Native),
    };

    // The site record: one per place in the code.
    let retry = an.retry;
    let fn_name = LitStr::new(&sig.ident.to_string(), sig.ident.span());
    let (site, register) = match kind {
        Kind::Tool => {
            let name = args.name.clone().unwrap_or_else(|| fn_name.clone());
            let node_id = LitStr::new(&format!("tool:{}", name.value()), name.span());
            let call_id = args.call_id.as_ref().map_or_else(
                || quote!(::core::option::Option::None),
                |id| {
                    let id = LitStr::new(&id.to_string(), id.span());
                    quote!(::core::option::Option::Some(#id))
                },
            );
            (
                quote!(#p::ToolSite { name: #name, node_id: #node_id, retry: #retry, call_id: #call_id }),
                quote!(::graphmind::__graphmind_register_tool!(#name);),
            )
        }
        Kind::ModelStep => {
            let tools = args
                .tools
                .iter()
                .map(|t| LitStr::new(&t.name(), Span::call_site()));
            (
                quote!(#p::StepSite { name: #fn_name, tools: &[#(#tools),*], retry: #retry }),
                tool_paths_exist(&args.tools),
            )
        }
    };
    let site_ty = match kind {
        Kind::Tool => quote!(#p::ToolSite),
        Kind::ModelStep => quote!(#p::StepSite),
    };

    // Lazy capture: built only when the session records, before the body takes its arguments.
    let captured = an
        .params
        .iter()
        .filter(|param| !param.skipped || args.call_id.as_ref() == Some(&param.ident))
        .map(|param| {
            let key = LitStr::new(&param.ident.to_string(), param.ident.span());
            // At the argument's type (with the name's hygiene), so that a missing
            // `Serialize` points there.
            let at = param.ident.span().located_at(param.ty.span());
            let ident = Ident::new(&param.ident.to_string(), at);
            quote_spanned!(at=> (#key, #p::arg(&#ident)))
        });
    let build = quote!(|| #p::object([#(#captured),*]));
    let capture = match kind {
        Kind::Tool => {
            let check = args.call_id.as_ref().map(|id| {
                let at = an
                    .params
                    .iter()
                    .find(|p| p.ident == *id)
                    .map_or(id.span(), |p| p.ident.span().located_at(p.ty.span()));
                let ident = Ident::new(&id.to_string(), at);
                quote_spanned!(at=> #p::assert_call_id(&#ident);)
            });
            quote!(#check let __graphmind_input = #p::capture(#build);)
        }
        Kind::ModelStep => {
            // The request: the first argument the input records (a skipped one is a client,
            // a key, a handle…), else the first argument.
            let request = an
                .params
                .iter()
                .find(|param| !param.skipped)
                .or(an.params.first());
            let group = match (&args.invocation, request) {
                (Some(expr), _) => quote_spanned!(expr.span()=> #p::Grouping::explicit(#expr)),
                (None, Some(first)) => {
                    let ident = &first.ident;
                    quote!({ use #p::{ViaAuto as _, ViaStepRequest as _}; (&&#p::Req::<#codec, _>::new(&#ident)).gm_group() })
                }
                (None, None) => quote!(#p::Grouping::Auto),
            };
            quote!(let __graphmind_input = #p::capture_step(#build, || #group);)
        }
    };

    // The body, pasted once. `__graphmind_out` pins the block's type for `?` and `return`.
    let output = an
        .output
        .as_ref()
        .map_or_else(|| quote!(()), |ty| quote!(#ty));
    let future = match an.shape {
        Shape::Async => {
            quote!(async move { let __graphmind_out: #output = #block; __graphmind_out })
        }
        Shape::Boxed => quote!(#block),
    };
    // The call is spanned at the return type, so that a bound the output misses points there.
    let ret = match &sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    };
    let pr = quote_spanned!(ret=> ::graphmind::__private);
    let body = if retry {
        let clones = an.params.iter().map(|param| {
            let ident = &param.ident;
            let at = param.ident.span().located_at(param.ty.span());
            let mutability =
                (param.mutable && matches!(an.shape, Shape::Async)).then(|| quote!(mut));
            quote_spanned!(at=> let #mutability #ident = #p::retry_clone(&#ident);)
        });
        quote_spanned!(ret=> #pr::Repeat(move || { #(#clones)* #future }))
    } else {
        quote_spanned!(ret=> #pr::Once::new(move || #future))
    };
    if retry {
        // The outer bindings are only cloned from; the clones carry the user's `mut`.
        for input in &mut sig.inputs {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(pat) = &mut *typed.pat
            {
                pat.mutability = None;
            }
        }
    }

    let entry = Ident::new(
        &format!(
            "{}{}",
            match kind {
                Kind::Tool => "tool",
                Kind::ModelStep => "model_step",
            },
            match an.ret {
                Ret::Value => "",
                Ret::Result => "_result",
                Ret::Stream => "_stream",
                Ret::StreamResult => "_stream_result",
            }
        ),
        Span::call_site(),
    );
    let call = match kind {
        Kind::Tool => {
            quote_spanned!(ret=> #pr::#entry(&__GRAPHMIND_SITE, __graphmind_input, #body))
        }
        Kind::ModelStep => {
            // The codec as the entry point's first generic argument (the others inferred), so
            // that a codec missing an impl is one error at the return type.
            let rest = match an.ret {
                Ret::Value | Ret::Stream => quote!(_, _),
                Ret::Result | Ret::StreamResult => quote!(_, _, _),
            };
            let generics = respan(quote!(<#codec, #rest>), ret);
            quote_spanned!(ret=> #pr::#entry::#generics(&__GRAPHMIND_SITE, __graphmind_input, #body))
        }
    };
    // A stream written as a named type gets the tee back in that type.
    let restream = match (an.restream, an.ret) {
        (true, Ret::Stream) => Some(quote_spanned!(ret=> #pr::restream)),
        (true, _) => Some(quote_spanned!(ret=> #pr::restream_result)),
        (false, _) => None,
    };
    let call = match (an.shape, restream) {
        (Shape::Async, None) => quote_spanned!(ret=> #call.await),
        (Shape::Async, Some(wrap)) => quote_spanned!(ret=> #wrap(#call.await)),
        (Shape::Boxed, None) => quote!(::std::boxed::Box::pin(#call)),
        (Shape::Boxed, Some(wrap)) => {
            quote!(::std::boxed::Box::pin(async move { #wrap(#call.await) }))
        }
    };
    // The outer braces keep the user's span: lints on the fn (`dead_code`) then see the
    // user's item, not one from an external macro (where they are silenced).
    let mut outer = proc_macro2::Group::new(
        proc_macro2::Delimiter::Brace,
        quote! {
            static __GRAPHMIND_SITE: #site_ty = #site;
            #register
            #capture
            #call
        },
    );
    outer.set_span(block.brace_token.span.join());
    quote!(#(#attrs)* #vis #sig #outer)
}

/// Makes a misspelt `tools = [...]` entry a compile error at the entry: each path that names
/// a fn of a module (not an associated fn of a type, which `use` cannot name) is imported as
/// `_` in a block of its own. A `use` resolves the path without naming its generic
/// parameters, so generic tools pass too.
fn tool_paths_exist(tools: &[ToolRef]) -> TokenStream {
    let checks = tools.iter().filter_map(|tool| match tool {
        ToolRef::Path(path) if names_a_module_item(path) => {
            Some(quote_spanned!(path.span()=> #[allow(unused_imports)] use #path as _;))
        }
        _ => None,
    });
    quote!(#({ #checks })*)
}

/// Whether every segment before the last is a module (`crate`, `self`, `super` or a
/// lowercase name) and none has generic arguments.
fn names_a_module_item(path: &syn::Path) -> bool {
    let n = path.segments.len();
    path.segments.iter().enumerate().all(|(i, seg)| {
        let name = seg.ident.to_string();
        seg.arguments.is_none()
            && (i + 1 == n
                || matches!(name.as_str(), "crate" | "self" | "super")
                || name.starts_with(|c: char| c.is_lowercase() || c == '_'))
    }) && path.segments.first().is_some_and(|s| s.ident != "Self")
}

/// `tokens` with every span set to `span`, so that an error about them points there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = group.into();
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}
