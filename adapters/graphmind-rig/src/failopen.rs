//! Fail-open: a bug in the adapter's own bookkeeping never reaches the application. The
//! bookkeeping runs under `catch_unwind`; a panic there turns the call (or the rest of the
//! stream) into an uninstrumented one and prints one warning a minute at most.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds between two warnings.
const WARN_EVERY_S: u64 = 60;

static LAST_WARN: AtomicU64 = AtomicU64::new(0);
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

/// Runs adapter bookkeeping; `None` (after a rate-limited warning) when it panicked.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(_) => {
            warn(what);
            None
        }
    }
}

fn warn(what: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST_WARN.load(Ordering::Relaxed);
    if (last == 0 || now.saturating_sub(last) >= WARN_EVERY_S)
        && LAST_WARN
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        let more = SUPPRESSED.swap(0, Ordering::Relaxed);
        eprintln!(
            "graphmind-rig: internal error while {what}; the call goes on uninstrumented \
             ({more} more such errors since the last warning)"
        );
    } else {
        SUPPRESSED.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_bookkeeper_yields_none_and_the_caller_goes_on() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let out: Option<u32> = guard("testing", || panic!("adapter bug"));
        std::panic::set_hook(prev);
        assert_eq!(out, None);
        assert_eq!(guard("testing", || 7), Some(7));
    }
}
