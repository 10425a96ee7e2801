//! The parameters both front ends read (the API's query strings, the CLI's flags), parsed and validated in one
//! place, each error a [`FieldError`] naming the parameter:
//!
//! - a period (`from`, `to`): dates (`YYYY-MM-DD`, UTC) or RFC 3339 date-times. A date `from` starts at its
//!   midnight; a date `to` is inclusive of that day (the period ends at the next midnight), so that
//!   `from=2026-10-01&to=2026-10-31` is October. A date-time `to` is exclusive. Defaults: `to` = now rounded up
//!   to the next hour, `from` = [`DEFAULT_DAYS`] before `to`. It spans at most `max_days` and must not be empty;
//! - a breakdown's `group_by` and `filter` (`eai_engine::breakdown::Dimension`);
//! - a Slurm reconciliation's `idle_below`.

use eai_engine::breakdown::Dimension;
use eai_engine::error::FieldError;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// Length of the default period.
pub const DEFAULT_DAYS: i64 = 30;
/// Periods live between the Unix epoch and the last day of year 9999 (no sample lies outside).
const EARLIEST: Timestamp = Timestamp(0);
const LATEST: Timestamp = Timestamp(253_402_214_400_000); // 9999-12-31T00:00:00Z

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

/// The names a dimension goes by, for the errors.
fn dimensions() -> String {
    Dimension::ALL.map(|d| d.name()).join(", ")
}

/// `group_by`: dimensions, comma-separated, each once; none given: the deployment.
pub fn parse_group_by(s: Option<&str>) -> Result<Vec<Dimension>, FieldError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(vec![Dimension::Deployment]);
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let d = Dimension::parse(part).ok_or_else(|| {
            FieldError::new(
                "group_by",
                format!("`{part}` is not a dimension: one of {}", dimensions()),
            )
        })?;
        if out.contains(&d) {
            return Err(FieldError::new(
                "group_by",
                format!("`{part}` is named twice"),
            ));
        }
        out.push(d);
    }
    Ok(out)
}

/// `filter`: `dimension:value` pairs, comma-separated (the value is what follows the first `:`).
pub fn parse_filter(s: Option<&str>) -> Result<Vec<(Dimension, String)>, FieldError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Vec::new());
    };
    s.split(',')
        .map(str::trim)
        .map(|part| {
            let (d, v) = part.split_once(':').ok_or_else(|| {
                FieldError::new(
                    "filter",
                    format!("`{part}` is not `dimension:value` (e.g. `pod:vllm-llama-70b-0`)"),
                )
            })?;
            let d = Dimension::parse(d.trim()).ok_or_else(|| {
                FieldError::new(
                    "filter",
                    format!("`{}` is not a dimension: one of {}", d.trim(), dimensions()),
                )
            })?;
            let v = v.trim();
            if v.is_empty() {
                return Err(FieldError::new("filter", format!("`{part}` has no value")));
            }
            Ok((d, v.to_string()))
        })
        .collect()
}

/// The default `idle_below`: GPUs busy less than a tenth of the time Slurm allocated them.
pub const DEFAULT_IDLE_BELOW: Decimal = Decimal::from_parts(1, 0, 0, false, 1);

/// `idle_below`: a busy share from 0 to 1.
pub fn parse_idle_below(s: Option<&str>) -> Result<Decimal, FieldError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(DEFAULT_IDLE_BELOW);
    };
    s.parse::<Decimal>()
        .ok()
        .filter(|d| *d >= Decimal::ZERO && *d <= Decimal::ONE)
        .ok_or_else(|| FieldError::new("idle_below", "must be a decimal from 0 to 1 (0.1: 10 %)"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
