//! `GET /v1/finops/gpu/allocation?from&to`: the allocation of a period, computed by the engine from the stored
//! rollups, every tenant's usage and the policies, then scoped to the caller's tenant.
//!
//! Period rules: `from` and `to` are dates (`YYYY-MM-DD`, UTC) or RFC 3339 date-times. A date `from` starts at
//! its midnight; a date `to` is inclusive of that day (the period ends at the next midnight), so that
//! `from=2026-10-01&to=2026-10-31` is October. A date-time `to` is exclusive. Defaults: `to` = now rounded up
//! to the next hour, `from` = 30 days before `to`. The period is widened to whole allocation buckets, spans at
//! most 366 days and must not be empty.

use axum::extract::State;
use axum::Json;
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::error::FieldError;
use eai_engine::scope::scoped_to;
use eai_engine::time::Timestamp;
use eai_engine::view::AllocationView;
use eai_store::Scope;
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::{now, AppState};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// Length of the default period.
pub const DEFAULT_DAYS: i64 = 30;
/// Periods live between the Unix epoch and the last day of year 9999 (no sample lies outside).
const EARLIEST: Timestamp = Timestamp(0);
const LATEST: Timestamp = Timestamp(253_402_214_400_000); // 9999-12-31T00:00:00Z

#[derive(Debug, Default, Deserialize)]
pub struct AllocationQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<AllocationQuery>,
) -> Result<Json<AllocationView>, ApiError> {
    let scope = auth.scope;
    let (from, to) = requested_period(
        q.from.as_deref(),
        q.to.as_deref(),
        now(),
        st.settings.max_range_days,
    )
    .map_err(|e| ApiError::validation(vec![e]))?;
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let allocation =
        crate::allocation::compute_from(&st.source, st.store.as_ref(), period, config).await?;
    let allocation = match scope {
        Scope::Platform => allocation,
        Scope::Tenant(t) => scoped_to(&allocation, t),
    };
    let view = AllocationView::new(&allocation);
    Ok(Json(view))
}

/// `[from, to)` widened to this server's allocation buckets, with its allocation settings.
pub fn bucketed(
    st: &AppState,
    (from, to): (Timestamp, Timestamp),
) -> Result<(Period, AllocationConfig), ApiError> {
    let config = AllocationConfig {
        bucket_ms: st.settings.allocation_bucket_ms,
        ..AllocationConfig::default()
    };
    let period =
        Period::new(from, to, config.bucket_ms).map_err(|e| ApiError::validation(vec![e]))?;
    Ok((period, config))
}

/// One of the EAI_MAX_CONCURRENT_ALLOCATIONS computations that may run at once (held until dropped); beyond,
/// 429 with Retry-After (counted).
pub fn allocation_slot(st: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    st.limits
        .allocation_slot()
        .inspect_err(|_| st.metrics.rate_limited())
}

/// One bound of the period: a date (a `to` date is inclusive: its next midnight) or an RFC 3339 date-time.
fn bound(s: &str, field: &str, is_to: bool) -> Result<Timestamp, FieldError> {
    let s = s.trim();
    let t = Timestamp::parse_date_or_datetime(s).map_err(|e| e.field(field))?;
    Ok(if is_to && s.len() == 10 {
        Timestamp(t.0 + DAY_MS)
    } else {
        t
    })
}

/// The period `[from, to)` a request asks for (see the module doc for the rules).
pub fn requested_period(
    from: Option<&str>,
    to: Option<&str>,
    now: Timestamp,
    max_days: i64,
) -> Result<(Timestamp, Timestamp), FieldError> {
    let to = match to {
        Some(s) => bound(s, "to", true)?,
        None => now.ceil_to(HOUR_MS),
    };
    let from = match from {
        Some(s) => bound(s, "from", false)?,
        None => Timestamp(to.0 - DEFAULT_DAYS * DAY_MS),
    };
    if from < EARLIEST {
        return Err(FieldError::new("from", "must not be before 1970-01-01"));
    }
    if to > LATEST {
        return Err(FieldError::new("to", "must not be after 9999-12-31"));
    }
    if from >= to {
        return Err(FieldError::new("to", "must be after `from`"));
    }
    if to.0 - from.0 > max_days * DAY_MS {
        return Err(FieldError::new(
            "to",
            format!("the period may span at most {max_days} days"),
        ));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocation::exact_hours;
    use eai_engine::domain::Policy;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).expect("timestamp")
    }

    #[test]
    fn a_date_to_is_inclusive() {
        let (f, t) = requested_period(
            Some("2026-10-01"),
            Some("2026-10-31"),
            ts("2026-11-15T10:00:00Z"),
            366,
        )
        .expect("ok");
        assert_eq!(f.to_string(), "2026-10-01T00:00:00Z");
        assert_eq!(t.to_string(), "2026-11-01T00:00:00Z");
        let (_, t) = requested_period(
            Some("2026-10-01"),
            Some("2026-10-01T12:00:00Z"),
            ts("2026-11-15T10:00:00Z"),
            366,
        )
        .expect("ok");
        assert_eq!(t.to_string(), "2026-10-01T12:00:00Z");
    }

    #[test]
    fn defaults_to_the_last_30_days_up_to_the_next_hour() {
        let (f, t) = requested_period(None, None, ts("2026-11-15T10:20:00Z"), 366).expect("ok");
        assert_eq!(t.to_string(), "2026-11-15T11:00:00Z");
        assert_eq!(f.to_string(), "2026-10-16T11:00:00Z");
    }

    #[test]
    fn rejects_empty_long_and_malformed_periods() {
        let now = ts("2026-11-15T10:20:00Z");
        assert_eq!(
            requested_period(Some("2026-10-02"), Some("2026-10-01"), now, 366)
                .expect_err("empty")
                .field,
            "to"
        );
        assert_eq!(
            requested_period(Some("2025-01-01"), Some("2026-10-01"), now, 366)
                .expect_err("long")
                .field,
            "to"
        );
        assert_eq!(
            requested_period(Some("yesterday"), None, now, 366)
                .expect_err("bad")
                .field,
            "from"
        );
        assert_eq!(
            requested_period(None, Some("2026-13-01"), now, 366)
                .expect_err("bad")
                .field,
            "to"
        );
    }

    #[test]
    fn exact_hours_are_the_hours_where_a_policy_changes_off_the_hour() {
        use eai_engine::wire::{parse_policy, Loose};
        let spec = |from: &str, to: &str| {
            let v: Loose = serde_json::from_str(&format!(
                r#"{{"name":"p","gpu_hourly_cost":"1","effective_from":"{from}","effective_to":"{to}"}}"#
            ))
            .expect("json");
            parse_policy(&v, Timestamp(0)).expect("policy")
        };
        let policies = vec![
            Policy::new(1, spec("2026-10-01T00:00:00Z", "2026-10-01T10:30:00Z")),
            Policy::new(2, spec("2026-10-01T10:30:00Z", "2026-10-02T00:00:00Z")),
        ];
        let period = Period::new(
            ts("2026-10-01T00:00:00Z"),
            ts("2026-10-02T00:00:00Z"),
            HOUR_MS,
        )
        .expect("period");
        assert_eq!(
            exact_hours(&policies, period),
            vec![ts("2026-10-01T10:00:00Z")]
        );
    }
}
