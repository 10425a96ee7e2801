//! Recommendations (SPEC §13): what to do about a period's idle and oversized GPUs, with the savings at the
//! policies in force, from the per-GPU hourly usage ([`crate::gpu_usage`]). Pure: the period, the policies, the
//! usage and the thresholds in; the items out.
//!
//! A GPU-hour is one GPU's rows of one hour of one deployment (a GPU shared by several pods of it: their sums);
//! its utilization is its busy GPU-seconds over its GPU-seconds. Hours with no GPU-seconds do not count. Per
//! deployment:
//!
//! - `idle_gpus`: its GPUs idle (utilization at most `idle_utilization`) for at least `idle_share` of the hours
//!   they ran. One item lists them (`gpus`: how many, action `remove_gpus`); its `cost` is the priced cost of
//!   all their rows, its savings the priced cost of their idle GPU-hours.
//! - `low_utilization`: its other GPUs (the `current` ones), when their busy GPU-seconds over their GPU-seconds
//!   is under `low_utilization`. `peak_busy_gpus` is the largest sum of an hour's busy GPU-seconds over 3600
//!   (GPUs busy at once, on the hour's mean); `needed = max(1, ceil(peak))`. With `needed < current`: action
//!   `fewer_gpus`, savings `cost x (current - needed) / current`. Else the busiest GPU-hour's busy share
//!   (busy seconds / 3600) and the memory peak (the largest mean memory of a GPU-hour, `memory_gb_seconds /
//!   gpu_seconds`) choose the smallest MIG profile of the model's table ([`mig_table`]) with slices / total at
//!   least that share and memory at least that peak, smaller than the whole GPU: action `mig_profile`, savings
//!   `cost x (1 - slices / total)`; else action `share_gpu` with `gpu_fraction` the busy share rounded up to a
//!   multiple of 0.05 (at least 0.05), savings `cost x (1 - fraction)` when the fraction is under 1.
//! - `unpriced`: GPU time no policy prices: one item (action `add_policy`), no money.
//!
//! Money: each row is priced by the policy in force at its first window start ([`Candidates::pick`], as the
//! allocation picks it); the rows an item is about are summed per policy, each sum priced once
//! ([`crate::price`]), and cost and savings rounded once to the currency's minor unit. Rows no policy prices
//! are left out of the money (the `unpriced` item names them). A deployment priced in several currencies gets
//! one `idle_gpus` or `low_utilization` item per currency, each with the same evidence and its currency's money.
//! `monthly_savings` is the period's savings when the period is one calendar month (UTC), else the exact savings
//! times 30 days over the period's length; rounded once. No item whose rounded savings are zero.
//!
//! Evidence figures are exact decimals here; a view writes hours at 4 places, rounded half to even.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::Policy;
use crate::error::FieldError;
use crate::fixed;
use crate::gpu_usage::{add_fixed, quantities, FixedQuantities, GpuUsage};
use crate::money::{self, Currency, Money};
use crate::policy::Candidates;
use crate::rollup::CELL_DP;
use crate::stats::rank_index;
use crate::time::Period;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// The thresholds of a request (the query's, else the server's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A GPU-hour busy at most this share of its time is idle.
    pub idle_utilization: Decimal,
    /// A GPU idle for at least this share of the hours it ran could go.
    pub idle_share: Decimal,
    /// A deployment's other GPUs busy under this share of their GPU-hours are oversized.
    pub low_utilization: Decimal,
}

impl Default for Thresholds {
    /// 0.05, 0.5 and 0.3 (SPEC §13's defaults).
    fn default() -> Self {
        Thresholds {
            idle_utilization: Decimal::new(5, 2),
            idle_share: Decimal::new(5, 1),
            low_utilization: Decimal::new(3, 1),
        }
    }
}

/// A threshold given as text: a decimal from 0 to 1 with at most 6 places, or a [`FieldError`] naming `field`.
pub fn parse_threshold(field: &str, s: &str) -> Result<Decimal, FieldError> {
    let s = s.trim();
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || c == '.')
        && s.split('.')
            .nth(1)
            .is_none_or(|f| f.len() <= 6 && !f.is_empty());
    s.parse::<Decimal>()
        .ok()
        .filter(|d| ok && *d >= Decimal::ZERO && *d <= Decimal::ONE)
        .ok_or_else(|| {
            FieldError::new(
                field,
                "must be a decimal from 0 to 1 with at most 6 places (0.05: 5 %)",
            )
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    IdleGpus,
    LowUtilization,
    Unpriced,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::IdleGpus => "idle_gpus",
            Kind::LowUtilization => "low_utilization",
            Kind::Unpriced => "unpriced",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    RemoveGpus,
    FewerGpus,
    MigProfile,
    ShareGpu,
    AddPolicy,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::RemoveGpus => "remove_gpus",
            Action::FewerGpus => "fewer_gpus",
            Action::MigProfile => "mig_profile",
            Action::ShareGpu => "share_gpu",
            Action::AddPolicy => "add_policy",
        }
    }
}

/// A GPU idle for most of the hours it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleGpu {
    pub gpu_uuid: String,
    pub hours: u32,
    pub idle_hours: u32,
}

/// What a recommendation rests on, over the GPUs it is about (exact; hours and GPU-hours).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evidence {
    pub hours: u32,
    pub gpu_hours: Decimal,
    pub busy_gpu_hours: Decimal,
    pub utilization: Decimal,
    pub utilization_p50: Decimal,
    pub utilization_p95: Decimal,
    pub peak_busy_gpus: Decimal,
    pub memory_peak_gb: Option<Decimal>,
    pub profile_memory_gb: Option<Decimal>,
    pub idle_gpus: Vec<IdleGpu>,
    pub unpriced_gpu_hours: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recommendation {
    pub kind: Kind,
    pub deployment_id: String,
    pub model: String,
    pub current_gpus: u32,
    pub gpus: u32,
    pub action: Action,
    pub mig_profile: Option<&'static str>,
    /// `mig_profile` and `share_gpu`: the share of a GPU each of `gpus` would be (6 places).
    pub gpu_fraction: Option<Decimal>,
    pub evidence: Evidence,
    pub cost: Option<Money>,
    pub savings: Option<Money>,
    pub monthly_savings: Option<Money>,
    pub message: String,
}

/// A MIG profile: its name, compute slices and memory (GB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigProfile {
    pub name: &'static str,
    pub slices: u32,
    pub memory_gb: u32,
}

const fn p(name: &'static str, slices: u32, memory_gb: u32) -> MigProfile {
    MigProfile {
        name,
        slices,
        memory_gb,
    }
}

const H200: [MigProfile; 4] = [
    p("1g.18gb", 1, 18),
    p("2g.35gb", 2, 35),
    p("3g.71gb", 3, 71),
    p("4g.71gb", 4, 71),
];
const H100_94: [MigProfile; 4] = [
    p("1g.12gb", 1, 12),
    p("2g.24gb", 2, 24),
    p("3g.47gb", 3, 47),
    p("4g.47gb", 4, 47),
];
const GB80: [MigProfile; 4] = [
    p("1g.10gb", 1, 10),
    p("2g.20gb", 2, 20),
    p("3g.40gb", 3, 40),
    p("4g.40gb", 4, 40),
];
const A100_40: [MigProfile; 4] = [
    p("1g.5gb", 1, 5),
    p("2g.10gb", 2, 10),
    p("3g.20gb", 3, 20),
    p("4g.20gb", 4, 20),
];
const A30: [MigProfile; 2] = [p("1g.6gb", 1, 6), p("2g.12gb", 2, 12)];
const B200: [MigProfile; 4] = [
    p("1g.23gb", 1, 23),
    p("2g.45gb", 2, 45),
    p("3g.90gb", 3, 90),
    p("4g.90gb", 4, 90),
];

/// The MIG profiles smaller than the whole GPU of a model and its compute slices in all, by the model's name
/// (case-insensitive, most specific first), from the profile tables of NVIDIA's Multi-Instance GPU User Guide
/// ("Supported MIG Profiles": H200 141GB, H100 94GB and H100 NVL, H100 and H800 80GB, A100 80GB, A100 40GB,
/// A30 24GB, B200). Memory in a profile's name is GB (GiB). `None`: no MIG on the model, or not known here.
pub fn mig_table(model: &str) -> Option<(u32, &'static [MigProfile])> {
    let m = model.to_ascii_lowercase();
    let has = |s: &str| m.contains(s);
    if has("h200") {
        Some((7, &H200))
    } else if has("h100") && (has("94") || has("nvl")) {
        Some((7, &H100_94))
    } else if has("h100") || has("h800") || (has("a100") && has("80")) {
        // H100 and H800 80GB, and A100 80GB: the same profiles.
        Some((7, &GB80))
    } else if has("a100") {
        Some((7, &A100_40))
    } else if has("a30") {
        Some((4, &A30))
    } else if has("b200") {
        Some((7, &B200))
    } else {
        None
    }
}

/// One GPU's rows of one hour of one deployment: their sums, per policy and unpriced.
#[derive(Debug, Default)]
struct GpuHour {
    q: FixedQuantities,
    /// The sums of the hour's first policy (nearly always its only one: no allocation), then of the others.
    first: Option<(usize, FixedQuantities)>,
    others: Vec<(usize, FixedQuantities)>,
    unpriced_gpu_seconds: i128,
}

impl GpuHour {
    /// Adds `q` to the sums of policy `p`.
    fn add_priced(&mut self, p: usize, q: &FixedQuantities) {
        match &mut self.first {
            None => self.first = Some((p, *q)),
            Some((i, sums)) if *i == p => add_fixed(sums, q),
            Some(_) => match self.others.iter_mut().find(|(i, _)| *i == p) {
                Some((_, sums)) => add_fixed(sums, q),
                None => self.others.push((p, *q)),
            },
        }
    }

    /// The sums per policy.
    fn priced(&self) -> impl Iterator<Item = &(usize, FixedQuantities)> {
        self.first.iter().chain(&self.others)
    }

    fn utilization(&self) -> Decimal {
        dec(self.q[1]) / dec(self.q[0])
    }

    /// Its utilization is at most `limit` (a decimal of at most 6 places, 0 to 1), compared in integers:
    /// `busy x 10^6 <= limit x 10^6 x gpu_seconds` (a GPU-hour's sums are at most 3.6 x 10^18, so no product
    /// comes near `i128::MAX`).
    fn at_most(&self, limit_micro: i128) -> bool {
        self.q[1] * 1_000_000 <= limit_micro * self.q[0]
    }
}

/// `a / b` against `c / d` (positive denominators), exactly: by cross products, or as decimals where a product
/// would overflow.
fn cmp_ratio(a: i128, b: i128, c: i128, d: i128) -> std::cmp::Ordering {
    match (a.checked_mul(d), c.checked_mul(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => (dec(a) / dec(b)).cmp(&(dec(c) / dec(d))),
    }
}

/// `limit` (a threshold: 0 to 1, at most 6 places) in millionths.
fn micro(limit: Decimal) -> i128 {
    (limit * Decimal::from(1_000_000))
        .trunc()
        .try_into()
        .unwrap_or(i128::MAX)
}

/// A deployment's GPU-hours: GPU (its uuid) -> its hours in order, each once; and its GPU-seconds per model.
#[derive(Debug, Default)]
struct Deployment<'a> {
    gpus: BTreeMap<&'a str, Vec<(i64, GpuHour)>>,
    models: BTreeMap<&'a str, i128>,
}

type Gpu<'a, 'b> = (&'a str, &'b [(i64, GpuHour)]);

fn dec(v: i128) -> Decimal {
    fixed::from_fixed_lossy(v, CELL_DP)
}

/// The recommendations of `period` over `usage` (the rows its reader may see), priced by `policies`, largest
/// monthly savings first (then the deployment; `unpriced` items last).
pub fn recommend(
    period: Period,
    policies: &[Policy],
    usage: &GpuUsage,
    t: &Thresholds,
) -> Vec<Recommendation> {
    // Per label (deployment, model, placement): its deployment's slot and its policy candidates, found once.
    let mut slots: BTreeMap<&str, usize> = BTreeMap::new();
    let mut deployments: Vec<(&str, Deployment<'_>)> = Vec::new();
    let mut by_label: Vec<Option<(usize, Candidates, i128)>> = Vec::new();
    // Per deployment slot and GPU index: the GPU's hours, as they come (each chunk's rows are one bucket's).
    let mut hours: Vec<BTreeMap<u32, Vec<(i64, GpuHour)>>> = Vec::new();
    for r in usage.rows() {
        if !period.contains(r.bucket_start) || r.q[0] <= 0 {
            continue;
        }
        let li = r.labels as usize;
        if by_label.len() <= li {
            by_label.resize_with(li + 1, || None);
        }
        if by_label[li].is_none() {
            let Some(Some(l)) = usage.labels.get(li) else {
                continue;
            };
            let (d, m) = (l.deployment_id.as_str(), l.model.as_str());
            let slot = *slots.entry(d).or_insert_with(|| {
                deployments.push((d, Deployment::default()));
                hours.push(BTreeMap::new());
                deployments.len() - 1
            });
            by_label[li] = Some((slot, Candidates::for_key(policies, d, m), 0));
        }
        let Some((slot, candidates, label_gpu_seconds)) = &mut by_label[li] else {
            continue;
        };
        if usage.gpus.get(r.gpu as usize).is_none() {
            continue;
        }
        let picked = candidates.pick(policies, r.first_window_start);
        *label_gpu_seconds += r.q[0];
        let gpu = hours[*slot].entry(r.gpu).or_default();
        let hour = r.bucket_start.floor_to(HOUR_MS).0;
        if gpu.last().is_none_or(|(h, _)| *h != hour) {
            gpu.push((hour, GpuHour::default()));
        }
        let Some((_, h)) = gpu.last_mut() else {
            continue;
        };
        add_fixed(&mut h.q, &r.q);
        match picked {
            None => h.unpriced_gpu_seconds += r.q[0],
            Some(p) => h.add_priced(p, &r.q),
        }
    }
    // Each deployment's GPU-seconds per model, from its labels'.
    for (li, found) in by_label.iter().enumerate() {
        if let (Some((slot, _, gs)), Some(Some(l))) = (found, usage.labels.get(li)) {
            *deployments[*slot]
                .1
                .models
                .entry(l.model.as_str())
                .or_default() += *gs;
        }
    }
    // Each GPU's hours in order, an hour that came in several runs merged into one.
    for (slot, gpus) in hours.into_iter().enumerate() {
        for (g, mut v) in gpus {
            if v.windows(2).all(|w| w[0].0 < w[1].0) {
                if let Some(uuid) = usage.gpus.get(g as usize) {
                    deployments[slot].1.gpus.insert(&**uuid, v);
                }
                continue;
            }
            v.sort_by_key(|(h, _)| *h);
            let mut merged: Vec<(i64, GpuHour)> = Vec::with_capacity(v.len());
            for (hour, h) in v {
                match merged.last_mut() {
                    Some((last, m)) if *last == hour => {
                        add_fixed(&mut m.q, &h.q);
                        m.unpriced_gpu_seconds += h.unpriced_gpu_seconds;
                        for (p, q) in h.priced() {
                            m.add_priced(*p, q);
                        }
                    }
                    _ => merged.push((hour, h)),
                }
            }
            if let Some(uuid) = usage.gpus.get(g as usize) {
                deployments[slot].1.gpus.insert(&**uuid, merged);
            }
        }
    }
    deployments.sort_by(|a, b| a.0.cmp(b.0));
    let month = {
        let m = crate::batch::month_of(period.from);
        crate::batch::month(&m) == Some((period.from, period.to))
    };
    let ctx = Context {
        policies,
        month,
        length_ms: period.to.0 - period.from.0,
    };
    let mut out = Vec::new();
    for (id, dep) in &deployments {
        deployment(&ctx, id, dep, t, &mut out);
    }
    out.sort_by(|a, b| {
        let savings = |r: &Recommendation| r.monthly_savings.map(|m| m.amount);
        // `None` (unpriced) sorts before any amount: reversed, after.
        savings(b)
            .cmp(&savings(a))
            .then_with(|| a.deployment_id.cmp(&b.deployment_id))
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| {
                let c = |r: &Recommendation| r.cost.map(|m| m.currency);
                c(a).cmp(&c(b))
            })
    });
    out
}

struct Context<'p> {
    policies: &'p [Policy],
    month: bool,
    length_ms: i64,
}

impl Context<'_> {
    /// The exact cost of GPU-hours per currency: their rows summed per policy, each sum priced once.
    fn cost<'h>(&self, hours: impl Iterator<Item = &'h GpuHour>) -> Vec<(Currency, Decimal)> {
        let mut per_policy: BTreeMap<usize, FixedQuantities> = BTreeMap::new();
        for h in hours {
            for (p, q) in h.priced() {
                add_fixed(per_policy.entry(*p).or_default(), q);
            }
        }
        let mut sums = Vec::new();
        for (p, q) in &per_policy {
            let policy = &self.policies[*p];
            money::add_to(
                &mut sums,
                policy.spec.currency,
                crate::price(policy, &quantities(q)),
            );
        }
        sums.sort_by_key(|(c, _)| *c);
        sums
    }

    /// The period's savings and the month's, each rounded once.
    fn savings(&self, c: Currency, exact: Decimal) -> (Money, Money) {
        let monthly = if self.month {
            exact
        } else {
            exact * Decimal::from(30 * DAY_MS) / Decimal::from(self.length_ms)
        };
        let m = |a: Decimal| Money {
            amount: c.round(a),
            currency: c,
        };
        (m(exact), m(monthly))
    }
}

/// The evidence over `gpus`' GPU-hours (those `keep` admits).
fn evidence(gpus: &[Gpu<'_, '_>], keep: impl Fn(&GpuHour) -> bool) -> Evidence {
    let mut per_hour: BTreeMap<i64, i128> = BTreeMap::new();
    let (mut gs, mut busy, mut unpriced) = (0i128, 0i128, 0i128);
    // The GPU-hours ordered by utilization (compared exactly, in integers): only the percentiles become decimals.
    let mut utilizations: Vec<&GpuHour> = Vec::new();
    let mut memory_peak: Option<&GpuHour> = None;
    for (_, hours) in gpus {
        for (hour, h) in hours.iter().filter(|(_, h)| keep(h)) {
            *per_hour.entry(*hour).or_default() += h.q[1];
            gs += h.q[0];
            busy += h.q[1];
            unpriced += h.unpriced_gpu_seconds;
            utilizations.push(h);
            if h.q[3] > 0
                && memory_peak.is_none_or(|m| cmp_ratio(h.q[3], h.q[0], m.q[3], m.q[0]).is_gt())
            {
                memory_peak = Some(h);
            }
        }
    }
    utilizations.sort_unstable_by(|a, b| cmp_ratio(a.q[1], a.q[0], b.q[1], b.q[0]));
    let percentile = |p: Decimal| {
        rank_index(utilizations.len(), p).map_or(Decimal::ZERO, |i| utilizations[i].utilization())
    };
    let memory_peak = memory_peak.map(|h| dec(h.q[3]) / dec(h.q[0]));
    let hours_of = |v: i128| dec(v) / Decimal::from(3600);
    Evidence {
        hours: per_hour.len() as u32,
        gpu_hours: hours_of(gs),
        busy_gpu_hours: hours_of(busy),
        utilization: if gs > 0 {
            dec(busy) / dec(gs)
        } else {
            Decimal::ZERO
        },
        utilization_p50: percentile(Decimal::new(5, 1)),
        utilization_p95: percentile(Decimal::new(95, 2)),
        peak_busy_gpus: per_hour
            .values()
            .max()
            .map_or(Decimal::ZERO, |b| hours_of(*b)),
        memory_peak_gb: memory_peak,
        profile_memory_gb: None,
        idle_gpus: Vec::new(),
        unpriced_gpu_hours: hours_of(unpriced),
    }
}

/// An amount with its thousands grouped: `5,088.38`.
pub fn grouped(amount: Decimal) -> String {
    let s = amount.to_string();
    let (sign, s) = s.strip_prefix('-').map_or(("", s.as_str()), |r| ("-", r));
    let (int, frac) = s.split_once('.').map_or((s, None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// A share as a percentage with one place: `70.0 %`.
fn pct(d: Decimal) -> String {
    let mut p = (d * Decimal::ONE_HUNDRED).round_dp(1);
    p.rescale(1);
    format!("{p} %")
}

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn deployment(
    ctx: &Context<'_>,
    id: &str,
    dep: &Deployment<'_>,
    t: &Thresholds,
    out: &mut Vec<Recommendation>,
) {
    let model = dep
        .models
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(m, _)| m.to_string())
        .unwrap_or_default();
    let all: Vec<Gpu<'_, '_>> = dep.gpus.iter().map(|(g, h)| (*g, h.as_slice())).collect();
    let current_gpus = all.len() as u32;
    let idle_micro = micro(t.idle_utilization);
    let is_idle_hour = |h: &GpuHour| h.at_most(idle_micro);
    let base = |kind, gpus, action, evidence| Recommendation {
        kind,
        deployment_id: id.to_string(),
        model: model.clone(),
        current_gpus,
        gpus,
        action,
        mig_profile: None,
        gpu_fraction: None,
        evidence,
        cost: None,
        savings: None,
        monthly_savings: None,
        message: String::new(),
    };

    // Idle GPUs.
    let mut idle = Vec::new();
    let mut busy = Vec::new();
    for g in &all {
        let hours = g.1.len() as u32;
        let idle_hours = g.1.iter().filter(|(_, h)| is_idle_hour(h)).count() as u32;
        if hours > 0 && Decimal::from(idle_hours) >= t.idle_share * Decimal::from(hours) {
            idle.push((
                *g,
                IdleGpu {
                    gpu_uuid: g.0.to_string(),
                    hours,
                    idle_hours,
                },
            ));
        } else {
            busy.push(*g);
        }
    }
    if !idle.is_empty() {
        let gpus: Vec<Gpu<'_, '_>> = idle.iter().map(|(g, _)| *g).collect();
        let mut ev = evidence(&gpus, |_| true);
        ev.idle_gpus = idle.iter().map(|(_, i)| i.clone()).collect();
        let (hours, idle_hours) = ev.idle_gpus.iter().fold((0u64, 0u64), |(a, b), i| {
            (a + u64::from(i.hours), b + u64::from(i.idle_hours))
        });
        let share = Decimal::from(idle_hours) / Decimal::from(hours.max(1));
        let costs = ctx.cost(gpus.iter().flat_map(|g| g.1.iter().map(|(_, h)| h)));
        let saved = ctx.cost(
            gpus.iter()
                .flat_map(|g| g.1.iter().map(|(_, h)| h))
                .filter(|h| is_idle_hour(h)),
        );
        for (c, cost) in costs {
            let exact = saved
                .iter()
                .find(|(x, _)| *x == c)
                .map_or(Decimal::ZERO, |s| s.1);
            let (savings, monthly) = ctx.savings(c, exact);
            if savings.amount.is_zero() {
                continue;
            }
            let n = gpus.len() as u32;
            let mut r = base(Kind::IdleGpus, n, Action::RemoveGpus, ev.clone());
            r.message = format!(
                "{n} of {current_gpus} GPUs of {id} were idle {} of the hours they ran: {} {c} a month.",
                pct(share),
                grouped(monthly.amount)
            );
            r.cost = Some(Money {
                amount: c.round(cost),
                currency: c,
            });
            r.savings = Some(savings);
            r.monthly_savings = Some(monthly);
            out.push(r);
        }
    }

    // The other GPUs, oversized.
    if !busy.is_empty() {
        let ev = evidence(&busy, |_| true);
        if ev.utilization < t.low_utilization {
            low_utilization(ctx, &busy, ev, &model, &base, out);
        }
    }

    // Unpriced time.
    let unpriced: Vec<Gpu<'_, '_>> = all
        .iter()
        .copied()
        .filter(|g| {
            g.1.iter()
                .map(|(_, h)| h)
                .any(|h| h.unpriced_gpu_seconds > 0)
        })
        .collect();
    if !unpriced.is_empty() {
        let ev = evidence(&unpriced, |_| true);
        let n = unpriced.len() as u32;
        let mut r = base(Kind::Unpriced, n, Action::AddPolicy, ev);
        r.message = format!(
            "{} GPU-hours of {id} on {} ({model}) match no allocation policy: add one to price them.",
            grouped(r.evidence.unpriced_gpu_hours.round_dp(1)),
            plural(n, "GPU", "GPUs"),
        );
        out.push(r);
    }
}

fn low_utilization(
    ctx: &Context<'_>,
    gpus: &[Gpu<'_, '_>],
    mut ev: Evidence,
    model: &str,
    base: &impl Fn(Kind, u32, Action, Evidence) -> Recommendation,
    out: &mut Vec<Recommendation>,
) {
    let current = gpus.len() as u32;
    let needed = (ev.peak_busy_gpus.ceil().max(Decimal::ONE))
        .min(Decimal::from(current))
        .try_into()
        .unwrap_or(current);
    // The part of the cost that would go, and how the GPUs that stay would be shaped.
    let (action, keep_gpus, removed, profile, fraction): (_, u32, Decimal, _, _) =
        if needed < current {
            let removed = Decimal::from(current - needed) / Decimal::from(current);
            (Action::FewerGpus, needed, removed, None, None)
        } else {
            // The busiest GPU-hour's busy share of the hour.
            let peak = gpus
                .iter()
                .flat_map(|g| g.1.iter().map(|(_, h)| h.q[1]))
                .max()
                .map_or(Decimal::ZERO, |b| dec(b) / Decimal::from(3600));
            let memory = ev.memory_peak_gb;
            let mig = mig_table(model).and_then(|(total, profiles)| {
                profiles
                    .iter()
                    .find(|p| {
                        p.slices < total
                            && Decimal::from(p.slices) >= peak * Decimal::from(total)
                            && memory.is_none_or(|m| Decimal::from(p.memory_gb) >= m)
                    })
                    .map(|p| (p, total))
            });
            match mig {
                Some((p, total)) => {
                    let part = Decimal::from(p.slices) / Decimal::from(total);
                    let removed = Decimal::from(total - p.slices) / Decimal::from(total);
                    ev.profile_memory_gb = Some(Decimal::from(p.memory_gb));
                    (
                        Action::MigProfile,
                        current,
                        removed,
                        Some(p.name),
                        Some(part.round_dp(6)),
                    )
                }
                None => {
                    let step = Decimal::new(5, 2);
                    let fraction = ((peak / step).ceil() * step).max(step);
                    if fraction >= Decimal::ONE {
                        return;
                    }
                    (
                        Action::ShareGpu,
                        current,
                        Decimal::ONE - fraction,
                        None,
                        Some(fraction.normalize()),
                    )
                }
            }
        };
    let id = base(Kind::LowUtilization, 0, action, Evidence::default()).deployment_id;
    for (c, cost) in ctx.cost(gpus.iter().flat_map(|g| g.1.iter().map(|(_, h)| h))) {
        let (savings, monthly) = ctx.savings(c, cost * removed);
        if savings.amount.is_zero() {
            continue;
        }
        let mut r = base(Kind::LowUtilization, keep_gpus, action, ev.clone());
        r.mig_profile = profile;
        r.gpu_fraction = fraction;
        let was = format!(
            "{} of {id} {} {} busy, {} GPUs busy at once at the peak",
            plural(current, "GPU", "GPUs"),
            if current == 1 { "was" } else { "were" },
            pct(ev.utilization),
            ev.peak_busy_gpus.round_dp(2).normalize(),
        );
        let would = match (action, profile, fraction) {
            (Action::FewerGpus, _, _) => plural(keep_gpus, "GPU", "GPUs"),
            (Action::MigProfile, Some(p), _) => {
                format!("{} of MIG {p}", plural(keep_gpus, "slice", "slices"))
            }
            (_, _, Some(f)) => format!("{} of a GPU for each", pct(f)),
            _ => String::new(),
        };
        r.message = format!(
            "{was}: {would} would hold its load, {} {c} a month.",
            grouped(monthly.amount)
        );
        r.cost = Some(Money {
            amount: c.round(cost),
            currency: c,
        });
        r.savings = Some(savings);
        r.monthly_savings = Some(monthly);
        out.push(r);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::*;
    use crate::domain::{
        Glob, IdleCapacity, NonNegative, PolicySpec, Pue, ShareMethod, TokenWeight,
    };
    use crate::rollup::{Placement, Quantities, Rollup, RollupKey};
    use crate::time::Timestamp;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    const NOV: i64 = 1_793_491_200_000; // 2026-11-01T00:00:00Z

    fn policy(model: &str, hourly: &str, currency: Currency) -> Policy {
        Policy::new(
            1,
            PolicySpec {
                name: "p".into(),
                deployment_pattern: Glob::any(),
                gpu_model: Some(model.into()),
                currency,
                gpu_hourly_cost: NonNegative::new(dec(hourly)).unwrap(),
                overhead_pct: NonNegative::ZERO,
                energy_kwh_price: NonNegative::ZERO,
                pue: Pue::ONE,
                storage_gb_month_price: NonNegative::ZERO,
                idle_capacity: IdleCapacity::Unallocated,
                output_token_weight: TokenWeight::DEFAULT,
                enabled: true,
                effective_from: Timestamp(0),
                effective_to: None,
            },
        )
    }

    /// A GPU-hour of `deployment` on `gpu` at hour `h` of November, busy `busy` of its 3600 s, `memory` GB.
    fn hour(deployment: &str, model: &str, gpu: &str, h: i64, busy: &str, memory: &str) -> Rollup {
        let start = Timestamp(NOV + h * HOUR_MS);
        Rollup {
            key: RollupKey {
                gpu_uuid: gpu.into(),
                deployment_id: deployment.into(),
                owner: None,
                model: model.into(),
                bucket_start: start,
                placement: Placement::new("ns", "pod", "node", ShareMethod::Exclusive),
            },
            first_window_start: start,
            last_window_start: start,
            samples: 1,
            estimated_samples: 0,
            q: Quantities {
                gpu_seconds: dec("3600"),
                busy_gpu_seconds: dec(busy) * dec("3600"),
                memory_gb_seconds: dec(memory) * dec("3600"),
                ..Quantities::default()
            },
            gpus: None,
        }
    }

    fn november() -> Period {
        Period::new(Timestamp(NOV), Timestamp(NOV + 720 * HOUR_MS), HOUR_MS).unwrap()
    }

    fn run(rollups: &[Rollup], policies: &[Policy]) -> Vec<Recommendation> {
        let usage = GpuUsage::from_rollups(rollups).unwrap();
        recommend(november(), policies, &usage, &Thresholds::default())
    }

    #[test]
    fn thresholds_are_decimals_from_0_to_1_with_6_places_at_most() {
        assert_eq!(parse_threshold("x", "0.05").unwrap(), dec("0.05"));
        assert_eq!(parse_threshold("x", "1").unwrap(), Decimal::ONE);
        assert_eq!(parse_threshold("x", "0.123456").unwrap(), dec("0.123456"));
        for bad in ["1.5", "-0.1", "0.1234567", "abc", "", ".", "1e-2", "0."] {
            assert_eq!(
                parse_threshold("idle_share", bad).unwrap_err().field,
                "idle_share",
                "{bad}"
            );
        }
    }

    #[test]
    fn the_mig_table_matches_the_most_specific_model_first() {
        let name = |m: &str| mig_table(m).map(|(_, p)| p[0].name);
        assert_eq!(name("NVIDIA H100 80GB HBM3"), Some("1g.10gb"));
        assert_eq!(name("NVIDIA H100 NVL"), Some("1g.12gb"));
        assert_eq!(name("NVIDIA H200"), Some("1g.18gb"));
        assert_eq!(name("NVIDIA A100-SXM4-80GB"), Some("1g.10gb"));
        assert_eq!(name("NVIDIA A100-SXM4-40GB"), Some("1g.5gb"));
        assert_eq!(mig_table("NVIDIA A30").map(|(t, _)| t), Some(4));
        assert_eq!(name("NVIDIA B200"), Some("1g.23gb"));
        assert_eq!(name("NVIDIA L4"), None);
    }

    #[test]
    fn a_gpu_at_15_percent_fits_a_2g_20gb_slice() {
        // One H100 at 0.15 all November (720 h), 8 GB of memory: 1/7 = 0.142857 < 0.15 <= 2/7, 8 <= 20 GB.
        // Cost 720 h x 2.50 = 1,800.00 EUR; savings 1,800 x 5/7 = 1,285.714285… -> 1,285.71 (a calendar month:
        // the monthly savings are the period's).
        let rs: Vec<Rollup> = (0..720)
            .map(|h| hour("solo", "NVIDIA H100 80GB HBM3", "GPU-s", h, "0.15", "8"))
            .collect();
        let out = run(&rs, &[policy("H100", "2.50", Currency::EUR)]);
        assert_eq!(out.len(), 1, "{out:?}");
        let r = &out[0];
        assert_eq!(
            (r.kind, r.action),
            (Kind::LowUtilization, Action::MigProfile)
        );
        assert_eq!((r.gpus, r.current_gpus), (1, 1));
        assert_eq!(r.mig_profile, Some("2g.20gb"));
        assert_eq!(r.gpu_fraction, Some(dec("0.285714")));
        assert_eq!(r.cost.unwrap().amount, dec("1800.00"));
        assert_eq!(r.savings.unwrap().amount, dec("1285.71"));
        assert_eq!(r.monthly_savings.unwrap().amount, dec("1285.71"));
        assert_eq!(r.evidence.memory_peak_gb, Some(dec("8")));
        assert_eq!(r.evidence.profile_memory_gb, Some(dec("20")));
        assert_eq!(r.evidence.utilization_p95, dec("0.15"));
        assert_eq!(r.evidence.peak_busy_gpus, dec("0.15"));
    }

    #[test]
    fn memory_beyond_the_slices_profile_takes_a_larger_one() {
        // 0.15 busy but 30 GB in use: 2g.20gb is too small, 3g.40gb holds it; savings 1,800 x 4/7 = 1,028.57.
        let rs: Vec<Rollup> = (0..720)
            .map(|h| hour("solo", "H100", "GPU-s", h, "0.15", "30"))
            .collect();
        let out = run(&rs, &[policy("H100", "2.50", Currency::EUR)]);
        assert_eq!(out[0].mig_profile, Some("3g.40gb"));
        assert_eq!(out[0].savings.unwrap().amount, dec("1028.57"));
    }

    #[test]
    fn a_model_without_mig_gets_a_share_rounded_up_to_5_percent() {
        // An L4 at 0.12: a share of 0.15; cost 720 x 1.00 = 720.00, savings 720 x 0.85 = 612.00.
        let rs: Vec<Rollup> = (0..720)
            .map(|h| hour("l4", "NVIDIA L4", "GPU-l", h, "0.12", "0"))
            .collect();
        let out = run(&rs, &[policy("L4", "1.00", Currency::EUR)]);
        assert_eq!(out[0].action, Action::ShareGpu);
        assert_eq!(out[0].gpu_fraction, Some(dec("0.15")));
        assert_eq!(out[0].savings.unwrap().amount, dec("612.00"));
        assert_eq!(out[0].evidence.memory_peak_gb, None);
    }

    #[test]
    fn idle_gpus_are_named_and_their_idle_hours_are_the_savings() {
        // Two GPUs: GPU-i idle (0 busy) 504 of 720 h and 0.8 busy the other 216; GPU-b 0.9 all month.
        // GPU-i: 504/720 = 0.7 >= 0.5: idle. Savings: 504 h x 2.50 = 1,260.00; its cost 720 x 2.50 = 1,800.00.
        // GPU-b: 0.9 >= 0.3, no low_utilization item.
        let mut rs = Vec::new();
        for h in 0..720 {
            let b = if h < 504 { "0" } else { "0.8" };
            rs.push(hour("train", "H100", "GPU-i", h, b, "10"));
            rs.push(hour("train", "H100", "GPU-b", h, "0.9", "10"));
        }
        let out = run(&rs, &[policy("H100", "2.50", Currency::EUR)]);
        assert_eq!(out.len(), 1, "{out:?}");
        let r = &out[0];
        assert_eq!((r.kind, r.gpus, r.current_gpus), (Kind::IdleGpus, 1, 2));
        assert_eq!(
            r.evidence.idle_gpus,
            vec![IdleGpu {
                gpu_uuid: "GPU-i".into(),
                hours: 720,
                idle_hours: 504
            }]
        );
        assert_eq!(r.savings.unwrap().amount, dec("1260.00"));
        assert_eq!(r.cost.unwrap().amount, dec("1800.00"));
        assert_eq!(
            r.message,
            "1 of 2 GPUs of train were idle 70.0 % of the hours they ran: 1,260.00 EUR a month."
        );
    }

    #[test]
    fn unpriced_time_asks_for_a_policy_and_a_short_period_scales_to_a_month() {
        // dev: no policy for its model. small: an H100 at 0.1 for 10 days (240 h) of a 10-day period: cost 600.00,
        // a 2g.20gb? no: peak 0.1 <= 1/7: 1g.10gb, savings 600 x 6/7 = 514.2857…; monthly 514.2857… x 3 =
        // 1,542.857… -> 1,542.86 (rounded once from the exact figure).
        let mut rs: Vec<Rollup> = (0..240)
            .map(|h| hour("dev", "NVIDIA L4", "GPU-d", h, "0.5", "1"))
            .collect();
        rs.extend((0..240).map(|h| hour("small", "H100", "GPU-s", h, "0.1", "1")));
        let usage = GpuUsage::from_rollups(&rs).unwrap();
        let period = Period::new(Timestamp(NOV), Timestamp(NOV + 240 * HOUR_MS), HOUR_MS).unwrap();
        let out = recommend(
            period,
            &[policy("H100", "2.50", Currency::EUR)],
            &usage,
            &Thresholds::default(),
        );
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].mig_profile, Some("1g.10gb"));
        assert_eq!(out[0].savings.unwrap().amount, dec("514.29"));
        assert_eq!(out[0].monthly_savings.unwrap().amount, dec("1542.86"));
        assert_eq!(
            (out[1].kind, out[1].action),
            (Kind::Unpriced, Action::AddPolicy)
        );
        assert_eq!(out[1].evidence.unpriced_gpu_hours, dec("240"));
        assert_eq!(out[1].cost, None);
    }

    #[test]
    fn a_deployment_priced_in_two_currencies_gets_an_item_per_currency() {
        // Two idle GPUs, one H100 (EUR), one A100 (USD), each 720 h idle: 1,800.00 EUR and 720.00 USD.
        let mut rs = Vec::new();
        for h in 0..720 {
            rs.push(hour("mix", "H100", "GPU-h", h, "0", "0"));
            rs.push(hour("mix", "A100", "GPU-a", h, "0", "0"));
        }
        let out = run(
            &rs,
            &[
                policy("H100", "2.50", Currency::EUR),
                policy("A100", "1.00", Currency::USD),
            ],
        );
        let money: Vec<String> = out.iter().map(|r| r.savings.unwrap().to_string()).collect();
        assert_eq!(money, vec!["1800.00 EUR", "720.00 USD"]);
        assert!(out.iter().all(|r| r.gpus == 2));
    }

    #[test]
    fn amounts_are_grouped_by_thousands() {
        assert_eq!(grouped(dec("5088.38")), "5,088.38");
        assert_eq!(grouped(dec("1234567")), "1,234,567");
        assert_eq!(grouped(dec("12.5")), "12.5");
        assert_eq!(grouped(dec("-1000.00")), "-1,000.00");
    }
}
