//! The stream tee with feature `enabled` off: a transparent wrapper.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

/// What a tee has seen (compiled out: never exists).
#[derive(Debug)]
pub struct Observer(Never);

#[derive(Debug)]
enum Never {}

impl Observer {
    /// Adds a streamed delta.
    pub fn token(&mut self, kind: graphmind_protocol::DeltaKind, text: &str) {
        let _ = (kind, text);
        match self.0 {}
    }
    /// Counts one chunk.
    pub fn chunk(&mut self) {
        match self.0 {}
    }
    /// Records usage.
    pub fn usage(&mut self, usage: crate::model::Usage) {
        let _ = usage;
        match self.0 {}
    }
    /// Records the finish reason.
    pub fn finish_reason(&mut self, reason: &str) {
        let _ = reason;
        match self.0 {}
    }
    /// Records an error seen mid-stream.
    pub fn error(&mut self, message: &str) {
        let _ = message;
        match self.0 {}
    }
}

pin_project_lite::pin_project! {
    /// A stream passed through unchanged.
    #[derive(Debug)]
    pub struct Tee<S> {
        #[pin]
        inner: S,
    }
}

impl<S: Stream> Stream for Tee<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.project().inner.poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// A stream type handed back by a `#[graphmind::model_step(stream = true)]` in its own type
/// (compiled out: the attribute returns the function untouched and never calls it).
pub trait Restream: Stream + Sized {
    /// Wraps the tee in the written type.
    fn restream(tee: Tee<Self>) -> Self;
}
