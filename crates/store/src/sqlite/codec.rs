//! How values live in SQLite columns: the backend-neutral encodings of [`crate::codec`] (exact scaled integers
//! for sample figures, exact decimal text for sums), plus what is SQLite's own: `''` for "no owner" inside keys,
//! and the mapping of SQLite errors to [`StoreError`].

use eai_engine::domain::TenantId;

pub use crate::codec::{corrupt, count, dec_parse, dec_text, now_ms, to_i64};
use crate::{Result, StoreError};

/// Adds context to a SQLite error.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| {
            let text = format!("sqlite: {what}: {e}");
            match &e {
                // SQLITE_FULL: the file system refused to grow the database or its WAL (ENOSPC); SQLite rolled
                // the transaction back.
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
                    StoreError::Full(text)
                }
                _ => StoreError::Internal(text),
            }
        })
    }
}

impl<T> Ctx<T> for std::result::Result<T, rusqlite::types::FromSqlError> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| StoreError::Internal(format!("sqlite: {what}: {e}")))
    }
}

/// True when a SQLite error is a UNIQUE or PRIMARY KEY violation.
pub fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
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
        TenantId::from_stored(s)
            .map(Some)
            .ok_or_else(|| corrupt(what, s))
    }
}

pub fn opt_tenant_parse(s: Option<String>, what: &str) -> Result<Option<TenantId>> {
    s.map(|s| TenantId::from_stored(&s).ok_or_else(|| corrupt(what, s)))
        .transpose()
}
