//! What the runtime's benches share: polling a future that never waits, a detached session,
//! and the `tracing` baseline (an instrumented fn and a `fmt` subscriber writing to a sink).
// Each bench uses the part it needs.
#![allow(dead_code)]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Polls a future that completes without waiting to its output. Inlined so every case is
/// measured the same way, in the benchmark loop itself.
#[inline(always)]
pub fn ready<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A session (app `name`) that stays detached: nothing listens on port 9 (discard), so its
/// events land in the replay ring.
pub fn detached_session(name: &str) -> graphmind::InitGuard {
    let session = graphmind::init(
        graphmind::Config::new(name)
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(session.is_enabled());
    session
}

/// The `tracing` baseline's subscriber: `fmt`, writing to a sink.
pub fn sink_dispatch() -> tracing::Dispatch {
    tracing::Dispatch::new(
        tracing_subscriber::fmt()
            .with_writer(std::io::sink)
            .finish(),
    )
}

/// The `tracing` baseline: the benches' instrumented fn, with `#[tracing::instrument]`.
#[tracing::instrument]
pub async fn traced(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}
