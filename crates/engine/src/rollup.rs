//! Rollups: the sums of a GPU's activity in one time bucket. The allocation reads these, never raw rows, so a
//! month of a large fleet costs deployments x hours, not samples. Merging rollups is exact (decimal sums).

use std::collections::HashMap;
use std::sync::Arc;

use rust_decimal::Decimal;

use crate::domain::{ShareMethod, TenantId};
use crate::time::Timestamp;

/// What a rollup is the sum of: one GPU (or MIG slice) serving one deployment for one owner from one pod, in one
/// bucket. A group rollup has no GPU and no placement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RollupKey {
    pub gpu_uuid: String,
    pub deployment_id: String,
    pub owner: Option<TenantId>,
    pub model: String,
    pub bucket_start: Timestamp,
    /// Where the time ran (the samples' Kubernetes labels); empty in a group rollup, and in a rollup written
    /// before the stores kept it.
    pub placement: Placement,
}

/// Where a GPU's time ran: the Kubernetes namespace, pod and node its samples named, and how the pod's share of
/// the GPU was obtained (SPEC §11: exclusive, a MIG instance, measured or split equally between the pods of a
/// shared GPU). Shared, since every cell of a sample carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placement(pub Option<Arc<PlacementLabels>>);

/// The labels of a [`Placement`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlacementLabels {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    pub share: ShareMethod,
}

impl Placement {
    pub fn new(namespace: &str, pod: &str, node: &str, share: ShareMethod) -> Placement {
        Placement(Some(Arc::new(PlacementLabels {
            namespace: namespace.to_string(),
            pod: pod.to_string(),
            node: node.to_string(),
            share,
        })))
    }

    pub fn share(&self) -> Option<ShareMethod> {
        self.0.as_deref().map(|l| l.share)
    }

    pub fn namespace(&self) -> Option<&str> {
        self.0.as_deref().map(|l| l.namespace.as_str())
    }

    pub fn pod(&self) -> Option<&str> {
        self.0.as_deref().map(|l| l.pod.as_str())
    }

    pub fn node(&self) -> Option<&str> {
        self.0.as_deref().map(|l| l.node.as_str())
    }
}

/// Decimal places kept in a cell's quantities (inputs are bounded to fit: see [`crate::wire`]).
pub const CELL_DP: u32 = 15;

/// Additive physical quantities. GPU-seconds are weighted by `gpu_fraction`; memory GB-seconds are not
/// (a slice's memory is its own); energy is kept in watt-seconds so that no division happens before pricing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Quantities {
    pub gpu_seconds: Decimal,
    pub busy_gpu_seconds: Decimal,
    pub estimated_gpu_seconds: Decimal,
    pub memory_gb_seconds: Decimal,
    pub energy_ws: Decimal,
    pub storage_gb_seconds: Decimal,
}

impl Quantities {
    pub fn add(&mut self, o: &Quantities) {
        self.gpu_seconds += o.gpu_seconds;
        self.busy_gpu_seconds += o.busy_gpu_seconds;
        self.estimated_gpu_seconds += o.estimated_gpu_seconds;
        self.memory_gb_seconds += o.memory_gb_seconds;
        self.energy_ws += o.energy_ws;
        self.storage_gb_seconds += o.storage_gb_seconds;
    }

    pub fn sub(&mut self, o: &Quantities) {
        self.gpu_seconds -= o.gpu_seconds;
        self.busy_gpu_seconds -= o.busy_gpu_seconds;
        self.estimated_gpu_seconds -= o.estimated_gpu_seconds;
        self.memory_gb_seconds -= o.memory_gb_seconds;
        self.energy_ws -= o.energy_ws;
        self.storage_gb_seconds -= o.storage_gb_seconds;
    }

    /// `self x num / den`, field by field.
    pub fn scaled(&self, num: Decimal, den: Decimal) -> Quantities {
        let s = |v: Decimal| {
            if den.is_zero() {
                Decimal::ZERO
            } else {
                v * num / den
            }
        };
        Quantities {
            gpu_seconds: s(self.gpu_seconds),
            busy_gpu_seconds: s(self.busy_gpu_seconds),
            estimated_gpu_seconds: s(self.estimated_gpu_seconds),
            memory_gb_seconds: s(self.memory_gb_seconds),
            energy_ws: s(self.energy_ws),
            storage_gb_seconds: s(self.storage_gb_seconds),
        }
    }

    /// `self x num / den` rounded to [`CELL_DP`] places: what a part of a split window holds. Rounding here keeps
    /// every stored quantity short, so that sums of them are exact and do not depend on the order of addition.
    pub fn part(&self, num: Decimal, den: Decimal) -> Quantities {
        let mut q = self.scaled(num, den);
        q.round(CELL_DP);
        q
    }

    pub fn round(&mut self, dp: u32) {
        for v in [
            &mut self.gpu_seconds,
            &mut self.busy_gpu_seconds,
            &mut self.estimated_gpu_seconds,
            &mut self.memory_gb_seconds,
            &mut self.energy_ws,
            &mut self.storage_gb_seconds,
        ] {
            *v = v.round_dp(dp);
        }
    }

    /// The six quantities in declaration order (gpu, busy, estimated GPU-seconds, memory GB-seconds, energy
    /// watt-seconds, storage GB-seconds): for storing them as columns.
    pub fn values(&self) -> [Decimal; 6] {
        [
            self.gpu_seconds,
            self.busy_gpu_seconds,
            self.estimated_gpu_seconds,
            self.memory_gb_seconds,
            self.energy_ws,
            self.storage_gb_seconds,
        ]
    }

    pub fn energy_wh(&self) -> Decimal {
        self.energy_ws / Decimal::from(3600)
    }
}

/// The GPUs a group rollup adds up: distinct, sorted. Rollups of the hours in which the same GPUs served share one
/// set, so that counting distinct GPUs over a month costs the sets, not the hours.
pub type GpuSet = Arc<[Arc<str>]>;

/// One bucket of one GPU series, or (a group rollup) the sum of the rollups of several GPUs that share every
/// other part of the key: what the store keeps per deployment-hour, so that an allocation reads deployments x
/// hours, not GPU-hours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollup {
    /// For a group rollup `key.gpu_uuid` is empty and `gpus` names the GPUs.
    pub key: RollupKey,
    /// Earliest and latest start of the windows summed here: the instants at which policies are matched.
    pub first_window_start: Timestamp,
    pub last_window_start: Timestamp,
    /// Samples received (each counted once, in the bucket that holds its window start).
    pub samples: u64,
    /// Samples estimated by interpolation over missing windows.
    pub estimated_samples: u64,
    pub q: Quantities,
    /// `None`: the rollup of the one GPU `key.gpu_uuid`. `Some`: a group rollup of these GPUs.
    pub gpus: Option<GpuSet>,
}

impl Rollup {
    /// Adds another rollup of the same key (for group rollups: of disjoint GPUs; use [`group`] to build them).
    pub fn merge(&mut self, o: &Rollup) {
        debug_assert_eq!(self.key, o.key);
        self.first_window_start = self.first_window_start.min(o.first_window_start);
        self.last_window_start = self.last_window_start.max(o.last_window_start);
        self.samples += o.samples;
        self.estimated_samples += o.estimated_samples;
        self.q.add(&o.q);
    }
}

/// Merges cells (from [`crate::series::cells`]) or partial rollups into one rollup per key, sorted by key.
pub fn aggregate(cells: impl IntoIterator<Item = Rollup>) -> Vec<Rollup> {
    let mut v: Vec<Rollup> = cells.into_iter().collect();
    v.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out: Vec<Rollup> = Vec::with_capacity(v.len() / 4 + 1);
    for c in v {
        match out.last_mut() {
            Some(last) if last.key == c.key => last.merge(&c),
            _ => out.push(c),
        }
    }
    out
}

/// Re-buckets rollups to a coarser bucket (a multiple of theirs) and merges them.
pub fn coarsen(rollups: impl IntoIterator<Item = Rollup>, bucket_ms: i64) -> Vec<Rollup> {
    aggregate(rollups.into_iter().map(|mut r| {
        r.key.bucket_start = r.key.bucket_start.floor_to(bucket_ms);
        r
    }))
}

/// The GPUs of a rollup: its set for a group rollup, else its one GPU.
pub fn gpus_of(r: &Rollup) -> impl Iterator<Item = &str> {
    let (set, one) = match &r.gpus {
        Some(s) => (&s[..], None),
        None => (&[][..], Some(r.key.gpu_uuid.as_str())),
    };
    set.iter().map(|g| &**g).chain(one)
}

/// Interns GPU sets: equal sets come back as one shared [`GpuSet`].
#[derive(Debug, Default)]
pub struct GpuSets {
    seen: HashMap<Vec<Arc<str>>, GpuSet>,
}

impl GpuSets {
    /// The shared set of these GPUs (sorted and deduplicated here).
    pub fn intern(&mut self, mut gpus: Vec<Arc<str>>) -> GpuSet {
        gpus.sort_unstable();
        gpus.dedup();
        if let Some(s) = self.seen.get(&gpus) {
            return s.clone();
        }
        let set: GpuSet = gpus.clone().into();
        self.seen.insert(gpus, set.clone());
        set
    }
}

/// Adds up per-GPU (or group) rollups into one group rollup per (deployment, owner, model, bucket): the sums,
/// the earliest and latest window starts and the set of GPUs. An allocation of the groups equals the allocation
/// of the rollups they were built from (a property the tests check).
pub fn group(rollups: impl IntoIterator<Item = Rollup>) -> Vec<Rollup> {
    let mut by_key: HashMap<RollupKey, (Rollup, Vec<Arc<str>>)> = HashMap::new();
    let mut names: HashMap<String, Arc<str>> = HashMap::new();
    let mut name = |g: &str| -> Arc<str> {
        names
            .entry(g.to_string())
            .or_insert_with(|| Arc::from(g))
            .clone()
    };
    for mut r in rollups {
        let members: Vec<Arc<str>> = gpus_of(&r).map(&mut name).collect();
        r.key.gpu_uuid = String::new();
        r.key.placement = Placement::default();
        r.gpus = None;
        match by_key.get_mut(&r.key) {
            Some((g, m)) => {
                g.merge(&r);
                m.extend(members);
            }
            None => {
                by_key.insert(r.key.clone(), (r, members));
            }
        }
    }
    let mut sets = GpuSets::default();
    let mut out: Vec<Rollup> = by_key
        .into_values()
        .map(|(mut r, m)| {
            r.gpus = Some(sets.intern(m));
            r
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}
