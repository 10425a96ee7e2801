//! How values are stored, whatever the backend: sample figures as exact scaled integers, sums as exact
//! decimals, counts as integers. Nothing read back is trusted: a value that does not decode is a
//! [`StoreError::Internal`] naming the column and the value.

use std::str::FromStr;

use eai_engine::domain::{
    GpuFraction, NonNegative, Sample, ShareMethod, TenantId, UnitInterval, WindowMs,
};
use eai_engine::fixed;
use eai_engine::report::GapReason;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;

use crate::{Result, StoreError};

/// Decimal places of the integer columns of `gpu_samples`: what the wire keeps (see `eai_engine::wire`).
pub const UTIL_DP: u32 = 6;
pub const MEMORY_DP: u32 = 10;
pub const POWER_DP: u32 = 6;
pub const STORAGE_DP: u32 = 6;
pub const FRACTION_DP: u32 = 6;

pub fn corrupt(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("corrupt value in {what}: `{value}`"))
}

/// `d x 10^dp` as an integer, exactly, or an error naming `field` when that would lose a digit or overflow
/// ([`eai_engine::fixed::to_fixed`], narrowed to the 64 bits of a sample column).
pub fn to_scaled(d: Decimal, dp: u32, field: &str) -> Result<i64> {
    fixed::to_fixed(d, dp)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| {
            StoreError::Internal(format!(
                "sample {field} {d} cannot be stored exactly (at most {dp} decimal places): validate samples with eai_engine::wire"
            ))
        })
}

/// The inverse of [`to_scaled`], normalized.
pub fn from_scaled(v: i64, dp: u32, what: &str) -> Result<Decimal> {
    fixed::from_fixed(i128::from(v), dp)
        .map(|d| d.normalize())
        .ok_or_else(|| corrupt(what, v))
}

/// An exact decimal as text (normalized: no trailing zeros).
pub fn dec_text(d: Decimal) -> String {
    d.normalize().to_string()
}

pub fn dec_parse(s: &str, what: &str) -> Result<Decimal> {
    Decimal::from_str(s).map_err(|_| corrupt(what, s))
}

/// A count read from an integer column.
pub fn count(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| corrupt(what, v))
}

pub fn to_i64(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v)
        .map_err(|_| StoreError::Internal(format!("{what} {v} does not fit in a 64-bit integer")))
}

/// Wall-clock milliseconds, for the store's own bookkeeping columns (`created_at_ms`), never for figures.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The integer columns of one raw sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    pub window_ms: i64,
    pub util_e6: i64,
    pub mem_e10: i64,
    pub power_e6: i64,
    pub storage_e6: i64,
    pub fraction_e6: i64,
}

impl Figures {
    /// Exactly what will be stored, or an error if a figure cannot be stored without loss.
    pub fn encode(s: &Sample) -> Result<Figures> {
        Ok(Figures {
            window_ms: s.window_ms.get(),
            util_e6: to_scaled(s.utilization.get(), UTIL_DP, "utilization")?,
            mem_e10: to_scaled(s.memory_used_gb.get(), MEMORY_DP, "memory_used_gb")?,
            power_e6: to_scaled(s.power_w.get(), POWER_DP, "power_w")?,
            storage_e6: to_scaled(s.storage_gb.get(), STORAGE_DP, "storage_gb")?,
            fraction_e6: to_scaled(s.gpu_fraction.get(), FRACTION_DP, "gpu_fraction")?,
        })
    }

    /// The integer columns of a `gpu_samples` row in the tables' order: GPU id, window end, series id, then
    /// the figures (both backends bind them in this order).
    pub fn row(&self, gpu_id: i64, end_ms: i64, series_id: i64) -> [i64; 9] {
        [
            gpu_id,
            end_ms,
            series_id,
            self.window_ms,
            self.util_e6,
            self.mem_e10,
            self.power_e6,
            self.storage_e6,
            self.fraction_e6,
        ]
    }
}

/// The labels of a sample, as a backend's `series` table interns them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels {
    pub deployment_id: String,
    pub owner: Option<TenantId>,
    pub model: String,
    pub namespace: String,
    pub pod: String,
    pub node: String,
    pub share: ShareMethod,
}

impl Labels {
    pub fn of(s: &Sample) -> Labels {
        LabelsRef::of(s).to_owned()
    }

    pub fn as_ref(&self) -> LabelsRef<'_> {
        LabelsRef {
            deployment_id: &self.deployment_id,
            owner: self.owner,
            model: &self.model,
            namespace: &self.namespace,
            pod: &self.pod,
            node: &self.node,
            share: self.share,
        }
    }
}

/// [`Labels`] borrowed from a sample: the key of per-row maps in ingest, which allocates nothing (owned labels
/// cost six strings a row). Fields in [`Labels`]' order, so both sort alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelsRef<'a> {
    pub deployment_id: &'a str,
    pub owner: Option<TenantId>,
    pub model: &'a str,
    pub namespace: &'a str,
    pub pod: &'a str,
    pub node: &'a str,
    pub share: ShareMethod,
}

impl<'a> LabelsRef<'a> {
    pub fn of(s: &'a Sample) -> LabelsRef<'a> {
        LabelsRef {
            deployment_id: &s.deployment_id,
            owner: s.owner,
            model: &s.model,
            namespace: &s.namespace,
            pod: &s.pod,
            node: &s.node,
            share: s.share_method,
        }
    }

    pub fn to_owned(&self) -> Labels {
        Labels {
            deployment_id: self.deployment_id.to_string(),
            owner: self.owner,
            model: self.model.to_string(),
            namespace: self.namespace.to_string(),
            pod: self.pod.to_string(),
            node: self.node.to_string(),
            share: self.share,
        }
    }
}

/// A stored sample read back.
pub fn decode(gpu_uuid: &str, end_ms: i64, f: &Figures, l: Labels) -> Result<Sample> {
    let what = "gpu_samples";
    let window_ms =
        WindowMs::new(f.window_ms).ok_or_else(|| corrupt("gpu_samples.window_ms", f.window_ms))?;
    Ok(Sample {
        node: l.node,
        gpu_uuid: gpu_uuid.to_string(),
        model: l.model,
        namespace: l.namespace,
        pod: l.pod,
        deployment_id: l.deployment_id,
        owner: l.owner,
        window_ms,
        end: Timestamp(end_ms),
        utilization: UnitInterval::new(from_scaled(f.util_e6, UTIL_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.util_e6", f.util_e6))?,
        memory_used_gb: NonNegative::new(from_scaled(f.mem_e10, MEMORY_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.mem_e10", f.mem_e10))?,
        power_w: NonNegative::new(from_scaled(f.power_e6, POWER_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.power_e6", f.power_e6))?,
        storage_gb: NonNegative::new(from_scaled(f.storage_e6, STORAGE_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.storage_e6", f.storage_e6))?,
        gpu_fraction: GpuFraction::new(from_scaled(f.fraction_e6, FRACTION_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.fraction_e6", f.fraction_e6))?,
        share_method: l.share,
    })
}

/// A stored share method back (the text of [`ShareMethod::as_str`], the series' `share`).
pub fn share_method(s: &str) -> Result<ShareMethod> {
    s.parse().map_err(|()| corrupt("series.share", s))
}

/// A stored gap reason back (the text of [`GapReason::as_str`]).
pub fn gap_reason(s: &str) -> Result<GapReason> {
    match s {
        "too_long" => Ok(GapReason::TooLong),
        "series_changed" => Ok(GapReason::SeriesChanged),
        other => Err(corrupt("gaps.reason", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }

    #[test]
    fn scaled_integers_are_exact_both_ways() {
        for (s, dp, v) in [
            ("0.82", 6, 820_000),
            ("61.2", 10, 612_000_000_000),
            ("0", 6, 0),
            ("1.000000", 6, 1_000_000),
        ] {
            assert_eq!(to_scaled(d(s), dp, "x").expect("fits"), v);
            assert_eq!(from_scaled(v, dp, "x").expect("decodes"), d(s));
        }
        assert_eq!(
            to_scaled(d("1048576.0009765625"), 10, "m").expect("fits"),
            10_485_760_009_765_625
        );
    }

    #[test]
    fn a_digit_that_cannot_be_stored_is_an_error_not_a_rounding() {
        assert!(to_scaled(d("0.1234567"), 6, "utilization").is_err());
        assert!(
            to_scaled(d("100000000000"), 10, "memory").is_err(),
            "overflow"
        );
    }

    #[test]
    fn decimal_text_round_trips_exactly() {
        let x = d("123.456000000000000789");
        assert_eq!(dec_parse(&dec_text(x), "t").expect("parses"), x);
        assert!(dec_parse("1.2.3", "t").is_err());
    }
}
