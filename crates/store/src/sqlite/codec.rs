//! How values live in SQLite columns: exact scaled integers for sample figures, exact decimal text for sums,
//! `''` for "no owner" inside keys, and the mapping of SQLite errors to [`StoreError`]. Nothing read from disk
//! is trusted: a value that does not decode is an [`StoreError::Internal`] naming the table and the value.

use std::str::FromStr;

use eai_engine::domain::TenantId;
use rust_decimal::Decimal;

use crate::{Result, StoreError};

/// Decimal places of the integer columns of `gpu_samples`: what the wire keeps (see `eai_engine::wire`).
pub const UTIL_DP: u32 = 6;
pub const MEMORY_DP: u32 = 10;
pub const POWER_DP: u32 = 6;
pub const STORAGE_DP: u32 = 6;
pub const FRACTION_DP: u32 = 6;

/// Adds context to a SQLite error.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| StoreError::Internal(format!("sqlite: {what}: {e}")))
    }
}

pub fn corrupt(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("corrupt value in {what}: `{value}`"))
}

/// True when a SQLite error is a UNIQUE or PRIMARY KEY violation.
pub fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

/// `d x 10^dp` as an integer, exactly, or an error naming `field` when that would lose a digit or overflow.
pub fn to_scaled(d: Decimal, dp: u32, field: &str) -> Result<i64> {
    let n = d.normalize();
    let lossy = || {
        StoreError::Internal(format!(
            "sample {field} {d} cannot be stored exactly (at most {dp} decimal places): validate samples with eai_engine::wire"
        ))
    };
    if n.scale() > dp {
        return Err(lossy());
    }
    let factor = 10i128.checked_pow(dp - n.scale()).ok_or_else(lossy)?;
    let v = n.mantissa().checked_mul(factor).ok_or_else(lossy)?;
    i64::try_from(v).map_err(|_| lossy())
}

/// The inverse of [`to_scaled`], normalized.
pub fn from_scaled(v: i64, dp: u32, what: &str) -> Result<Decimal> {
    Decimal::try_new(v, dp)
        .map(|d| d.normalize())
        .map_err(|_| corrupt(what, v))
}

/// An exact decimal as text (normalized: no trailing zeros).
pub fn dec_text(d: Decimal) -> String {
    d.normalize().to_string()
}

pub fn dec_parse(s: &str, what: &str) -> Result<Decimal> {
    Decimal::from_str(s).map_err(|_| corrupt(what, s))
}

/// The owner inside a key: the tenant uuid, or `''` for a shared deployment (SQLite treats NULLs in a
/// UNIQUE or PRIMARY KEY as all distinct, which would let one key exist twice).
pub fn owner_text(o: Option<TenantId>) -> String {
    o.map(|t| t.to_string()).unwrap_or_default()
}

pub fn owner_parse(s: &str, what: &str) -> Result<Option<TenantId>> {
    if s.is_empty() {
        Ok(None)
    } else {
        TenantId::from_str(s)
            .map(Some)
            .map_err(|_| corrupt(what, s))
    }
}

pub fn opt_tenant_parse(s: Option<String>, what: &str) -> Result<Option<TenantId>> {
    s.map(|s| TenantId::from_str(&s).map_err(|_| corrupt(what, s)))
        .transpose()
}

/// A count read from an INTEGER column.
pub fn count(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| corrupt(what, v))
}

pub fn to_i64(v: u64, what: &str) -> Result<i64> {
    i64::try_from(v)
        .map_err(|_| StoreError::Internal(format!("{what} {v} does not fit in a SQLite integer")))
}

/// Wall-clock milliseconds, for the store's own bookkeeping columns (`created_at_ms`), never for figures.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
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
