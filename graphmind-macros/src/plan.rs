//! What an expansion emits, decided once from the parsed item, arguments and signature: a
//! plain description that [`crate::print`] turns into tokens without deciding anything.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path, Type};

use crate::args::{Args, Kind, ToolRef};
use crate::item::Item;
use crate::sig::{Analysis, Ret, Shape};

/// Everything the expansion needs.
pub(crate) struct Plan {
    /// The item as emitted (with `mut` taken off by-value arguments that retry clones).
    pub(crate) item: Item,
    pub(crate) kind: Kind,
    pub(crate) site: Site,
    /// Whether the body may run again (a factory cloning the arguments per attempt).
    pub(crate) retry: bool,
    /// The arguments recorded as the node's input, in order.
    pub(crate) captured: Vec<Captured>,
    /// A tool's `call_id = arg`, checked to be a call id (spanned at the argument's type).
    pub(crate) call_id_check: Option<Ident>,
    /// A model step's invocation grouping.
    pub(crate) grouping: Grouping,
    /// A model step's codec (`codec = …`); `None` for `graphmind::model::Native`.
    pub(crate) codec: Option<Type>,
    /// The future's output type (`impl Trait` erased); `None` for `()`.
    pub(crate) output: Option<Type>,
    pub(crate) shape: Shape,
    pub(crate) ret: Ret,
    /// A streaming return written as a named type: the tee is converted back into it.
    pub(crate) restream: bool,
    /// The by-value arguments cloned afresh for each attempt (when `retry`).
    pub(crate) fresh: Vec<Fresh>,
    /// The return type's span: the runtime call is spanned there, so that a bound the output
    /// misses points at it.
    pub(crate) ret_span: Span,
    /// `tools = [...]` paths checked to resolve.
    pub(crate) tool_paths: Vec<Path>,
    /// The arguments an edit may replace; `None` when the call is not editable (an argument
    /// borrows, is `impl Trait`, or `edit = false`).
    pub(crate) edit: Option<Vec<EditArg>>,
    /// `reject`: the `Result` entry point that builds an `Err` from a rejection.
    pub(crate) reject: bool,
    /// `replay_errors`: the `Result` entry point that builds an `Err` from a recorded error.
    pub(crate) replay_errors: bool,
    /// A streaming tool's item type as written, for its replay decoder.
    pub(crate) stream_item: Option<syn::Type>,
    /// Parameters declared `mut` that are neither cloned per attempt nor edited: an
    /// editable run-once body binds them `mut` again.
    pub(crate) mut_others: Vec<Ident>,
}

/// One argument an edit may replace: its key, its binding (spanned at its type) and the
/// binding of its type marker.
pub(crate) struct EditArg {
    pub(crate) key: LitStr,
    pub(crate) ident: Ident,
    pub(crate) marker: Ident,
}

/// The site record (one per instrumented function).
pub(crate) enum Site {
    Tool {
        name: LitStr,
        node_id: LitStr,
        call_id: Option<LitStr>,
    },
    Step {
        fn_name: LitStr,
        tools: Vec<LitStr>,
    },
}

/// How a model step finds its invocation.
pub(crate) enum Grouping {
    /// `invocation = <expr>`.
    Explicit(Expr),
    /// Through the codec's reading of this argument (the request), else the captured input.
    Request(Ident),
    /// From the captured input only (no argument).
    Auto,
}

/// One recorded argument: its key in the input and the binding, spanned at its type (so that a
/// missing `Serialize` points there).
pub(crate) struct Captured {
    pub(crate) key: LitStr,
    pub(crate) ident: Ident,
}

/// One argument cloned per attempt; `at` is its name's span located at its type (where a
/// missing `Clone` points), `mutable` keeps the user's `mut`.
pub(crate) struct Fresh {
    pub(crate) ident: Ident,
    pub(crate) at: Span,
    pub(crate) mutable: bool,
}

/// Decides the expansion.
pub(crate) fn plan(kind: Kind, args: &Args, mut item: Item, an: &Analysis) -> Plan {
    let ret_span = match &item.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    };
    let edit = edit_args(kind, args, an);
    let mut_others = if !an.retry && edit.is_some() {
        an.params
            .iter()
            .filter(|p| p.mutable && !edit_names(edit.as_deref()).contains(&p.ident.to_string()))
            .map(|p| p.ident.clone())
            .collect()
    } else {
        Vec::new()
    };
    if an.retry || edit.is_some() {
        strip_mut(&mut item.sig);
    }
    Plan {
        edit,
        reject: args.reject.as_ref().is_some_and(syn::LitBool::value),
        replay_errors: args.replay_errors.as_ref().is_some_and(syn::LitBool::value),
        mut_others,
        site: site(kind, args, &item),
        retry: an.retry,
        captured: captured(args, an),
        call_id_check: call_id_check(args, an),
        grouping: grouping(args, an),
        codec: args.codec.clone(),
        output: an.output.clone(),
        shape: an.shape,
        ret: an.ret,
        restream: an.restream,
        stream_item: an.stream_item.clone(),
        fresh: fresh(an),
        ret_span,
        tool_paths: tool_paths(&args.tools),
        item,
        kind,
    }
}

fn site(kind: Kind, args: &Args, item: &Item) -> Site {
    let fn_name = LitStr::new(&item.sig.ident.to_string(), item.sig.ident.span());
    match kind {
        Kind::Tool => {
            let name = args.name.clone().unwrap_or(fn_name);
            Site::Tool {
                node_id: LitStr::new(&format!("tool:{}", name.value()), name.span()),
                name,
                call_id: args
                    .call_id
                    .as_ref()
                    .map(|id| LitStr::new(&id.to_string(), id.span())),
            }
        }
        Kind::ModelStep => Site::Step {
            fn_name,
            tools: args
                .tools
                .iter()
                .map(|t| LitStr::new(&t.name(), Span::call_site()))
                .collect(),
        },
    }
}

/// The span of an argument's name located at its type.
fn at_type(param: &crate::sig::Param) -> Span {
    param.ident.span().located_at(param.ty.span())
}

fn captured(args: &Args, an: &Analysis) -> Vec<Captured> {
    an.params
        .iter()
        .filter(|param| !param.skipped || args.call_id.as_ref() == Some(&param.ident))
        .map(|param| Captured {
            key: LitStr::new(&param.ident.to_string(), param.ident.span()),
            ident: Ident::new(&param.ident.to_string(), at_type(param)),
        })
        .collect()
}

fn call_id_check(args: &Args, an: &Analysis) -> Option<Ident> {
    let id = args.call_id.as_ref()?;
    let at = an
        .params
        .iter()
        .find(|p| p.ident == *id)
        .map_or(id.span(), at_type);
    Some(Ident::new(&id.to_string(), at))
}

/// The request: the first argument the input records (a skipped one is a client, a key, a
/// handle…), else the first argument.
fn grouping(args: &Args, an: &Analysis) -> Grouping {
    if let Some(expr) = &args.invocation {
        return Grouping::Explicit(expr.clone());
    }
    let request = an
        .params
        .iter()
        .find(|param| !param.skipped)
        .or(an.params.first());
    request.map_or(Grouping::Auto, |p| Grouping::Request(p.ident.clone()))
}

fn fresh(an: &Analysis) -> Vec<Fresh> {
    an.params
        .iter()
        .map(|param| Fresh {
            ident: param.ident.clone(),
            at: at_type(param),
            mutable: param.mutable && matches!(an.shape, Shape::Async),
        })
        .collect()
}

fn edit_names(edit: Option<&[EditArg]>) -> Vec<String> {
    edit.unwrap_or_default()
        .iter()
        .map(|e| e.ident.to_string())
        .collect()
}

/// The arguments an edit may replace: every recorded argument, when each is taken by value
/// as a type that owns its data (no `&`, no lifetime, no `impl Trait` / `dyn`) — whether
/// it deserializes is decided by the compiler, per type — else none.
fn edit_args(kind: Kind, args: &Args, an: &Analysis) -> Option<Vec<EditArg>> {
    if args.edit.as_ref().is_some_and(|e| !e.value())
        || !matches!(an.shape, Shape::Async)
        || (kind == Kind::Tool && matches!(an.ret, Ret::StreamResult))
    {
        return None;
    }
    let recorded: Vec<&crate::sig::Param> = an
        .params
        .iter()
        .filter(|param| !param.skipped || args.call_id.as_ref() == Some(&param.ident))
        .collect();
    if recorded.is_empty() || !recorded.iter().all(|p| owns_its_data(&p.ty)) {
        return None;
    }
    Some(
        recorded
            .iter()
            .map(|param| EditArg {
                key: LitStr::new(&param.ident.to_string(), param.ident.span()),
                ident: Ident::new(&param.ident.to_string(), at_type(param)),
                marker: Ident::new(
                    &format!("__graphmind_ty_{}", param.ident),
                    Span::call_site(),
                ),
            })
            .collect(),
    )
}

/// Whether a written type holds no borrow, lifetime, `impl Trait` or `dyn`.
fn owns_its_data(ty: &Type) -> bool {
    fn walk(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().all(|tt| match tt {
            proc_macro2::TokenTree::Punct(p) => p.as_char() != '&' && p.as_char() != '\'',
            proc_macro2::TokenTree::Ident(i) => i != "impl" && i != "dyn",
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            proc_macro2::TokenTree::Literal(_) => true,
        })
    }
    walk(quote::ToTokens::to_token_stream(ty))
}

/// The outer bindings are only cloned from; the clones carry the user's `mut`.
fn strip_mut(sig: &mut syn::Signature) {
    for input in &mut sig.inputs {
        if let syn::FnArg::Typed(typed) = input
            && let syn::Pat::Ident(pat) = &mut *typed.pat
        {
            pat.mutability = None;
        }
    }
}

/// The `tools = [...]` entries whose path names a fn of a module (not an associated fn of a
/// type, which `use` cannot name): each must resolve.
fn tool_paths(tools: &[ToolRef]) -> Vec<Path> {
    tools
        .iter()
        .filter_map(|tool| match tool {
            ToolRef::Path(path) if names_a_module_item(path) => Some(path.clone()),
            _ => None,
        })
        .collect()
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
