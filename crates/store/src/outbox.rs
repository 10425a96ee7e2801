//! The transactional outbox, backend-neutral: which replica rows a change writes, built once here and stored by
//! each backend in its `outbox` table in the same transaction as the change (SQLite in `sqlite::samples` and
//! `sqlite::records`, PostgreSQL in `postgres::samples` and `postgres::records`).
//!
//! What goes in (only when the store was opened with [`crate::rollups::RollupConfig::outbox`]):
//! - a usage event upsert: every event written, as [`clickhouse::event_row`];
//! - a sample ingest: every sample inserted (re-sends are not), as [`clickhouse::sample_row`]; every rollup row
//!   the ingest added to, recomputed or removed, with the row's new full value ([`clickhouse::rollup_row`],
//!   `deleted` for a row a recomputation removed); every gap added or removed ([`clickhouse::gap_row`]).
//!
//! Rows are keyed by their replica identity, so a row written twice in one transaction (a fast-path rollup that
//! a recomputation then replaces) goes out once, with its last value: every row of one transaction carries the
//! same version (the outbox sequence), and two rows of one key and one version would leave ClickHouse to pick.
//! An entry is one table's rows of one transaction, at most [`ROWS_PER_ENTRY`] rows, as a JSON array.
//!
//! Backends insert the entries last in the transaction, after every lock of the change is held: two changes of
//! one row are serialized by those locks, so the later one always gets the larger sequence (version).

use std::collections::BTreeMap;

use eai_engine::domain::{Sample, UsageEvent};
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};
use serde_json::Value;

use crate::clickhouse::{self, OutboxEntry};
use crate::{Result, StoreError};

/// Most rows in one outbox entry.
pub const ROWS_PER_ENTRY: usize = 2000;

/// How many entries the outbox holds and since when the oldest waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboxStats {
    /// Entries not acknowledged yet.
    pub pending: u64,
    /// When the oldest of them was written (milliseconds), if any.
    pub oldest_ms: Option<i64>,
}

/// The replica rows of one transaction, deduplicated by identity (last write wins).
#[derive(Debug, Default)]
pub struct OutboxRows {
    events: BTreeMap<String, Value>,
    samples: BTreeMap<(String, i64), Value>,
    rollups: BTreeMap<RollupKey, Value>,
    gaps: BTreeMap<(String, i64), Value>,
}

impl OutboxRows {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.samples.is_empty()
            && self.rollups.is_empty()
            && self.gaps.is_empty()
    }

    pub fn event(&mut self, e: &UsageEvent) {
        self.events.insert(
            e.event_id.hyphenated().to_string(),
            clickhouse::event_row(e),
        );
    }

    pub fn sample(&mut self, s: &Sample) {
        self.samples
            .insert((s.gpu_uuid.clone(), s.end.0), clickhouse::sample_row(s));
    }

    /// A rollup row with its new full value.
    pub fn rollup(&mut self, r: &Rollup) {
        self.rollups
            .insert(r.key.clone(), clickhouse::rollup_row(r, false));
    }

    /// A rollup row that is gone.
    pub fn rollup_deleted(&mut self, r: &Rollup) {
        self.rollups
            .insert(r.key.clone(), clickhouse::rollup_row(r, true));
    }

    /// A gap row that is gone.
    pub fn gap_deleted(&mut self, g: &Gap) {
        self.gaps
            .insert((g.gpu_uuid.clone(), g.from.0), clickhouse::gap_row(g, true));
    }

    pub fn gap(&mut self, g: &Gap) {
        self.gaps.insert(
            (g.gpu_uuid.clone(), g.from.0),
            clickhouse::gap_row(g, false),
        );
    }

    /// A recomputation of one GPU-hour: the rows stored before (`old`) and after (`new`). Rows of `old` that
    /// `new` does not write again go out as deleted.
    pub fn recomputed(
        &mut self,
        old_rollups: &[Rollup],
        new_rollups: &[Rollup],
        old_gaps: &[Gap],
        new_gaps: &[Gap],
    ) {
        for r in old_rollups {
            if !new_rollups.iter().any(|n| n.key == r.key) {
                self.rollup_deleted(r);
            }
        }
        for r in new_rollups {
            self.rollup(r);
        }
        for g in old_gaps {
            if !new_gaps
                .iter()
                .any(|n| n.gpu_uuid == g.gpu_uuid && n.from == g.from)
            {
                self.gap_deleted(g);
            }
        }
        for g in new_gaps {
            self.gap(g);
        }
    }

    /// The entries to store: `(table, rows as a JSON array)`, at most [`ROWS_PER_ENTRY`] rows each.
    pub fn entries(self) -> Result<Vec<(&'static str, String)>> {
        let tables: [(&'static str, Vec<Value>); 4] = [
            ("usage_events", self.events.into_values().collect()),
            ("gpu_samples", self.samples.into_values().collect()),
            ("gpu_rollups", self.rollups.into_values().collect()),
            ("gpu_gaps", self.gaps.into_values().collect()),
        ];
        let mut out = Vec::new();
        for (table, rows) in tables {
            for chunk in rows.chunks(ROWS_PER_ENTRY) {
                let text = serde_json::to_string(chunk)
                    .map_err(|e| StoreError::Internal(format!("serialize outbox rows: {e}")))?;
                out.push((table, text));
            }
        }
        Ok(out)
    }
}

/// A stored outbox row back as an entry.
pub fn entry_of(seq: i64, table: String, rows: &str) -> Result<OutboxEntry> {
    let seq = u64::try_from(seq)
        .map_err(|_| StoreError::Internal(format!("corrupt outbox.seq {seq}")))?;
    let rows: Vec<Value> = serde_json::from_str(rows)
        .map_err(|e| StoreError::Internal(format!("corrupt outbox rows (seq {seq}): {e}")))?;
    Ok(OutboxEntry { seq, table, rows })
}
