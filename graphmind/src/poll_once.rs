//! [`poll_once_then`]: poll a future once, run something, then await the rest — how an
//! adapter sends a request before it records the step (while
//! [`Recording::Detached`](crate::node::Recording::Detached)), so that recording it is not
//! added to the request's latency. Plain `std`: compiled with and without the `enabled`
//! feature.

use std::future::Future;
use std::task::Poll;

/// Polls `fut` exactly once, then runs `begin` (whether or not that poll finished `fut`),
/// then awaits the rest of `fut`: `begin`'s value and `fut`'s output. A future does nothing
/// until polled, so the first poll is what hands an SDK's request to its HTTP client; `begin`
/// (starting the node, say with
/// [`Node::start_step_lazy_since`](crate::node::Node::start_step_lazy_since)) then runs
/// while the request is in flight instead of before it leaves.
///
/// ```
/// use std::cell::Cell;
/// use std::task::Poll;
///
/// let polls = Cell::new(0);
/// let request = std::future::poll_fn(|cx| {
///     polls.set(polls.get() + 1);
///     if polls.get() == 1 {
///         cx.waker().wake_by_ref(); // in flight
///         Poll::Pending
///     } else {
///         Poll::Ready("response")
///     }
/// });
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let (polls_at_begin, response) =
///     rt.block_on(graphmind::node::poll_once_then(request, || polls.get()));
/// assert_eq!(polls_at_begin, 1); // begin ran after exactly one poll
/// assert_eq!((response, polls.get()), ("response", 2));
/// ```
pub async fn poll_once_then<F: Future, T>(fut: F, begin: impl FnOnce() -> T) -> (T, F::Output) {
    let mut fut = std::pin::pin!(fut);
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    let began = begin();
    let output = match first {
        Poll::Ready(output) => output,
        Poll::Pending => fut.await,
    };
    (began, output)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::task::Poll;

    use super::poll_once_then;

    #[tokio::test]
    async fn begin_runs_after_one_poll_of_a_future_that_is_ready_at_once() {
        let polls = Cell::new(0);
        let ready = std::future::poll_fn(|_| {
            polls.set(polls.get() + 1);
            Poll::Ready(7)
        });
        let (at_begin, out) = poll_once_then(ready, || polls.get()).await;
        assert_eq!((at_begin, out, polls.get()), (1, 7, 1));
    }

    #[tokio::test]
    async fn begin_runs_after_the_first_poll_of_a_pending_future_and_before_the_rest() {
        let polls = Cell::new(0);
        let pending_twice = std::future::poll_fn(|cx| {
            polls.set(polls.get() + 1);
            if polls.get() < 3 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready("done")
            }
        });
        let (at_begin, out) = poll_once_then(pending_twice, || polls.get()).await;
        assert_eq!((at_begin, out, polls.get()), (1, "done", 3));
    }
}
