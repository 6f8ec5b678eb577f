//! Clocks: the runtime's one monotonic clock ([`Instant`]: event stamps, node durations,
//! holds, timeouts and timers), durations as the protocol writes them, epoch milliseconds,
//! and the hold clock of a hold-aware timeout.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The clock of event timestamps and node durations: `quanta`'s TSC-based instant (one read
/// costs about a third of `std::time::Instant::now` where the TSC is invariant; elsewhere it
/// falls back to the OS monotonic clock).
pub(crate) use quanta::Instant;

/// Milliseconds since the Unix epoch (the `ts` of every frame); 0 if the clock is before 1970.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds as the protocol writes durations: rounded to 0.01, never negative or NaN.
pub(crate) fn millis(d: Duration) -> f64 {
    // Whole hundredths of a millisecond (10 µs), rounded half up, in integer arithmetic: one
    // float division (exact to the shortest decimal) instead of a float chain and `round`.
    let nanos = d
        .as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()));
    let hundredths = nanos.saturating_add(5_000) / 10_000;
    // Below 2^53 hundredths (2,850 years) the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let hundredths = hundredths as f64;
    hundredths / 100.0
}

/// Milliseconds between two instants (0 if `to` is earlier).
pub(crate) fn millis_between(from: Instant, to: Instant) -> f64 {
    millis(to.saturating_duration_since(from))
}

/// The clock of one hold-aware timeout: counts the time gates inside it were held.
pub(crate) struct HoldClock {
    parent: Option<Arc<HoldClock>>,
    state: Mutex<ClockState>,
}

#[derive(Default)]
struct ClockState {
    holding: usize,
    since: Option<Instant>,
    held: Duration,
}

impl HoldClock {
    pub(crate) fn new(parent: Option<Arc<HoldClock>>) -> Self {
        Self {
            parent,
            state: Mutex::new(ClockState::default()),
        }
    }

    fn each(self: &Arc<Self>, mut f: impl FnMut(&mut ClockState)) {
        let mut next = Some(self);
        let mut depth = 0;
        while let Some(clock) = next {
            f(&mut clock.state.lock().unwrap_or_else(PoisonError::into_inner));
            next = clock.parent.as_ref();
            depth += 1;
            if depth > 1024 {
                break;
            }
        }
    }

    /// A gate inside this clock (and its parents) started holding.
    pub(crate) fn hold_started(self: &Arc<Self>, now: Instant) {
        self.each(|s| {
            if s.holding == 0 {
                s.since = Some(now);
            }
            s.holding += 1;
        });
    }

    /// A gate inside this clock (and its parents) stopped holding.
    pub(crate) fn hold_ended(self: &Arc<Self>, now: Instant) {
        self.each(|s| {
            s.holding = s.holding.saturating_sub(1);
            if s.holding == 0
                && let Some(since) = s.since.take()
            {
                s.held += now.saturating_duration_since(since);
            }
        });
    }

    /// (a gate is held right now, total held time of finished holds)
    pub(crate) fn snapshot(&self) -> (bool, Duration) {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (s.holding > 0, s.held)
    }
}

#[cfg(test)]
mod millis_tests {
    use super::millis;
    use std::time::Duration;

    #[test]
    fn durations_round_to_hundredths_of_a_millisecond() {
        let ms = |nanos: u64| millis(Duration::from_nanos(nanos));
        assert_eq!(ms(0), 0.0);
        assert_eq!(ms(4_999), 0.0);
        assert_eq!(ms(5_000), 0.01);
        assert_eq!(ms(70_000), 0.07);
        assert_eq!(ms(1_234_567), 1.23);
        assert_eq!(ms(1_235_000), 1.24);
        assert_eq!(millis(Duration::from_secs(1)), 1000.0);
        assert_eq!(millis(Duration::from_secs(86_400 * 365)), 31_536_000_000.0);
        assert!(millis(Duration::MAX).is_finite());
        // Written as the shortest decimal, like the other clients' two-decimal durations.
        assert_eq!(serde_json::to_string(&ms(70_000)).unwrap(), "0.07");
        assert_eq!(serde_json::to_string(&ms(123_456_789)).unwrap(), "123.46");
    }
}
