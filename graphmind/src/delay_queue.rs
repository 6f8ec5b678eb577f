//! One process-wide timer thread for the runtime's own deadlines (pause timeouts, token
//! batches), so they work on any executor — or none — and never depend on a tokio time
//! driver being enabled.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

// The runtime's one clock (see `clock`); compiled out, the standard one.
#[cfg(feature = "enabled")]
use crate::clock::Instant;
#[cfg(not(feature = "enabled"))]
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

struct Entry {
    at: Instant,
    seq: u64,
    job: Job,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

fn timer() -> Option<&'static Timer> {
    static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
    *TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("graphmind-timer".into())
            .spawn(move || run(t))
            .ok()
            .map(|_| t)
    })
}

fn run(t: &'static Timer) {
    let mut q = t.queue.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let now = Instant::now();
        match q.heap.peek() {
            None => {
                q = t.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            Some(Reverse(first)) if first.at > now => {
                let wait = first.at - now;
                q = t
                    .wake
                    .wait_timeout(q, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            Some(_) => {
                if let Some(Reverse(entry)) = q.heap.pop() {
                    drop(q);
                    // A job must not take the thread down with it.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(entry.job));
                    q = t.queue.lock().unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// Runs `job` on the timer thread after `delay`. False if no timer thread could be started
/// (the job is dropped unrun).
pub(crate) fn after(delay: Duration, job: impl FnOnce() + Send + 'static) -> bool {
    let Some(t) = timer() else {
        return false;
    };
    let at = Instant::now() + delay;
    {
        let mut q = t.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Reverse(Entry {
            at,
            seq,
            job: Box::new(job),
        }));
    }
    t.wake.notify_one();
    true
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn jobs_run_in_deadline_order_without_any_runtime() {
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for (ms, tag) in [(60u64, 'c'), (20, 'a'), (40, 'b')] {
            let tx = tx.clone();
            assert!(after(Duration::from_millis(ms), move || {
                let _ = tx.send((tag, t0.elapsed()));
            }));
        }
        let got: Vec<(char, Duration)> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(2)).expect("fired"))
            .collect();
        assert_eq!(got.iter().map(|g| g.0).collect::<String>(), "abc");
        assert!(got[0].1 >= Duration::from_millis(20));
    }

    #[test]
    fn a_panicking_job_does_not_stop_the_timer() {
        let (tx, rx) = mpsc::channel();
        assert!(after(Duration::ZERO, || panic!("job panics")));
        assert!(after(Duration::from_millis(5), move || {
            let _ = tx.send(());
        }));
        rx.recv_timeout(Duration::from_secs(2))
            .expect("still running");
    }
}
