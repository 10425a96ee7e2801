//! Cost over time: a period cut into steps (hour, day, ISO week, calendar month; UTC), each step's figures
//! apportioned so that the steps sum to the period's allocation exactly.
//!
//! Each step is allocated on its own (the same inputs, cut to the step); those figures are only weights. A
//! deployment's period `cost` and `allocated` (or, for a tenant, its allocated amount) are then split over
//! the steps in proportion to them with the largest-remainder method at the minor unit, and a step's
//! `unallocated` is its cost less its allocated amount: every column of the steps sums to the period's to the
//! cent, whatever rounding or idle spreading each step alone would have done.

use std::collections::BTreeMap;
use std::str::FromStr;

use rust_decimal::Decimal;
use time::{Date, Month, OffsetDateTime, Time};

use crate::domain::TenantId;
use crate::error::FieldError;
use crate::money::{apportion, Currency};
use crate::report::Allocation;
use crate::time::Timestamp;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// The length of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Hour,
    Day,
    /// ISO weeks, from Monday 00:00 UTC.
    Week,
    /// Calendar months, UTC.
    Month,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Hour => "hour",
            Step::Day => "day",
            Step::Week => "week",
            Step::Month => "month",
        }
    }

    /// The start of the step after the one holding `t`.
    fn next(self, t: Timestamp) -> Timestamp {
        match self {
            Step::Hour => Timestamp(t.floor_to(HOUR_MS).0 + HOUR_MS),
            Step::Day => Timestamp(t.floor_to(DAY_MS).0 + DAY_MS),
            Step::Week => {
                // 1970-01-01 was a Thursday: Mondays are 4 days after a multiple of 7 days.
                let monday = (t.0 - 4 * DAY_MS).div_euclid(7 * DAY_MS) * 7 * DAY_MS + 4 * DAY_MS;
                Timestamp(monday + 7 * DAY_MS)
            }
            Step::Month => {
                let dt = OffsetDateTime::from_unix_timestamp(t.0.div_euclid(1000))
                    .unwrap_or(OffsetDateTime::UNIX_EPOCH);
                let (y, m) = match dt.month() {
                    Month::December => (dt.year() + 1, Month::January),
                    m => (dt.year(), m.next()),
                };
                Date::from_calendar_date(y, m, 1)
                    .map(|d| {
                        Timestamp(d.with_time(Time::MIDNIGHT).assume_utc().unix_timestamp() * 1000)
                    })
                    .unwrap_or(Timestamp(i64::MAX))
            }
        }
    }
}

impl FromStr for Step {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hour" => Ok(Step::Hour),
            "day" => Ok(Step::Day),
            "week" => Ok(Step::Week),
            "month" => Ok(Step::Month),
            _ => Err(FieldError::new(
                "step",
                "must be `hour`, `day`, `week` or `month`",
            )),
        }
    }
}

/// The steps of `[from, to)`: the first and last cut to the period.
pub fn bounds(from: Timestamp, to: Timestamp, step: Step) -> Vec<(Timestamp, Timestamp)> {
    let mut out = Vec::new();
    let mut start = from;
    while start < to {
        let end = step.next(start).min(to);
        out.push((start, end));
        start = end;
    }
    out
}

/// Whose figures a step shows: a deployment's (all its tenants) or one tenant's share of it.
pub type StepKey = (String, Option<TenantId>, Currency);

/// A row of one step: what a deployment (or a tenant's share of it) cost in the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRow {
    pub deployment_id: String,
    pub tenant_id: Option<TenantId>,
    pub currency: Currency,
    pub cost: Decimal,
    pub allocated: Decimal,
    pub unallocated: Decimal,
}

/// The figures of a whole allocation per key: (cost, allocated). Per deployment, or per tenant's share when
/// `tenant` is given.
fn figures(a: &Allocation, tenant: Option<TenantId>) -> BTreeMap<StepKey, (Decimal, Decimal)> {
    let mut out: BTreeMap<StepKey, (Decimal, Decimal)> = BTreeMap::new();
    match tenant {
        None => {
            for r in &a.deployments {
                if let Some(c) = r.currency {
                    let f = out.entry((r.deployment_id.clone(), None, c)).or_default();
                    f.0 += r.cost;
                    f.1 += r.allocated;
                }
            }
        }
        Some(t) => {
            for i in a.items.iter().filter(|i| i.tenant_id == t) {
                let f = out
                    .entry((i.deployment_id.clone(), Some(t), i.allocated.currency))
                    .or_default();
                // A tenant's cost is what it is charged: all of it allocated.
                f.0 += i.allocated.amount;
                f.1 += i.allocated.amount;
            }
        }
    }
    out
}

/// The rows of every step, apportioned from `whole` (the period's allocation) by `steps` (each step's own
/// allocation, in order). With `tenant`, that tenant's share only.
pub fn apportion_steps(
    whole: &Allocation,
    steps: &[Allocation],
    tenant: Option<TenantId>,
) -> Vec<Vec<StepRow>> {
    let per_step: Vec<_> = steps.iter().map(|s| figures(s, tenant)).collect();
    let mut out: Vec<Vec<StepRow>> = vec![Vec::new(); steps.len()];
    for ((deployment_id, tenant_id, currency), (cost, allocated)) in figures(whole, tenant) {
        let key = (deployment_id.clone(), tenant_id, currency);
        let weights = |pick: fn(&(Decimal, Decimal)) -> Decimal| -> Vec<Decimal> {
            per_step
                .iter()
                .map(|m| m.get(&key).map(pick).unwrap_or_default().max(Decimal::ZERO))
                .collect()
        };
        let unit = currency.minor_unit();
        let costs = apportion(cost, &weights(|f| f.0), unit);
        let allocs = apportion(allocated, &weights(|f| f.1), unit);
        for (i, (c, al)) in costs.into_iter().zip(allocs).enumerate() {
            if c.is_zero() && al.is_zero() {
                continue;
            }
            out[i].push(StepRow {
                deployment_id: deployment_id.clone(),
                tenant_id,
                currency,
                cost: c,
                allocated: al,
                unallocated: c - al,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{bounds, Step};
    use crate::time::Timestamp;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).expect("ts")
    }

    #[test]
    fn steps_cut_the_period_at_utc_bounds() {
        let b = bounds(
            ts("2026-10-30T22:00:00Z"),
            ts("2026-11-02T03:00:00Z"),
            Step::Day,
        );
        let s: Vec<String> = b.iter().map(|(f, t)| format!("{f}/{t}")).collect();
        assert_eq!(
            s,
            [
                "2026-10-30T22:00:00Z/2026-10-31T00:00:00Z",
                "2026-10-31T00:00:00Z/2026-11-01T00:00:00Z",
                "2026-11-01T00:00:00Z/2026-11-02T00:00:00Z",
                "2026-11-02T00:00:00Z/2026-11-02T03:00:00Z",
            ]
        );
        // 2026-10-01 is a Thursday: its ISO week started on Monday 2026-09-28.
        let w = bounds(
            ts("2026-10-01T00:00:00Z"),
            ts("2026-10-13T00:00:00Z"),
            Step::Week,
        );
        assert_eq!(w[0].1.to_string(), "2026-10-05T00:00:00Z");
        assert_eq!(w[1].1.to_string(), "2026-10-12T00:00:00Z");
        assert_eq!(w.len(), 3);
        let m = bounds(
            ts("2026-11-15T00:00:00Z"),
            ts("2027-02-01T00:00:00Z"),
            Step::Month,
        );
        let starts: Vec<String> = m.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(
            starts,
            [
                "2026-11-15T00:00:00Z",
                "2026-12-01T00:00:00Z",
                "2027-01-01T00:00:00Z"
            ]
        );
        assert_eq!(
            bounds(
                ts("2026-10-01T00:00:00Z"),
                ts("2026-10-01T03:00:00Z"),
                Step::Hour
            )
            .len(),
            3
        );
    }
}
