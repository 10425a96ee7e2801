//! From raw samples to cells: one GPU series at a time, duplicates collapsed, short missing spans filled by
//! linear interpolation (flagged estimated), long ones reported as gaps, every window cut at bucket bounds.

use std::collections::HashMap;

use rust_decimal::Decimal;

use crate::domain::Sample;
use crate::report::{Finding, Gap, GapReason};
use crate::rollup::{Placement, Quantities, Rollup, RollupKey, CELL_DP};
use crate::time::Timestamp;

/// How series are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesConfig {
    /// Cells never straddle a multiple of this (UTC-aligned). Default 1 hour.
    pub bucket_ms: i64,
    /// Missing spans up to this long are interpolated; longer ones are gaps. Default 15 minutes.
    pub max_gap_ms: i64,
}

impl Default for SeriesConfig {
    fn default() -> Self {
        SeriesConfig {
            bucket_ms: 3_600_000,
            max_gap_ms: 15 * 60_000,
        }
    }
}

/// Cells (one per sample or estimated span and bucket; merge them with [`crate::rollup::aggregate`]),
/// the gaps left unfilled, and what was noticed on the way.
#[derive(Debug, Clone, Default)]
pub struct SeriesOutput {
    pub cells: Vec<Rollup>,
    pub gaps: Vec<Gap>,
    pub findings: Vec<Finding>,
    /// Samples dropped as re-sends of an identical sample.
    pub duplicates: u64,
}

/// The values a series has at one edge of a missing span.
#[derive(Debug, Clone, Copy)]
struct Edge {
    utilization: Decimal,
    memory_gb: Decimal,
    power_w: Decimal,
    storage_gb: Decimal,
}

impl Edge {
    fn of(s: &Sample) -> Self {
        Edge {
            utilization: s.utilization.get(),
            memory_gb: s.memory_used_gb.get(),
            power_w: s.power_w.get(),
            storage_gb: s.storage_gb.get(),
        }
    }
}

fn same_series(a: &Sample, b: &Sample) -> bool {
    a.deployment_id == b.deployment_id
        && a.owner == b.owner
        && a.model == b.model
        && a.gpu_fraction == b.gpu_fraction
}

fn same_figures(a: &Sample, b: &Sample) -> bool {
    a == b
}

/// Turns raw samples (any order, any mix of GPUs, re-sends included) into cells.
pub fn cells(samples: &[Sample], cfg: &SeriesConfig) -> SeriesOutput {
    let mut out = SeriesOutput::default();
    let mut by_gpu: HashMap<&str, Vec<&Sample>> = HashMap::new();
    for s in samples {
        by_gpu.entry(s.gpu_uuid.as_str()).or_default().push(s);
    }
    let mut gpus: Vec<&str> = by_gpu.keys().copied().collect();
    gpus.sort_unstable();
    for gpu in gpus {
        let mut series = by_gpu.remove(gpu).unwrap_or_default();
        // Stable: among re-sends of one window, the first received stays first.
        series.sort_by_key(|s| s.end);
        let mut kept: Vec<&Sample> = Vec::with_capacity(series.len());
        for s in series {
            match kept.last() {
                Some(prev) if prev.end == s.end => {
                    out.duplicates += 1;
                    let reported = matches!(out.findings.last(),
                        Some(Finding::ConflictingDuplicate { gpu_uuid, timestamp }) if *gpu_uuid == s.gpu_uuid && *timestamp == s.end);
                    if !same_figures(prev, s) && !reported {
                        out.findings.push(Finding::ConflictingDuplicate {
                            gpu_uuid: s.gpu_uuid.clone(),
                            timestamp: s.end,
                        });
                    }
                }
                _ => kept.push(s),
            }
        }
        for (i, s) in kept.iter().enumerate() {
            if i > 0 {
                fill_between(kept[i - 1], s, cfg, &mut out);
            }
            sample_cells(s, cfg.bucket_ms, &mut out.cells);
        }
    }
    out
}

/// The span between two consecutive samples of a series: interpolated when short and the series is unchanged,
/// a gap otherwise. Overlapping or touching windows leave nothing to fill.
pub fn fill_between(a: &Sample, b: &Sample, cfg: &SeriesConfig, out: &mut SeriesOutput) {
    let (from, to) = (a.end, b.start());
    let hole = to.0 - from.0;
    // A pod's share of a shared GPU stops while the pod is off it: its GPU's time then is in the GPU's other
    // series, so there is nothing to fill and nothing missing.
    if hole <= 0 || crate::domain::is_share_slice(&a.gpu_uuid) {
        return;
    }
    if hole > cfg.max_gap_ms || !same_series(a, b) {
        out.gaps.push(Gap {
            gpu_uuid: a.gpu_uuid.clone(),
            node: a.node.clone(),
            deployment_id: a.deployment_id.clone(),
            from,
            to,
            reason: if hole > cfg.max_gap_ms {
                GapReason::TooLong
            } else {
                GapReason::SeriesChanged
            },
        });
        return;
    }
    let (ea, eb) = (Edge::of(a), Edge::of(b));
    let fraction = a.gpu_fraction.get();
    let g = Decimal::from(hole);
    // Estimated windows: the span measured in the series' own window length, rounded half up.
    let estimated = u64::try_from((hole + a.window_ms.get() / 2) / a.window_ms.get()).unwrap_or(0);
    let mut first = true;
    let placement = placement_of(a);
    for (p, q) in parts(from, to, cfg.bucket_ms) {
        // Average of the linear interpolation over [p, q): its value at the midpoint.
        let mid_offset = Decimal::from(p.0 + q.0 - 2 * from.0) / Decimal::TWO;
        let at = |va: Decimal, vb: Decimal| va + (vb - va) * mid_offset / g;
        let secs = Decimal::new(q.0 - p.0, 3);
        let gs = secs * fraction;
        let mut q_part = Quantities {
            gpu_seconds: gs,
            busy_gpu_seconds: gs * at(ea.utilization, eb.utilization),
            estimated_gpu_seconds: gs,
            memory_gb_seconds: secs * at(ea.memory_gb, eb.memory_gb),
            energy_ws: secs * at(ea.power_w, eb.power_w),
            storage_gb_seconds: secs * at(ea.storage_gb, eb.storage_gb),
        };
        q_part.round(CELL_DP);
        out.cells.push(Rollup {
            key: key_of(a, p.floor_to(cfg.bucket_ms), &placement),
            first_window_start: p,
            last_window_start: p,
            samples: 0,
            estimated_samples: if first { estimated } else { 0 },
            q: q_part,
            gpus: None,
        });
        first = false;
    }
}

fn key_of(s: &Sample, bucket_start: Timestamp, placement: &Placement) -> RollupKey {
    RollupKey {
        placement: placement.clone(),
        gpu_uuid: s.gpu_uuid.clone(),
        deployment_id: s.deployment_id.clone(),
        owner: s.owner,
        model: s.model.clone(),
        bucket_start,
    }
}

/// Where a sample's time ran.
pub fn placement_of(s: &Sample) -> Placement {
    Placement::new(&s.namespace, &s.pod, &s.node, s.share_method)
}

/// What one whole sample adds up to.
pub fn sample_quantities(s: &Sample) -> Quantities {
    let w = s.window_seconds();
    let gs = w * s.gpu_fraction.get();
    Quantities {
        gpu_seconds: gs,
        busy_gpu_seconds: gs * s.utilization.get(),
        estimated_gpu_seconds: Decimal::ZERO,
        memory_gb_seconds: s.memory_used_gb.get() * w,
        energy_ws: s.power_w.get() * w,
        storage_gb_seconds: s.storage_gb.get() * w,
    }
}

/// The cells of one sample: one per bucket its window touches, in proportion to the time in each. The parts
/// add up exactly to the whole (the last part takes the remainder). Each part is priced at its own start: for
/// a window inside one bucket that is the window's start; the part of a window that straddles into the next
/// bucket is priced from that bucket's start, so that every cell of a bucket is priced inside the bucket and a
/// rollup of whole hours gives the raw answer whenever policies change on whole hours.
pub fn sample_cells(s: &Sample, bucket_ms: i64, cells: &mut Vec<Rollup>) {
    let whole = sample_quantities(s);
    let start = s.start();
    let spans = parts(start, s.end, bucket_ms);
    let n = spans.len();
    let mut left = whole;
    let placement = placement_of(s);
    for (i, (p, q)) in spans.into_iter().enumerate() {
        let part = if i + 1 == n {
            left
        } else {
            whole.part(Decimal::from(q.0 - p.0), Decimal::from(s.window_ms.get()))
        };
        left.sub(&part);
        cells.push(Rollup {
            key: key_of(s, p.floor_to(bucket_ms), &placement),
            first_window_start: p,
            last_window_start: p,
            samples: u64::from(i == 0),
            estimated_samples: 0,
            q: part,
            gpus: None,
        });
    }
}

/// [`sample_cells`], summed into the last cell of `cells` where a sample inside one bucket has that cell's key
/// (the next sample of the same GPU, labels and bucket: most samples of a batch), so that a run of such samples
/// makes one cell and one key instead of one each. Only for cells that are summed by key afterwards
/// ([`crate::rollup::aggregate`]) and never cut (a sum of cells cannot be cut at a policy boundary).
pub fn add_sample_cells(s: &Sample, bucket_ms: i64, cells: &mut Vec<Rollup>) {
    let start = s.start();
    let bucket = start.floor_to(bucket_ms);
    if let Some(last) = cells.last_mut() {
        if s.end.0 <= bucket.0 + bucket_ms && has_key_of(&last.key, s, bucket) {
            last.first_window_start = last.first_window_start.min(start);
            last.last_window_start = last.last_window_start.max(start);
            last.samples += 1;
            last.q.add(&sample_quantities(s));
            return;
        }
    }
    sample_cells(s, bucket_ms, cells);
}

/// Whether `key` is the key [`sample_cells`] gives a part of `s` in `bucket`.
fn has_key_of(key: &RollupKey, s: &Sample, bucket: Timestamp) -> bool {
    key.bucket_start == bucket
        && key.gpu_uuid == s.gpu_uuid
        && key.deployment_id == s.deployment_id
        && key.owner == s.owner
        && key.model == s.model
        && key.placement.namespace() == Some(s.namespace.as_str())
        && key.placement.pod() == Some(s.pod.as_str())
        && key.placement.node() == Some(s.node.as_str())
        && key.placement.share() == Some(s.share_method)
}

/// `[from, to)` cut at multiples of `bucket_ms`.
fn parts(from: Timestamp, to: Timestamp, bucket_ms: i64) -> Vec<(Timestamp, Timestamp)> {
    let mut v = Vec::with_capacity(2);
    let mut p = from;
    while p < to {
        let next = Timestamp(p.floor_to(bucket_ms).0 + bucket_ms).min(to);
        v.push((p, next));
        p = next;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::parts;
    use crate::time::Timestamp;

    #[test]
    fn parts_cut_at_bucket_bounds() {
        let h = 3_600_000;
        let v = parts(Timestamp(h - 5000), Timestamp(h + 10_000), h);
        assert_eq!(
            v,
            vec![
                (Timestamp(h - 5000), Timestamp(h)),
                (Timestamp(h), Timestamp(h + 10_000))
            ]
        );
        assert_eq!(parts(Timestamp(0), Timestamp(15_000), h).len(), 1);
    }
}
