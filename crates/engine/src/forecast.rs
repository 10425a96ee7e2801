//! Month-end forecasts of spend (SPEC §13): a small model a FinOps reader can redo with a spreadsheet.
//!
//! **Input.** For one line (a tenant's spend on one deployment in one currency), the cost of each day of its
//! history (UTC days from 28 days before the month up to `as_of`, a day with nothing at 0), and the days left in
//! the month (from `as_of` to the month's end).
//!
//! **The model.** Spend follows the week (weekdays busy, weekends quiet), so the week comes out first. Each
//! weekday gets a factor: the mean of that weekday's costs over the mean of the seven weekdays' means (a Monday
//! that costs 20 % more than the average day has a factor 1.2; a weekday that never costs anything, 0). With
//! fewer than [`MIN_DAYS_FOR_WEEKDAYS`] days of history, or a history that cost nothing, every factor is 1. Then
//! number the history's days 0, 1, 2, … (`x`) and fit a straight line `a + b·x` by least squares through the
//! costs divided by their weekday's factor (the days whose factor is 0 left out): the level and the trend, with
//! the week taken out first, so that where the weekends fall in the history is not mistaken for a trend. A
//! day's forecast is `max(0, line(x) × factor(weekday))`.
//!
//! **The band.** The model's misses on the history (`residual = cost − forecast`, one per history day) give its
//! spread: `low` adds their 10th percentile to every day left and `high` their 90th (nearest rank), each day
//! floored at 0. The band always holds the model itself (a percentile on the wrong side of 0 counts as 0), so
//! `spent ≤ low ≤ expected ≤ high`.
//!
//! **Totals.** `expected = spent + Σ forecast(days left)`; `low` and `high` the same with the band's days. Each is
//! rounded once to the currency's minor unit, at the end ([`LineForecast::rounded`]). A tenant's totals are the sums
//! of its rounded lines, so lines and totals agree to the cent.
//!
//! **Budgets.** [`exhausted_on`]: walking the days left from what the budget has spent, the first day whose
//! cumulative spend reaches the limit; none when the month ends first. A limit reached already is reported on
//! `as_of`'s day (the day the spend was counted to is not known: the store keeps a month's total), the month's
//! last day for a month over.

use rust_decimal::Decimal;
pub use time::Date;
use time::{OffsetDateTime, Weekday};

use crate::money::Currency;
use crate::stats::{least_squares, nearest_rank};
use crate::time::Timestamp;

/// Below this many days of history the weekday factors are all 1 (two weeks: two of each weekday at least).
pub const MIN_DAYS_FOR_WEEKDAYS: usize = 14;

/// The percentile of the residuals `low` adds to each day left.
pub const LOW_PCT: Decimal = Decimal::from_parts(10, 0, 0, false, 2);
/// The percentile of the residuals `high` adds to each day left.
pub const HIGH_PCT: Decimal = Decimal::from_parts(90, 0, 0, false, 2);

/// A fitted line: `intercept + slope × x` times the factor of each weekday (Monday first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub intercept: Decimal,
    pub slope: Decimal,
    pub factors: [Decimal; 7],
    /// The 10th and 90th percentiles of the history's residuals, each on its side of 0.
    pub low_residual: Decimal,
    pub high_residual: Decimal,
}

impl Model {
    /// The model's value on day `x` (a weekday): never below 0.
    pub fn value(&self, x: i64, weekday: Weekday) -> Decimal {
        let line = self.intercept + self.slope * Decimal::from(x);
        (line * self.factors[weekday_index(weekday)]).max(Decimal::ZERO)
    }
}

/// One line's forecast, exact: what the days left are expected to add (`expected`, `low`, `high`), and each
/// day's expected value (for the budgets' walk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineForecast {
    pub model: Option<Model>,
    /// Each day left with its expected cost, in order.
    pub days: Vec<(Date, Decimal)>,
    /// Each day left at the band's high, in order.
    pub high_days: Vec<(Date, Decimal)>,
    /// The sums over the days left.
    pub expected: Decimal,
    pub low: Decimal,
    pub high: Decimal,
}

/// A line's figures rounded once to the minor unit: (spent, expected, low, high).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rounded {
    pub spent: Decimal,
    pub expected: Decimal,
    pub low: Decimal,
    pub high: Decimal,
}

impl LineForecast {
    /// `spent` plus the days left, each figure rounded once to `currency`'s minor unit. Rounding keeps the order
    /// (`spent ≤ low ≤ expected ≤ high`: rounding is monotonic).
    pub fn rounded(&self, spent: Decimal, currency: Currency) -> Rounded {
        Rounded {
            spent: currency.round(spent),
            expected: currency.round(spent + self.expected),
            low: currency.round(spent + self.low),
            high: currency.round(spent + self.high),
        }
    }
}

/// The UTC date of an instant.
pub fn date_of(t: Timestamp) -> Date {
    OffsetDateTime::from_unix_timestamp(t.0.div_euclid(1000))
        .map_or(OffsetDateTime::UNIX_EPOCH.date(), |d| d.date())
}

/// The first instant (midnight UTC) of a date.
pub fn day_start(d: Date) -> Timestamp {
    Timestamp(d.midnight().assume_utc().unix_timestamp() * 1000)
}

fn weekday_index(w: Weekday) -> usize {
    usize::from(w.number_days_from_monday())
}

/// Fits the model to `history` (each day's cost, consecutive days in order) and forecasts `days_left` (the
/// days after the history up to the month's end, in order). No history: nothing is forecast (all zero).
pub fn forecast_line(history: &[(Date, Decimal)], days_left: &[Date]) -> LineForecast {
    let Some(model) = fit(history) else {
        return LineForecast {
            model: None,
            days: days_left.iter().map(|d| (*d, Decimal::ZERO)).collect(),
            high_days: days_left.iter().map(|d| (*d, Decimal::ZERO)).collect(),
            expected: Decimal::ZERO,
            low: Decimal::ZERO,
            high: Decimal::ZERO,
        };
    };
    let first = history[0].0;
    let mut out = LineForecast {
        model: None,
        days: Vec::with_capacity(days_left.len()),
        high_days: Vec::with_capacity(days_left.len()),
        expected: Decimal::ZERO,
        low: Decimal::ZERO,
        high: Decimal::ZERO,
    };
    for d in days_left {
        let f = model.value((*d - first).whole_days(), d.weekday());
        out.days.push((*d, f));
        out.expected += f;
        out.low += (f + model.low_residual).max(Decimal::ZERO);
        let high = (f + model.high_residual).max(Decimal::ZERO);
        out.high_days.push((*d, high));
        out.high += high;
    }
    out.model = Some(model);
    out
}

/// The model of `history`: the weekday factors, the line through the costs the factors take out, the
/// residuals' percentiles. `None` for no history.
pub fn fit(history: &[(Date, Decimal)]) -> Option<Model> {
    let first = history.first()?.0;
    let x = |d: Date| (d - first).whole_days();
    let factors = weekday_factors(history);
    let points: Vec<(Decimal, Decimal)> = history
        .iter()
        .filter_map(|(d, c)| {
            let f = factors[weekday_index(d.weekday())];
            (!f.is_zero()).then(|| (Decimal::from(x(*d)), *c / f))
        })
        .collect();
    // Every day of the history on a weekday that never costs: the line is 0.
    let (intercept, slope) = least_squares(&points).unwrap_or_default();
    let mut model = Model {
        intercept,
        slope,
        factors,
        low_residual: Decimal::ZERO,
        high_residual: Decimal::ZERO,
    };
    let mut residuals: Vec<Decimal> = history
        .iter()
        .map(|(d, c)| *c - model.value(x(*d), d.weekday()))
        .collect();
    residuals.sort_unstable();
    model.low_residual = nearest_rank(&residuals, LOW_PCT)
        .unwrap_or_default()
        .min(Decimal::ZERO);
    model.high_residual = nearest_rank(&residuals, HIGH_PCT)
        .unwrap_or_default()
        .max(Decimal::ZERO);
    Some(model)
}

/// Each weekday's factor (Monday first): the mean of its costs in `history` over the mean of the weekdays'
/// means. All 1 with fewer than [`MIN_DAYS_FOR_WEEKDAYS`] days, or when the history cost nothing.
pub fn weekday_factors(history: &[(Date, Decimal)]) -> [Decimal; 7] {
    let mut factors = [Decimal::ONE; 7];
    if history.len() < MIN_DAYS_FOR_WEEKDAYS {
        return factors;
    }
    let mut sums = [(Decimal::ZERO, 0u32); 7];
    for (d, c) in history {
        let s = &mut sums[weekday_index(d.weekday())];
        s.0 += *c;
        s.1 += 1;
    }
    // Fourteen consecutive days hold every weekday twice: no count is 0.
    let means: Vec<Decimal> = sums
        .iter()
        .map(|(sum, n)| *sum / Decimal::from((*n).max(1)))
        .collect();
    let base = means.iter().copied().sum::<Decimal>() / Decimal::from(7);
    if base > Decimal::ZERO {
        for (f, m) in factors.iter_mut().zip(&means) {
            *f = *m / base;
        }
    }
    factors
}

/// The day a budget's `limit` is reached: from `spent` (counted up to `as_of_day`), adding each day left's
/// `days` value in order, the first day the cumulative spend reaches the limit. Already reached: `as_of_day`
/// (or `last_day` of a month over, whose `as_of_day` is the next month's first). `None`: not this month.
pub fn exhausted_on(
    spent: Decimal,
    limit: Decimal,
    days: &[(Date, Decimal)],
    as_of_day: Date,
    last_day: Date,
) -> Option<Date> {
    if spent >= limit {
        return Some(as_of_day.min(last_day));
    }
    let mut cumulative = spent;
    for (d, c) in days {
        cumulative += *c;
        if cumulative >= limit {
            return Some(*d);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;
    use time::{Date, Duration, Month};

    use super::*;

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn day(y: i32, m: u8, d: u8) -> Date {
        Date::from_calendar_date(y, Month::try_from(m).unwrap(), d).unwrap()
    }

    fn days(from: Date, n: i64) -> Vec<Date> {
        (0..n).map(|i| from + Duration::days(i)).collect()
    }

    #[test]
    fn a_steady_line_forecasts_itself_with_a_band_of_zero_width() {
        // 28 days at 12.50 a day: the line is flat at 12.50, every factor 1, every residual 0.
        let h: Vec<(Date, Decimal)> = days(day(2026, 10, 4), 28)
            .into_iter()
            .map(|d| (d, dec("12.50")))
            .collect();
        let left = days(day(2026, 11, 1), 30);
        let f = forecast_line(&h, &left);
        let m = f.model.clone().unwrap();
        assert_eq!((m.intercept, m.slope), (dec("12.50"), Decimal::ZERO));
        assert!(m.factors.iter().all(|f| *f == Decimal::ONE));
        // 30 days x 12.50 = 375.
        assert_eq!(
            (f.expected, f.low, f.high),
            (dec("375"), dec("375"), dec("375"))
        );
        let r = f.rounded(dec("0"), Currency::EUR);
        assert_eq!(r.expected.to_string(), "375.00");
    }

    #[test]
    fn a_trend_is_followed() {
        // Cost = 10 + 2x on days x = 0..13 (13 days: factors 1). Day x = 20 forecasts 10 + 40 = 50.
        let h: Vec<(Date, Decimal)> = days(day(2026, 1, 1), 13)
            .into_iter()
            .enumerate()
            .map(|(i, d)| (d, Decimal::from(10 + 2 * i as i64)))
            .collect();
        let f = forecast_line(&h, &[day(2026, 1, 21)]);
        assert_eq!(f.days, vec![(day(2026, 1, 21), dec("50"))]);
        assert_eq!((f.low, f.high), (dec("50"), dec("50")));
    }

    #[test]
    fn weekdays_and_weekends_get_their_factors() {
        // Four weeks from Sunday 2026-10-04 to Saturday 10-31: weekdays 100, weekends 30. Mean 80; the costs are
        // symmetric about the middle (a weekend day at each end), so the line is flat at 80: weekday factors
        // 100/80 = 1.25, weekend 30/80 = 0.375. The model reproduces the history, a Monday ahead is 100, a Sunday 30.
        let h: Vec<(Date, Decimal)> = days(day(2026, 10, 4), 28)
            .into_iter()
            .map(|d| {
                let c = if d.weekday().number_days_from_monday() < 5 {
                    100
                } else {
                    30
                };
                (d, Decimal::from(c))
            })
            .collect();
        let f = forecast_line(&h, &[day(2026, 11, 2), day(2026, 11, 8)]);
        let m = f.model.unwrap();
        assert_eq!(m.slope, Decimal::ZERO);
        assert_eq!(m.factors[0], dec("1.25"));
        assert_eq!(m.factors[6], dec("0.375"));
        assert_eq!(f.days[0].1, dec("100"));
        assert_eq!(f.days[1].1, dec("30"));
        assert_eq!(f.expected, dec("130"));
    }

    #[test]
    fn where_the_weekends_fall_in_the_history_is_no_trend() {
        // The same week as above, but four weeks from Monday 2026-10-05 to Sunday 11-01: the weekends all sit at
        // the end of their weeks, so a line through the raw costs would fall (about -0.6 a day). With the week
        // taken out first, every cost divided by its factor is 80: the line is flat and the forecast exact.
        let h: Vec<(Date, Decimal)> = days(day(2026, 10, 5), 28)
            .into_iter()
            .map(|d| {
                let c = if d.weekday().number_days_from_monday() < 5 {
                    100
                } else {
                    30
                };
                (d, Decimal::from(c))
            })
            .collect();
        let m = fit(&h).unwrap();
        assert_eq!((m.intercept, m.slope), (dec("80"), Decimal::ZERO));
        // Monday 11-02 to Sunday 11-29: four weeks of 5 x 100 + 2 x 30 = 2,240, the band of zero width.
        let f = forecast_line(&h, &days(day(2026, 11, 2), 28));
        assert_eq!(
            (f.expected, f.low, f.high),
            (dec("2240"), dec("2240"), dec("2240"))
        );
    }

    #[test]
    fn a_weekday_that_never_costs_is_left_out_of_the_line() {
        // Weekdays 50, weekends 0, over three weeks: weekend factors 0 (their days out of the fit), weekday
        // factors 50 / (250 / 7) = 1.4; the line through 50 / 1.4 is flat, a weekday ahead 50, a weekend 0.
        let h: Vec<(Date, Decimal)> = days(day(2026, 10, 5), 21)
            .into_iter()
            .map(|d| {
                let weekday = d.weekday().number_days_from_monday() < 5;
                (d, Decimal::from(if weekday { 50 } else { 0 }))
            })
            .collect();
        let m = fit(&h).unwrap();
        assert_eq!(m.factors[5], Decimal::ZERO);
        assert_eq!(m.factors[0], dec("1.4"));
        assert_eq!(m.slope, Decimal::ZERO);
        let f = forecast_line(&h, &[day(2026, 10, 26), day(2026, 10, 31)]);
        assert_eq!(f.days[0].1.round_dp(20), dec("50"));
        assert_eq!(f.days[1].1, Decimal::ZERO);
    }

    #[test]
    fn the_band_takes_the_residuals_percentiles_and_holds_the_model() {
        // 10 days (fewer than 14: factors 1) alternating 8 and 12 around 10: residuals near -2 and +2. q10 is
        // the lowest of the ten (rank 1), q90 the ninth; each of the three days left adds them.
        let h: Vec<(Date, Decimal)> = days(day(2026, 3, 1), 10)
            .into_iter()
            .enumerate()
            .map(|(i, d)| (d, Decimal::from(if i % 2 == 0 { 8 } else { 12 })))
            .collect();
        // The line is not exactly flat (the last day is high): check against the fit's own figures.
        let m = fit(&h).unwrap();
        let left = days(day(2026, 3, 11), 3);
        let f = forecast_line(&h, &left);
        let expected: Decimal = f.days.iter().map(|(_, v)| *v).sum();
        assert_eq!(f.expected, expected);
        assert!(m.low_residual < Decimal::ZERO && m.high_residual > Decimal::ZERO);
        assert_eq!(f.low, expected + Decimal::from(3) * m.low_residual);
        assert_eq!(f.high, expected + Decimal::from(3) * m.high_residual);
        let r = f.rounded(dec("5"), Currency::EUR);
        assert!(
            r.spent <= r.low && r.low <= r.expected && r.expected <= r.high,
            "{r:?}"
        );
    }

    #[test]
    fn a_falling_line_stops_at_zero() {
        // 100 - 10x over 10 days: by day 12 the line is below 0; the forecast, and the band's days, are 0.
        let h: Vec<(Date, Decimal)> = days(day(2026, 3, 1), 10)
            .into_iter()
            .enumerate()
            .map(|(i, d)| (d, Decimal::from(100 - 10 * i as i64)))
            .collect();
        let f = forecast_line(&h, &days(day(2026, 3, 12), 5));
        assert_eq!(
            (f.expected, f.low, f.high),
            (Decimal::ZERO, Decimal::ZERO, Decimal::ZERO)
        );
    }

    #[test]
    fn no_history_forecasts_nothing() {
        let f = forecast_line(&[], &days(day(2026, 3, 1), 3));
        assert_eq!(f.expected, Decimal::ZERO);
        assert_eq!(f.days.len(), 3);
    }

    #[test]
    fn a_budget_runs_out_on_the_first_day_the_cumulative_reaches_it() {
        let d = days(day(2026, 11, 16), 15);
        let each: Vec<(Date, Decimal)> = d.iter().map(|x| (*x, dec("10"))).collect();
        // 40 spent, limit 100: 40 + 6 x 10 = 100 on the sixth day left, the 21st.
        let (as_of, last) = (day(2026, 11, 16), day(2026, 11, 30));
        assert_eq!(
            exhausted_on(dec("40"), dec("100"), &each, as_of, last),
            Some(day(2026, 11, 21))
        );
        // 40 + 15 x 10 = 190 < 200: not this month.
        assert_eq!(
            exhausted_on(dec("40"), dec("200"), &each, as_of, last),
            None
        );
        // Reached already: as_of's day; a month over: its last day.
        assert_eq!(
            exhausted_on(dec("100"), dec("100"), &each, as_of, last),
            Some(as_of)
        );
        assert_eq!(
            exhausted_on(dec("100"), dec("90"), &[], day(2026, 12, 1), last),
            Some(last)
        );
    }
}
