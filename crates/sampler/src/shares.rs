//! Shared GPUs (SPEC §11): how a device that several pods used in one window is split between them. Pure: the
//! converter ([`crate::convert`]) calls it for each device (or MIG instance) with two or more pods.
//!
//! - **Measured** ([`ShareMethod::Measured`]): every pod's GPU time over the window is known (NVML's per-process
//!   utilization, HAMi's per-container figures). A pod's share is its GPU time; what no pod used is the idle
//!   share. GPU times that add up to more than the device (overlapping samples of NVML) are scaled down to it.
//! - **Equal** ([`ShareMethod::Equal`]): some pod's time is unknown (DCGM exporter repeats the device's values for
//!   every pod that shares it): `1/n` each, no idle share. An estimate: the converter counts it, the control
//!   plane reports it as a finding, never hidden.
//!
//! Shares are in millionths (the API's 6 places of `gpu_fraction`), apportioned by the largest remainder
//! ([`eai_engine::money::apportion`]) so that the pods' shares and the idle share add up to exactly one device;
//! power (and memory, where it is not measured per pod) is apportioned by the same shares, so the parts add up
//! to exactly what the device reported: a shared GPU never draws more than it did.

use eai_engine::money::apportion;
use rust_decimal::Decimal;

use crate::readings::{Readings, Sharer, Workload};

/// How a sample's share of its GPU was obtained (the sample's `share_method`): the engine's.
pub use eai_engine::domain::ShareMethod;

/// One millionth: the unit of a share.
pub const UNIT: Decimal = Decimal::from_parts(1, 0, 0, false, 6);

/// A device's split between its pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub method: ShareMethod,
    /// Each pod's share of the device, in the order of the pods given, in millionths (0 for a pod that measured
    /// no GPU time).
    pub shares: Vec<Decimal>,
    /// The share no pod used (measured only; 0 for an equal split). `shares` and `idle` add up to exactly 1.
    pub idle: Decimal,
}

impl Split {
    /// The shares and then the idle share: the weights to apportion the device's power and memory by.
    pub fn weights(&self) -> Vec<Decimal> {
        let mut w = self.shares.clone();
        w.push(self.idle);
        w
    }
}

/// Splits a device between `pods` (two or more, in a stable order): measured when every pod's GPU time is
/// known, else equal.
pub fn split(pods: &[&Sharer]) -> Split {
    let n = pods.len();
    if n == 0 {
        return Split {
            method: ShareMethod::Equal,
            shares: Vec::new(),
            idle: Decimal::ONE,
        };
    }
    let measured: Option<Vec<Decimal>> = pods
        .iter()
        .map(|p| p.gpu_time.map(|t| t.clamp(Decimal::ZERO, Decimal::ONE)))
        .collect();
    match measured {
        Some(times) => {
            let sum: Decimal = times.iter().sum();
            // The pods' total, at most the device, in millionths (half up).
            let used = sum
                .min(Decimal::ONE)
                .round_dp_with_strategy(6, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
            let shares = apportion(used, &times, UNIT);
            Split {
                method: ShareMethod::Measured,
                idle: Decimal::ONE - used,
                shares,
            }
        }
        None => Split {
            method: ShareMethod::Equal,
            shares: apportion(Decimal::ONE, &vec![Decimal::ONE; n], UNIT),
            idle: Decimal::ZERO,
        },
    }
}

/// `total` (a device's power, W, or memory, MiB) apportioned by `weights` in millionths: the parts add up to
/// `total` rounded to millionths.
pub fn apportion_by(total: Decimal, weights: &[Decimal]) -> Vec<Decimal> {
    let total =
        total.round_dp_with_strategy(6, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    apportion(total, weights, UNIT)
}

/// One pod's measured use of a GPU over a window, from a per-process reader (NVML: each process's GPU time and
/// memory, the process mapped to its pod) or a sharing layer's per-container figures (HAMi).
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The physical GPU's UUID.
    pub uuid: String,
    pub workload: Workload,
    /// GPU time over the window, 0..=1 of the device (a pod's processes summed).
    pub gpu_time: Decimal,
    /// Memory used, MiB, when read.
    pub memory_mib: Option<Decimal>,
}

/// Puts measured uses into the readings of the same window: per whole GPU (MIG instances are left as read),
/// each pod's uses are summed onto its sharer (matched by namespace and pod, and container when both name
/// one); a pod measured but not among the device's sharers becomes one (placed by the device's labels); and
/// once a device has any measurement, its sharers without one are known to have used nothing (0). A device
/// the readings lack is ignored: its figures come from the device source.
pub fn merge(readings: &mut Readings, measured: &[Measured]) {
    for m in measured {
        let Some(d) = readings
            .devices
            .iter_mut()
            .find(|d| d.mig.is_none() && d.uuid == m.uuid)
        else {
            continue;
        };
        let same = |s: &Sharer| {
            s.workload.pod == m.workload.pod
                && s.workload.namespace == m.workload.namespace
                && (s.workload.container.is_none()
                    || m.workload.container.is_none()
                    || s.workload.container == m.workload.container)
        };
        if let Some(s) = d.sharers.iter_mut().find(|s| same(s)) {
            s.gpu_time = Some(s.gpu_time.unwrap_or_default() + m.gpu_time);
            s.memory_mib = match (s.memory_mib, m.memory_mib) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        } else {
            if d.workload.is_none() {
                d.workload = Some(m.workload.clone());
            }
            d.sharers.push(Sharer {
                workload: m.workload.clone(),
                labels: d.labels.clone(),
                gpu_time: Some(m.gpu_time),
                memory_mib: m.memory_mib,
            });
        }
    }
    for d in &mut readings.devices {
        if d.sharers.iter().any(|s| s.gpu_time.is_some()) {
            for s in &mut d.sharers {
                s.gpu_time.get_or_insert(Decimal::ZERO);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use eai_engine::domain::ShareMethod;
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, Strategy};
    use rust_decimal::Decimal;

    use super::{apportion_by, split, UNIT};
    use crate::readings::{Sharer, Workload};

    fn pod(name: &str, gpu_time: Option<Decimal>) -> Sharer {
        Sharer {
            workload: Workload {
                pod: name.into(),
                namespace: Some("ns".into()),
                container: None,
            },
            labels: Arc::from(Vec::new()),
            gpu_time,
            memory_mib: None,
        }
    }

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn three_pods_without_data_get_a_third_each_adding_up_to_one() {
        let pods = [pod("a", None), pod("b", Some(d("0.9"))), pod("c", None)];
        let s = split(&pods.iter().collect::<Vec<_>>());
        assert_eq!(s.method, ShareMethod::Equal);
        assert_eq!(s.shares, vec![d("0.333334"), d("0.333333"), d("0.333333")]);
        assert_eq!(s.idle, Decimal::ZERO);
    }

    #[test]
    fn measured_times_are_the_shares_and_the_rest_is_idle() {
        let pods = [pod("a", Some(d("0.7"))), pod("b", Some(d("0.2")))];
        let s = split(&pods.iter().collect::<Vec<_>>());
        assert_eq!(s.method, ShareMethod::Measured);
        assert_eq!(s.shares, vec![d("0.7"), d("0.2")]);
        assert_eq!(s.idle, d("0.1"));
        // Power split by the same weights adds up to what the device drew.
        assert_eq!(
            apportion_by(d("400"), &s.weights()),
            vec![d("280"), d("80"), d("40")]
        );
    }

    #[test]
    fn times_over_the_device_are_scaled_down_to_it() {
        let pods = [pod("a", Some(d("0.9"))), pod("b", Some(d("0.6")))];
        let s = split(&pods.iter().collect::<Vec<_>>());
        assert_eq!(s.shares, vec![d("0.6"), d("0.4")]);
        assert_eq!(s.idle, Decimal::ZERO);
    }

    fn arb_time() -> impl Strategy<Value = Option<Decimal>> {
        prop::option::weighted(
            0.8,
            (0u32..=1_200_000).prop_map(|m| Decimal::new(m.into(), 6)),
        )
    }

    proptest! {
        /// A device's shares add up to exactly one window, none is negative or over one GPU, and its power
        /// apportioned by them adds up to what it drew.
        #[test]
        fn shares_add_up_to_one_device(
            times in prop::collection::vec(arb_time(), 2..9),
            power in (0u64..2_000_000_000).prop_map(|m| Decimal::new(m as i64, 6)),
        ) {
            let pods: Vec<Sharer> = times.iter().enumerate().map(|(i, t)| pod(&format!("p{i}"), *t)).collect();
            let s = split(&pods.iter().collect::<Vec<_>>());
            prop_assert_eq!(s.shares.len(), pods.len());
            prop_assert_eq!(s.shares.iter().sum::<Decimal>() + s.idle, Decimal::ONE);
            for x in s.shares.iter().chain(std::iter::once(&s.idle)) {
                prop_assert!(*x >= Decimal::ZERO && *x <= Decimal::ONE, "{:?}", s);
                prop_assert_eq!(x.round_dp(6), *x);
            }
            if times.iter().any(Option::is_none) {
                prop_assert_eq!(s.method, ShareMethod::Equal);
                let (lo, hi) = (s.shares.iter().min().unwrap(), s.shares.iter().max().unwrap());
                prop_assert!(hi - lo <= UNIT);
            } else {
                prop_assert_eq!(s.method, ShareMethod::Measured);
            }
            let parts = apportion_by(power, &s.weights());
            prop_assert_eq!(parts.iter().sum::<Decimal>(), power);
        }
    }
}
