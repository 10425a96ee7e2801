//! ClickHouse: the analytics replica of the primary store and the scale-out path for a fleet's months.
//!
//! The primary store (SQLite or PostgreSQL) writes every change the replica needs into a transactional outbox
//! in the same transaction as the change; [`replicate_once`] delivers outbox entries over ClickHouse's HTTP
//! interface at least once, and acknowledges them only after ClickHouse answered. Redelivery is harmless:
//! every table is a `ReplacingMergeTree` keyed by the row's identity with the outbox sequence as version, and
//! readers use `FINAL`.
//!
//! Tables (database from the URL, default `eai`):
//! - `usage_events` (physically `usage_events_by_tenant`): the replica of `eai.usage_events`, keyed by
//!   `(tenant_id, event_id)` like the primary (SPEC §8). A replica created by an older binary, keyed by
//!   `event_id` alone, is copied into it and dropped by [`ClickHouse::migrate`].
//! - `gpu_samples`: raw samples, keyed by `(gpu_uuid, end_ms)`.
//! - `gpu_rollups`, `gpu_gaps`: the primary's exact hourly rollups and reported gaps (rows replaced by a
//!   recomputation carry `deleted = 1`). The allocation read from ClickHouse uses these, so it gives the same
//!   figures as the primary on the same data.
//! - `gpu_groups`, `gpu_sets`, `usage_claims`: the primary's group rollups (per deployment-hour, owner and model;
//!   keyed like `deployment_rollups`, sharded by deployment, their GPU set named by `gpu_set`, a row of
//!   `gpu_sets`) and usage claims (per hour, deployment and tenant), rows the primary removed with `deleted = 1`.
//!   Read by the allocation only when `replica_meta` holds `groups_complete` (see `reads`).
//! - `replica_meta`: facts about the replica itself (key/value).
//! - `gpu_samples_hourly`: a view (not a materialized view: an MV would count a redelivered block twice)
//!   with measured-only hourly sums, for dashboards.
//!
//! Only SQL that ClickHouse 18.16 (Debian 12) and current releases both accept: `ReplacingMergeTree(version)`,
//! `FINAL`, `JSONEachRow` in, `TabSeparated` and `JSONEachRow` out, quantities as `Decimal128(15)` columns
//! (written as JSON numbers, which 18.16 reads exactly and refuses past 15 places; never a `GROUP BY` key:
//! 18.16 crashes grouping by a decimal), no column defaults on insert (18.16 does not apply them to
//! `JSONEachRow`), 64-bit integers read back as strings, no settings (18.16 refuses unknown ones).
//!
//! Layout: this module holds the replica's vocabulary (tables, outbox entries, errors); `client` the HTTP client
//! ([`ClickHouse`]: the URL, statements, inserts, outbox entries applied); `schema` the DDL and the migrations of replicas older binaries created; `replicate` the replica rows of each
//! primary row, [`replicate_once`] and [`backfill`]; `reads` what the allocation reads back (rollups, group
//! rollups, claims, gaps, events); `scratch` (feature `test-support`) a throwaway server for tests.

// A ClickHouse server for tests: not in the shipped binary (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod scratch;

mod client;
mod reads;
mod replicate;
mod schema;

use serde_json::Value;

pub use client::ClickHouse;
pub use replicate::{
    backfill, claim_row, event_row, gap_row, gpu_set_name, gpu_set_row, group_row, replicate_once,
    rollup_row, sample_row, Backfilled, Delivered, ReplicateError, BACKFILL_VERSION,
};

/// A failure talking to ClickHouse.
#[derive(Debug, thiserror::Error)]
pub enum ClickHouseError {
    #[error("EAI_CLICKHOUSE_URL is not a usable http(s) URL: {0}")]
    BadUrl(String),
    #[error("EAI_CLICKHOUSE_CLUSTER `{0}` is not a cluster name (letters, digits, _)")]
    BadCluster(String),
    /// No answer (down, refused, timed out): the outbox keeps the rows until it is back.
    #[error("ClickHouse is unreachable: {0}")]
    Unreachable(String),
    #[error("ClickHouse answered {status}: {message}")]
    Server { status: u16, message: String },
    #[error("unexpected ClickHouse data: {0}")]
    Decode(String),
}

pub type Result<T> = std::result::Result<T, ClickHouseError>;

/// Rows of one replica table, as `JSONEachRow` objects, with the outbox sequence that wrote them.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub seq: u64,
    /// One of [`TABLES`].
    pub table: String,
    pub rows: Vec<Value>,
}

/// The names of the replica tables an outbox entry may target.
pub const TABLES: [&str; 7] = [
    "usage_events",
    "gpu_samples",
    "gpu_rollups",
    "gpu_gaps",
    "gpu_groups",
    "gpu_sets",
    "usage_claims",
];

/// The ClickHouse table that holds a replica table's rows.
pub fn physical(table: &str) -> &str {
    match table {
        "usage_events" => EVENTS_TABLE,
        other => other,
    }
}

/// The places of every quantity column (`Decimal128(15)`): the rollups' 15 ([`eai_engine::rollup::CELL_DP`]);
/// samples (at most 10), units (6) and prices (10) fit too.
pub const DECIMAL_SCALE: u32 = 15;

/// The quantities of a `gpu_rollups` row, in the order of `eai_engine::rollup::Quantities`' fields.
pub const ROLLUP_QUANTITIES: [&str; 6] = [
    "gpu_seconds",
    "busy_gpu_seconds",
    "estimated_gpu_seconds",
    "memory_gb_seconds",
    "energy_ws",
    "storage_gb_seconds",
];

/// The `Decimal128` columns of a replica table: written as JSON numbers (ClickHouse 18.16 reads no quoted
/// decimal from `JSONEachRow`), read back as text.
pub fn decimal_columns(table: &str) -> &'static [&'static str] {
    match table {
        "gpu_rollups" | "gpu_groups" => &ROLLUP_QUANTITIES,
        "usage_claims" => &["gpu_seconds", "tokens"],
        "gpu_samples" => &[
            "utilization",
            "memory_used_gb",
            "power_w",
            "storage_gb",
            "gpu_fraction",
        ],
        "usage_events" | EVENTS_TABLE => &[
            "tokens_in",
            "tokens_out",
            "gpu_seconds",
            "gpu_memory_gb_seconds",
            "energy_wh",
            "cost_amount",
        ],
        _ => &[],
    }
}

/// Usage events keyed by `(tenant_id, event_id)`.
pub const EVENTS_TABLE: &str = "usage_events_by_tenant";

/// The primary's group rollups (`deployment_rollups`), their GPU sets named by `gpu_set` (a row of `gpu_sets`).
pub const GROUPS: &str = "gpu_groups";
/// The primary's usage claims.
pub const CLAIMS: &str = "usage_claims";
/// Facts about the replica itself, key -> value ([`GROUPS_COMPLETE`]).
pub const META: &str = "replica_meta";
/// The `replica_meta` key present when `gpu_groups`, `gpu_sets` and `usage_claims` hold every row of the
/// primary's: the reads use them then, and sum the per-GPU rollups and the events otherwise.
pub const GROUPS_COMPLETE: &str = "groups_complete";
