//! GPUs shared by several pods (SPEC §11): the equal shares an allocation rests on. A sample whose share of its
//! GPU was split equally between the pods on it (`share_method: "equal"`: the node gave no per-pod GPU time) is
//! an estimate. It is priced like any other sample, and counted here per deployment and hour (by the hour its
//! window starts in), so that the allocation says how much of each deployment's GPU time rests on it
//! ([`Finding::EqualGpuShares`]). The store keeps the same tally at ingest (raw rows do not keep the method),
//! counting each sample once, as the raw path does.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::{Sample, ShareMethod};
use crate::report::Finding;
use crate::time::{Period, Timestamp};

/// The equal shares of one deployment in one hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EqualShares {
    pub bucket_start: Timestamp,
    pub deployment_id: String,
    pub samples: u64,
    /// Their GPU-seconds: each window's length times its share of the GPU.
    pub gpu_seconds: Decimal,
}

/// The GPU-seconds of a sample: its window times its share of the GPU.
pub fn gpu_seconds(s: &Sample) -> Decimal {
    s.window_ms.seconds() * s.gpu_fraction.get()
}

/// The equal shares among `samples` (in the order received: a re-send of a (GPU, end) already seen counts
/// no more), per hour and deployment, in that order.
pub fn tally<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
    bucket_ms: i64,
) -> Vec<EqualShares> {
    let mut seen = std::collections::HashSet::new();
    let mut sums: BTreeMap<(Timestamp, &str), (u64, Decimal)> = BTreeMap::new();
    for s in samples {
        if !seen.insert((s.gpu_uuid.as_str(), s.end)) || s.share_method != ShareMethod::Equal {
            continue;
        }
        let e = sums
            .entry((s.start().floor_to(bucket_ms), s.deployment_id.as_str()))
            .or_default();
        e.0 += 1;
        e.1 += gpu_seconds(s);
    }
    sums.into_iter()
        .map(|((bucket_start, d), (samples, gpu_seconds))| EqualShares {
            bucket_start,
            deployment_id: d.to_string(),
            samples,
            gpu_seconds,
        })
        .collect()
}

/// One finding per deployment with equal shares in the period's hours, in deployment order.
pub fn findings(rows: &[EqualShares], period: Period) -> Vec<Finding> {
    let mut per: BTreeMap<&str, (u64, Decimal)> = BTreeMap::new();
    for r in rows.iter().filter(|r| period.contains(r.bucket_start)) {
        let e = per.entry(r.deployment_id.as_str()).or_default();
        e.0 += r.samples;
        e.1 += r.gpu_seconds;
    }
    per.into_iter()
        .map(|(d, (samples, gpu_seconds))| Finding::EqualGpuShares {
            deployment_id: d.to_string(),
            samples,
            gpu_seconds: gpu_seconds.normalize(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;

    use super::{findings, tally};
    use crate::domain::{GpuFraction, NonNegative, UnitInterval, WindowMs};
    use crate::domain::{Sample, ShareMethod};
    use crate::report::Finding;
    use crate::time::{Period, Timestamp};

    fn s(gpu: &str, dep: &str, end: i64, f: &str, m: ShareMethod) -> Sample {
        Sample {
            node: "n".into(),
            gpu_uuid: gpu.into(),
            model: "H100".into(),
            namespace: "ns".into(),
            pod: "p".into(),
            deployment_id: dep.into(),
            owner: None,
            window_ms: WindowMs::new(15_000).unwrap(),
            end: Timestamp(end),
            utilization: UnitInterval::new(Decimal::ONE).unwrap(),
            memory_used_gb: NonNegative::ZERO,
            power_w: NonNegative::ZERO,
            storage_gb: NonNegative::ZERO,
            gpu_fraction: GpuFraction::new(f.parse().unwrap()).unwrap(),
            share_method: m,
        }
    }

    #[test]
    fn equal_shares_are_tallied_once_per_hour_and_deployment() {
        let h = 3_600_000;
        let v = [
            s("G/a", "a", 15_000, "0.5", ShareMethod::Equal),
            s("G/a", "a", 15_000, "0.5", ShareMethod::Equal), // a re-send
            s("G", "b", 15_000, "0.5", ShareMethod::Equal),
            s("G", "b", 30_000, "0.25", ShareMethod::Measured),
            s("G/a", "a", h + 15_000, "0.333333", ShareMethod::Equal),
        ];
        let t = tally(&v, h);
        assert_eq!(t.len(), 3, "{t:?}");
        assert_eq!((t[0].deployment_id.as_str(), t[0].samples), ("a", 1));
        assert_eq!(t[0].gpu_seconds, "7.5".parse::<Decimal>().unwrap());
        let p = Period::new(Timestamp(0), Timestamp(2 * h), h).unwrap();
        let f = findings(&t, p);
        assert_eq!(
            f,
            vec![
                Finding::EqualGpuShares {
                    deployment_id: "a".into(),
                    samples: 2,
                    gpu_seconds: "12.499995".parse().unwrap()
                },
                Finding::EqualGpuShares {
                    deployment_id: "b".into(),
                    samples: 1,
                    gpu_seconds: "7.5".parse().unwrap()
                },
            ]
        );
        let first_hour = Period::new(Timestamp(0), Timestamp(h), h).unwrap();
        assert_eq!(findings(&t, first_hour).len(), 2);
    }
}
