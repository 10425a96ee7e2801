//! The clock, read in one place (the engine never reads one: `now` is its argument). The application and its
//! jobs take a [`Clock`]: [`SystemClock`] in a server; in tests a [`ManualClock`] (time moves only when told) or a
//! [`SteppedClock`] (the wall clock, stepped forward), so that they step time instead of waiting for it (expiry,
//! grace periods, thresholds). A leaf: it imports nothing of this crate.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use eai_engine::time::Timestamp;

/// Where the application reads the time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        now()
    }
}

/// A clock that moves only when told: [`ManualClock::advance`], [`ManualClock::set`]. Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(at: Timestamp) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(at.0)))
    }

    /// Moves the time `ms` milliseconds on.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, at: Timestamp) {
        self.0.store(at.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// The wall clock, stepped forward when told ([`SteppedClock::advance`]): a test skips a wait (an expiry, a
/// grace period) without freezing time for the rest of it. Clones share the steps.
#[derive(Debug, Clone, Default)]
pub struct SteppedClock(Arc<AtomicI64>);

impl SteppedClock {
    /// Moves the time `ms` milliseconds on, for good.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for SteppedClock {
    fn now(&self) -> Timestamp {
        Timestamp(now().0 + self.0.load(Ordering::SeqCst))
    }
}

/// The wall clock as the engine counts time (the engine itself never reads a clock): what [`SystemClock`]
/// reads, for the code that has no [`Clock`] to ask (a command run once).
pub fn now() -> Timestamp {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    Timestamp(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_its_clones_share_it() {
        let c = ManualClock::new(Timestamp(1_000));
        let shared = c.clone();
        assert_eq!(c.now(), Timestamp(1_000));
        c.advance(500);
        assert_eq!(shared.now(), Timestamp(1_500));
        shared.set(Timestamp(10));
        assert_eq!(c.now(), Timestamp(10));
        let wall = SystemClock.now();
        assert!(wall.0 > 1_700_000_000_000, "{wall}");
        let stepped = SteppedClock::default();
        stepped.clone().advance(3_600_000);
        assert!(stepped.now().0 - SystemClock.now().0 > 3_500_000);
    }
}
