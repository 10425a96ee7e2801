//! The transactional outbox, backend-neutral: which replica rows a change writes, built once here and stored by
//! each backend in its `outbox` table in the same transaction as the change (SQLite in `sqlite::samples` and
//! `sqlite::records`, PostgreSQL in `postgres::samples` and `postgres::records`).
//!
//! What goes in (only when the store was opened with [`crate::rollups::RollupConfig::outbox`]):
//! - a usage event upsert: every event written, as [`clickhouse::event_row`];
//! - a sample ingest: every sample inserted (re-sends are not), as [`clickhouse::sample_row`]; every rollup row
//!   the ingest added to, recomputed or removed, with the row's new full value ([`clickhouse::rollup_row`],
//!   `deleted` for a row a recomputation removed); every gap added or removed ([`clickhouse::gap_row`]);
//! - every group row (`deployment_rollups`) a sample ingest, a recomputation or a prune wrote or removed, with
//!   its new full value ([`clickhouse::group_row`], `deleted` for a removed one) and its GPU set once per
//!   transaction ([`clickhouse::gpu_set_row`]); every claim row (`usage_claims`) an event upsert changed
//!   ([`clickhouse::claim_row`], `deleted` when no event adds up to it any more).
//!
//! Rows are keyed by their replica identity, so a row written twice in one transaction (a fast-path rollup that
//! a recomputation then replaces) goes out once, with its last value: every row of one transaction carries the
//! same version (the outbox sequence), and two rows of one key and one version would leave ClickHouse to pick.
//! An entry is one table's rows of one transaction, at most [`ROWS_PER_ENTRY`] rows, as a JSON array.
//!
//! Backends insert the entries last in the transaction, after every lock of the change is held: two changes of
//! one row are serialized by those locks, so the later one always gets the larger sequence (version).

use std::collections::BTreeMap;
use std::sync::Arc;

use eai_engine::domain::{Sample, UsageEvent};
use eai_engine::report::Gap;
use eai_engine::rollup::{Placement, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use serde_json::Value;

use crate::clickhouse::{self, OutboxEntry};
use crate::rollups::groups::{quantities_of, ClaimKey, ClaimSums, GroupKey, GroupRow};
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
    groups: BTreeMap<GroupKey, Value>,
    sets: BTreeMap<String, Value>,
    claims: BTreeMap<ClaimKey, Value>,
}

impl OutboxRows {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.samples.is_empty()
            && self.rollups.is_empty()
            && self.gaps.is_empty()
            && self.groups.is_empty()
            && self.claims.is_empty()
    }

    /// A group row (`deployment_rollups`) with its new full value, as the engine's group rollup (its GPU set
    /// in `gpus`). Its GPU set goes once per transaction.
    pub fn group(&mut self, g: &Rollup) {
        let gpus = g.gpus.as_deref().unwrap_or(&[]);
        let name = clickhouse::gpu_set_name(gpus);
        self.sets
            .entry(name)
            .or_insert_with(|| clickhouse::gpu_set_row(gpus));
        self.groups
            .insert(GroupKey::of(&g.key), clickhouse::group_row(g, false));
    }

    /// A group row that is gone.
    pub fn group_deleted(&mut self, key: &GroupKey) -> Result<()> {
        let empty = GroupRow {
            key: key.clone(),
            first_window_start_ms: key.bucket_ms,
            last_window_start_ms: key.bucket_ms,
            samples: 0,
            estimated_samples: 0,
            q: Default::default(),
            gpus: Vec::new(),
        };
        let g = group_rollup(&empty, Vec::new())?;
        self.groups
            .insert(key.clone(), clickhouse::group_row(&g, true));
        Ok(())
    }

    /// A claim row (`usage_claims`) with its new full value; `None`: the row is gone.
    pub fn claim(&mut self, key: &ClaimKey, sums: Option<&ClaimSums>) -> Result<()> {
        let zero = ClaimSums::default();
        let row = clickhouse::claim_row(
            &sums.unwrap_or(&zero).to_claim(key)?,
            sums.map_or(0, |s| s.events),
            sums.is_none(),
        );
        self.claims.insert(key.clone(), row);
        Ok(())
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
        // GPU sets before the groups that name them.
        let tables: [(&'static str, Vec<Value>); 7] = [
            ("usage_events", self.events.into_values().collect()),
            ("gpu_samples", self.samples.into_values().collect()),
            ("gpu_rollups", self.rollups.into_values().collect()),
            ("gpu_gaps", self.gaps.into_values().collect()),
            ("gpu_sets", self.sets.into_values().collect()),
            ("gpu_groups", self.groups.into_values().collect()),
            ("usage_claims", self.claims.into_values().collect()),
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

/// The engine's group rollup of a stored group row, its GPUs' uuids in `gpus` (sorted here).
pub fn group_rollup(r: &GroupRow, mut gpus: Vec<Arc<str>>) -> Result<Rollup> {
    gpus.sort_unstable();
    gpus.dedup();
    let key = &r.key;
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid: String::new(),
            deployment_id: key.deployment_id.clone(),
            owner: key.owner,
            model: key.model.clone(),
            bucket_start: Timestamp(key.bucket_ms),
            placement: Placement::default(),
        },
        first_window_start: Timestamp(r.first_window_start_ms),
        last_window_start: Timestamp(r.last_window_start_ms),
        samples: r.samples,
        estimated_samples: r.estimated_samples,
        q: quantities_of(&r.q)?,
        gpus: Some(gpus.into()),
    })
}

/// A stored outbox row back as an entry.
pub fn entry_of(seq: i64, table: String, rows: &str) -> Result<OutboxEntry> {
    let seq = u64::try_from(seq)
        .map_err(|_| StoreError::Internal(format!("corrupt outbox.seq {seq}")))?;
    let rows: Vec<Value> = serde_json::from_str(rows)
        .map_err(|e| StoreError::Internal(format!("corrupt outbox rows (seq {seq}): {e}")))?;
    Ok(OutboxEntry { seq, table, rows })
}
