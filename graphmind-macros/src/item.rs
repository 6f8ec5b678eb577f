//! The annotated item, parsed as leniently as it can be: attributes, visibility and signature
//! are parsed, the body is kept as its unparsed braced tokens. A half-typed body (a syntax
//! error inside it) therefore still expands — the IDE keeps seeing the function — and the
//! compiler reports the body's own error where it is, not a confusing one from the macro.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Visibility};

use crate::args::Kind;

/// A function whose body is kept as tokens.
pub(crate) struct Item {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    /// The body, braces included, exactly as written.
    pub(crate) body: Group,
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(body.span(), "expected the function's body"));
        }
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for Item {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.attrs.iter().map(ToTokens::to_token_stream));
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// Parses the item, or says why it cannot carry the attribute.
pub(crate) fn parse(kind: Kind, tokens: TokenStream) -> syn::Result<Item> {
    syn::parse2(tokens.clone()).map_err(|_| not_a_fn(kind, tokens))
}

fn not_a_fn(kind: Kind, item: TokenStream) -> syn::Error {
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
    let span = first.map_or_else(Span::call_site, |tt| tt.span());
    syn::Error::new(span, format!("{attr} goes on an `async fn`"))
}
