//! Request limits: a token bucket per API key, at its role's rate ([`KeyRates`]), and one per client address for
//! requests without a valid key (governor's GCRA: `rate` requests per second, bursts of twice that), the slots of
//! allocation computations,
//! and the count of failed sign-ins per address (repeated ones are audited, never with the key). Time is the
//! [`Clock`]'s ([`Limits::on_clock`]): a test steps it to refill a bucket or close a window instead of waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eai_app::clock::{Clock, SystemClock};
use eai_store::Role;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Failed sign-ins from one address within this window...
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// ...from this many on are audited (once per window and address).
pub const FAILURES_AUDITED_FROM: u32 = 10;
/// Addresses tracked for failed sign-ins at most (the oldest windows go first).
const MAX_TRACKED: usize = 10_000;

/// The rate limiters' clock: the application's, read as the span since its origin (it never goes back).
#[derive(Debug, Clone)]
struct LimiterClock(Arc<dyn Clock>);

impl governor::clock::Clock for LimiterClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A token bucket per key, on the application's clock.
type KeyedLimiter<K> =
    RateLimiter<K, DefaultKeyedStateStore<K>, LimiterClock, NoOpMiddleware<Duration>>;

#[derive(Debug, Clone, Copy)]
struct Failures {
    since: Duration,
    count: u32,
    audited: bool,
}

/// Requests per second one API key may make, by the key's role (0: no limit; bursts of twice the rate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRates {
    /// The rate of every role not named in `by_role` (`EAI_RATE_LIMIT_PER_KEY`).
    pub default: u32,
    /// Roles with a rate of their own (`EAI_RATE_LIMIT_PER_KEY_BY_ROLE`); a role named twice: the last wins.
    pub by_role: Vec<(Role, u32)>,
}

impl KeyRates {
    /// The rate of a key of `role`.
    pub fn of(&self, role: Role) -> u32 {
        self.by_role
            .iter()
            .rev()
            .find(|(r, _)| *r == role)
            .map_or(self.default, |(_, n)| *n)
    }
}

/// The same rate for every role.
impl From<u32> for KeyRates {
    fn from(default: u32) -> Self {
        KeyRates {
            default,
            by_role: Vec::new(),
        }
    }
}

/// The limits of one server. Cheap to share behind an `Arc`.
pub struct Limits {
    /// The rates and slots asked for, to build the same limits on another clock.
    asked: (KeyRates, u32, usize),
    clock: Arc<dyn Clock>,
    /// A bucket per key, in the limiter of its role's rate (a role without a limiter: no limit).
    per_key: HashMap<Role, KeyedLimiter<String>>,
    per_address: Option<KeyedLimiter<IpAddr>>,
    allocations: Arc<Semaphore>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("per_key", &self.asked.0)
            .field("per_address", &self.per_address.is_some())
            .field("allocations", &self.allocations.available_permits())
            .finish_non_exhaustive()
    }
}

fn limiter<K: std::hash::Hash + Eq + Clone>(
    rate: u32,
    clock: &Arc<dyn Clock>,
) -> Option<KeyedLimiter<K>> {
    let rate = NonZeroU32::new(rate)?;
    let burst = rate.saturating_mul(NonZeroU32::MIN.saturating_add(1));
    Some(RateLimiter::new(
        Quota::per_second(rate).allow_burst(burst),
        DefaultKeyedStateStore::default(),
        LimiterClock(clock.clone()),
    ))
}

/// Whole seconds to wait (at least one), for `Retry-After`.
fn retry_after<K: std::hash::Hash + Eq + Clone>(
    l: &KeyedLimiter<K>,
    key: &K,
) -> Result<(), ApiError> {
    use governor::clock::Clock as _;
    l.check_key(key).map_err(|not_until| {
        let wait = not_until.wait_time_from(l.clock().now());
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ApiError::rate_limited(u32::try_from(secs).unwrap_or(u32::MAX).max(1))
    })
}

impl Limits {
    /// `per_key` (by role) and `per_address` requests per second (0: unlimited), `allocations` computations at
    /// once.
    pub fn new(per_key: impl Into<KeyRates>, per_address: u32, allocations: usize) -> Self {
        Self::with_clock(per_key, per_address, allocations, Arc::new(SystemClock))
    }

    /// Like [`Limits::new`], on `clock`.
    pub fn with_clock(
        per_key: impl Into<KeyRates>,
        per_address: u32,
        allocations: usize,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let per_key = per_key.into();
        let limiters = Role::ALL
            .into_iter()
            .filter_map(|role| Some((role, limiter(per_key.of(role), &clock)?)))
            .collect();
        Limits {
            asked: (per_key, per_address, allocations),
            per_key: limiters,
            per_address: limiter(per_address, &clock),
            clock,
            allocations: Arc::new(Semaphore::new(allocations.max(1))),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The same limits, fresh (full buckets, no failure counted), on `clock`.
    pub fn on_clock(&self, clock: Arc<dyn Clock>) -> Self {
        let (per_key, per_address, allocations) = self.asked.clone();
        Self::with_clock(per_key, per_address, allocations, clock)
    }

    /// One request of an authenticated key of `role`.
    pub fn check_key(&self, key_id: &str, role: Role) -> Result<(), ApiError> {
        match self.per_key.get(&role) {
            Some(l) => retry_after(l, &key_id.to_string()),
            None => Ok(()),
        }
    }

    /// One request from an address without a valid key (unknown address: not limited).
    pub fn check_address(&self, ip: Option<IpAddr>) -> Result<(), ApiError> {
        match (&self.per_address, ip) {
            (Some(l), Some(ip)) => retry_after(l, &ip),
            _ => Ok(()),
        }
    }

    /// A slot to compute an allocation in, or 429 when every slot is busy.
    pub fn allocation_slot(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.allocations
            .clone()
            .try_acquire_owned()
            .map_err(|_| ApiError::allocations_busy())
    }

    /// Counts a failed sign-in from `ip`; returns the count when it reaches [`FAILURES_AUDITED_FROM`] in the
    /// current window (once per window: that failure is to be audited).
    pub fn failed_sign_in(&self, ip: Option<IpAddr>) -> Option<u32> {
        let ip = ip?;
        let now = self.clock.elapsed();
        let mut m = self.failures.lock().ok()?;
        if m.len() >= MAX_TRACKED && !m.contains_key(&ip) {
            m.retain(|_, f| now.saturating_sub(f.since) < FAILURE_WINDOW);
            if m.len() >= MAX_TRACKED {
                return None;
            }
        }
        let f = m.entry(ip).or_insert(Failures {
            since: now,
            count: 0,
            audited: false,
        });
        if now.saturating_sub(f.since) >= FAILURE_WINDOW {
            *f = Failures {
                since: now,
                count: 0,
                audited: false,
            };
        }
        f.count += 1;
        if f.count >= FAILURES_AUDITED_FROM && !f.audited {
            f.audited = true;
            return Some(f.count);
        }
        None
    }

    /// Forgets keys and addresses idle long enough that their buckets are full again (bounded memory).
    pub fn retain_recent(&self) {
        for l in self.per_key.values() {
            l.retain_recent();
        }
        if let Some(l) = &self.per_address {
            l.retain_recent();
        }
        let now = self.clock.elapsed();
        if let Ok(mut m) = self.failures.lock() {
            m.retain(|_, f| now.saturating_sub(f.since) < FAILURE_WINDOW);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eai_app::clock::ManualClock;
    use eai_engine::time::Timestamp;

    #[test]
    fn a_key_gets_its_burst_then_a_retry_after() {
        let l = Limits::new(2, 0, 1);
        for _ in 0..4 {
            l.check_key("key_1", Role::Viewer)
                .expect("within the burst of 4");
        }
        let e = l.check_key("key_1", Role::Viewer).expect_err("over");
        assert_eq!(e.code.as_str(), "rate_limited");
        assert!(e.retry_after.is_some_and(|s| s >= 1));
        l.check_key("key_2", Role::Viewer)
            .expect("another key has its own bucket");
        l.check_address(Some(IpAddr::from([127, 0, 0, 1])))
            .expect("addresses unlimited at 0");
    }

    #[test]
    fn each_role_gets_its_own_rate() {
        let rates = KeyRates {
            default: 2,
            by_role: vec![(Role::UsageReporter, 5), (Role::Sampler, 0)],
        };
        assert_eq!(rates.of(Role::Viewer), 2);
        assert_eq!(rates.of(Role::UsageReporter), 5);
        let l = Limits::new(rates, 0, 1);
        // Bursts of twice the rate: 4 for a viewer, 10 for a usage reporter, no end for a sampler.
        let taken = |id: &str, role| {
            (0..50)
                .take_while(|_| l.check_key(id, role).is_ok())
                .count()
        };
        assert_eq!(taken("key_v", Role::Viewer), 4);
        assert_eq!(taken("key_u", Role::UsageReporter), 10);
        assert_eq!(taken("key_s", Role::Sampler), 50);
        // A role named twice: the last wins.
        let twice = KeyRates {
            default: 1,
            by_role: vec![(Role::Viewer, 3), (Role::Viewer, 7)],
        };
        assert_eq!(twice.of(Role::Viewer), 7);
    }

    #[test]
    fn allocation_slots_are_counted() {
        let l = Limits::new(0, 0, 1);
        let slot = l.allocation_slot().expect("one slot");
        assert!(l.allocation_slot().is_err());
        drop(slot);
        let _again = l.allocation_slot().expect("free again");
    }

    #[test]
    fn repeated_failed_sign_ins_are_reported_once_per_window() {
        let clock = ManualClock::new(Timestamp(1_000_000));
        let l = Limits::with_clock(0, 0, 1, Arc::new(clock.clone()));
        let ip = Some(IpAddr::from([10, 0, 0, 1]));
        let reported: Vec<u32> = (0..30).filter_map(|_| l.failed_sign_in(ip)).collect();
        assert_eq!(reported, vec![FAILURES_AUDITED_FROM]);
        assert_eq!(l.failed_sign_in(None), None);
        // A new window: counted from one again, and reported again.
        clock.advance(FAILURE_WINDOW.as_millis() as i64);
        let reported: Vec<u32> = (0..30).filter_map(|_| l.failed_sign_in(ip)).collect();
        assert_eq!(reported, vec![FAILURES_AUDITED_FROM]);
    }

    #[test]
    fn a_bucket_refills_as_the_clock_moves() {
        let clock = ManualClock::new(Timestamp(1_000_000));
        let l = Limits::with_clock(2, 1, 1, Arc::new(clock.clone()));
        for _ in 0..4 {
            l.check_key("key_1", Role::Viewer)
                .expect("within the burst of 4");
        }
        let e = l.check_key("key_1", Role::Viewer).expect_err("over");
        assert_eq!(e.retry_after, Some(1));
        clock.advance(499);
        assert!(
            l.check_key("key_1", Role::Viewer).is_err(),
            "half a token short"
        );
        clock.advance(1);
        l.check_key("key_1", Role::Viewer)
            .expect("one token back after 500 ms at 2/s");
        assert!(l.check_key("key_1", Role::Viewer).is_err());
        let ip = Some(IpAddr::from([10, 0, 0, 2]));
        l.check_address(ip).expect("1");
        l.check_address(ip).expect("2: the burst");
        assert!(l.check_address(ip).is_err());
        clock.advance(2_000);
        l.check_address(ip).expect("refilled");
        // Fresh limits on another clock forget the buckets, keep the rates.
        let again = l.on_clock(Arc::new(ManualClock::new(Timestamp(0))));
        for _ in 0..4 {
            again
                .check_key("key_1", Role::Viewer)
                .expect("a full bucket");
        }
        assert!(again.check_key("key_1", Role::Viewer).is_err());
    }
}
