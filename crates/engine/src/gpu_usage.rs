//! Per-GPU usage in the compact form a breakdown reads ([`crate::breakdown`]): a period's per-GPU rollups with
//! their labels (deployment, owner, model, where they ran) and GPUs interned, and their quantities as integers of
//! 10^-15 ([`CELL_DP`] places, exact: rollups never carry more). About 150 bytes a row, against some 400 for a
//! [`Rollup`] and its strings, so that a store can keep a month of a large fleet decoded.
//!
//! Rows come in chunks (a store's natural unit: one bucket of its cache, or the raw cells of an hour), and the
//! chunks in bucket order: a breakdown walks them once, allocation bucket by allocation bucket.

use std::collections::HashMap;
use std::sync::Arc;

use crate::domain::TenantId;
use crate::fixed;
use crate::rollup::{Placement, Quantities, Rollup, RollupKey, CELL_DP};
use crate::time::Timestamp;

/// The labels of per-GPU rows: what is the same for every hour of one series of samples.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsageLabels {
    pub deployment_id: String,
    pub owner: Option<TenantId>,
    pub model: String,
    pub placement: Placement,
}

/// The six quantities of a rollup as integers of 10^-15, in the order of [`Quantities`]' fields.
pub type FixedQuantities = [i128; 6];

/// One per-GPU rollup: its labels and GPU by index into [`GpuUsage`]'s tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuRow {
    pub bucket_start: Timestamp,
    pub first_window_start: Timestamp,
    pub last_window_start: Timestamp,
    pub labels: u32,
    pub gpu: u32,
    pub samples: u32,
    pub estimated_samples: u32,
    pub q: FixedQuantities,
}

/// A period's per-GPU usage. `labels[i]` is `None` for labels the reader may not see: their rows are skipped.
#[derive(Debug, Clone, Default)]
pub struct GpuUsage {
    pub labels: Vec<Option<Arc<UsageLabels>>>,
    pub gpus: Vec<Arc<str>>,
    /// Chunks of rows, in bucket order: no row of a chunk starts before a row of an earlier chunk.
    pub chunks: Vec<Arc<[GpuRow]>>,
}

/// Why a rollup has no compact row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowError {
    /// A quantity with more than [`CELL_DP`] places, or beyond an `i128` of them (never for real sums).
    Quantity(String),
    /// More than `u32::MAX` samples in one rollup (never for real sums).
    Count(u64),
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowError::Quantity(d) => {
                write!(f, "a rollup quantity {d} has more than {CELL_DP} places")
            }
            RowError::Count(n) => write!(f, "a rollup counts {n} samples, beyond a row's count"),
        }
    }
}

/// A rollup's quantities in fixed point.
pub fn fixed_quantities(q: &Quantities) -> Result<FixedQuantities, RowError> {
    let f = |d: rust_decimal::Decimal| {
        fixed::to_fixed(d, CELL_DP).ok_or_else(|| RowError::Quantity(d.to_string()))
    };
    Ok([
        f(q.gpu_seconds)?,
        f(q.busy_gpu_seconds)?,
        f(q.estimated_gpu_seconds)?,
        f(q.memory_gb_seconds)?,
        f(q.energy_ws)?,
        f(q.storage_gb_seconds)?,
    ])
}

/// Quantities back from fixed point, normalized (no trailing zeros).
pub fn quantities(q: &FixedQuantities) -> Quantities {
    let f = |v: i128| fixed::from_fixed_lossy(v, CELL_DP).normalize();
    Quantities {
        gpu_seconds: f(q[0]),
        busy_gpu_seconds: f(q[1]),
        estimated_gpu_seconds: f(q[2]),
        memory_gb_seconds: f(q[3]),
        energy_ws: f(q[4]),
        storage_gb_seconds: f(q[5]),
    }
}

/// Adds `b` into `a`.
#[inline]
pub fn add_fixed(a: &mut FixedQuantities, b: &FixedQuantities) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += *y;
    }
}

fn count(n: u64) -> Result<u32, RowError> {
    u32::try_from(n).map_err(|_| RowError::Count(n))
}

/// Interns labels and GPUs by value into a [`GpuUsage`]'s tables, and turns rollups into rows.
#[derive(Debug, Default)]
pub struct Interner {
    labels: HashMap<Arc<UsageLabels>, u32>,
    gpus: HashMap<Arc<str>, u32>,
}

impl Interner {
    /// An interner that knows the labels and GPUs of `usage` already (so that rows added by it share them).
    pub fn of(usage: &GpuUsage) -> Interner {
        let mut i = Interner::default();
        for (n, l) in usage.labels.iter().enumerate() {
            if let Some(l) = l {
                i.labels.entry(l.clone()).or_insert(n as u32);
            }
        }
        for (n, g) in usage.gpus.iter().enumerate() {
            i.gpus.entry(g.clone()).or_insert(n as u32);
        }
        i
    }

    pub fn label(&mut self, usage: &mut GpuUsage, labels: UsageLabels) -> u32 {
        if let Some(&n) = self.labels.get(&labels) {
            return n;
        }
        let labels = Arc::new(labels);
        let n = usage.labels.len() as u32;
        usage.labels.push(Some(labels.clone()));
        self.labels.insert(labels, n);
        n
    }

    pub fn gpu(&mut self, usage: &mut GpuUsage, uuid: &str) -> u32 {
        if let Some(&n) = self.gpus.get(uuid) {
            return n;
        }
        let uuid: Arc<str> = Arc::from(uuid);
        let n = usage.gpus.len() as u32;
        usage.gpus.push(uuid.clone());
        self.gpus.insert(uuid, n);
        n
    }

    /// The row of a per-GPU rollup, its labels and GPU interned into `usage`.
    pub fn row(&mut self, usage: &mut GpuUsage, r: &Rollup) -> Result<GpuRow, RowError> {
        let k = &r.key;
        let labels = self.label(
            usage,
            UsageLabels {
                deployment_id: k.deployment_id.clone(),
                owner: k.owner,
                model: k.model.clone(),
                placement: k.placement.clone(),
            },
        );
        Ok(GpuRow {
            bucket_start: k.bucket_start,
            first_window_start: r.first_window_start,
            last_window_start: r.last_window_start,
            labels,
            gpu: self.gpu(usage, &k.gpu_uuid),
            samples: count(r.samples)?,
            estimated_samples: count(r.estimated_samples)?,
            q: fixed_quantities(&r.q)?,
        })
    }
}

impl GpuUsage {
    /// The usage of per-GPU rollups (group rollups are left out), in one chunk sorted by bucket.
    pub fn from_rollups<'a>(
        rollups: impl IntoIterator<Item = &'a Rollup>,
    ) -> Result<GpuUsage, RowError> {
        let mut usage = GpuUsage::default();
        let mut interner = Interner::default();
        let mut rows = Vec::new();
        for r in rollups.into_iter().filter(|r| r.gpus.is_none()) {
            rows.push(interner.row(&mut usage, r)?);
        }
        rows.sort_by_key(|r| r.bucket_start);
        usage.chunks.push(rows.into());
        Ok(usage)
    }

    /// The rows, chunk after chunk.
    pub fn rows(&self) -> impl Iterator<Item = &GpuRow> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hides the rows whose labels `keep` refuses (a reader's scope).
    pub fn retain_labels(&mut self, mut keep: impl FnMut(&UsageLabels) -> bool) {
        for l in &mut self.labels {
            if l.as_deref().is_some_and(|x| !keep(x)) {
                *l = None;
            }
        }
    }

    /// The rows a reader sees, as rollups (in chunk order).
    pub fn to_rollups(&self) -> Vec<Rollup> {
        self.rows()
            .filter_map(|r| {
                let l = self.labels.get(r.labels as usize)?.as_deref()?;
                Some(Rollup {
                    key: RollupKey {
                        gpu_uuid: self.gpus.get(r.gpu as usize)?.to_string(),
                        deployment_id: l.deployment_id.clone(),
                        owner: l.owner,
                        model: l.model.clone(),
                        bucket_start: r.bucket_start,
                        placement: l.placement.clone(),
                    },
                    first_window_start: r.first_window_start,
                    last_window_start: r.last_window_start,
                    samples: u64::from(r.samples),
                    estimated_samples: u64::from(r.estimated_samples),
                    q: quantities(&r.q),
                    gpus: None,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{GpuUsage, RowError};
    use crate::domain::TenantId;
    use crate::rollup::{Placement, Quantities, Rollup, RollupKey};
    use crate::time::Timestamp;

    fn rollup(gpu: &str, pod: &str, bucket: i64, gs: &str) -> Rollup {
        Rollup {
            key: RollupKey {
                gpu_uuid: gpu.into(),
                deployment_id: "d".into(),
                owner: None,
                model: "H100".into(),
                bucket_start: Timestamp(bucket),
                placement: Placement::new("ns", pod, "node", crate::domain::ShareMethod::Exclusive),
            },
            first_window_start: Timestamp(bucket),
            last_window_start: Timestamp(bucket + 60_000),
            samples: 2,
            estimated_samples: 1,
            q: Quantities {
                gpu_seconds: Decimal::from_str(gs).unwrap(),
                energy_ws: Decimal::from_str("0.000000000000001").unwrap(),
                ..Quantities::default()
            },
            gpus: None,
        }
    }

    #[test]
    fn rollups_round_trip_and_share_their_labels() {
        let rs = vec![
            rollup("GPU-b", "p1", 3_600_000, "10.5"),
            rollup("GPU-a", "p1", 0, "3600"),
            rollup("GPU-a", "p2", 0, "1"),
        ];
        let u = GpuUsage::from_rollups(&rs).unwrap();
        assert_eq!(u.labels.len(), 2, "two pods");
        assert_eq!(u.gpus.len(), 2);
        assert_eq!(u.len(), 3);
        let back = u.to_rollups();
        // Sorted by bucket (stable): the two rows of bucket 0 first, in their order.
        assert_eq!(back, vec![rs[1].clone(), rs[2].clone(), rs[0].clone()]);
    }

    #[test]
    fn a_quantity_beyond_fifteen_places_is_refused() {
        let r = rollup("GPU-a", "p", 0, "0.0000000000000001");
        assert!(matches!(
            GpuUsage::from_rollups([&r]),
            Err(RowError::Quantity(_))
        ));
    }

    #[test]
    fn hidden_labels_hide_their_rows() {
        let mut rs = vec![rollup("GPU-a", "p1", 0, "1"), rollup("GPU-a", "p2", 0, "2")];
        rs[1].key.owner = Some(TenantId(uuid::Uuid::from_u128(9)));
        let mut u = GpuUsage::from_rollups(&rs).unwrap();
        u.retain_labels(|l| l.owner.is_some());
        assert_eq!(u.to_rollups(), vec![rs[1].clone()]);
    }
}
