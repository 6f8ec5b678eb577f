//! [`Errors`]: every error of one expansion, collected so that all are reported at once.

use proc_macro2::Span;

/// Errors combined into one `syn::Error` (each still spanned where it arose).
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.add(syn::Error::new(span, msg));
    }

    /// Spans every token of `tokens` (a single span covers only the first token on stable).
    pub(crate) fn push_spanned(
        &mut self,
        tokens: &dyn quote::ToTokens,
        msg: impl std::fmt::Display,
    ) {
        self.add(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn add(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// `Err` with every error, or `Ok`.
    pub(crate) fn into_result(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
