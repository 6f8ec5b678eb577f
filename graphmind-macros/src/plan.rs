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
    if an.retry {
        strip_mut(&mut item.sig);
    }
    Plan {
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
