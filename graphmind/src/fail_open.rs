//! Fail-open for adapters: a bug in an adapter's own bookkeeping never reaches the
//! application. [`fail_open`] runs the bookkeeping under `catch_unwind`; a panic there turns
//! the call (or the rest of a stream) into an uninstrumented one and prints one warning a
//! minute at most per adapter. Compiled with and without the `enabled` feature.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds between two warnings of one adapter.
const WARN_EVERY_S: u64 = 60;

/// Per adapter: when it last warned (Unix seconds) and how many warnings were held back since.
static WARNED: Mutex<Vec<(&'static str, u64, u64)>> = Mutex::new(Vec::new());

/// Runs an adapter's bookkeeping `f`: `Some` with its value, or `None` when it panicked, after
/// a warning on stderr naming `adapter` (e.g. `"graphmind-rig"`) and `what` it was doing (e.g.
/// `"starting a model step"`). Warnings are rate-limited to one a minute per adapter; the next
/// one says how many were held back. On `None` the adapter goes on with the plain SDK call.
///
/// ```
/// let hook = std::panic::take_hook();
/// std::panic::set_hook(Box::new(|_| {}));
/// let out: Option<u32> = graphmind::node::fail_open("my-adapter", "testing", || panic!("bug"));
/// std::panic::set_hook(hook);
/// assert_eq!(out, None);
/// assert_eq!(graphmind::node::fail_open("my-adapter", "testing", || 7), Some(7));
/// ```
pub fn fail_open<T>(adapter: &'static str, what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(_) => {
            if let Some(more) = due(adapter, now_s()) {
                eprintln!(
                    "{adapter}: internal error while {what}; the call goes on uninstrumented \
                     ({more} more such errors since the last warning)"
                );
            }
            None
        }
    }
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `adapter` may warn at `now`: `Some(held back since the last warning)`, or `None`
/// (and one more held back) within a minute of its last warning.
fn due(adapter: &'static str, now: u64) -> Option<u64> {
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(entry) = warned.iter_mut().find(|(a, _, _)| *a == adapter) else {
        warned.push((adapter, now, 0));
        return Some(0);
    };
    if now.saturating_sub(entry.1) >= WARN_EVERY_S {
        entry.1 = now;
        Some(std::mem::take(&mut entry.2))
    } else {
        entry.2 += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_bookkeeper_yields_none_and_the_caller_goes_on() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let out: Option<u32> = fail_open("fail-open-test", "testing", || panic!("adapter bug"));
        std::panic::set_hook(prev);
        assert_eq!(out, None);
        assert_eq!(fail_open("fail-open-test", "testing", || 7), Some(7));
    }

    #[test]
    fn warnings_are_one_a_minute_per_adapter_and_count_what_was_held_back() {
        assert_eq!(due("rate-a", 1_000), Some(0));
        assert_eq!(due("rate-a", 1_010), None);
        assert_eq!(due("rate-a", 1_059), None);
        assert_eq!(
            due("rate-b", 1_020),
            Some(0),
            "another adapter warns on its own"
        );
        assert_eq!(due("rate-a", 1_060), Some(2));
        assert_eq!(due("rate-a", 1_061), None);
    }
}
