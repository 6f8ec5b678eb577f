//! Code generation. The body is pasted once, as opaque tokens; everything else is one call into
//! `::graphmind::__private`, where the policy lives.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitStr};

use crate::args::{Args, Kind};
use crate::sig::{Analysis, Ret, Shape};

pub(crate) fn expand(kind: Kind, args: &Args, item: ItemFn, an: &Analysis) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = item;
    let p = quote!(::graphmind::__private);

    // The site record: one per place in the code.
    let retry = an.retry;
    let site = match kind {
        Kind::Tool => {
            let name = args
                .name
                .clone()
                .unwrap_or_else(|| LitStr::new(&sig.ident.to_string(), sig.ident.span()));
            quote!(#p::Site::tool(#name, #retry))
        }
        Kind::ModelStep => {
            let tools = args
                .tools
                .iter()
                .map(|t| LitStr::new(&t.name(), Span::call_site()));
            quote!(#p::Site::model_step(&[#(#tools),*], #retry))
        }
    };

    // Lazy capture: run only when the session is enabled, before the body takes its arguments.
    let captured = an
        .params
        .iter()
        .filter(|param| !param.skipped)
        .map(|param| {
            let key = LitStr::new(&param.ident.to_string(), param.ident.span());
            // Spanned at the argument's type, so that a missing `Serialize` points there.
            let at = Span::call_site().located_at(param.ty.span());
            let ident = Ident::new(&param.ident.to_string(), at);
            quote_spanned!(at=> (#key, #p::arg(&#ident)))
        });
    let capture =
        quote!(let __graphmind_input = #p::capture(&__GRAPHMIND_SITE, || [#(#captured),*]););

    // The tool-call id or the invocation key, read before the body takes its arguments.
    let key = match (kind, &args.call_id, &args.invocation) {
        (Kind::Tool, Some(id), _) => {
            let at = Span::call_site().located_at(
                an.params
                    .iter()
                    .find(|p| p.ident == *id)
                    .map_or(id.span(), |p| p.ty.span()),
            );
            let ident = Ident::new(&id.to_string(), at);
            quote_spanned!(at=> #p::call_id(&#ident))
        }
        (Kind::ModelStep, _, Some(expr)) => {
            quote_spanned!(expr.span()=> #p::Key::explicit(&(#expr)))
        }
        (Kind::ModelStep, _, None) => match an.params.first() {
            Some(first) => {
                let ident = &first.ident;
                quote!((&&#p::Request(&#ident)).key())
            }
            None => quote!(#p::Key::none()),
        },
        (Kind::Tool, None, _) => quote!(#p::Key::none()),
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
    let body = if retry {
        let clones = an.params.iter().map(|param| {
            let ident = &param.ident;
            let at = Span::call_site().located_at(param.ty.span());
            let mutability =
                (param.mutable && matches!(an.shape, Shape::Async)).then(|| quote!(mut));
            quote_spanned!(at=> let #mutability #ident = #p::retry_clone(&#ident);)
        });
        quote!(#p::Retry(move || { #(#clones)* #future }))
    } else {
        quote!(#p::Once(#future))
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
            "{}_{}",
            match kind {
                Kind::Tool => "tool",
                Kind::ModelStep => "model_step",
            },
            match an.ret {
                Ret::Value => "value",
                Ret::Result => "result",
                Ret::Stream => "stream",
                Ret::StreamResult => "stream_result",
            }
        ),
        Span::call_site(),
    );
    let call = quote!(#p::#entry(&__GRAPHMIND_SITE, __graphmind_input, #key, #body));
    let call = match an.shape {
        Shape::Async => quote!(#call.await),
        Shape::Boxed => quote!(::std::boxed::Box::pin(#call)),
    };
    quote! {
        #(#attrs)*
        #vis #sig {
            static __GRAPHMIND_SITE: #p::Site = #site;
            #capture
            #call
        }
    }
}
