//! The attribute's own arguments: parsed once, checked for unknown and duplicate keys.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitBool, LitStr, Path, Token, bracketed, parenthesized};

/// Which attribute is being expanded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    ModelStep,
}

impl Kind {
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[graphmind::tool]",
            Kind::ModelStep => "#[graphmind::model_step]",
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["name", "skip", "call_id", "retry", "result", "stream"],
            Kind::ModelStep => &[
                "skip",
                "retry",
                "tools",
                "invocation",
                "result",
                "stream",
                "codec",
            ],
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Kind::Tool => {
                "`name = \"…\"`, `skip(arg, …)`, `call_id = arg`, `retry = false`, `result = true`, `stream = true`"
            }
            Kind::ModelStep => {
                "`skip(arg, …)`, `retry = false`, `tools = [tool_fn, …]`, `invocation = <expr>`, `result = true`, `stream = true`, `codec = path::To::Codec`"
            }
        }
    }
}

/// One entry of `tools = [...]`: a path to a tool fn (its last segment is the tool name) or a
/// string literal naming a tool renamed with `name = "…"`.
pub(crate) enum ToolRef {
    Path(Path),
    Name(LitStr),
}

impl ToolRef {
    pub(crate) fn name(&self) -> String {
        match self {
            ToolRef::Path(path) => path
                .segments
                .last()
                .map(|seg| seg.ident.to_string())
                .unwrap_or_default(),
            ToolRef::Name(lit) => lit.value(),
        }
    }
}

impl Parse for ToolRef {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(LitStr) {
            Ok(ToolRef::Name(input.parse()?))
        } else {
            Ok(ToolRef::Path(input.parse()?))
        }
    }
}

/// Everything the attribute may say. Which keys are allowed depends on [`Kind`].
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) name: Option<LitStr>,
    pub(crate) skip: Vec<Ident>,
    pub(crate) call_id: Option<Ident>,
    pub(crate) retry: Option<LitBool>,
    pub(crate) tools: Vec<ToolRef>,
    pub(crate) invocation: Option<Expr>,
    /// `result = true`: the return type is a `Result` under another name (a type alias);
    /// `result = false`: a type named `Result` that is not one.
    pub(crate) result: Option<LitBool>,
    /// `stream = true`: the return type (or its `Ok`) is a `Stream` under another name (a type
    /// alias such as an SDK's `ChatCompletionResponseStream`); `stream = false`: a type that
    /// looks like a stream is returned as one value.
    pub(crate) stream: Option<LitBool>,
    /// `codec = path::To::Codec`: the type that reads the request, response and chunks (a
    /// codec for another crate's types); `graphmind::model::Native` when absent.
    pub(crate) codec: Option<syn::Type>,
}

impl Args {
    /// Parses `key = value, key(list), …`, collecting every error instead of stopping at the
    /// first. The arguments that did parse are returned beside the errors, so that the
    /// signature checks (`skip`, `call_id`) still run.
    pub(crate) fn parse(
        kind: Kind,
        tokens: proc_macro2::TokenStream,
    ) -> (Self, Option<syn::Error>) {
        let mut args = Args::default();
        let parser = |input: ParseStream<'_>| parse_args(kind, &mut args, input);
        let errors = syn::parse::Parser::parse2(parser, tokens).err();
        (args, errors)
    }
}

fn parse_args(kind: Kind, args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push = |err: syn::Error| match &mut errors {
        Some(all) => all.combine(err),
        None => errors = Some(err),
    };
    while !input.is_empty() {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        let key_str = key.to_string();
        if !kind.keys().contains(&key_str.as_str()) {
            push(syn::Error::new(
                key.span(),
                format!(
                    "unknown argument `{key_str}` for {}; expected one of {}",
                    kind.attr(),
                    kind.usage()
                ),
            ));
            // Skip the value so that the next arguments are still checked.
            skip_value(input)?;
        } else {
            if seen.contains(&key_str) {
                push(syn::Error::new(
                    key.span(),
                    format!("duplicate argument `{key_str}`; give it once"),
                ));
            }
            seen.push(key_str.clone());
            parse_value(args, &key, input)?;
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    match errors {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

fn parse_value(args: &mut Args, key: &Ident, input: ParseStream<'_>) -> syn::Result<()> {
    match key.to_string().as_str() {
        "name" => {
            input.parse::<Token![=]>()?;
            let lit: LitStr = input.parse().map_err(|err| {
                syn::Error::new(err.span(), "expected a string: `name = \"search_flights\"`")
            })?;
            if lit.value().trim().is_empty() {
                return Err(syn::Error::new(
                    lit.span(),
                    "the tool name is empty; write a name such as `name = \"search\"`",
                ));
            }
            args.name = Some(lit);
        }
        "skip" => {
            let content;
            parenthesized!(content in input);
            let list = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
            args.skip.extend(list);
        }
        "call_id" => {
            input.parse::<Token![=]>()?;
            args.call_id = Some(input.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    "expected the name of an argument that holds the tool-call id: `call_id = id`",
                )
            })?);
        }
        "retry" => {
            input.parse::<Token![=]>()?;
            args.retry = Some(input.parse().map_err(|err| {
                syn::Error::new(err.span(), "expected `retry = false` or `retry = true`")
            })?);
        }
        "result" => {
            input.parse::<Token![=]>()?;
            args.result = Some(input.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    "expected `result = true` (the return type is a `Result` alias) or `result = false`",
                )
            })?);
        }
        "stream" => {
            input.parse::<Token![=]>()?;
            args.stream = Some(input.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    "expected `stream = true` (the return type, or its `Ok`, is a `Stream` alias) or `stream = false`",
                )
            })?);
        }
        "tools" => {
            input.parse::<Token![=]>()?;
            let content;
            bracketed!(content in input);
            let list = Punctuated::<ToolRef, Token![,]>::parse_terminated(&content)?;
            args.tools.extend(list);
        }
        "invocation" => {
            input.parse::<Token![=]>()?;
            args.invocation = Some(input.parse()?);
        }
        "codec" => {
            input.parse::<Token![=]>()?;
            args.codec = Some(input.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    "expected the codec's type: `codec = graphmind_openai::Chat` (a type implementing `graphmind::model::ResponseCodec` for the response)",
                )
            })?);
        }
        _ => {
            return Err(syn::Error::new(
                Span::call_site(),
                "unreachable argument key",
            ));
        }
    }
    Ok(())
}

/// Consumes `= expr` or `( … )` after an unknown key.
fn skip_value(input: ParseStream<'_>) -> syn::Result<()> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse::<Expr>()?;
    } else if input.peek(syn::token::Paren) {
        let _content;
        parenthesized!(_content in input);
        let _: proc_macro2::TokenStream = _content.parse()?;
    }
    Ok(())
}
