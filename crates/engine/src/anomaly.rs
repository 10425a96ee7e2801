//! Spend anomalies (SPEC §13): an hour whose cost or GPU time is far from its deployment's recent baseline.
//!
//! Pure: the hourly values of one deployment's metric and the hours to check in, findings out. For an hour `h`
//! with value `x`, the baseline is the deployment's values of the hours in `[h - baseline_days, h)` in which it
//! ran (at least [`MIN_BASELINE_HOURS`] of them, else `h` is not judged), their median `m` and median absolute
//! deviation `MAD` ([`crate::stats`]). `h` is an anomaly when
//!
//! `|x - m| > threshold_mads x 1.4826 x MAD` and `|x - m| > min_ratio x m`
//!
//! (the second rule keeps a steady deployment, whose MAD is 0, from firing on a cent of wobble). Only the hours
//! in which the deployment ran are checked: a deployment that stops (no value) is not a spend anomaly. The
//! judgement uses the exact values; a finding shows them to [`SHOWN_DP`] places.
//!
//! [`hourly_values`] makes those series from the allocation's inputs: per deployment and hour, its GPU-seconds
//! and its cost per currency (the hour's quantities priced under the policy in force, as the allocation does,
//! before any rounding).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::{Policy, TenantId};
use crate::money::Currency;
use crate::policy::Candidates;
use crate::rollup::{Quantities, Rollup};
use crate::stats::{mad, median, MAD_SCALE};
use crate::time::Timestamp;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// The fewest baseline hours an hour is judged against.
pub const MIN_BASELINE_HOURS: usize = 24;

/// What is measured per deployment and hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// The hour's cost in one currency.
    Cost,
    /// The hour's GPU-seconds.
    GpuSeconds,
}

impl Metric {
    pub const ALL: [Metric; 2] = [Metric::Cost, Metric::GpuSeconds];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Cost => "cost",
            Metric::GpuSeconds => "gpu_seconds",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// Which side of the median an anomaly lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Above,
    Below,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Above => "above",
            Direction::Below => "below",
        }
    }

    pub fn parse(s: &str) -> Option<Direction> {
        [Direction::Above, Direction::Below]
            .into_iter()
            .find(|d| d.as_str() == s)
    }
}

/// How far is far (`EAI_ANOMALY_BASELINE_DAYS`, `EAI_ANOMALY_THRESHOLD_MADS`, `EAI_ANOMALY_MIN_RATIO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// The trailing days of the baseline (28).
    pub baseline_days: u32,
    /// Scaled MADs from the median (5).
    pub threshold_mads: Decimal,
    /// Fraction of the median from the median (0.5).
    pub min_ratio: Decimal,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            baseline_days: 28,
            threshold_mads: Decimal::from(5),
            min_ratio: Decimal::new(5, 1),
        }
    }
}

impl Thresholds {
    /// The baseline's length in milliseconds.
    pub fn baseline_ms(&self) -> i64 {
        i64::from(self.baseline_days) * DAY_MS
    }
}

/// The places a finding's value, median and MAD are shown with (the judgement uses them exact): an hour's cost
/// is a sum of exact prices with up to 28 digits, which no reader wants.
pub const SHOWN_DP: u32 = 6;

/// An hour far from its baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub hour: Timestamp,
    pub value: Decimal,
    pub median: Decimal,
    pub mad: Decimal,
    /// `|value - median| / (1.4826 x MAD)` to 2 places; `None` when the MAD is 0.
    pub deviation_mads: Option<Decimal>,
    pub direction: Direction,
    pub baseline_hours: u32,
}

/// The anomalies among `check` (hour starts) of one series (`values`: hour start -> value, the hours the
/// deployment ran only). An hour of `check` without a value is not checked.
pub fn detect(
    values: &BTreeMap<Timestamp, Decimal>,
    check: &[Timestamp],
    t: &Thresholds,
) -> Vec<Finding> {
    check.iter().filter_map(|h| judge(values, *h, t)).collect()
}

fn judge(
    values: &BTreeMap<Timestamp, Decimal>,
    hour: Timestamp,
    t: &Thresholds,
) -> Option<Finding> {
    let x = *values.get(&hour)?;
    let baseline: Vec<Decimal> = values
        .range(Timestamp(hour.0 - t.baseline_ms())..hour)
        .map(|(_, v)| *v)
        .collect();
    if baseline.len() < MIN_BASELINE_HOURS {
        return None;
    }
    let m = median(&baseline)?;
    let d = mad(&baseline, m)?;
    let off = (x - m).abs();
    let scaled = MAD_SCALE * d;
    if off <= t.threshold_mads * scaled || off <= t.min_ratio * m {
        return None;
    }
    let shown = |v: Decimal| v.round_dp(SHOWN_DP).normalize();
    Some(Finding {
        hour,
        value: shown(x),
        median: shown(m),
        mad: shown(d),
        deviation_mads: (!scaled.is_zero()).then(|| (off / scaled).round_dp(2)),
        direction: if x > m {
            Direction::Above
        } else {
            Direction::Below
        },
        baseline_hours: u32::try_from(baseline.len()).unwrap_or(u32::MAX),
    })
}

/// One series: a deployment's metric (its cost in one currency, or its GPU-seconds).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesKey {
    pub deployment_id: String,
    pub metric: Metric,
    /// `Some` for [`Metric::Cost`].
    pub currency: Option<Currency>,
}

/// Hourly series of every deployment, and the tenant of each dedicated one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hourly {
    pub series: BTreeMap<SeriesKey, BTreeMap<Timestamp, Decimal>>,
    pub owners: BTreeMap<String, TenantId>,
}

/// The hourly values of every deployment from its rollups (group rollups or raw cells; each counted in the
/// hour that holds its bucket start): the GPU-seconds of each hour with any, and per currency the cost of the
/// hour's quantities priced by the policy in force at each rollup's first window, as the allocation does (the
/// quantities of one policy summed, then priced once). Time no policy prices adds no cost.
pub fn hourly_values(rollups: &[Rollup], policies: &[Policy]) -> Hourly {
    let mut out = Hourly::default();
    let mut candidates: BTreeMap<(&str, &str), Candidates> = BTreeMap::new();
    // (deployment, hour) -> policy index -> summed quantities.
    let mut priced: BTreeMap<(&str, Timestamp), BTreeMap<usize, Quantities>> = BTreeMap::new();
    for r in rollups {
        let dep = r.key.deployment_id.as_str();
        let hour = r.key.bucket_start.floor_to(HOUR_MS);
        if let Some(o) = r.key.owner {
            out.owners.entry(dep.to_string()).or_insert(o);
        }
        *out.series
            .entry(SeriesKey {
                deployment_id: dep.to_string(),
                metric: Metric::GpuSeconds,
                currency: None,
            })
            .or_default()
            .entry(hour)
            .or_default() += r.q.gpu_seconds;
        let cand = candidates
            .entry((dep, r.key.model.as_str()))
            .or_insert_with(|| Candidates::for_key(policies, dep, &r.key.model));
        if let Some(p) = cand.pick(policies, r.first_window_start) {
            priced
                .entry((dep, hour))
                .or_default()
                .entry(p)
                .or_default()
                .add(&r.q);
        }
    }
    for ((dep, hour), by_policy) in priced {
        for (p, q) in by_policy {
            let policy = &policies[p];
            *out.series
                .entry(SeriesKey {
                    deployment_id: dep.to_string(),
                    metric: Metric::Cost,
                    currency: Some(policy.spec.currency),
                })
                .or_default()
                .entry(hour)
                .or_default() += crate::price(policy, &q);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn hours(values: &[&str]) -> BTreeMap<Timestamp, Decimal> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (Timestamp(i as i64 * HOUR_MS), dec(v)))
            .collect()
    }

    #[test]
    fn a_spike_over_a_wobbling_baseline_is_found_with_its_deviation() {
        // 30 hours wobbling 10, 11, 12, 10, 11, 12…: median 11; deviations 1, 0, 1…: MAD 1 (20 ones, 10
        // zeros). Hour 30: 40, |40 - 11| = 29 > 5 x 1.4826 x 1 = 7.413 and > 0.5 x 11 = 5.5: deviation
        // 29 / 1.4826 = 19.5602… -> 19.56.
        let mut v: Vec<String> = (0..30).map(|i| (10 + i % 3).to_string()).collect();
        v.push("40".into());
        v.push("12".into());
        let v: Vec<&str> = v.iter().map(String::as_str).collect();
        let series = hours(&v);
        let check: Vec<Timestamp> = (0..32).map(|i| Timestamp(i * HOUR_MS)).collect();
        let found = detect(&series, &check, &Thresholds::default());
        assert_eq!(
            found,
            vec![Finding {
                hour: Timestamp(30 * HOUR_MS),
                value: dec("40"),
                median: dec("11"),
                mad: dec("1"),
                deviation_mads: Some(dec("19.56")),
                direction: Direction::Above,
                baseline_hours: 30,
            }]
        );
    }

    #[test]
    fn a_steady_baseline_has_no_mad_and_fires_on_the_ratio_only() {
        // 24 hours of 100: MAD 0. 149 is within half the median (50); 151 and 49 are not.
        let mut v = vec!["100"; 24];
        v.extend(["149", "151", "49"]);
        let series = hours(&v);
        let check = [24, 25, 26].map(|i| Timestamp(i * HOUR_MS));
        let found = detect(&series, &check, &Thresholds::default());
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].hour, Timestamp(25 * HOUR_MS));
        assert_eq!(found[0].deviation_mads, None);
        assert_eq!(found[0].baseline_hours, 25, "149 joined the baseline");
        assert_eq!(found[1].direction, Direction::Below);
        assert_eq!(found[1].median, dec("100"));
    }

    #[test]
    fn too_short_a_baseline_an_hour_not_run_and_hours_out_of_the_window_judge_nothing() {
        // 23 hours then a spike: too short a baseline.
        let mut v = vec!["100"; 23];
        v.push("1000");
        assert!(detect(
            &hours(&v),
            &[Timestamp(23 * HOUR_MS)],
            &Thresholds::default()
        )
        .is_empty());
        // An hour without a value (the deployment stopped) is not checked.
        let series = hours(&["100"; 30]);
        assert!(detect(&series, &[Timestamp(40 * HOUR_MS)], &Thresholds::default()).is_empty());
        // A baseline of 1 day leaves the first 24 of 48 steady hours out: still 24, still judged.
        let mut v = vec!["100"; 48];
        v.push("300");
        let t = Thresholds {
            baseline_days: 1,
            ..Thresholds::default()
        };
        let found = detect(&hours(&v), &[Timestamp(48 * HOUR_MS)], &t);
        assert_eq!(found[0].baseline_hours, 24);
    }

    fn policy(seq: u64, currency: &str, hourly: &str, from: i64, to: Option<i64>) -> Policy {
        use crate::domain::{Glob, IdleCapacity, NonNegative, PolicySpec, Pue, TokenWeight};
        Policy::new(
            seq,
            PolicySpec {
                name: format!("p{seq}"),
                deployment_pattern: Glob::any(),
                gpu_model: None,
                currency: currency.parse().unwrap(),
                gpu_hourly_cost: NonNegative::new(dec(hourly)).unwrap(),
                overhead_pct: NonNegative::ZERO,
                energy_kwh_price: NonNegative::ZERO,
                pue: Pue::ONE,
                storage_gb_month_price: NonNegative::ZERO,
                idle_capacity: IdleCapacity::default(),
                output_token_weight: TokenWeight::default(),
                enabled: true,
                effective_from: Timestamp(from),
                effective_to: to.map(Timestamp),
            },
        )
    }

    fn rollup(dep: &str, owner: Option<TenantId>, start: i64, gs: &str) -> Rollup {
        use crate::rollup::{Placement, RollupKey};
        Rollup {
            key: RollupKey {
                gpu_uuid: String::new(),
                deployment_id: dep.into(),
                owner,
                model: "H100".into(),
                bucket_start: Timestamp(start),
                placement: Placement::default(),
            },
            first_window_start: Timestamp(start),
            last_window_start: Timestamp(start),
            samples: 1,
            estimated_samples: 0,
            q: Quantities {
                gpu_seconds: dec(gs),
                ..Quantities::default()
            },
            gpus: None,
        }
    }

    #[test]
    fn hourly_values_sum_each_hour_and_price_it_under_the_policy_in_force() {
        let t = TenantId(uuid::Uuid::from_u128(7));
        // 3.60 USD a GPU-hour until hour 2, then 1.80 EUR.
        let policies = [
            policy(1, "USD", "3.60", 0, Some(2 * HOUR_MS)),
            policy(2, "EUR", "1.80", 2 * HOUR_MS, None),
        ];
        let rollups = [
            // Hour 0 in two raw cells of 1,800 GPU-s: 3,600 GPU-s, 3.60 USD.
            rollup("d", Some(t), 0, "1800"),
            rollup("d", Some(t), 30 * 60_000, "1800"),
            // Hour 2: 7,200 GPU-s, 2 x 1.80 = 3.60 EUR.
            rollup("d", Some(t), 2 * HOUR_MS, "7200"),
            // Before any policy: GPU time, no cost.
            rollup("s", None, -HOUR_MS, "900"),
        ];
        let h = hourly_values(&rollups, &policies);
        let key = |dep: &str, metric, currency: Option<&str>| SeriesKey {
            deployment_id: dep.into(),
            metric,
            currency: currency.map(|c| c.parse().unwrap()),
        };
        let series = |k: &SeriesKey| h.series.get(k).cloned().unwrap_or_default();
        assert_eq!(
            series(&key("d", Metric::GpuSeconds, None)),
            BTreeMap::from([
                (Timestamp(0), dec("3600")),
                (Timestamp(2 * HOUR_MS), dec("7200"))
            ])
        );
        assert_eq!(
            series(&key("d", Metric::Cost, Some("USD"))),
            BTreeMap::from([(Timestamp(0), dec("3.6"))])
        );
        assert_eq!(
            series(&key("d", Metric::Cost, Some("EUR"))),
            BTreeMap::from([(Timestamp(2 * HOUR_MS), dec("3.6"))])
        );
        assert_eq!(
            series(&key("s", Metric::GpuSeconds, None)),
            BTreeMap::from([(Timestamp(-HOUR_MS), dec("900"))])
        );
        assert_eq!(h.series.len(), 4, "no cost series for unpriced time");
        assert_eq!(h.owners, BTreeMap::from([("d".to_string(), t)]));
    }

    #[test]
    fn metric_and_direction_names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.as_str()), Some(m));
        }
        assert_eq!(Direction::parse("below"), Some(Direction::Below));
        assert_eq!(Metric::parse("tokens"), None);
    }
}
