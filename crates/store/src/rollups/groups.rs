//! What an allocation reads, kept up to date beside what it is derived from, in the same transactions, so that a
//! month costs deployments x hours and tenants x hours, not GPU-hours and events:
//!
//! - **Group rollups**: one row per (bucket, deployment, owner, model), the sum of the per-GPU rollup rows of
//!   that key and the set of their GPUs (`eai_engine::rollup::Rollup` with `gpus`). Invariant: the group table
//!   is the `GROUP BY` of the per-GPU rollup table. Ingest keeps it so: every delta the fast path adds into a
//!   per-GPU row is added into its group ([`GroupDeltas`]: sums, earliest and latest window starts, the GPU
//!   joins the set); a GPU-hour recomputed on the slow path marks the groups of its old and new rows stale, and
//!   each stale group is rebuilt from the per-GPU rows of its key ([`rebuild`]), after the batch's other writes.
//! - **Usage claims**: one row per (bucket, deployment, tenant), the sum of `eai_engine::allocate::claim_of`
//!   over the stored usage events of that key ([`ClaimDeltas`]). An event re-sent with the same id replaces
//!   the stored one: its old claim is taken out and its new claim added, in the upsert's transaction.
//!
//! Storage is the backend's business; this module only sums. Exact: group quantities are integers of 10^-15
//! (rollup quantities never carry more places, see `eai_engine::rollup::CELL_DP`), claims integers of 10^-6
//! (usage units carry at most 6 places, see `eai_engine::wire`). [`fixed_bytes`] and friends are the compact
//! encodings a backend may store.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use eai_engine::allocate::UsageClaim;
use eai_engine::domain::TenantId;
use eai_engine::fixed;
use eai_engine::rollup::{GpuSet, GpuSets, Quantities, Rollup, RollupKey, CELL_DP};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;

use crate::codec::corrupt;
use crate::{Result, StoreError};

/// Decimal places of the integers of a claim.
pub const CLAIM_DP: u32 = 6;

/// `d x 10^dp` exactly ([`eai_engine::fixed::to_fixed`]), or an error naming `what` when `d` has more places
/// (or the integer would overflow).
pub fn to_fixed(d: Decimal, dp: u32, what: &str) -> Result<i128> {
    fixed::to_fixed(d, dp).ok_or_else(|| {
        let d = d.normalize();
        if d.scale() > dp {
            StoreError::Internal(format!(
                "{what} {d} has more than {dp} decimal places: it cannot be summed exactly"
            ))
        } else {
            corrupt(what, d)
        }
    })
}

/// The inverse of [`to_fixed`], at `dp` places (not normalized: reads stay cheap, and the value is the same);
/// an error when it does not fit a decimal (never for real sums).
pub fn from_fixed(v: i128, dp: u32, what: &str) -> Result<Decimal> {
    fixed::from_fixed(v, dp).ok_or_else(|| corrupt(what, v))
}

/// The six quantities of a rollup as integers of 10^-15, in the order of [`Quantities`]' fields.
pub type Fixed = [i128; 6];

pub fn fixed_of(q: &Quantities) -> Result<Fixed> {
    eai_engine::gpu_usage::fixed_quantities(q).map_err(|e| StoreError::Internal(e.to_string()))
}

pub fn quantities_of(v: &Fixed) -> Result<Quantities> {
    let f = |x: i128| from_fixed(x, CELL_DP, "group quantity");
    Ok(Quantities {
        gpu_seconds: f(v[0])?,
        busy_gpu_seconds: f(v[1])?,
        estimated_gpu_seconds: f(v[2])?,
        memory_gb_seconds: f(v[3])?,
        energy_ws: f(v[4])?,
        storage_gb_seconds: f(v[5])?,
    })
}

/// Integers as little-endian 16-byte words, one after the other.
pub fn fixed_bytes(v: &[i128]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`fixed_bytes`] for exactly `N` integers.
pub fn fixed_from_bytes<const N: usize>(b: &[u8], what: &str) -> Result<[i128; N]> {
    if b.len() != N * 16 {
        return Err(corrupt(what, format!("{} bytes", b.len())));
    }
    let mut out = [0i128; N];
    for (o, c) in out.iter_mut().zip(b.chunks_exact(16)) {
        let mut w = [0u8; 16];
        w.copy_from_slice(c);
        *o = i128::from_le_bytes(w);
    }
    Ok(out)
}

/// GPU ids (sorted, distinct) as little-endian 4-byte words.
pub fn ids_bytes(ids: &[i64]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(ids.len() * 4);
    for &id in ids {
        let v = u32::try_from(id).map_err(|_| corrupt("gpu id", id))?;
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

pub fn ids_from_bytes(b: &[u8], what: &str) -> Result<Vec<i64>> {
    if !b.len().is_multiple_of(4) {
        return Err(corrupt(what, format!("{} bytes", b.len())));
    }
    Ok(b.chunks_exact(4)
        .map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect())
}

// --- group rollups --------------------------------------------------------------------------------------------

/// What a group row is the sum of. Ordered by bucket first: the order of the table and of writes (so that
/// concurrent transactions lock rows in one order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub bucket_ms: i64,
    pub deployment_id: String,
    pub owner: Option<TenantId>,
    pub model: String,
}

impl GroupKey {
    pub fn of(k: &RollupKey) -> GroupKey {
        GroupKey {
            bucket_ms: k.bucket_start.0,
            deployment_id: k.deployment_id.clone(),
            owner: k.owner,
            model: k.model.clone(),
        }
    }
}

/// One group row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    pub key: GroupKey,
    pub first_window_start_ms: i64,
    pub last_window_start_ms: i64,
    pub samples: u64,
    pub estimated_samples: u64,
    pub q: Fixed,
    /// The GPUs (backend ids), sorted and distinct.
    pub gpus: Vec<i64>,
}

impl GroupRow {
    /// The group row of one per-GPU rollup (or delta).
    pub fn of(gpu_id: i64, r: &Rollup) -> Result<GroupRow> {
        Ok(GroupRow {
            key: GroupKey::of(&r.key),
            first_window_start_ms: r.first_window_start.0,
            last_window_start_ms: r.last_window_start.0,
            samples: r.samples,
            estimated_samples: r.estimated_samples,
            q: fixed_of(&r.q)?,
            gpus: vec![gpu_id],
        })
    }

    /// Adds another row of the same key.
    pub fn add(&mut self, o: &GroupRow) {
        debug_assert_eq!(self.key, o.key);
        self.first_window_start_ms = self.first_window_start_ms.min(o.first_window_start_ms);
        self.last_window_start_ms = self.last_window_start_ms.max(o.last_window_start_ms);
        self.samples += o.samples;
        self.estimated_samples += o.estimated_samples;
        for (a, b) in self.q.iter_mut().zip(o.q) {
            *a += b;
        }
        if o.gpus.iter().any(|g| self.gpus.binary_search(g).is_err()) {
            self.gpus.extend(&o.gpus);
            self.gpus.sort_unstable();
            self.gpus.dedup();
        }
    }
}

/// A batch's deltas, summed per group: `rows` added (the fast path's, and the terms late samples add), then
/// `taken` taken out (the terms late samples take out of a per-GPU row that stays: its GPU stays in the set, and
/// its window starts do not move inward, see `crate::rollups::moves_inward`).
#[derive(Debug, Default)]
pub struct GroupDeltas {
    pub rows: BTreeMap<GroupKey, GroupRow>,
    pub taken: BTreeMap<GroupKey, Taken>,
}

/// Sums taken out of a group row (counts and quantities only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taken {
    pub samples: u64,
    pub estimated_samples: u64,
    pub q: Fixed,
}

impl GroupRow {
    /// Takes `t` out: an error when a count or quantity would go below zero (the group does not hold what its
    /// per-GPU rows say).
    pub fn take(&mut self, t: &Taken) -> Result<()> {
        let bad = || {
            StoreError::Internal(format!(
                "taking a late sample's terms out of the group rollup {:?} would leave it negative",
                self.key
            ))
        };
        self.samples = self.samples.checked_sub(t.samples).ok_or_else(bad)?;
        self.estimated_samples = self
            .estimated_samples
            .checked_sub(t.estimated_samples)
            .ok_or_else(bad)?;
        for (a, b) in self.q.iter_mut().zip(t.q) {
            *a -= b;
            if *a < 0 {
                return Err(bad());
            }
        }
        Ok(())
    }
}

impl GroupDeltas {
    /// A delta added into the per-GPU row of `gpu_id`.
    pub fn add(&mut self, gpu_id: i64, delta: &Rollup) -> Result<()> {
        let row = GroupRow::of(gpu_id, delta)?;
        match self.rows.get_mut(&row.key) {
            Some(r) => r.add(&row),
            None => {
                self.rows.insert(row.key.clone(), row);
            }
        }
        Ok(())
    }

    /// Cells taken out of a per-GPU row that stays.
    pub fn take(&mut self, removed: &Rollup) -> Result<()> {
        let q = fixed_of(&removed.q)?;
        let t = self.taken.entry(GroupKey::of(&removed.key)).or_default();
        t.samples += removed.samples;
        t.estimated_samples += removed.estimated_samples;
        for (a, b) in t.q.iter_mut().zip(q) {
            *a += b;
        }
        Ok(())
    }

    /// The rows to add and the sums to take out, per group (in key order): what a backend applies to a group's
    /// stored row.
    pub fn by_key(&self) -> BTreeMap<&GroupKey, (Option<&GroupRow>, Option<&Taken>)> {
        let mut out: BTreeMap<&GroupKey, (Option<&GroupRow>, Option<&Taken>)> = BTreeMap::new();
        for (k, r) in &self.rows {
            out.entry(k).or_default().0 = Some(r);
        }
        for (k, t) in &self.taken {
            out.entry(k).or_default().1 = Some(t);
        }
        out
    }
}

/// A group row rebuilt from every per-GPU rollup row of its key (`None`: there is none left, delete the row).
pub fn rebuild(rows: impl IntoIterator<Item = (i64, Rollup)>) -> Result<Option<GroupRow>> {
    let mut out: Option<GroupRow> = None;
    for (gpu_id, r) in rows {
        let row = GroupRow::of(gpu_id, &r)?;
        match out.as_mut() {
            Some(o) => o.add(&row),
            None => out = Some(row),
        }
    }
    Ok(out)
}

/// Interns the GPU set bytes of consecutive group rows: rows of a deployment's hours usually hold the same set.
#[derive(Debug, Default)]
pub struct SetCache {
    by_bytes: HashMap<Vec<u8>, GpuSet>,
}

impl SetCache {
    pub fn get(
        &mut self,
        bytes: &[u8],
        names: &HashMap<i64, Arc<str>>,
        sets: &mut GpuSets,
    ) -> Result<GpuSet> {
        if let Some(s) = self.by_bytes.get(bytes) {
            return Ok(s.clone());
        }
        let members = ids_from_bytes(bytes, "group rollup gpus")?
            .into_iter()
            .map(|id| {
                names
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| corrupt("group rollup gpu id", id))
            })
            .collect::<Result<Vec<_>>>()?;
        let set = sets.intern(members);
        self.by_bytes.insert(bytes.to_vec(), set.clone());
        Ok(set)
    }
}

// --- usage claims ---------------------------------------------------------------------------------------------

/// What a claim row is the sum of.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimKey {
    pub bucket_ms: i64,
    pub deployment_id: String,
    pub tenant_id: TenantId,
}

/// One claim row: sums as integers of 10^-6, and how many stored events they add up (0: delete the row).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimSums {
    pub gpu_seconds: i128,
    pub tokens: i128,
    pub events: i64,
}

impl ClaimSums {
    pub fn of(c: &UsageClaim) -> Result<ClaimSums> {
        Ok(ClaimSums {
            gpu_seconds: to_fixed(c.gpu_seconds, CLAIM_DP, "usage gpu_seconds")?,
            tokens: to_fixed(c.tokens, CLAIM_DP, "usage tokens")?,
            events: 1,
        })
    }

    pub fn add(&mut self, o: &ClaimSums) {
        self.gpu_seconds += o.gpu_seconds;
        self.tokens += o.tokens;
        self.events += o.events;
    }

    pub fn sub(&mut self, o: &ClaimSums) {
        self.gpu_seconds -= o.gpu_seconds;
        self.tokens -= o.tokens;
        self.events -= o.events;
    }

    pub fn to_claim(&self, key: &ClaimKey) -> Result<UsageClaim> {
        Ok(UsageClaim {
            deployment_id: key.deployment_id.clone(),
            tenant_id: key.tenant_id,
            bucket_start: Timestamp(key.bucket_ms),
            gpu_seconds: from_fixed(self.gpu_seconds, CLAIM_DP, "usage_claims.gpu_seconds")?,
            tokens: from_fixed(self.tokens, CLAIM_DP, "usage_claims.tokens")?,
        })
    }
}

/// A transaction's changes to the claims, summed per key (added and taken out).
#[derive(Debug, Default)]
pub struct ClaimDeltas {
    pub rows: BTreeMap<ClaimKey, ClaimSums>,
}

impl ClaimDeltas {
    fn entry(&mut self, c: &UsageClaim) -> &mut ClaimSums {
        self.rows
            .entry(ClaimKey {
                bucket_ms: c.bucket_start.0,
                deployment_id: c.deployment_id.clone(),
                tenant_id: c.tenant_id,
            })
            .or_default()
    }

    /// An event stored: its claim, if it makes one, is added.
    pub fn add(&mut self, c: Option<&UsageClaim>) -> Result<()> {
        if let Some(c) = c {
            let s = ClaimSums::of(c)?;
            self.entry(c).add(&s);
        }
        Ok(())
    }

    /// An event replaced: its old claim, if it made one, is taken out.
    pub fn remove(&mut self, c: Option<&UsageClaim>) -> Result<()> {
        if let Some(c) = c {
            let s = ClaimSums::of(c)?;
            self.entry(c).sub(&s);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use eai_engine::rollup::group;

    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }

    /// Group rows as the engine's group rollups, the way a backend reads them (GPU sets through [`SetCache`]).
    fn group_rollups(
        rows: impl IntoIterator<Item = GroupRow>,
        names: &HashMap<i64, Arc<str>>,
    ) -> Result<Vec<Rollup>> {
        let (mut cache, mut sets) = (SetCache::default(), GpuSets::default());
        rows.into_iter()
            .map(|g| {
                Ok(Rollup {
                    key: RollupKey {
                        gpu_uuid: String::new(),
                        deployment_id: g.key.deployment_id.clone(),
                        owner: g.key.owner,
                        model: g.key.model.clone(),
                        bucket_start: Timestamp(g.key.bucket_ms),
                        placement: Default::default(),
                    },
                    first_window_start: Timestamp(g.first_window_start_ms),
                    last_window_start: Timestamp(g.last_window_start_ms),
                    samples: g.samples,
                    estimated_samples: g.estimated_samples,
                    q: quantities_of(&g.q)?,
                    gpus: Some(cache.get(&ids_bytes(&g.gpus)?, names, &mut sets)?),
                })
            })
            .collect()
    }

    fn rollup(gpu: &str, hour: i64, gs: &str, first: i64) -> Rollup {
        let q = Quantities {
            gpu_seconds: d(gs),
            busy_gpu_seconds: d("0.000000000000001"),
            energy_ws: d("123456789.5"),
            ..Quantities::default()
        };
        Rollup {
            key: RollupKey {
                gpu_uuid: gpu.into(),
                deployment_id: "vllm-a".into(),
                owner: None,
                model: "H100".into(),
                bucket_start: Timestamp(hour * 3_600_000),
                placement: Default::default(),
            },
            first_window_start: Timestamp(hour * 3_600_000 + first),
            last_window_start: Timestamp(hour * 3_600_000 + 3_585_000),
            samples: 240,
            estimated_samples: 1,
            q,
            gpus: None,
        }
    }

    #[test]
    fn fixed_point_is_exact_both_ways_and_refuses_what_it_cannot_hold() {
        for s in [
            "0",
            "1.5",
            "3600",
            "0.000000000000001",
            "2500000000.123456789012345",
        ] {
            let v = to_fixed(d(s), CELL_DP, "x").expect("fits");
            assert_eq!(from_fixed(v, CELL_DP, "x").expect("decodes"), d(s));
        }
        assert!(from_fixed(i128::MAX, CELL_DP, "x").is_err());
        assert!(to_fixed(d("0.0000001"), CLAIM_DP, "tokens").is_err());
        let q = fixed_of(&rollup("G", 0, "12.25", 0).q).expect("q");
        assert_eq!(fixed_from_bytes::<6>(&fixed_bytes(&q), "q").expect("q"), q);
        assert!(fixed_from_bytes::<6>(&[0u8; 95], "q").is_err());
        assert_eq!(
            ids_from_bytes(&ids_bytes(&[1, 7, 4_000_000_000]).expect("ids"), "g").expect("ids"),
            vec![1, 7, 4_000_000_000]
        );
        assert!(ids_bytes(&[-1]).is_err());
    }

    #[test]
    fn deltas_and_rebuilds_give_the_engine_grouping() {
        let rows = vec![
            (1, rollup("GPU-a", 0, "10.5", 15_000)),
            (2, rollup("GPU-b", 0, "3600", 0)),
            (1, rollup("GPU-a", 1, "7", 30_000)),
            (3, rollup("GPU-c", 0, "0.000000000000001", 45_000)),
        ];
        let names: HashMap<i64, Arc<str>> = [(1, "GPU-a"), (2, "GPU-b"), (3, "GPU-c")]
            .into_iter()
            .map(|(i, n)| (i, Arc::from(n)))
            .collect();
        let want = group(rows.iter().map(|(_, r)| r.clone()));

        let mut deltas = GroupDeltas::default();
        for (id, r) in &rows {
            deltas.add(*id, r).expect("delta");
        }
        let got = group_rollups(deltas.rows.into_values(), &names).expect("rollups");
        assert_eq!(got, want);

        let rebuilt = rebuild(
            rows.iter()
                .filter(|(_, r)| r.key.bucket_start.0 == 0)
                .cloned(),
        )
        .expect("rebuild")
        .expect("a row");
        assert_eq!(rebuilt.gpus, vec![1, 2, 3]);
        assert_eq!(rebuilt.first_window_start_ms, 0);
        assert_eq!(
            group_rollups([rebuilt], &names).expect("rollup")[0],
            want[0]
        );
        assert_eq!(rebuild(Vec::new()).expect("nothing"), None);
    }

    #[test]
    fn a_replaced_event_moves_its_claim() {
        let t = TenantId::from_str("00000000-0000-4000-8000-000000000001").expect("tenant");
        let claim = |h: i64, tokens: &str| UsageClaim {
            deployment_id: "vllm-a".into(),
            tenant_id: t,
            bucket_start: Timestamp(h * 3_600_000),
            gpu_seconds: Decimal::ZERO,
            tokens: d(tokens),
        };
        let mut c = ClaimDeltas::default();
        c.add(Some(&claim(0, "1000"))).expect("add");
        c.add(Some(&claim(0, "0.5"))).expect("add");
        c.remove(Some(&claim(0, "1000"))).expect("remove");
        c.add(Some(&claim(1, "1000"))).expect("add");
        c.add(None).expect("no claim");
        let rows: Vec<(ClaimKey, ClaimSums)> = c.rows.into_iter().collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1.events, 1);
        assert_eq!(
            rows[0].1.to_claim(&rows[0].0).expect("claim"),
            claim(0, "0.5")
        );
        assert_eq!(
            rows[1].1.to_claim(&rows[1].0).expect("claim"),
            claim(1, "1000")
        );
    }
}
