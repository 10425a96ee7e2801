//! The one retry schedule of eai-gpu: how long to wait after the n-th failure in a row. Pure: the caller counts
//! the failures, draws the jitter and waits on its own clock; this module only computes the delay.
//!
//! After failure `n` (1 for the first), the delay's ceiling is `d = min(base * 2^(n-1), max)`. Without jitter
//! the delay is `d`; with [`Jitter::Half`] it is `d/2 + r mod (d/2 + 1)` for the caller's random `r`, that is
//! somewhere in `[d/2, d]` (replicas that failed together do not retry together). A server that says when to
//! come back (`Retry-After`) is obeyed: the delay is at least what it asked, even past `max`
//! ([`Backoff::delay_after`]). The schedules in use:
//!
//! | who                                    | base   | max    | jitter | gives up                         |
//! |----------------------------------------|--------|--------|--------|----------------------------------|
//! | sampler delivery (spool -> server)     | 1 s    | 5 min  | half   | never (the spool keeps the rows) |
//! | sampler source scrape, within a window | 500 ms | 2^8 x  | none   | `scrape_attempts`                |
//! | import batches (`eai-gpu import`)      | 250 ms | 30 s   | none   | 20 tries                         |
//! | budget webhooks                        | 1 s    | 1 h    | none   | 20 attempts (`MAX_ATTEMPTS`)     |
//! | ClickHouse replicator                  | 500 ms | 30 s   | none   | never (the outbox keeps the rows)|

/// How a delay is spread below its ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// The ceiling itself.
    None,
    /// Anywhere in `[ceiling/2, ceiling]`, as the caller's random number says.
    Half,
}

/// An exponential retry schedule, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base_ms: i64,
    max_ms: i64,
    jitter: Jitter,
}

impl Backoff {
    /// Doubling from `base_ms` (at least 1) up to `max_ms` (at least the base), without jitter.
    pub const fn new(base_ms: i64, max_ms: i64) -> Backoff {
        let base_ms = if base_ms < 1 { 1 } else { base_ms };
        let max_ms = if max_ms < base_ms { base_ms } else { max_ms };
        Backoff {
            base_ms,
            max_ms,
            jitter: Jitter::None,
        }
    }

    /// The same schedule with `jitter`.
    pub const fn with_jitter(self, jitter: Jitter) -> Backoff {
        Backoff { jitter, ..self }
    }

    pub const fn base_ms(&self) -> i64 {
        self.base_ms
    }

    pub const fn max_ms(&self) -> i64 {
        self.max_ms
    }

    /// The longest delay after failure `n` (1 for the first; 0 counts as 1): `min(base * 2^(n-1), max)`.
    pub fn ceiling(&self, failures: u32) -> i64 {
        let exp = failures.saturating_sub(1).min(62);
        self.base_ms
            .checked_mul(1i64 << exp)
            .unwrap_or(i64::MAX)
            .min(self.max_ms)
    }

    /// The delay after failure `n`, spread by `random` (any `u64`; ignored without jitter).
    pub fn delay(&self, failures: u32, random: u64) -> i64 {
        let d = self.ceiling(failures);
        match self.jitter {
            Jitter::None => d,
            Jitter::Half => {
                let half = d / 2;
                // half >= 0, so the modulus is at least 1.
                let spread = random % (half.unsigned_abs() + 1);
                half + i64::try_from(spread).unwrap_or(half)
            }
        }
    }

    /// [`Backoff::delay`], but never shorter than what the server asked for (`Retry-After`, in milliseconds),
    /// even when that is longer than the schedule's `max`.
    pub fn delay_after(&self, failures: u32, random: u64, retry_after_ms: Option<i64>) -> i64 {
        self.delay(failures, random)
            .max(retry_after_ms.unwrap_or(0))
    }

    /// The delay as a [`std::time::Duration`].
    pub fn delay_duration(&self, failures: u32, random: u64) -> std::time::Duration {
        std::time::Duration::from_millis(self.delay(failures, random).unsigned_abs())
    }
}

/// A small random number generator for jitter (xorshift64*): seeded by the caller, so tests replay it.
#[derive(Debug, Clone)]
pub struct JitterRng(u64);

impl JitterRng {
    pub fn new(seed: u64) -> JitterRng {
        JitterRng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_from_the_base_up_to_the_cap() {
        let b = Backoff::new(250, 30_000);
        let delays: Vec<i64> = (1..=10).map(|n| b.delay(n, 12345)).collect();
        assert_eq!(
            delays,
            vec![250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]
        );
        assert_eq!(b.delay(0, 0), 250, "0 counts as the first failure");
        assert_eq!(b.delay(u32::MAX, 0), 30_000, "no overflow");
    }

    #[test]
    fn the_bounds_are_sane() {
        let b = Backoff::new(0, -5);
        assert_eq!((b.base_ms(), b.max_ms()), (1, 1));
        assert_eq!(b.delay(40, 0), 1);
    }

    #[test]
    fn half_jitter_stays_within_half_the_ceiling_and_the_ceiling() {
        let b = Backoff::new(1000, 60_000).with_jitter(Jitter::Half);
        let mut rng = JitterRng::new(42);
        let mut seen_below = false;
        for n in 1..=12 {
            let d = b.ceiling(n);
            for _ in 0..50 {
                let w = b.delay(n, rng.next_u64());
                assert!(
                    w >= d / 2 && w <= d,
                    "failure {n}: {w} not in [{}, {d}]",
                    d / 2
                );
                seen_below |= w < d;
            }
        }
        assert!(seen_below, "the jitter spreads the delays");
        assert_eq!(b.delay(1, 0), 500);
        assert_eq!(b.delay(1, 500), 1000);
    }

    #[test]
    fn retry_after_is_a_floor_even_past_the_cap() {
        let b = Backoff::new(500, 30_000);
        assert_eq!(b.delay_after(1, 0, None), 500);
        assert_eq!(b.delay_after(1, 0, Some(2_000)), 2_000);
        assert_eq!(b.delay_after(10, 0, Some(120_000)), 120_000);
        assert_eq!(b.delay_after(10, 0, Some(1_000)), 30_000);
    }

    #[test]
    fn the_webhook_schedule_is_one_second_doubling_to_an_hour() {
        let b = Backoff::new(1000, 3_600_000);
        assert_eq!(b.delay(1, 0), 1_000);
        assert_eq!(b.delay(4, 0), 8_000);
        assert_eq!(b.delay(12, 0), 2_048_000);
        assert_eq!(b.delay(13, 0), 3_600_000);
        assert_eq!(b.delay(20, 0), 3_600_000);
    }
}
