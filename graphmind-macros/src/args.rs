//! The attribute's own arguments: one table of keywords ([`KEYS`]) drives parsing, the list of
//! valid keys in error messages, and the compiled-out build's checks alike.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitBool, LitStr, Path, Token, bracketed, parenthesized};

/// Which attribute is being expanded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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

    /// The other attribute (named when a key belongs to it).
    fn other(self) -> Kind {
        match self {
            Kind::Tool => Kind::ModelStep,
            Kind::ModelStep => Kind::Tool,
        }
    }

    /// `key = …` forms this attribute takes, in table order, for error messages.
    fn usage(self) -> String {
        let forms: Vec<&str> = KEYS
            .iter()
            .filter(|k| k.allowed(self))
            .map(|k| k.usage)
            .collect();
        forms.join(", ")
    }
}

/// One argument keyword: its name, which attributes take it, how it is written in messages,
/// and how its value parses into [`Args`].
pub(crate) struct Key {
    pub(crate) name: &'static str,
    tool: bool,
    step: bool,
    usage: &'static str,
    parse: fn(&mut Args, ParseStream<'_>) -> syn::Result<()>,
}

impl Key {
    fn allowed(&self, kind: Kind) -> bool {
        match kind {
            Kind::Tool => self.tool,
            Kind::ModelStep => self.step,
        }
    }
}

/// Every argument keyword, in the order error messages list them.
pub(crate) const KEYS: &[Key] = &[
    Key {
        name: "name",
        tool: true,
        step: false,
        usage: "`name = \"…\"`",
        parse: name,
    },
    Key {
        name: "skip",
        tool: true,
        step: true,
        usage: "`skip(arg, …)`",
        parse: skip,
    },
    Key {
        name: "call_id",
        tool: true,
        step: false,
        usage: "`call_id = arg`",
        parse: call_id,
    },
    Key {
        name: "retry",
        tool: true,
        step: true,
        usage: "`retry = false`",
        parse: retry,
    },
    Key {
        name: "tools",
        tool: false,
        step: true,
        usage: "`tools = [tool_fn, …]`",
        parse: tools,
    },
    Key {
        name: "invocation",
        tool: false,
        step: true,
        usage: "`invocation = <expr>`",
        parse: invocation,
    },
    Key {
        name: "result",
        tool: true,
        step: true,
        usage: "`result = true`",
        parse: result,
    },
    Key {
        name: "stream",
        tool: true,
        step: true,
        usage: "`stream = true`",
        parse: stream,
    },
    Key {
        name: "codec",
        tool: false,
        step: true,
        usage: "`codec = path::To::Codec`",
        parse: codec,
    },
    Key {
        name: "reject",
        tool: true,
        step: false,
        usage: "`reject`",
        parse: reject,
    },
    Key {
        name: "replay_errors",
        tool: true,
        step: false,
        usage: "`replay_errors`",
        parse: replay_errors,
    },
    Key {
        name: "edit",
        tool: true,
        step: true,
        usage: "`edit = false`",
        parse: edit,
    },
];

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
    /// `reject` (or `reject = true`): a person may reject the call at its `before` gate; the
    /// tool returns `Err(E::from(graphmind::Rejection))`.
    pub(crate) reject: Option<LitBool>,
    /// `replay_errors` (or `replay_errors = true`): a replay answers a call whose recorded
    /// outcome is an error with `Err(E::from(graphmind::RecordedError))`.
    pub(crate) replay_errors: Option<LitBool>,
    /// `edit = false`: the arguments are never offered for editing.
    pub(crate) edit: Option<LitBool>,
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
        let parser = |input: ParseStream<'_>| parse_all(kind, &mut args, input);
        let errors = syn::parse::Parser::parse2(parser, tokens).err();
        (args, errors)
    }
}

fn parse_all(kind: Kind, args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    let mut errors = crate::errors::Errors::default();
    while !input.is_empty() {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        let name = key.to_string();
        match KEYS.iter().find(|k| k.name == name && k.allowed(kind)) {
            Some(entry) => {
                if seen.contains(&name) {
                    errors.push(
                        key.span(),
                        format!("duplicate argument `{name}`; give it once"),
                    );
                }
                seen.push(name);
                (entry.parse)(args, input)?;
            }
            None => {
                errors.push(key.span(), unknown(kind, &name));
                // Skip the value so that the next arguments are still checked.
                skip_value(input)?;
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    errors.into_result()
}

/// The message for a key this attribute does not take, naming the attribute that does.
fn unknown(kind: Kind, name: &str) -> String {
    let elsewhere = KEYS
        .iter()
        .any(|k| k.name == name && k.allowed(kind.other()));
    let hint = match elsewhere {
        true => format!(" (it is an argument of {})", kind.other().attr()),
        false => String::new(),
    };
    format!(
        "unknown argument `{name}` for {}{hint}; expected one of {}",
        kind.attr(),
        kind.usage()
    )
}

/// `= <value>`, with `expected` as the error when the value does not parse.
fn value<T: Parse>(input: ParseStream<'_>, expected: &str) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    input
        .parse()
        .map_err(|err| syn::Error::new(err.span(), expected))
}

fn name(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let lit: LitStr = value(input, "expected a string: `name = \"search_flights\"`")?;
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(
            lit.span(),
            "the tool name is empty; write a name such as `name = \"search\"`",
        ));
    }
    args.name = Some(lit);
    Ok(())
}

fn skip(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let content;
    parenthesized!(content in input);
    args.skip
        .extend(Punctuated::<Ident, Token![,]>::parse_terminated(&content)?);
    Ok(())
}

fn call_id(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let expected = "expected the name of an argument that holds the tool-call id: `call_id = id`";
    args.call_id = Some(value(input, expected)?);
    Ok(())
}

fn replay_errors(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    args.replay_errors = Some(if input.peek(Token![=]) {
        value(
            input,
            "expected `replay_errors`, `replay_errors = true` or `replay_errors = false`",
        )?
    } else {
        LitBool::new(true, input.span())
    });
    Ok(())
}

fn reject(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    args.reject = Some(if input.peek(Token![=]) {
        value(
            input,
            "expected `reject`, `reject = true` or `reject = false`",
        )?
    } else {
        LitBool::new(true, input.span())
    });
    Ok(())
}

fn edit(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    args.edit = Some(value(input, "expected `edit = false` or `edit = true`")?);
    Ok(())
}

fn retry(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    args.retry = Some(value(input, "expected `retry = false` or `retry = true`")?);
    Ok(())
}

fn result(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let expected =
        "expected `result = true` (the return type is a `Result` alias) or `result = false`";
    args.result = Some(value(input, expected)?);
    Ok(())
}

fn stream(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let expected = "expected `stream = true` (the return type, or its `Ok`, is a `Stream` alias) or `stream = false`";
    args.stream = Some(value(input, expected)?);
    Ok(())
}

fn tools(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    input.parse::<Token![=]>()?;
    let content;
    bracketed!(content in input);
    args.tools
        .extend(Punctuated::<ToolRef, Token![,]>::parse_terminated(
            &content,
        )?);
    Ok(())
}

fn invocation(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    input.parse::<Token![=]>()?;
    args.invocation = Some(input.parse()?);
    Ok(())
}

fn codec(args: &mut Args, input: ParseStream<'_>) -> syn::Result<()> {
    let expected = "expected the codec's type: `codec = graphmind_openai::Chat` (a type implementing `graphmind::model::ResponseCodec` for the response)";
    args.codec = Some(value(input, expected)?);
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
