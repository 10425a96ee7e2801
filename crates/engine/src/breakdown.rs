//! Breakdown: a period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share
//! method (any combination), from the per-GPU rollups and where their time ran (their key's [`crate::rollup::Placement`]),
//! in the compact form of [`crate::gpu_usage`]: one pass over the rows, allocation bucket by allocation bucket,
//! over interned labels and integer sums (a month of 1,000 GPUs is 720,000 rows).
//!
//! Quantities are sums of rollups. Cost comes from the allocation: each (deployment, owner, bucket, policy)'s
//! exact cost, computed from the sums of that bucket, is shared over the rows that ran in it in proportion to
//! their GPU-seconds (each share rounded down to 10^-[`SHARE_DP`] of the currency, so that a row's shares sum to
//! the same figure whatever order the rollups come in); then each (deployment, currency)'s rounded cost (the allocation's figure) is apportioned over
//! the deployment's rows with the largest-remainder method, weighed by those exact shares. So the rows of a
//! deployment sum to its cost to the minor unit, whatever the grouping, and a row summed over deployments (a node
//! several deployments ran on) is the sum of those cents.
//!
//! Filters keep rows whose value of a dimension is one of the values asked (values of one dimension: any of them;
//! several dimensions: all). The apportioning is done on rows fine enough to tell the filter apart (the grouping
//! plus every filtered dimension), so a filtered row shows the same cents as in the unfiltered answer of that
//! grouping.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use rustc_hash::FxHashMap;

use crate::domain::{self, Policy, TenantId};
use crate::fixed;
use crate::gpu_usage::{add_fixed, quantities, FixedQuantities, GpuRow, GpuUsage, UsageLabels};
use crate::money::{self, Currency};
use crate::policy::Candidates;
use crate::report::Allocation;
use crate::rollup::{Quantities, CELL_DP};
use crate::time::Period;

/// What breakdown rows are grouped and filtered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dimension {
    Deployment,
    /// The owner of a dedicated deployment's time; shared time has none (its split is the allocation's).
    Tenant,
    Model,
    Namespace,
    Pod,
    Node,
    /// The device: a GPU shared by several pods is one value, whatever share of it each pod had.
    Gpu,
    /// How the time's share of its GPU was obtained (SPEC §11): `exclusive`, `mig`, `measured` or `equal`.
    Share,
}

impl Dimension {
    pub const ALL: [Dimension; 8] = [
        Dimension::Pod,
        Dimension::Node,
        Dimension::Gpu,
        Dimension::Namespace,
        Dimension::Deployment,
        Dimension::Tenant,
        Dimension::Model,
        Dimension::Share,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dimension::Deployment => "deployment",
            Dimension::Tenant => "tenant",
            Dimension::Model => "model",
            Dimension::Namespace => "namespace",
            Dimension::Pod => "pod",
            Dimension::Node => "node",
            Dimension::Gpu => "gpu",
            Dimension::Share => "share",
        }
    }

    pub fn parse(s: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// One row: its value of each grouping dimension, in the order asked (`None`: a shared deployment's tenant, or
/// the placement of time stored before placements were kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakdownRow {
    pub key: Vec<Option<String>>,
    pub samples: u64,
    pub estimated_samples: u64,
    /// GPU-seconds (estimated ones included), busy and estimated GPU-seconds, memory GB-seconds, energy
    /// watt-seconds and storage GB-seconds.
    pub q: Quantities,
    /// GPU-seconds no policy priced (no cost was given for them).
    pub unpriced_gpu_seconds: Decimal,
    /// The row's cost per currency, in the currency's minor unit; empty when none of it was priced.
    pub cost: Vec<(Currency, Decimal)>,
    /// Grouped by GPU: the row's GPU-seconds over all the GPU-seconds of its GPU in the period (every pod's
    /// share and the idle share of a shared GPU, rows whose labels are hidden and rows filtered out included),
    /// to [`GPU_SHARE_DP`] places. A pod that had a GPU to itself has 1. Whether a reader may see it is the
    /// caller's to say (a tenant is not shown it).
    pub gpu_share: Option<Decimal>,
}

/// Decimal places of a row's [`BreakdownRow::gpu_share`].
pub const GPU_SHARE_DP: u32 = 6;

/// A period's breakdown, rows sorted by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakdown {
    pub group_by: Vec<Dimension>,
    pub rows: Vec<BreakdownRow>,
}

/// Decimal places of a row's exact share of a cell's cost (in the currency's major unit), before the
/// deployment's rounded cost is apportioned over the rows: each share is rounded down to them, so that shares sum
/// to the same figure in any order (eight places below a cent).
pub const SHARE_DP: u32 = 12;

/// The breakdown of `period` (allocated as `allocation`, with these `policies` and allocation buckets of
/// `bucket_ms`) grouped by `group_by` (deduplicated, in the order given; empty: one row of everything) and kept
/// to `filter`. `usage` holds the per-GPU rollups of the period: rows outside it, or whose labels are hidden,
/// are ignored.
pub fn breakdown(
    period: Period,
    bucket_ms: i64,
    policies: &[Policy],
    allocation: &Allocation,
    usage: &GpuUsage,
    group_by: &[Dimension],
    filter: &[(Dimension, String)],
) -> Breakdown {
    let mut group: Vec<Dimension> = Vec::new();
    for d in group_by {
        if !group.contains(d) {
            group.push(*d);
        }
    }
    // The fine key: the grouping, then each filtered dimension not in it, then the deployment (costs are
    // apportioned per deployment).
    let mut fine = group.clone();
    for (d, _) in filter {
        if !fine.contains(d) {
            fine.push(*d);
        }
    }
    if !fine.contains(&Dimension::Deployment) {
        fine.push(Dimension::Deployment);
    }
    // Per filtered dimension: its place in the fine key and the values kept.
    let mut filters: Vec<(usize, Vec<&str>)> = Vec::new();
    for (d, v) in filter {
        let at = fine.iter().position(|f| f == d).unwrap_or(0);
        match filters.iter_mut().find(|(i, _)| *i == at) {
            Some((_, values)) => values.push(v),
            None => filters.push((at, vec![v])),
        }
    }

    // 1. Per label: its value of each fine dimension (interned: equal values share an id whatever the label),
    //    its party (deployment, owner) and its policy candidates. The GPU's value is the device's index
    //    (share slices of one GPU have the GPU's), and each device's GPU-seconds are summed over every row.
    let gpu_at = fine.iter().position(|d| *d == Dimension::Gpu);
    let mut device_ids: FxHashMap<&str, u32> = FxHashMap::default();
    let mut devices: Vec<&str> = Vec::new();
    let device_of: Vec<u32> = match gpu_at {
        None => Vec::new(),
        Some(_) => usage
            .gpus
            .iter()
            .map(|g| {
                let d = domain::device_of(g);
                *device_ids.entry(d).or_insert_with(|| {
                    devices.push(d);
                    devices.len() as u32 - 1
                })
            })
            .collect(),
    };
    let mut device_seconds: Vec<i128> = vec![0; devices.len()];
    let mut values: Values<'_> = Values::default();
    let mut parties: FxHashMap<(&str, Option<TenantId>), u32> = FxHashMap::default();
    let mut candidates: FxHashMap<(&str, &str), usize> = FxHashMap::default();
    let mut candidate_lists: Vec<Candidates> = Vec::new();
    let labels: Vec<Option<LabelInfo>> = usage
        .labels
        .iter()
        .map(|l| {
            let l = l.as_deref()?;
            let key = fine
                .iter()
                .map(|d| match d {
                    Dimension::Gpu => 0,
                    d => values.id(label_value(*d, l)),
                })
                .collect();
            let next = parties.len() as u32;
            let party = *parties
                .entry((l.deployment_id.as_str(), l.owner))
                .or_insert(next);
            let candidates = *candidates
                .entry((l.deployment_id.as_str(), l.model.as_str()))
                .or_insert_with(|| {
                    candidate_lists.push(Candidates::for_key(policies, &l.deployment_id, &l.model));
                    candidate_lists.len() - 1
                });
            Some(LabelInfo {
                key,
                deployment: l.deployment_id.as_str(),
                party,
                candidates,
            })
        })
        .collect();

    // 2. Walk the rows allocation bucket by allocation bucket: sum each fine row's quantities, and each
    //    (party, policy) cell's; at the end of a bucket, share each cell's exact cost over the fine rows that ran
    //    in it, in proportion to their GPU-seconds.
    let mut rows: Vec<FineRow<'_>> = Vec::new();
    let mut row_of_key: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let mut row_of_pair: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    let mut key: Vec<u32> = Vec::with_capacity(fine.len());
    let mut bucket = Bucket::default();
    let mut current: Option<i64> = None;
    let ordered = usage
        .rows()
        .zip(usage.rows().skip(1))
        .all(|(a, b)| a.bucket_start <= b.bucket_start);
    let mut sorted: Vec<&GpuRow> = Vec::new();
    if !ordered {
        sorted = usage.rows().collect();
        sorted.sort_by_key(|r| r.bucket_start);
    }
    let walk: Box<dyn Iterator<Item = &GpuRow>> = if ordered {
        Box::new(usage.rows())
    } else {
        Box::new(sorted.iter().copied())
    };
    for r in walk {
        if !period.contains(r.bucket_start) {
            continue;
        }
        if let Some(&d) = device_of.get(r.gpu as usize) {
            device_seconds[d as usize] += r.q[0];
        }
        let Some(Some(info)) = labels.get(r.labels as usize) else {
            continue;
        };
        let b = (r.bucket_start.0 - period.from.0).div_euclid(bucket_ms);
        if current != Some(b) {
            bucket.settle(policies, &mut rows);
            current = Some(b);
        }
        let device = device_of.get(r.gpu as usize).copied().unwrap_or(0);
        let pair = (r.labels, device);
        let ri = match row_of_pair.get(&pair) {
            Some(&i) => i,
            None => {
                key.clear();
                key.extend(&info.key);
                if let Some(at) = gpu_at {
                    key[at] = device;
                }
                let i = match row_of_key.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = rows.len() as u32;
                        rows.push(FineRow {
                            key: key.clone(),
                            deployment: info.deployment,
                            ..FineRow::default()
                        });
                        row_of_key.insert(key.clone(), i);
                        i
                    }
                };
                row_of_pair.insert(pair, i);
                i
            }
        };
        let row = &mut rows[ri as usize];
        row.samples += u64::from(r.samples);
        row.estimated_samples += u64::from(r.estimated_samples);
        add_fixed(&mut row.q, &r.q);
        match candidate_lists[info.candidates].pick(policies, r.first_window_start) {
            None => row.unpriced += r.q[0],
            Some(p) => bucket.add(info.party, p, ri, &r.q),
        }
    }
    bucket.settle(policies, &mut rows);

    // 3. The rows in the order of their keys (texts), each (deployment, currency)'s rounded cost apportioned
    //    over its rows by their exact shares.
    let mut rows: Vec<(Vec<Option<String>>, FineRow<'_>)> = rows
        .into_iter()
        .map(|r| {
            let text = fine
                .iter()
                .zip(&r.key)
                .map(|(d, v)| match d {
                    Dimension::Gpu => devices.get(*v as usize).map(|g| g.to_string()),
                    _ => values.text(*v),
                })
                .collect();
            (text, r)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut members: BTreeMap<(&str, Currency), Vec<usize>> = BTreeMap::new();
    for (i, (_, row)) in rows.iter().enumerate() {
        for (c, _) in &row.exact {
            members.entry((row.deployment, *c)).or_default().push(i);
        }
    }
    let mut cost: Vec<Vec<(Currency, Decimal)>> = vec![Vec::new(); rows.len()];
    for ((dep, currency), idx) in &members {
        let total = allocation
            .deployments
            .iter()
            .find(|d| d.deployment_id == *dep && d.currency == Some(*currency))
            .map_or(Decimal::ZERO, |d| d.cost);
        let quotas: Vec<Decimal> = idx
            .iter()
            .map(|&i| {
                let share = rows[i].1.exact.iter().find(|(c, _)| c == currency);
                fixed::from_fixed_lossy(share.map_or(0, |(_, v)| *v), SHARE_DP)
            })
            .collect();
        for (&i, amount) in idx
            .iter()
            .zip(money::apportion(total, &quotas, currency.minor_unit()))
        {
            cost[i].push((*currency, amount));
        }
    }

    // 4. Filter, then merge the fine rows into the grouping's.
    let mut merged: BTreeMap<Vec<Option<String>>, Merged> = BTreeMap::new();
    for ((key, row), cost) in rows.into_iter().zip(cost) {
        let kept = filters
            .iter()
            .all(|(at, values)| values.contains(&key[*at].as_deref().unwrap_or("")));
        if !kept {
            continue;
        }
        let out = merged.entry(key[..group.len()].to_vec()).or_default();
        out.samples += row.samples;
        out.estimated_samples += row.estimated_samples;
        add_fixed(&mut out.q, &row.q);
        out.unpriced += row.unpriced;
        for (c, amount) in cost {
            money::add_to(&mut out.cost, c, amount);
        }
    }
    let gpu_in_group = group.iter().position(|d| *d == Dimension::Gpu);
    let rows: Vec<BreakdownRow> = merged
        .into_iter()
        .map(|(key, mut m)| {
            m.cost.sort_by_key(|(c, _)| *c);
            let gpu_share = gpu_in_group.map(|at| {
                let total = key[at]
                    .as_deref()
                    .and_then(|d| device_ids.get(d))
                    .map_or(0, |&i| device_seconds[i as usize]);
                if total == 0 {
                    return Decimal::ZERO;
                }
                let part = fixed::from_fixed_lossy(m.q[0], CELL_DP);
                let whole = fixed::from_fixed_lossy(total, CELL_DP);
                (part / whole).round_dp(GPU_SHARE_DP).normalize()
            });
            BreakdownRow {
                key,
                samples: m.samples,
                estimated_samples: m.estimated_samples,
                q: quantities(&m.q),
                unpriced_gpu_seconds: fixed::from_fixed_lossy(m.unpriced, CELL_DP).normalize(),
                cost: m.cost,
                gpu_share,
            }
        })
        .collect();
    Breakdown {
        group_by: group,
        rows,
    }
}

/// What a label brings to its rows.
#[derive(Debug)]
struct LabelInfo<'a> {
    /// Its value of each fine dimension (the GPU's place is filled per row).
    key: Vec<u32>,
    deployment: &'a str,
    /// Its (deployment, owner).
    party: u32,
    /// Its policy candidates (by deployment and model).
    candidates: usize,
}

/// The values of the labels' dimensions, interned.
#[derive(Debug, Default)]
struct Values<'a> {
    ids: FxHashMap<Val<'a>, u32>,
    texts: Vec<Val<'a>>,
}

impl<'a> Values<'a> {
    fn id(&mut self, v: Val<'a>) -> u32 {
        let next = self.texts.len() as u32;
        *self.ids.entry(v).or_insert_with(|| {
            self.texts.push(v);
            next
        })
    }

    fn text(&self, id: u32) -> Option<String> {
        self.texts.get(id as usize).and_then(|v| v.text())
    }
}

/// The cells of one allocation bucket: per (party, policy), the summed quantities, and each fine row's
/// GPU-seconds in it.
#[derive(Debug, Default)]
struct Bucket {
    cells: FxHashMap<(u32, usize), usize>,
    sums: Vec<(usize, FixedQuantities)>,
    parts: Vec<(u32, usize, i128)>,
}

impl Bucket {
    #[inline]
    fn add(&mut self, party: u32, policy: usize, row: u32, q: &FixedQuantities) {
        let next = self.sums.len();
        let ci = *self.cells.entry((party, policy)).or_insert(next);
        if ci == next {
            self.sums.push((policy, [0; 6]));
        }
        add_fixed(&mut self.sums[ci].1, q);
        self.parts.push((row, ci, q[0]));
    }

    /// Shares each cell's exact cost over its rows, then empties the bucket.
    fn settle(&mut self, policies: &[Policy], rows: &mut [FineRow<'_>]) {
        let priced: Vec<(Currency, i128, i128)> = self
            .sums
            .iter()
            .map(|(p, q)| {
                let policy = &policies[*p];
                let cost = crate::allocate::price(policy, &quantities(q));
                (
                    policy.spec.currency,
                    fixed::to_fixed_rounded(cost, SHARE_DP),
                    q[0],
                )
            })
            .collect();
        for &(ri, ci, gs) in &self.parts {
            let (currency, cost, total) = priced[ci];
            if total == 0 {
                continue;
            }
            let share = mul_div(cost, gs, total);
            let exact = &mut rows[ri as usize].exact;
            match exact.iter_mut().find(|(c, _)| *c == currency) {
                Some((_, v)) => *v += share,
                None => exact.push((currency, share)),
            }
        }
        self.cells.clear();
        self.sums.clear();
        self.parts.clear();
    }
}

/// `a x b / c` rounded toward zero, for `c > 0`, through a 256-bit product when `a x b` overflows an `i128`
/// (saturating if the quotient does).
fn mul_div(a: i128, b: i128, c: i128) -> i128 {
    if let Some(p) = a.checked_mul(b) {
        return p / c;
    }
    let negative = (a < 0) != (b < 0);
    let q = mul_div_wide(a.unsigned_abs(), b.unsigned_abs(), c.unsigned_abs());
    let q = i128::try_from(q).unwrap_or(i128::MAX);
    if negative {
        -q
    } else {
        q
    }
}

/// `floor(a x b / c)` of unsigned integers through a 256-bit product; `u128::MAX` when the quotient overflows.
fn mul_div_wide(a: u128, b: u128, c: u128) -> u128 {
    const M: u128 = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & M, b >> 64, b & M);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
    let lo = (p00 & M) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    if hi >= c {
        return u128::MAX;
    }
    // Long division of (hi, lo) by c, one bit at a time: the remainder stays below c.
    let (mut r, mut q) = (hi, 0u128);
    for i in (0..128).rev() {
        let carry = r >> 127;
        r = (r << 1) | ((lo >> i) & 1);
        q <<= 1;
        if carry == 1 || r >= c {
            r = r.wrapping_sub(c);
            q |= 1;
        }
    }
    q
}

/// A grouping row being summed.
#[derive(Debug, Default)]
struct Merged {
    samples: u64,
    estimated_samples: u64,
    q: FixedQuantities,
    unpriced: i128,
    cost: Vec<(Currency, Decimal)>,
}

/// A fine row: the rollups of one value of the fine key.
#[derive(Debug, Default)]
struct FineRow<'a> {
    key: Vec<u32>,
    deployment: &'a str,
    samples: u64,
    estimated_samples: u64,
    q: FixedQuantities,
    unpriced: i128,
    /// Its exact cost per currency, in units of 10^-[`SHARE_DP`].
    exact: Vec<(Currency, i128)>,
}

/// A rollup's value of a dimension, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Val<'a> {
    Str(&'a str),
    Tenant(TenantId),
    /// A shared deployment's tenant, or a placement never recorded.
    None,
}

impl Val<'_> {
    fn text(&self) -> Option<String> {
        match self {
            Val::Str(s) => Some((*s).to_string()),
            Val::Tenant(t) => Some(t.to_string()),
            Val::None => None,
        }
    }
}

/// A label's value of a dimension (not the GPU's: rows have it).
fn label_value(d: Dimension, l: &UsageLabels) -> Val<'_> {
    fn text(s: Option<&str>) -> Val<'_> {
        s.map_or(Val::None, Val::Str)
    }
    match d {
        Dimension::Deployment => Val::Str(&l.deployment_id),
        Dimension::Tenant => l.owner.map_or(Val::None, Val::Tenant),
        Dimension::Model => Val::Str(&l.model),
        Dimension::Namespace => text(l.placement.namespace()),
        Dimension::Pod => text(l.placement.pod()),
        Dimension::Node => text(l.placement.node()),
        Dimension::Share => l
            .placement
            .share()
            .map_or(Val::None, |m| Val::Str(m.as_str())),
        Dimension::Gpu => Val::None,
    }
}

#[cfg(test)]
mod tests {
    use super::{mul_div, mul_div_wide};

    #[test]
    fn mul_div_is_exact_beyond_an_i128_product() {
        assert_eq!(mul_div(7, 3, 2), 10);
        assert_eq!(mul_div(-7, 3, 2), -10);
        let big = 10i128.pow(30);
        // (10^30 x 10^30) / 10^25 = 10^35, the product being 10^60.
        assert_eq!(mul_div(big, big, 10i128.pow(25)), 10i128.pow(35));
        assert_eq!(mul_div(big + 1, big, big), big + 1);
        assert_eq!(mul_div(i128::MAX, i128::MAX, 1), i128::MAX, "saturates");
        assert_eq!(mul_div_wide(u128::MAX, u128::MAX, u128::MAX), u128::MAX);
        assert_eq!(mul_div_wide(u128::MAX, 3, 6), u128::MAX / 2);
    }
}
