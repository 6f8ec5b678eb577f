//! Hold-aware time: a timeout whose clock stops while a graphmind gate inside it is held,
//! so a breakpoint does not make the agent's own deadlines fire.

use std::time::Duration;
#[cfg(feature = "enabled")]
use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

#[cfg(feature = "enabled")]
use crate::exec::scope::{HoldClock, Scope};

/// The future passed to [`timeout`] did not finish in time (held time not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Like `tokio::time::timeout`, but time spent held at graphmind gates inside `fut` (on the
/// same task) does not count: while a gate is held the clock stops, and the deadline moves
/// by the held time once it is released. Needs a tokio runtime with the time driver.
///
/// ```no_run
/// # async fn call_tool() -> u32 { 1 }
/// # async fn demo() {
/// use std::time::Duration;
/// let out = graphmind::time::timeout(Duration::from_secs(5), call_tool()).await;
/// # let _ = out;
/// # }
/// ```
pub async fn timeout<F: Future>(limit: Duration, fut: F) -> Result<F::Output, Elapsed> {
    #[cfg(not(feature = "enabled"))]
    return tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| Elapsed(()));
    #[cfg(feature = "enabled")]
    hold_aware(limit, fut).await
}

#[cfg(feature = "enabled")]
async fn hold_aware<F: Future>(limit: Duration, fut: F) -> Result<F::Output, Elapsed> {
    let outer = Scope::current();
    let clock = Arc::new(HoldClock::new(outer.clock.clone()));
    let scope = Scope {
        run: outer.run,
        clock: Some(Arc::clone(&clock)),
    };
    let start = tokio::time::Instant::now();
    HoldTimeout {
        fut: Box::pin(scope.enter(fut)),
        clock,
        start,
        limit,
        sleep: Box::pin(tokio::time::sleep_until(start + limit)),
    }
    .await
}

#[cfg(feature = "enabled")]
struct HoldTimeout<F> {
    fut: Pin<Box<F>>,
    clock: Arc<HoldClock>,
    start: tokio::time::Instant,
    limit: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

#[cfg(feature = "enabled")]
impl<F: Future> Future for HoldTimeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(v) = this.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let (holding, held) = this.clock.snapshot();
        if holding {
            // The gate's release wakes the inner future, which polls us again.
            return Poll::Pending;
        }
        let deadline = this.start + this.limit + held;
        if this.sleep.deadline() != deadline {
            this.sleep.as_mut().reset(deadline);
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
