//! Hold-aware time: a timeout whose clock stops while a graphmind gate inside it is held,
//! so a breakpoint does not make the agent's own deadlines fire.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

// The runtime's one clock (see `clock`); compiled out, the standard one.
#[cfg(feature = "enabled")]
use crate::clock::Instant;
#[cfg(not(feature = "enabled"))]
use std::time::Instant;

#[cfg(feature = "enabled")]
use crate::call::scope::Scope;
#[cfg(feature = "enabled")]
use crate::clock::HoldClock;

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
/// same task, or in futures carried with [`in_current_run`](crate::in_current_run)) does
/// not count: while a gate is held the clock stops, and the deadline moves by the held time
/// once it is released. Works on any executor (the deadline runs on graphmind's timer
/// thread). With feature `enabled` off it is a plain timeout.
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
    #[cfg(feature = "enabled")]
    {
        let outer = Scope::current();
        let clock = Arc::new(HoldClock::new(outer.clock.clone()));
        let scope = Scope {
            run: outer.run,
            clock: Some(Arc::clone(&clock)),
        };
        HoldTimeout {
            fut: Box::pin(scope.enter(fut)),
            clock: Some(clock),
            start: Instant::now(),
            limit,
            alarm: Alarm::default(),
        }
        .await
    }
    #[cfg(not(feature = "enabled"))]
    {
        HoldTimeout {
            fut: Box::pin(fut),
            clock: None::<Arc<()>>,
            start: Instant::now(),
            limit,
            alarm: Alarm::default(),
        }
        .await
    }
}

/// Wakes a task at a deadline through the timer thread.
#[derive(Default)]
struct Alarm {
    waker: Arc<Mutex<Option<Waker>>>,
    armed: Option<Instant>,
}

impl Alarm {
    /// Ready once `at` has passed; otherwise arms a wake-up for `at`.
    fn poll(&mut self, at: Instant, cx: &Context<'_>) -> Poll<()> {
        let now = Instant::now();
        if now >= at {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        if self.armed != Some(at) {
            self.armed = Some(at);
            let waker = Arc::clone(&self.waker);
            crate::delay_queue::after(at - now, move || {
                let w = waker.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(w) = w {
                    w.wake();
                }
            });
        }
        Poll::Pending
    }
}

/// Reads a hold clock: (a gate is held now, held time of finished holds).
trait HeldTime {
    fn snapshot(&self) -> (bool, Duration);
}

#[cfg(feature = "enabled")]
impl HeldTime for HoldClock {
    fn snapshot(&self) -> (bool, Duration) {
        HoldClock::snapshot(self)
    }
}

#[cfg(not(feature = "enabled"))]
impl HeldTime for () {
    fn snapshot(&self) -> (bool, Duration) {
        (false, Duration::ZERO)
    }
}

struct HoldTimeout<F, C> {
    fut: Pin<Box<F>>,
    clock: Option<Arc<C>>,
    start: Instant,
    limit: Duration,
    alarm: Alarm,
}

impl<F: Future, C: HeldTime> Future for HoldTimeout<F, C> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(v) = this.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let (holding, held) = this
            .clock
            .as_ref()
            .map_or((false, Duration::ZERO), |c| c.snapshot());
        if holding {
            // The gate's release wakes the inner future, which polls us again.
            return Poll::Pending;
        }
        match this.alarm.poll(this.start + this.limit + held, cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(fut: F) -> F::Output {
        struct Thread(std::thread::Thread);
        impl std::task::Wake for Thread {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Thread(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park_timeout(Duration::from_secs(1));
        }
    }

    #[test]
    fn times_out_on_a_plain_executor() {
        let t = Instant::now();
        let out = block_on(timeout(
            Duration::from_millis(30),
            std::future::pending::<()>(),
        ));
        assert_eq!(out, Err(Elapsed(())));
        assert!(t.elapsed() >= Duration::from_millis(30));
        assert!(
            t.elapsed() < Duration::from_millis(900),
            "woken by the alarm"
        );
    }

    #[test]
    fn finished_work_is_returned() {
        assert_eq!(
            block_on(timeout(Duration::from_secs(5), async { 7 })),
            Ok(7)
        );
    }
}
