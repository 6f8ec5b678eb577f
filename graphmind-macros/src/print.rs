//! Prints a [`Plan`] as tokens. The body is pasted once, as opaque tokens; everything else is
//! one call into `::graphmind::__private`, where the policy lives.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::args::Kind;
use crate::plan::{Grouping, Plan, Site};
use crate::sig::{Ret, Shape};

/// `::graphmind::__private`, at the call site.
fn private() -> TokenStream {
    quote!(::graphmind::__private)
}

/// The instrumented function.
pub(crate) fn print(plan: &Plan) -> TokenStream {
    let (site_ty, site) = site(plan);
    let register = register(plan);
    let capture = capture(plan);
    let call = call(plan);
    // The outer braces keep the user's span: lints on the fn (`dead_code`) then see the
    // user's item, not one from an external macro (where they are silenced).
    let mut outer = Group::new(
        Delimiter::Brace,
        quote! {
            static __GRAPHMIND_SITE: #site_ty = #site;
            #register
            #capture
            #call
        },
    );
    outer.set_span(plan.item.body.span());
    let (attrs, vis, sig) = (&plan.item.attrs, &plan.item.vis, &plan.item.sig);
    quote!(#(#attrs)* #vis #sig #outer)
}

/// The site record's type and value.
fn site(plan: &Plan) -> (TokenStream, TokenStream) {
    let (p, retry) = (private(), plan.retry);
    match &plan.site {
        Site::Tool {
            name,
            node_id,
            call_id,
        } => {
            let call_id = match call_id {
                Some(id) => quote!(::core::option::Option::Some(#id)),
                None => quote!(::core::option::Option::None),
            };
            let site = quote!(#p::ToolSite { name: #name, node_id: #node_id, retry: #retry, call_id: #call_id });
            (quote!(#p::ToolSite), site)
        }
        Site::Step { fn_name, tools } => {
            let site =
                quote!(#p::StepSite { name: #fn_name, tools: &[#(#tools),*], retry: #retry });
            (quote!(#p::StepSite), site)
        }
    }
}

/// A tool joins the binary's roster; a model step's `tools = [...]` paths must resolve (each
/// imported as `_` in a block of its own: a `use` resolves the path without naming its
/// generic parameters, so generic tools pass too).
fn register(plan: &Plan) -> TokenStream {
    match &plan.site {
        Site::Tool { name, .. } => quote!(::graphmind::__graphmind_register_tool!(#name);),
        Site::Step { .. } => {
            let checks = plan
                .tool_paths
                .iter()
                .map(|path| quote_spanned!(path.span()=> #[allow(unused_imports)] use #path as _;));
            quote!(#({ #checks })*)
        }
    }
}

/// Lazy capture: built only when the session records, before the body takes its arguments.
fn capture(plan: &Plan) -> TokenStream {
    let p = private();
    let fields = plan.captured.iter().map(|c| {
        let (key, ident) = (&c.key, &c.ident);
        quote_spanned!(ident.span()=> (#key, #p::arg(&#ident)))
    });
    let build = quote!(|| #p::object([#(#fields),*]));
    match plan.kind {
        Kind::Tool => {
            let check = plan
                .call_id_check
                .as_ref()
                .map(|id| quote_spanned!(id.span()=> #p::assert_call_id(&#id);));
            quote!(#check let __graphmind_input = #p::capture(#build);)
        }
        Kind::ModelStep => {
            let (group, shape) = (grouping(plan), request_shape(plan));
            quote!(let __graphmind_input = #p::capture_step(#build, || #group, || #shape);)
        }
    }
}

fn grouping(plan: &Plan) -> TokenStream {
    let (p, codec) = (private(), codec(plan));
    match &plan.grouping {
        Grouping::Explicit(expr) => quote_spanned!(expr.span()=> #p::Grouping::explicit(#expr)),
        Grouping::Request(ident) => quote!({
            use #p::{ViaAuto as _, ViaStepRequest as _};
            (&&#p::Req::<#codec, _>::new(&#ident)).gm_group()
        }),
        Grouping::Auto => quote!(#p::Grouping::Auto),
    }
}

/// What the codec says of the request (the first recorded argument): its `api`, and
/// whether it is recorded as the whole input.
fn request_shape(plan: &Plan) -> TokenStream {
    let (p, codec) = (private(), codec(plan));
    match plan.captured.first() {
        Some(request) => {
            let ident = &request.ident;
            quote!({
                use #p::{ViaAuto as _, ViaStepRequest as _};
                (&&#p::Req::<#codec, _>::new(&#ident)).gm_shape()
            })
        }
        None => quote!(#p::RequestShape::default()),
    }
}

/// The codec that reads a model step's request, response and chunks.
fn codec(plan: &Plan) -> TokenStream {
    match &plan.codec {
        Some(ty) => quote!(#ty),
        None => quote!(::graphmind::model::Native),
    }
}

/// The response type a codec reads, as written in the signature (`T` of `-> T` or of
/// `-> Result<T, E>`); `None` without a codec, or when the signature does not spell it out
/// (a `Result` under another name, `impl Trait`).
fn codec_response(plan: &Plan) -> Option<syn::Type> {
    plan.codec.as_ref()?;
    let output = plan.output.as_ref()?;
    let ty = match plan.ret {
        Ret::Value => output.clone(),
        Ret::Result => {
            let syn::Type::Path(path) = output else {
                return None;
            };
            let last = path.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            if last.ident != "Result" || args.args.len() != 2 {
                return None;
            }
            match args.args.first()? {
                syn::GenericArgument::Type(ty) => ty.clone(),
                _ => return None,
            }
        }
        Ret::Stream | Ret::StreamResult => return None,
    };
    (!matches!(ty, syn::Type::Infer(_))).then_some(ty)
}

/// The body as the runtime runs it: a factory cloning the arguments for every attempt, or a
/// closure run once. `__graphmind_out` pins the block's type for `?` and `return`.
fn body(plan: &Plan) -> TokenStream {
    let (p, ret) = (private(), plan.ret_span);
    let pr = quote_spanned!(ret=> ::graphmind::__private);
    let block = &plan.item.body;
    let future = match (plan.shape, &plan.output) {
        (Shape::Async, Some(output)) => {
            quote!(async move { let __graphmind_out: #output = #block; __graphmind_out })
        }
        (Shape::Async, None) => {
            quote!(async move { let __graphmind_out: () = #block; __graphmind_out })
        }
        (Shape::Boxed, _) => quote!(#block),
    };
    let clones = plan.fresh.iter().map(|f| {
        let (ident, at) = (&f.ident, f.at);
        let mutability = f.mutable.then(|| quote!(mut));
        quote_spanned!(at=> let #mutability #ident = #p::retry_clone(&#ident);)
    });
    if let Some(edit) = &plan.edit {
        let attempt = match plan.retry {
            true => quote!(#(#clones)* #future),
            false => future,
        };
        return editable_body(plan, edit, attempt);
    }
    if !plan.retry {
        return quote_spanned!(ret=> #pr::Once::new(move || #future));
    }
    quote_spanned!(ret=> #pr::Repeat(move || { #(#clones)* #future }))
}

/// A body whose recorded arguments an edit may replace: each argument's type is taken once
/// (a zero-sized marker), the body gets the edit before an attempt and writes each edited
/// argument into its binding (through the marker's `ViaEdit`, or nothing for a type that
/// does not deserialize), and a second closure lists the arguments with their type checks.
fn editable_body(plan: &Plan, edit: &[crate::plan::EditArg], attempt: TokenStream) -> TokenStream {
    let (p, ret) = (private(), plan.ret_span);
    let pr = quote_spanned!(ret=> ::graphmind::__private);
    let markers = edit.iter().map(|e| {
        let (ident, marker) = (&e.ident, &e.marker);
        quote!(let #marker = #p::Ed::of(&#ident);)
    });
    let rebind = edit.iter().map(|e| {
        let ident = &e.ident;
        quote!(#[allow(unused_mut)] let mut #ident = #ident;)
    });
    let others = plan
        .mut_others
        .iter()
        .map(|ident| quote!(let mut #ident = #ident;));
    let apply = edit.iter().map(|e| {
        let (key, ident, marker) = (&e.key, &e.ident, &e.marker);
        quote!((&&#marker).gm_apply(__graphmind_edit, #key, &mut #ident);)
    });
    let checks = edit.iter().map(|e| {
        let (key, marker) = (&e.key, &e.marker);
        quote!((#key, (&&#marker).gm_check()))
    });
    let param = quote!(__graphmind_edit: ::core::option::Option<&#p::EditArgs>);
    let apply = quote!(
        if let ::core::option::Option::Some(__graphmind_edit) = __graphmind_edit {
            #(#apply)*
        }
    );
    let checks = quote!(move || #p::arg_checks([#(#checks),*]));
    let body = if plan.retry {
        quote_spanned!(ret=> {
            #(#rebind)*
            #pr::EditRepeat::new(move |#param| { #apply #attempt }, #checks)
        })
    } else {
        quote_spanned!(ret=> #pr::EditOnce::new(
            move |#param| { #(#rebind)* #(#others)* #apply #attempt },
            #checks,
        ))
    };
    quote!({
        #[allow(unused_imports)]
        use #p::{ViaEdit as _, ViaNoEdit as _};
        #(#markers)*
        #body
    })
}

/// The one call into the runtime's entry point for this kind and return, awaited (or boxed).
fn call(plan: &Plan) -> TokenStream {
    let ret = plan.ret_span;
    let pr = quote_spanned!(ret=> ::graphmind::__private);
    let (entry, body) = (entry(plan), body(plan));
    let call = match plan.kind {
        Kind::Tool if matches!(plan.ret, Ret::Stream | Ret::StreamResult) => {
            // The decoder of recorded items, picked by whether the written item type
            // deserializes (autoref: `ViaDecode` when it does, else `ViaNoDecode`).
            let decode = match &plan.stream_item {
                Some(item) => quote_spanned!(ret=> {
                    #[allow(unused_imports)]
                    use #pr::{ViaDecode as _, ViaNoDecode as _};
                    (&&#pr::ItemDecoder::<#item>::new()).gm_decoder()
                }),
                None => quote_spanned!(ret=> ::core::option::Option::None),
            };
            quote_spanned!(ret=> #pr::#entry(&__GRAPHMIND_SITE, __graphmind_input, #body, #decode))
        }
        Kind::Tool => {
            quote_spanned!(ret=> #pr::#entry(&__GRAPHMIND_SITE, __graphmind_input, #body))
        }
        Kind::ModelStep => {
            // The codec as the entry point's first generic argument (the others inferred),
            // spanned at the return type, so that a codec missing an impl is one error there.
            // With a codec, a response type written in the signature is named too: a codec
            // with one `ResponseCodec` impl would otherwise have the compiler infer the
            // response from that impl and report a mismatch (E0271) instead of the missing
            // impl, whose note says `stream = true` for an SDK's stream alias.
            let response = codec_response(plan).map_or_else(|| quote!(_), |ty| quote!(#ty));
            let rest = match plan.ret {
                Ret::Value => quote!(_, #response),
                Ret::Stream => quote!(_, _),
                Ret::Result => quote!(_, #response, _),
                Ret::StreamResult => quote!(_, _, _),
            };
            let codec = codec(plan);
            let generics = respan(quote!(<#codec, #rest>), ret);
            quote_spanned!(ret=> #pr::#entry::#generics(&__GRAPHMIND_SITE, __graphmind_input, #body))
        }
    };
    finish(plan, call)
}

/// Awaits the call (or boxes it, for a fn returning a boxed future); a stream written as a
/// named type gets the tee back in that type.
fn finish(plan: &Plan, call: TokenStream) -> TokenStream {
    let ret = plan.ret_span;
    let pr = quote_spanned!(ret=> ::graphmind::__private);
    let restream = match (plan.restream, plan.ret) {
        (true, Ret::Stream) => Some(quote_spanned!(ret=> #pr::restream)),
        (true, _) => Some(quote_spanned!(ret=> #pr::restream_result)),
        (false, _) => None,
    };
    match (plan.shape, restream) {
        (Shape::Async, None) => quote_spanned!(ret=> #call.await),
        (Shape::Async, Some(wrap)) => quote_spanned!(ret=> #wrap(#call.await)),
        (Shape::Boxed, None) => quote!(::std::boxed::Box::pin(#call)),
        (Shape::Boxed, Some(wrap)) => {
            quote!(::std::boxed::Box::pin(async move { #wrap(#call.await) }))
        }
    }
}

/// The entry point's name: `tool` / `model_step`, then `_result`, `_stream` or
/// `_stream_result` after the return.
fn entry(plan: &Plan) -> proc_macro2::Ident {
    let kind = match plan.kind {
        Kind::Tool => "tool",
        Kind::ModelStep => "model_step",
    };
    let ret = match plan.ret {
        Ret::Value => "",
        Ret::Result if plan.reject && plan.replay_errors => "_result_reject_replay",
        Ret::Result if plan.reject => "_result_reject",
        Ret::Result if plan.replay_errors => "_result_replay",
        Ret::Result => "_result",
        Ret::Stream => "_stream",
        Ret::StreamResult if plan.reject => "_stream_result_reject",
        Ret::StreamResult => "_stream_result",
    };
    proc_macro2::Ident::new(&format!("{kind}{ret}"), Span::call_site())
}

/// `tokens` with every span set to `span`, so that an error about them points there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = group.into();
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}
