//! The clock, read in one place (the engine never reads one: `now` is its argument). The application and its
//! jobs take a [`Clock`]: [`SystemClock`] in a server; in tests a [`ManualClock`] (time moves only when told) or a
//! [`SteppedClock`] (the wall clock, stepped forward), so that they step time instead of waiting for it (expiry,
//! grace periods, thresholds, rate limits, the jobs' schedules). The jobs wait through it too
//! ([`Clock::sleep_until`], [`Ticker`]): a step of a test's clock wakes them. A leaf: it imports nothing of this
//! crate.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use eai_engine::time::Timestamp;
use tokio::sync::Notify;

/// What waiting on a clock returns.
pub type Sleep<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Where the application reads the time, and waits for it.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The time of day (milliseconds UTC): what decides expiry, grace periods, thresholds, schedules.
    fn now(&self) -> Timestamp;

    /// A reading that never goes back, for spans (rate limits, windows of failed sign-ins): the time since
    /// an origin of the clock's choosing.
    fn elapsed(&self) -> Duration;

    /// Completes once [`Clock::now`] has reached `at` (at once if it has).
    fn sleep_until(&self, at: Timestamp) -> Sleep<'_>;

    /// Completes once `d` has passed on this clock.
    fn sleep(&self, d: Duration) -> Sleep<'_> {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.sleep_until(Timestamp(self.now().0.saturating_add(ms)))
    }
}

/// The start of this process's monotonic readings.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        now()
    }

    fn elapsed(&self) -> Duration {
        origin().elapsed()
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep<'_> {
        let ms = (at.0 - now().0).max(0).unsigned_abs();
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }

    fn sleep(&self, d: Duration) -> Sleep<'_> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// The offset of a test clock and the waiters its steps wake.
#[derive(Debug, Default)]
struct Steps {
    ms: AtomicI64,
    moved: Notify,
}

impl Steps {
    fn add(&self, ms: i64) {
        self.ms.fetch_add(ms, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    fn set(&self, ms: i64) {
        self.ms.store(ms, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    fn get(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }

    /// Waits until `now()` reaches `at`: woken by each step, and, when `wall` is set, by the wall clock too.
    async fn wait(&self, at: Timestamp, now: impl Fn() -> Timestamp, wall: bool) {
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            // Registered before the time is read: a step between the two still wakes this waiter.
            moved.as_mut().enable();
            let left = at.0 - now().0;
            if left <= 0 {
                return;
            }
            if wall {
                tokio::select! {
                    _ = moved => {}
                    _ = tokio::time::sleep(Duration::from_millis(left.unsigned_abs())) => {}
                }
            } else {
                moved.await;
            }
        }
    }
}

/// A clock that moves only when told: [`ManualClock::advance`], [`ManualClock::set`]; what sleeps on it wakes
/// when a step reaches its time. Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Steps>);

impl ManualClock {
    pub fn new(at: Timestamp) -> ManualClock {
        let steps = Steps::default();
        steps.set(at.0);
        ManualClock(Arc::new(steps))
    }

    /// Moves the time `ms` milliseconds on.
    pub fn advance(&self, ms: i64) {
        self.0.add(ms);
    }

    pub fn set(&self, at: Timestamp) {
        self.0.set(at.0);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.get())
    }

    /// The time since the Unix epoch (0 before it): it goes back only when [`ManualClock::set`] takes it back.
    fn elapsed(&self) -> Duration {
        Duration::from_millis(self.0.get().max(0).unsigned_abs())
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep<'_> {
        Box::pin(self.0.wait(at, || self.now(), false))
    }
}

/// The wall clock, stepped forward when told ([`SteppedClock::advance`]): a test skips a wait (an expiry, a
/// grace period, a rate limit's refill, a job's next run) without freezing time for the rest of it. Clones
/// share the steps.
#[derive(Debug, Clone, Default)]
pub struct SteppedClock(Arc<Steps>);

impl SteppedClock {
    /// Moves the time `ms` milliseconds on, for good (what sleeps on the clock wakes if its time has come).
    pub fn advance(&self, ms: i64) {
        self.0.add(ms);
    }
}

impl Clock for SteppedClock {
    fn now(&self) -> Timestamp {
        Timestamp(now().0 + self.0.get())
    }

    fn elapsed(&self) -> Duration {
        let steps = Duration::from_millis(self.0.get().max(0).unsigned_abs());
        origin().elapsed() + steps
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep<'_> {
        Box::pin(self.0.wait(at, || self.now(), true))
    }
}

/// A job's schedule on a [`Clock`]: the first tick at once, then one every `every`; a tick that comes late
/// (the work took longer) pushes the next ones back rather than bunching them (tokio's
/// `MissedTickBehavior::Delay`).
#[derive(Debug)]
pub struct Ticker {
    clock: Arc<dyn Clock>,
    every: i64,
    next: Option<Timestamp>,
}

impl Ticker {
    pub fn new(clock: Arc<dyn Clock>, every: Duration) -> Ticker {
        let every = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
        Ticker {
            clock,
            every,
            next: None,
        }
    }

    /// Waits for the next tick; returns its time.
    pub async fn tick(&mut self) -> Timestamp {
        if let Some(at) = self.next {
            self.clock.sleep_until(at).await;
        }
        let now = self.clock.now();
        let next = match self.next {
            // On time (or late by less than a period): the next one a period after this one was due.
            Some(due) if now.0 - due.0 < self.every => due.0 + self.every,
            _ => now.0 + self.every,
        };
        self.next = Some(Timestamp(next));
        now
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
        assert!(stepped.elapsed() >= Duration::from_secs(3600));
    }

    #[tokio::test]
    async fn sleepers_wake_when_a_step_reaches_their_time() {
        let c = ManualClock::new(Timestamp(0));
        let sleeper = {
            let c = c.clone();
            tokio::spawn(async move { c.sleep(Duration::from_secs(60)).await })
        };
        tokio::task::yield_now().await;
        c.advance(59_999);
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "a millisecond early");
        c.advance(1);
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("woken by the step")
            .expect("joined");
        // A time already reached does not wait.
        c.sleep_until(Timestamp(1)).await;

        let stepped = SteppedClock::default();
        let s2 = stepped.clone();
        let sleeper = tokio::spawn(async move { s2.sleep(Duration::from_secs(3600)).await });
        tokio::task::yield_now().await;
        stepped.advance(3_600_000);
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("a stepped clock's sleeper wakes on the step")
            .expect("joined");
    }

    #[tokio::test]
    async fn a_ticker_ticks_at_once_then_every_period_and_never_bunches() {
        let c = ManualClock::new(Timestamp(1_000));
        let mut t = Ticker::new(Arc::new(c.clone()), Duration::from_secs(10));
        assert_eq!(t.tick().await, Timestamp(1_000));
        let c2 = c.clone();
        let stepper = tokio::spawn(async move {
            tokio::task::yield_now().await;
            c2.set(Timestamp(5_000));
            tokio::task::yield_now().await;
            c2.set(Timestamp(11_000));
        });
        assert_eq!(t.tick().await, Timestamp(11_000));
        stepper.await.expect("stepped");
        // Late by three periods: one tick now, the next a whole period later.
        c.set(Timestamp(45_000));
        assert_eq!(t.tick().await, Timestamp(45_000));
        c.set(Timestamp(54_999));
        let late = tokio::time::timeout(Duration::from_millis(50), t.tick()).await;
        assert!(late.is_err(), "not before 55 s");
        c.set(Timestamp(55_000));
        assert_eq!(t.tick().await, Timestamp(55_000));
    }
}
