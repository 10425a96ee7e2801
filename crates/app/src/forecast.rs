//! The month's forecast (`GET /v1/finops/gpu/forecast`, `eai-gpu forecast`; SPEC §13): the daily costs of each
//! tenant, deployment and currency from 28 days before the month to `as_of` (today's midnight, UTC), fitted and
//! carried to the month's end by [`eai_engine::forecast`], and the day each budget in force is expected to run out.
//!
//! The days are the allocation series' ([`crate::allocation_series::step_allocations`] in days): the inputs are
//! read once, each day allocated on its own, and the period's allocation apportioned over the days (a tenant's
//! allocated share; a deployment's unallocated idle capacity as the line of no tenant). A line's `spent` is the
//! sum of its month's days before `as_of`. Lines are rounded once each; a tenant's totals are the sums of its
//! rounded lines. A budget's `spent` is its month's spend as `GET /v1/finops/budgets` shows it (the store's
//! standing); its `expected` adds what its tenant's lines in its currency are expected to add.

use std::collections::BTreeMap;

use eai_engine::allocate::AllocationConfig;
use eai_engine::allocation_series::{apportion_steps, Step};
use eai_engine::budget::Budget;
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::forecast::{date_of, exhausted_on, forecast_line, Date, Rounded};
use eai_engine::money::Currency;
use eai_engine::time::{Period, Timestamp};
use eai_store::{BudgetStore, Scope, StoreError};
use rust_decimal::Decimal;

use crate::allocation::{AllocationStore, Source};
use crate::allocation_series::step_allocations;

const DAY_MS: i64 = 86_400_000;

/// How many days of history before the month the model is fitted on (with the month's days before `as_of`).
pub const HISTORY_DAYS: i64 = 28;

/// Whether `config` lets a month be allocated day by day, as the forecast does: its bucket must divide a day.
pub fn days_fit(config: AllocationConfig) -> Result<(), FieldError> {
    if config.bucket_ms > 0 && DAY_MS % config.bucket_ms == 0 {
        return Ok(());
    }
    Err(FieldError::new(
        "period",
        "cannot be cut in days: the allocation bucket (EAI_ALLOCATION_BUCKET_MINUTES) does not divide a day",
    ))
}

/// The instants of a month's forecast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The month's first instant and the next month's.
    pub from: Timestamp,
    pub to: Timestamp,
    /// Spend is counted up to here: today's midnight (UTC) on the clock, within `[from, to]`.
    pub as_of: Timestamp,
    /// `from` less [`HISTORY_DAYS`].
    pub history_from: Timestamp,
}

impl Window {
    /// The month `period` (`YYYY-MM`; `None`: the month of `now`) as seen at `now`.
    pub fn of(period: Option<&str>, now: Timestamp) -> Result<Window, FieldError> {
        let month = period.map_or_else(|| eai_engine::batch::month_of(now), str::to_string);
        let (from, to) = eai_engine::batch::month(&month)
            .ok_or_else(|| FieldError::new("period", "must be a month, YYYY-MM, e.g. 2026-11"))?;
        Ok(Window {
            from,
            to,
            as_of: now.floor_to(DAY_MS).clamp(from, to),
            history_from: Timestamp(from.0 - HISTORY_DAYS * DAY_MS),
        })
    }

    /// `YYYY-MM`.
    pub fn period(&self) -> String {
        eai_engine::batch::month_of(self.from)
    }

    /// The days from `as_of` to the month's end.
    pub fn days_left(&self) -> Vec<Date> {
        (0..(self.to.0 - self.as_of.0) / DAY_MS)
            .map(|i| date_of(Timestamp(self.as_of.0 + i * DAY_MS)))
            .collect()
    }

    /// The instant the budgets' standings are read at: now within the month, its last instant once it is over.
    fn standing_at(&self, now: Timestamp) -> Timestamp {
        now.clamp(self.from, Timestamp(self.to.0 - 1))
    }
}

/// One tenant's (or, `None`, the unallocated idle capacity's) spend on one deployment in one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub tenant_id: Option<TenantId>,
    pub deployment_id: String,
    pub currency: Currency,
    pub figures: Rounded,
    /// The exact values of each day left: expected and at the band's high.
    days: Vec<(Date, Decimal)>,
    high_days: Vec<(Date, Decimal)>,
}

/// A tenant's totals in one currency: the sums of its rounded lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Total {
    pub tenant_id: Option<TenantId>,
    pub currency: Currency,
    pub figures: Rounded,
}

/// A budget in force and when it is expected to run out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetOutlook {
    pub budget: Budget,
    pub spent: Decimal,
    pub expected: Decimal,
    pub exhausted_on: Option<Date>,
    pub exhausted_on_high: Option<Date>,
}

impl BudgetOutlook {
    /// The limit is reached already.
    pub fn reached(&self) -> bool {
        self.spent >= self.budget.spec.limit
    }
}

/// The month's forecast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forecast {
    pub window: Window,
    pub lines: Vec<Line>,
    pub tenants: Vec<Total>,
    pub budgets: Vec<BudgetOutlook>,
}

/// The forecast of `window` as `scope` may see it (a tenant: its lines and budgets), budgets read at `now`.
pub async fn forecast_of(
    source: &Source,
    store: &(impl AllocationStore + BudgetStore + ?Sized),
    window: Window,
    config: AllocationConfig,
    scope: Scope,
    now: Timestamp,
) -> Result<Forecast, StoreError> {
    let period = Period {
        from: window.history_from,
        to: window.as_of,
    };
    let steps = step_allocations(source, store, period, config, Step::Day).await?;
    let standings = store
        .budget_standings(scope, window.standing_at(now))
        .await?;
    let lines = tokio::task::spawn_blocking(move || {
        let days: Vec<Date> = steps.bounds.iter().map(|(f, _)| date_of(*f)).collect();
        let daily = daily_costs(&steps.whole, &steps.parts, scope);
        lines_of(&window, &days, daily)
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the forecast task failed: {e}")))?;
    let tenants = totals(&lines);
    let budgets = standings
        .into_iter()
        .map(|s| outlook(&window, &lines, s.budget, s.spent.cost, now))
        .collect();
    Ok(Forecast {
        window,
        lines,
        tenants,
        budgets,
    })
}

type LineKey = (Option<TenantId>, String, Currency);

/// Each line's cost per step (every step present, 0 where it had nothing): the tenants' allocated shares and,
/// for the platform, each deployment's unallocated cost.
fn daily_costs(
    whole: &eai_engine::report::Allocation,
    parts: &[eai_engine::report::Allocation],
    scope: Scope,
) -> BTreeMap<LineKey, Vec<Decimal>> {
    let tenants: Vec<TenantId> = match scope {
        Scope::Tenant(t) => vec![t],
        Scope::Platform => {
            let mut t: Vec<TenantId> = whole.items.iter().map(|i| i.tenant_id).collect();
            t.sort_unstable();
            t.dedup();
            t
        }
    };
    let mut out: BTreeMap<LineKey, Vec<Decimal>> = BTreeMap::new();
    let mut add = |key: LineKey, step: usize, v: Decimal| {
        out.entry(key)
            .or_insert_with(|| vec![Decimal::ZERO; parts.len()])[step] += v;
    };
    for t in tenants {
        for (i, rows) in apportion_steps(whole, parts, Some(t)).iter().enumerate() {
            for r in rows {
                add(
                    (Some(t), r.deployment_id.clone(), r.currency),
                    i,
                    r.allocated,
                );
            }
        }
    }
    if scope == Scope::Platform {
        for (i, rows) in apportion_steps(whole, parts, None).iter().enumerate() {
            for r in rows {
                add(
                    (None, r.deployment_id.clone(), r.currency),
                    i,
                    r.unallocated,
                );
            }
        }
    }
    out
}

/// The forecast of each line with any cost in its history.
fn lines_of(window: &Window, days: &[Date], daily: BTreeMap<LineKey, Vec<Decimal>>) -> Vec<Line> {
    let month_start = date_of(window.from);
    let left = window.days_left();
    daily
        .into_iter()
        .filter(|(_, costs)| costs.iter().any(|c| !c.is_zero()))
        .map(|((tenant_id, deployment_id, currency), costs)| {
            let history: Vec<(Date, Decimal)> = days.iter().copied().zip(costs).collect();
            let spent: Decimal = history
                .iter()
                .filter(|(d, _)| *d >= month_start)
                .map(|(_, c)| *c)
                .sum();
            let f = forecast_line(&history, &left);
            Line {
                tenant_id,
                deployment_id,
                currency,
                figures: f.rounded(spent, currency),
                days: f.days,
                high_days: f.high_days,
            }
        })
        .collect()
}

/// Per tenant and currency, the sums of its rounded lines.
fn totals(lines: &[Line]) -> Vec<Total> {
    let mut sums: BTreeMap<(Option<TenantId>, Currency), Rounded> = BTreeMap::new();
    for l in lines {
        let s = sums.entry((l.tenant_id, l.currency)).or_default();
        s.spent += l.figures.spent;
        s.expected += l.figures.expected;
        s.low += l.figures.low;
        s.high += l.figures.high;
    }
    sums.into_iter()
        .map(|((tenant_id, currency), figures)| Total {
            tenant_id,
            currency,
            figures,
        })
        .collect()
}

/// A budget's outlook: its spend plus what its tenant's lines in its currency add, day by day.
///
/// A budget's spend is counted up to `now`, the lines up to `as_of` (today's midnight): of today, only the part
/// still ahead of `now` is added, so that today's spend so far is not counted twice.
fn outlook(
    window: &Window,
    lines: &[Line],
    budget: Budget,
    spent: Decimal,
    now: Timestamp,
) -> BudgetOutlook {
    let spec = &budget.spec;
    let mine: Vec<&Line> = lines
        .iter()
        .filter(|l| l.tenant_id == Some(spec.tenant_id) && l.currency == spec.currency)
        .collect();
    let sum_days = |pick: fn(&Line) -> &[(Date, Decimal)]| -> Vec<(Date, Decimal)> {
        window
            .days_left()
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let sum = mine
                    .iter()
                    .map(|l| pick(l).get(i).map_or(Decimal::ZERO, |v| v.1))
                    .sum();
                (d, sum)
            })
            .collect()
    };
    let (mut days, mut high_days) = (sum_days(|l| &l.days), sum_days(|l| &l.high_days));
    if (window.as_of.0..window.as_of.0 + DAY_MS).contains(&now.0) {
        let ahead = Decimal::from(window.as_of.0 + DAY_MS - now.0) / Decimal::from(DAY_MS);
        for today in [days.first_mut(), high_days.first_mut()]
            .into_iter()
            .flatten()
        {
            today.1 *= ahead;
        }
    }
    let added: Decimal = days.iter().map(|(_, v)| *v).sum();
    let as_of_day = date_of(window.as_of);
    let last_day = date_of(Timestamp(window.to.0 - DAY_MS));
    BudgetOutlook {
        exhausted_on: exhausted_on(spent, spec.limit, &days, as_of_day, last_day),
        exhausted_on_high: exhausted_on(spent, spec.limit, &high_days, as_of_day, last_day),
        expected: spec.currency.round(spent + added),
        spent,
        budget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).expect("time")
    }

    #[test]
    fn the_window_is_the_month_from_28_days_before_to_today() {
        let w = Window::of(Some("2026-11"), t("2026-11-16T09:30:00Z")).expect("window");
        assert_eq!(w.from, t("2026-11-01T00:00:00Z"));
        assert_eq!(w.to, t("2026-12-01T00:00:00Z"));
        assert_eq!(w.as_of, t("2026-11-16T00:00:00Z"));
        assert_eq!(w.history_from, t("2026-10-04T00:00:00Z"));
        // The 16th to the 30th.
        assert_eq!(w.days_left().len(), 15);
        // A month over: counted to its end, nothing left; a month ahead: nothing counted yet.
        let over = Window::of(Some("2026-10"), t("2026-11-16T09:30:00Z")).expect("over");
        assert_eq!((over.as_of, over.days_left().len()), (over.to, 0));
        let ahead = Window::of(Some("2026-12"), t("2026-11-16T09:30:00Z")).expect("ahead");
        assert_eq!((ahead.as_of, ahead.days_left().len()), (ahead.from, 31));
        // The default: the clock's month.
        assert_eq!(
            Window::of(None, t("2026-02-03T00:00:00Z"))
                .expect("default")
                .period(),
            "2026-02"
        );
        for bad in ["2026-13", "2026-1", "26-11", "november"] {
            assert_eq!(
                Window::of(Some(bad), t("2026-11-16T09:30:00Z"))
                    .unwrap_err()
                    .field,
                "period"
            );
        }
    }

    fn d(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    /// A line of `tenant` in `currency` spending `per_day` on each day left of `w`, `spent` so far.
    fn line(w: &Window, tenant: TenantId, currency: Currency, spent: &str, per_day: &str) -> Line {
        let days: Vec<(Date, Decimal)> =
            w.days_left().into_iter().map(|x| (x, d(per_day))).collect();
        let left = Decimal::from(days.len());
        Line {
            tenant_id: Some(tenant),
            deployment_id: format!("dep-{currency}-{per_day}"),
            currency,
            figures: Rounded {
                spent: d(spent),
                expected: d(spent) + d(per_day) * left,
                low: d(spent) + d(per_day) * left,
                high: d(spent) + d(per_day) * left,
            },
            high_days: days.iter().map(|(x, v)| (*x, *v * Decimal::TWO)).collect(),
            days,
        }
    }

    #[test]
    fn a_budget_adds_its_tenants_lines_in_its_currency_day_by_day() {
        let t: TenantId = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
            .parse()
            .expect("tenant");
        let w = Window::of(
            Some("2026-11"),
            Timestamp::parse_rfc3339("2026-11-16T09:30:00Z").expect("t"),
        )
        .expect("window");
        let usd = "USD".parse().expect("usd");
        let lines = vec![
            line(&w, t, Currency::EUR, "30.00", "4"),
            line(&w, t, Currency::EUR, "20.00", "6"),
            line(&w, t, usd, "99.00", "100"),
        ];
        // Totals: the EUR lines' sums (30 + 15 x 4 = 90, 20 + 15 x 6 = 110: 200), the USD line alone.
        let totals = totals(&lines);
        assert_eq!(totals.len(), 2);
        assert_eq!(
            (totals[0].currency, totals[0].figures.expected),
            (Currency::EUR, d("200"))
        );
        assert_eq!(totals[1].figures.expected, d("1599"));
        let spec = eai_engine::budget::BudgetSpec {
            tenant_id: t,
            name: "n".into(),
            limit: d("100"),
            currency: Currency::EUR,
            tokens_limit: None,
            thresholds_pct: vec![100],
            enforce: false,
            webhook_url: None,
            effective_from: w.from,
            effective_to: None,
        };
        // Spent 42 on the budget; the EUR lines add 10 a day (the USD line none): 42 + 6 x 10 = 102 >= 100 on
        // the sixth day left, the 21st; at the high (20 a day) 42 + 3 x 20 = 102 on the 18th. Expected: 42 + the
        // EUR lines' 150.
        let o = outlook(&w, &lines, Budget::new(1, spec.clone()), d("42"), w.as_of);
        assert_eq!(o.expected, d("192"));
        // At 18:00 a quarter of today is still ahead: today adds 2.50, not 10 (the budget's 42 counts its
        // morning): 192 - 7.50.
        let evening = Timestamp(w.as_of.0 + 18 * 3_600_000);
        let later = outlook(&w, &lines, Budget::new(1, spec), d("42"), evening);
        assert_eq!(later.expected, d("184.50"));
        assert_eq!(
            o.exhausted_on.map(|x| x.to_string()),
            Some("2026-11-21".into())
        );
        assert_eq!(
            o.exhausted_on_high.map(|x| x.to_string()),
            Some("2026-11-18".into())
        );
        assert!(!o.reached());
    }
}
