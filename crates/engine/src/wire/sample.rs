//! GPU samples (contract gpu-sample.schema.json): the fields, their [`sample_bounds`], one sample or a batch
//! parsed from [`Loose`] values or [`FlatObject`]s, to the same answer.

use std::str::FromStr;

use rust_decimal::Decimal;

use super::flat::FlatObject;
use super::loose::Loose;
use super::record::{Bounds, Record};
use super::MAX_NAME;
use crate::domain::{
    GpuFraction, NonNegative, Sample, ShareMethod, TenantId, UnitInterval, WindowMs,
};
use crate::error::FieldError;
use crate::time::Timestamp;

/// Bounds of the sample fields. They keep every sum of a fleet's month far inside a decimal's 28 digits.
pub mod sample_bounds {
    use rust_decimal::Decimal;

    use super::Bounds;

    pub fn window() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: true,
            max: Decimal::from(3600),
            dp: 3,
            round: false,
        }
    }
    pub fn utilization() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: false,
            max: Decimal::ONE,
            dp: 6,
            round: true,
        }
    }
    pub fn fraction() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: true,
            max: Decimal::ONE,
            dp: 6,
            round: true,
        }
    }
    pub fn memory_gb() -> Bounds {
        Bounds::non_negative(1 << 20, 10)
    }
    pub fn power_w() -> Bounds {
        Bounds::non_negative(1_000_000, 6)
    }
    pub fn storage_gb() -> Bounds {
        Bounds::non_negative(1_000_000_000, 6)
    }
}

/// The fields a sample may have (any other is refused).
pub const SAMPLE_FIELDS: &[&str] = &[
    "node",
    "gpu_uuid",
    "model",
    "namespace",
    "pod",
    "tenant_id",
    "deployment_id",
    "window_seconds",
    "utilization",
    "memory_used_gb",
    "power_w",
    "timestamp",
    "storage_gb",
    "gpu_fraction",
    "share_method",
];

/// Parses one sample. `now` stands in for a missing `timestamp` (time of receipt).
pub fn parse_sample(v: &Loose, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    sample_of(Record::new(v, "sample").map_err(|e| vec![e])?, now)
}

/// [`parse_sample`] of a sample read as a [`FlatObject`]: the same answer for the same text.
pub fn parse_flat_sample(v: &FlatObject<'_>, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    sample_of(Record::flat(v), now)
}

fn sample_of(mut r: Record<'_>, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    r.deny_unknown(SAMPLE_FIELDS);
    let node = r.req_str("node", MAX_NAME);
    let gpu_uuid = r.req_str("gpu_uuid", MAX_NAME);
    let model = r.req_str("model", MAX_NAME);
    let namespace = r.req_str("namespace", MAX_NAME);
    let pod = r.req_str("pod", MAX_NAME);
    let deployment_id = r.req_str("deployment_id", MAX_NAME);
    let owner = r.opt_parsed("tenant_id", TenantId::from_str);
    let window = r.req_decimal("window_seconds", sample_bounds::window());
    let utilization = r.req_decimal("utilization", sample_bounds::utilization());
    let memory = r.req_decimal("memory_used_gb", sample_bounds::memory_gb());
    let power = r.req_decimal("power_w", sample_bounds::power_w());
    let end = r.opt_parsed("timestamp", Timestamp::parse_rfc3339);
    let storage = r.opt_decimal("storage_gb", sample_bounds::storage_gb());
    let fraction = r.opt_decimal("gpu_fraction", sample_bounds::fraction());
    let share_method = r.opt_parsed("share_method", |v: &str| {
        v.parse::<ShareMethod>().map_err(|()| {
            FieldError::new(
                "share_method",
                "must be one of exclusive, mig, measured, equal",
            )
        })
    });
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(node), Some(gpu_uuid), Some(model), Some(namespace), Some(pod), Some(deployment_id)) =
        (node, gpu_uuid, model, namespace, pod, deployment_id)
    else {
        return Err(vec![FieldError::new("sample", "is incomplete")]);
    };
    let (Some(window), Some(utilization), Some(memory), Some(power)) =
        (window, utilization, memory, power)
    else {
        return Err(vec![FieldError::new("sample", "is incomplete")]);
    };
    // Bounds: above 0, at most 3600 s with at most 3 places, so a whole number of ms in 1..=3,600,000.
    let window_ms = i64::try_from((window * Decimal::from(1000)).trunc())
        .ok()
        .and_then(WindowMs::new)
        .ok_or_else(|| {
            vec![FieldError::new(
                "window_seconds",
                "must be above 0 and at most 3600",
            )]
        })?;
    let fraction = match fraction {
        None => GpuFraction::WHOLE,
        Some(f) => GpuFraction::new(f).ok_or_else(|| {
            vec![FieldError::new(
                "gpu_fraction",
                "must be above 0 and at most 1",
            )]
        })?,
    };
    let to_non_neg = |d: Decimal| NonNegative::new(d).unwrap_or(NonNegative::ZERO);
    Ok(Sample {
        node,
        gpu_uuid,
        model,
        namespace,
        pod,
        deployment_id,
        owner,
        window_ms,
        end: end.unwrap_or(now),
        utilization: UnitInterval::new(utilization)
            .ok_or_else(|| vec![FieldError::new("utilization", "must be between 0 and 1")])?,
        memory_used_gb: to_non_neg(memory),
        power_w: to_non_neg(power),
        storage_gb: to_non_neg(storage.unwrap_or_default()),
        gpu_fraction: fraction,
        share_method: share_method.unwrap_or_default(),
    })
}

/// Parses a batch of samples: all or nothing, with every error located by index.
pub fn parse_samples(values: &[Loose], now: Timestamp) -> Result<Vec<Sample>, Vec<FieldError>> {
    each_sample(values, now, parse_sample)
}

/// [`parse_samples`] of samples read as [`FlatObject`]s.
pub fn parse_flat_samples(
    values: &[FlatObject<'_>],
    now: Timestamp,
) -> Result<Vec<Sample>, Vec<FieldError>> {
    each_sample(values, now, parse_flat_sample)
}

fn each_sample<T>(
    values: &[T],
    now: Timestamp,
    parse: impl Fn(&T, Timestamp) -> Result<Sample, Vec<FieldError>>,
) -> Result<Vec<Sample>, Vec<FieldError>> {
    let mut out = Vec::with_capacity(values.len());
    let mut errors = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match parse(v, now) {
            Ok(s) => out.push(s),
            Err(es) => errors.extend(es.into_iter().map(|e| e.at(i))),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_sample, Loose};
    use crate::domain::{Sample, WindowMs};
    use crate::error::FieldError;
    use crate::time::Timestamp;
    use crate::wire::event::parse_usage_event;
    use crate::wire::record::TenantSource;

    fn sample_with(tenant: &str, window: &str) -> Result<Sample, Vec<FieldError>> {
        let json = format!(
            r#"{{"node": "n", "gpu_uuid": "GPU-1", "model": "H100", "namespace": "ns", "pod": "p",
                "deployment_id": "d", "window_seconds": {window}, "utilization": 0.5,
                "memory_used_gb": 1, "power_w": 100, "timestamp": "2026-01-01T00:00:15Z"{tenant}}}"#
        );
        let v: Loose = serde_json::from_str(&json).expect("json");
        parse_sample(&v, Timestamp(0))
    }

    #[test]
    fn a_sample_window_is_1_ms_to_an_hour() {
        assert_eq!(
            sample_with("", "0.001").expect("1 ms").window_ms,
            WindowMs::MIN
        );
        assert_eq!(
            sample_with("", "3600").expect("1 h").window_ms,
            WindowMs::MAX
        );
        for bad in ["0", "3600.001", "-1", "0.0001"] {
            let errors = sample_with("", bad).expect_err(bad);
            assert_eq!(errors[0].field, "window_seconds", "{bad}");
        }
    }

    #[test]
    fn a_sample_or_an_event_naming_the_platform_tenant_is_refused() {
        let nil = r#", "tenant_id": "00000000-0000-0000-0000-000000000000""#;
        let errors = sample_with(nil, "15").expect_err("reserved tenant");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "tenant_id");
        assert!(
            errors[0].reason.contains("reserved"),
            "{}",
            errors[0].reason
        );
        let event: Loose = serde_json::from_str(
            r#"{"event_id": "6f1c1b8e-5d0a-4c1e-9b7a-2f1d3c4b5a69", "schema_version": "1.0",
                "tenant_id": "00000000-0000-0000-0000-000000000000", "usage_type": "llm_tokens",
                "source": "gateway", "occurred_at": "2026-01-01T00:00:00Z", "units": {"tokens_in": 1}}"#,
        )
        .expect("json");
        let errors = parse_usage_event(&event, TenantSource::Body).expect_err("reserved tenant");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "tenant_id");
    }
}
