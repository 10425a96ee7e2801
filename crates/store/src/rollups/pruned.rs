//! What is kept of a GPU's history once its raw samples pass the retention, so that a sample arriving that late
//! is still merged exactly (counted once, its terms added to the rollups) instead of being acknowledged and
//! dropped. Backend-neutral and pure: each backend stores the pieces, this module decides.
//!
//! A GPU's rollups are the sum of one term per sample and one per pair of consecutive samples (the fill between
//! them: estimated cells or a gap, see [`crate::rollups`]). To merge a late sample `s` that falls between the
//! stored neighbours `P` and `N`, the store takes the term of `(P, N)` out and adds those of `(P, s)`, `s` and
//! `(s, N)`. A pair has a term only when a hole separates its samples (touching or overlapping windows leave
//! nothing to fill), and computing a term needs both samples whole. So pruning keeps:
//!
//! - **edges** whole, as raw rows: every sample with a hole on either side (or no sample before it), the only
//!   ones a pair term can ever need;
//! - of every other pruned sample only its **end**, in a compact per-GPU-hour [`EndSet`]: enough to tell a
//!   re-send (a duplicate, counted once) from a new window, and to find a late sample's neighbours.
//!
//! A late sample needs a pruned neighbour whole exactly when a hole separates them; a neighbour that is not an
//! edge has no hole on its side, so only one case cannot be merged: a sample that leaves a hole after an
//! end-only neighbour (it starts after that neighbour's end while overlapping the next window). Such a sample
//! is refused, never acknowledged ([`crate::rollups::BatchPlan::refused`]).
//!
//! [`classify`] decides, when pruning, which raw rows stay (edges) and which leave only their end ([`prune_gpu`]:
//! one GPU's range); [`Known`] is a late sample's stored neighbour, raw or pruned, as [`crate::rollups`]' batch
//! plan weighs it. A prune itself (its horizon, the hours it re-cuts, each GPU's range) is planned in
//! [`crate::plan::prune`].

use std::collections::BTreeMap;

use eai_engine::domain::Sample;

use crate::{Result, StoreError};

/// Bookkeeping key: the pruning horizon of a database pruned before it kept [`EndSet`]s (its hours below it
/// have no index of their windows: late samples there cannot be merged exactly and are refused).
pub const INDEXED_FROM: &str = "pruned_indexed_from_ms";

/// The ends (milliseconds) of the counted samples of one GPU whose window ends in one bucket and whose raw row
/// was pruned. Stored as runs of equal steps, LEB128 varints: `(step, count)` pairs, the first step counted
/// from the bucket's start; a sampler's regular hour (240 windows 15 s apart) takes six bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndSet {
    ends: Vec<i64>,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl EndSet {
    /// Decodes what [`EndSet::encode`] wrote for the bucket starting at `bucket_ms`.
    pub fn decode(bucket_ms: i64, bytes: &[u8]) -> Result<EndSet> {
        let bad = || StoreError::Internal(format!("corrupt pruned_ends row of bucket {bucket_ms}"));
        let mut ends = Vec::new();
        let (mut at, mut prev) = (0usize, bucket_ms);
        while at < bytes.len() {
            let step = get_varint(bytes, &mut at).ok_or_else(bad)?;
            let n = get_varint(bytes, &mut at).ok_or_else(bad)?;
            let step = i64::try_from(step).map_err(|_| bad())?;
            for _ in 0..n {
                prev = prev.checked_add(step).ok_or_else(bad)?;
                ends.push(prev);
            }
        }
        if ends.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad());
        }
        Ok(EndSet { ends })
    }

    /// The set as stored for the bucket starting at `bucket_ms` (every end must lie at or after it).
    pub fn encode(&self, bucket_ms: i64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut prev = bucket_ms;
        let mut run: Option<(i64, u64)> = None;
        for &e in &self.ends {
            let step = e - prev;
            prev = e;
            run = match run {
                Some((s, n)) if s == step => Some((s, n + 1)),
                Some((s, n)) => {
                    put_varint(&mut out, s.unsigned_abs());
                    put_varint(&mut out, n);
                    Some((step, 1))
                }
                None => Some((step, 1)),
            };
        }
        if let Some((s, n)) = run {
            put_varint(&mut out, s.unsigned_abs());
            put_varint(&mut out, n);
        }
        out
    }

    /// Adds an end; false when it was there already.
    pub fn insert(&mut self, end: i64) -> bool {
        match self.ends.binary_search(&end) {
            Ok(_) => false,
            Err(i) => {
                self.ends.insert(i, end);
                true
            }
        }
    }

    pub fn contains(&self, end: i64) -> bool {
        self.ends.binary_search(&end).is_ok()
    }

    /// The greatest end before `t`.
    pub fn max_below(&self, t: i64) -> Option<i64> {
        let i = self.ends.partition_point(|&e| e < t);
        i.checked_sub(1).map(|i| self.ends[i])
    }

    /// The least end after `t`.
    pub fn min_above(&self, t: i64) -> Option<i64> {
        let i = self.ends.partition_point(|&e| e <= t);
        self.ends.get(i).copied()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.ends.iter().copied()
    }
}

/// Some of the end sets of one GPU, by bucket start: what a backend read around an instant.
pub type EndSets = BTreeMap<i64, EndSet>;

/// What the end sets say about the instant `end`: a pruned sample ends there, and the nearest pruned ends
/// before and after it (as far as the sets read reach: a backend reads the set of `end`'s bucket and the
/// nearest set on each side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndsNear {
    pub contains: bool,
    pub below: Option<i64>,
    pub above: Option<i64>,
}

pub fn ends_near(sets: &EndSets, end: i64) -> EndsNear {
    EndsNear {
        contains: sets.values().any(|s| s.contains(end)),
        below: sets.values().filter_map(|s| s.max_below(end)).max(),
        above: sets.values().filter_map(|s| s.min_above(end)).min(),
    }
}

/// A stored sample as a late one's neighbour: whole (a raw row), or only its end (pruned, not an edge).
/// Two per late sample at most, short-lived: kept unboxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Known {
    Raw(Sample),
    Pruned(i64),
}

impl Known {
    pub fn end(&self) -> i64 {
        match self {
            Known::Raw(s) => s.end.0,
            Known::Pruned(e) => *e,
        }
    }

    pub fn raw(&self) -> Option<&Sample> {
        match self {
            Known::Raw(s) => Some(s),
            Known::Pruned(_) => None,
        }
    }

    /// The nearer of a raw neighbour and a pruned end on the same side (`later`: the greater end is nearer,
    /// as for a neighbour before an instant). They never tie: a sample is either raw or pruned.
    pub fn nearest(raw: Option<Sample>, pruned: Option<i64>, later: bool) -> Option<Known> {
        match (raw, pruned) {
            (Some(r), Some(p)) if (p > r.end.0) == later => Some(Known::Pruned(p)),
            (Some(r), _) => Some(Known::Raw(r)),
            (None, Some(p)) => Some(Known::Pruned(p)),
            (None, None) => None,
        }
    }
}

/// One stored sample of a GPU as pruning sees it: its end, and its window when it is a raw row (`None`: only
/// its end is left, in an [`EndSet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stored {
    pub end: i64,
    pub window: Option<i64>,
}

/// What pruning does with a GPU's raw rows ending in `[lo, cutoff)`: `history` is every stored sample of the
/// GPU that ends in that range, raw or pruned, plus the nearest stored sample before `lo` and the first raw row
/// at or after `cutoff` when there are, sorted by end. Returns the ends of the raw rows in range that are not
/// edges: they leave only their end. An edge (kept whole) is a raw row with a hole before it (or nothing
/// before it) or a hole after it (or nothing after it); a pruned neighbour never leaves a hole on its side.
pub fn classify(history: &[Stored], lo: i64, cutoff: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, x) in history.iter().enumerate() {
        let Some(window) = x.window else { continue };
        if x.end < lo || x.end >= cutoff {
            continue;
        }
        let start = x.end - window;
        let hole_before = match i.checked_sub(1).map(|j| history[j]) {
            None => true,
            Some(p) => p.end < start,
        };
        let hole_after = match history.get(i + 1) {
            None => true,
            Some(Stored {
                end,
                window: Some(w),
            }) => end - w > x.end,
            Some(Stored { window: None, .. }) => false,
        };
        if !hole_before && !hole_after {
            out.push(x.end);
        }
    }
    out
}

/// What pruning `[lo, cutoff)` of one GPU moves out of its raw rows: the ends of the rows that are not edges.
/// `raw`: its raw rows ending in the range, plus the nearest one before `lo` and the first at or after `cutoff`
/// (any order); `sets`: its end sets of the buckets from `lo`'s to `cutoff`'s and the nearest one before.
pub fn to_prune(mut raw: Vec<Stored>, sets: &EndSets, lo: i64, cutoff: i64) -> Vec<i64> {
    let ends: Vec<i64> = sets.values().flat_map(EndSet::iter).collect();
    let below = ends.iter().copied().filter(|e| *e < lo).max();
    raw.extend(
        ends.iter()
            .copied()
            .filter(|e| *e >= lo && *e < cutoff)
            .chain(below)
            .map(|end| Stored { end, window: None }),
    );
    raw.sort();
    // Only the nearest stored sample before `lo` matters.
    if let Some(i) = raw.iter().rposition(|x| x.end < lo) {
        raw.drain(..i);
    }
    classify(&raw, lo, cutoff)
}

/// What pruning one GPU's range writes: the raw rows deleted (by end) and the end sets rewritten (by bucket).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuPrune {
    pub delete: Vec<i64>,
    pub sets: Vec<(i64, EndSet)>,
}

/// Pruning `[lo, cutoff)` of one GPU, from what was read for it ([`to_prune`]'s `raw` and `sets`): the rows
/// that are not edges leave their ends in the end sets of their buckets, and those sets are written back.
pub fn prune_gpu(
    raw: Vec<Stored>,
    mut sets: EndSets,
    lo: i64,
    cutoff: i64,
    bucket_ms: i64,
) -> GpuPrune {
    let delete = to_prune(raw, &sets, lo, cutoff);
    let touched: std::collections::BTreeSet<i64> =
        delete.iter().map(|e| bucket_of(*e, bucket_ms)).collect();
    add_ends(&mut sets, delete.iter().copied(), bucket_ms);
    let sets = touched
        .into_iter()
        .filter_map(|b| sets.remove(&b).map(|set| (b, set)))
        .collect();
    GpuPrune { delete, sets }
}

/// The buckets whose [`EndSet`]s a lookup around `end` reads: its own, and the nearest stored one on each side
/// (a backend asks for the greatest bucket below and the least above).
pub fn bucket_of(end: i64, bucket_ms: i64) -> i64 {
    end.saturating_sub(end.rem_euclid(bucket_ms))
}

/// Adds ends to the sets they belong to (bucket of each end): the sets to write back.
pub fn add_ends(sets: &mut EndSets, ends: impl IntoIterator<Item = i64>, bucket_ms: i64) {
    for e in ends {
        sets.entry(bucket_of(e, bucket_ms)).or_default().insert(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn a_regular_hour_takes_a_few_bytes_and_round_trips() {
        let mut s = EndSet::default();
        for i in 0..240 {
            assert!(s.insert(10 * H + i * 15_000));
        }
        assert!(!s.insert(10 * H), "already there");
        let bytes = s.encode(10 * H);
        assert!(bytes.len() <= 6, "{} bytes", bytes.len());
        assert_eq!(EndSet::decode(10 * H, &bytes).unwrap(), s);
    }

    #[test]
    fn irregular_ends_round_trip_and_answer_neighbours() {
        let mut s = EndSet::default();
        for e in [H + 7, H + 15_007, H + 30_007, H + 31_000, H + 3_599_999] {
            s.insert(e);
        }
        let back = EndSet::decode(H, &s.encode(H)).unwrap();
        assert_eq!(back, s);
        assert!(back.contains(H + 31_000));
        assert_eq!(back.max_below(H + 31_000), Some(H + 30_007));
        assert_eq!(back.min_above(H + 31_000), Some(H + 3_599_999));
        assert_eq!(back.max_below(H + 7), None);
        assert_eq!(back.min_above(H + 3_599_999), None);
        assert!(EndSet::decode(H, &[0x80]).is_err(), "a truncated varint");
        assert!(
            EndSet::decode(H, &[0, 2]).is_err(),
            "two equal ends are corrupt"
        );
    }

    #[test]
    fn edges_are_the_rows_next_to_a_hole() {
        let raw = |end, window| Stored {
            end,
            window: Some(window),
        };
        let pruned = |end| Stored { end, window: None };
        // 15 s windows ending at 15, 30, 45 (contiguous), a hole, then 90, 105; 120 is past the cutoff.
        let h = vec![
            raw(15_000, 15_000),
            raw(30_000, 15_000),
            raw(45_000, 15_000),
            raw(90_000, 15_000),
            raw(105_000, 15_000),
            raw(120_000, 15_000),
        ];
        // 15: nothing before it; 45: hole after; 90: hole before. 30 and 105 leave their end.
        assert_eq!(classify(&h, 0, 120_000), vec![30_000, 105_000]);
        // A pruned end before a row leaves no hole when it touches it, and is never classified itself.
        let h = vec![pruned(15_000), raw(30_000, 15_000), raw(45_000, 15_000)];
        assert_eq!(classify(&h, 20_000, 40_000), vec![30_000]);
        let h = vec![pruned(10_000), raw(30_000, 15_000), raw(45_000, 15_000)];
        assert!(classify(&h, 20_000, 40_000).is_empty(), "hole before 30");
        // A pruned end after a row: no hole on that side.
        let h = vec![raw(15_000, 15_000), raw(30_000, 15_000), pruned(45_000)];
        assert_eq!(classify(&h, 20_000, 50_000), vec![30_000]);
    }

    #[test]
    fn neighbours_pick_the_nearer_of_raw_and_pruned() {
        use eai_engine::domain::{GpuFraction, NonNegative, UnitInterval};
        let s = |end| Sample {
            node: "n".into(),
            gpu_uuid: "GPU-1".into(),
            model: "H100".into(),
            namespace: "ns".into(),
            pod: "p".into(),
            deployment_id: "d".into(),
            owner: None,
            window_ms: eai_engine::domain::WindowMs::new(5).expect("a window"),
            end: eai_engine::time::Timestamp(end),
            utilization: UnitInterval::new(rust_decimal::Decimal::ONE).unwrap(),
            memory_used_gb: NonNegative::ZERO,
            power_w: NonNegative::ZERO,
            storage_gb: NonNegative::ZERO,
            gpu_fraction: GpuFraction::WHOLE,
            share_method: Default::default(),
        };
        assert_eq!(
            Known::nearest(Some(s(10)), Some(20), true),
            Some(Known::Pruned(20))
        );
        assert_eq!(
            Known::nearest(Some(s(30)), Some(20), true).map(|k| k.end()),
            Some(30)
        );
        assert_eq!(
            Known::nearest(Some(s(30)), Some(20), false),
            Some(Known::Pruned(20))
        );
        assert_eq!(Known::nearest(None, None, false), None);
    }
}
