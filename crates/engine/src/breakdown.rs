//! Breakdown: a period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant or model (any
//! combination), from the per-GPU rollups and where their time ran (their key's [`crate::rollup::Placement`]).
//!
//! Quantities are sums of rollups. Cost comes from the allocation: each (deployment, owner, bucket, policy)'s
//! exact cost, computed from the sums of that bucket, is shared over the rows that ran in it in proportion to
//! their GPU-seconds; then each (deployment, currency)'s rounded cost (the allocation's figure) is apportioned over
//! the deployment's rows with the largest-remainder method, weighed by those exact shares. So the rows of a
//! deployment sum to its cost to the minor unit, whatever the grouping, and a row summed over deployments (a node
//! several deployments ran on) is the sum of those cents.
//!
//! Filters keep rows whose value of a dimension is one of the values asked (values of one dimension: any of them;
//! several dimensions: all). The apportioning is done on rows fine enough to tell the filter apart (the grouping
//! plus every filtered dimension), so a filtered row shows the same cents as in the unfiltered answer of that
//! grouping.

use std::collections::{BTreeMap, HashMap};

use rust_decimal::Decimal;

use crate::allocate::Period;
use crate::domain::{Policy, TenantId};
use crate::money::{self, Currency};
use crate::policy::Candidates;
use crate::report::Allocation;
use crate::rollup::{Quantities, Rollup};

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
    Gpu,
}

impl Dimension {
    pub const ALL: [Dimension; 7] = [
        Dimension::Pod,
        Dimension::Node,
        Dimension::Gpu,
        Dimension::Namespace,
        Dimension::Deployment,
        Dimension::Tenant,
        Dimension::Model,
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
}

/// A period's breakdown, rows sorted by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakdown {
    pub group_by: Vec<Dimension>,
    pub rows: Vec<BreakdownRow>,
}

/// The breakdown of `period` (allocated as `allocation`, with these `policies` and allocation buckets of
/// `bucket_ms`) grouped by `group_by` (deduplicated, in the order given; empty: one row of everything) and kept
/// to `filter`. `rollups` are the per-GPU rollups of the period: those outside it or without a GPU are ignored.
pub fn breakdown(
    period: Period,
    bucket_ms: i64,
    policies: &[Policy],
    allocation: &Allocation,
    rollups: &[Rollup],
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

    // 1. Per (deployment, owner, bucket, policy) cell: the summed quantities; per fine row: its sums, and its
    //    GPU-seconds in each cell. Keys are the rollups' own strings (no copy per rollup).
    type Cell<'a> = (&'a str, Option<TenantId>, i64, usize);
    let mut cell_index: HashMap<Cell<'_>, usize> = HashMap::new();
    let mut cells: Vec<(Cell<'_>, Quantities)> = Vec::new();
    let mut row_index: HashMap<Vec<Val<'_>>, usize> = HashMap::new();
    let mut rows: Vec<FineRow<'_>> = Vec::new();
    let mut pairs: HashMap<(usize, usize), Decimal> = HashMap::new();
    let mut candidates: HashMap<(&str, &str), Candidates> = HashMap::new();
    let mut key: Vec<Val<'_>> = Vec::with_capacity(fine.len());
    for r in rollups {
        if r.gpus.is_some() || !period.contains(r.key.bucket_start) {
            continue;
        }
        let (dep, model) = (r.key.deployment_id.as_str(), r.key.model.as_str());
        let policy = candidates
            .entry((dep, model))
            .or_insert_with(|| Candidates::for_key(policies, dep, model))
            .pick(policies, r.first_window_start);
        key.clear();
        key.extend(fine.iter().map(|d| value(*d, r)));
        let ri = match row_index.get(key.as_slice()) {
            Some(&i) => i,
            None => {
                row_index.insert(key.clone(), rows.len());
                rows.push(FineRow {
                    key: key.clone(),
                    deployment: dep,
                    ..FineRow::default()
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[ri];
        row.samples += r.samples;
        row.estimated_samples += r.estimated_samples;
        row.q.add(&r.q);
        match policy {
            None => row.unpriced += r.q.gpu_seconds,
            Some(p) => {
                let bucket = (r.key.bucket_start.0 - period.from.0).div_euclid(bucket_ms);
                let cell = (dep, r.key.owner, bucket, p);
                let ci = *cell_index.entry(cell).or_insert_with(|| {
                    cells.push((cell, Quantities::default()));
                    cells.len() - 1
                });
                cells[ci].1.add(&r.q);
                *pairs.entry((ri, ci)).or_default() += r.q.gpu_seconds;
            }
        }
    }

    // The rows in the order of their keys, the cells in theirs: what follows does not depend on the order of the
    // rollups (the shares below are divisions, whose last digit depends on the order they are summed in).
    let mut rows: Vec<(Vec<Option<String>>, usize, FineRow<'_>)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r.key.iter().map(|v| v.text()).collect(), i, r))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut row_rank = vec![0; rows.len()];
    for (rank, (_, i, _)) in rows.iter().enumerate() {
        row_rank[*i] = rank;
    }
    let mut cell_rank: Vec<usize> = (0..cells.len()).collect();
    cell_rank.sort_by(|&a, &b| cells[a].0.cmp(&cells[b].0));
    let mut rank_of_cell = vec![0; cells.len()];
    for (rank, &ci) in cell_rank.iter().enumerate() {
        rank_of_cell[ci] = rank;
    }
    let mut pairs: Vec<((usize, usize), usize, Decimal)> = pairs
        .into_iter()
        .map(|((ri, ci), gs)| ((row_rank[ri], rank_of_cell[ci]), ci, gs))
        .collect();
    pairs.sort_unstable_by_key(|p| p.0);

    // 2. Each fine row's exact cost per currency: its GPU-seconds' share of each cell's exact cost.
    let priced: Vec<(Currency, Decimal)> = cells
        .iter()
        .map(|((_, _, _, p), sums)| {
            let policy = &policies[*p];
            (policy.spec.currency, crate::allocate::price(policy, sums))
        })
        .collect();
    let mut exact: Vec<BTreeMap<Currency, Decimal>> = vec![BTreeMap::new(); rows.len()];
    for ((rank, _), ci, gs) in pairs {
        let total = cells[ci].1.gpu_seconds;
        if total.is_zero() {
            continue;
        }
        let (currency, cost) = priced[ci];
        *exact[rank].entry(currency).or_default() += cost * gs / total;
    }
    let rows: Vec<(Vec<Option<String>>, FineRow<'_>)> =
        rows.into_iter().map(|(k, _, r)| (k, r)).collect();

    // 3. Each (deployment, currency)'s rounded cost apportioned over its fine rows by their exact costs.
    let mut members: BTreeMap<(&str, Currency), Vec<usize>> = BTreeMap::new();
    for (i, ((_, row), by_currency)) in rows.iter().zip(&exact).enumerate() {
        for c in by_currency.keys() {
            members.entry((row.deployment, *c)).or_default().push(i);
        }
    }
    let mut cost: Vec<BTreeMap<Currency, Decimal>> = vec![BTreeMap::new(); rows.len()];
    for ((dep, currency), idx) in &members {
        let total = allocation
            .deployments
            .iter()
            .find(|d| d.deployment_id == *dep && d.currency == Some(*currency))
            .map_or(Decimal::ZERO, |d| d.cost);
        let quotas: Vec<Decimal> = idx.iter().map(|&i| exact[i][currency]).collect();
        for (&i, amount) in idx
            .iter()
            .zip(money::apportion(total, &quotas, currency.minor_unit()))
        {
            cost[i].insert(*currency, amount);
        }
    }

    // 4. Filter, then merge the fine rows into the grouping's.
    let mut merged: BTreeMap<Vec<Option<String>>, BreakdownRow> = BTreeMap::new();
    for ((key, row), cost) in rows.into_iter().zip(cost) {
        let kept = filters
            .iter()
            .all(|(at, values)| values.contains(&key[*at].as_deref().unwrap_or("")));
        if !kept {
            continue;
        }
        let out = merged
            .entry(key[..group.len()].to_vec())
            .or_insert_with_key(|k| BreakdownRow {
                key: k.clone(),
                samples: 0,
                estimated_samples: 0,
                q: Quantities::default(),
                unpriced_gpu_seconds: Decimal::ZERO,
                cost: Vec::new(),
            });
        out.samples += row.samples;
        out.estimated_samples += row.estimated_samples;
        out.q.add(&row.q);
        out.unpriced_gpu_seconds += row.unpriced;
        for (c, amount) in cost {
            match out.cost.iter_mut().find(|(oc, _)| *oc == c) {
                Some((_, a)) => *a += amount,
                None => out.cost.push((c, amount)),
            }
        }
    }
    let mut rows: Vec<BreakdownRow> = merged.into_values().collect();
    for r in &mut rows {
        r.cost.sort_by_key(|(c, _)| *c);
    }
    Breakdown {
        group_by: group,
        rows,
    }
}

/// A fine row: the rollups of one value of the fine key.
#[derive(Debug, Default)]
struct FineRow<'a> {
    key: Vec<Val<'a>>,
    deployment: &'a str,
    samples: u64,
    estimated_samples: u64,
    q: Quantities,
    unpriced: Decimal,
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

/// A rollup's value of a dimension.
/// A rollup's value of a dimension.
fn value(d: Dimension, r: &Rollup) -> Val<'_> {
    fn text(s: Option<&str>) -> Val<'_> {
        s.map_or(Val::None, Val::Str)
    }
    let k = &r.key;
    match d {
        Dimension::Deployment => Val::Str(&k.deployment_id),
        Dimension::Tenant => k.owner.map_or(Val::None, Val::Tenant),
        Dimension::Model => Val::Str(&k.model),
        Dimension::Namespace => text(k.placement.namespace()),
        Dimension::Pod => text(k.placement.pod()),
        Dimension::Node => text(k.placement.node()),
        Dimension::Gpu => Val::Str(&k.gpu_uuid),
    }
}
