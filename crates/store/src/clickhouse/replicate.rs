//! Replication: the replica row of each primary row (what the outbox carries, see [`crate::outbox`]), the
//! delivery of pending outbox entries ([`replicate_once`]) and the copy of what the primary held before the
//! outbox was on ([`backfill`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use eai_engine::allocate::UsageClaim;

use eai_engine::domain::{Sample, ShareMethod, TenantId, UsageEvent};
use eai_engine::report::Gap;
use eai_engine::rollup::Rollup;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{ClickHouse, ClickHouseError, OutboxEntry};

/// `YYYY-MM-DD hh:mm:ss` (UTC), as ClickHouse's DateTime reads it.
fn datetime(t: Timestamp) -> String {
    let s = Timestamp(t.0.div_euclid(1000) * 1000).to_string();
    s.trim_end_matches('Z').replace('T', " ")
}

fn dec(d: Decimal) -> String {
    d.normalize().to_string()
}

fn owner_text(o: Option<TenantId>) -> String {
    o.map(|t| t.to_string()).unwrap_or_default()
}

/// The `gpu_rollups` row of a rollup (`deleted` marks a row a recomputation removed).
pub fn rollup_row(r: &Rollup, deleted: bool) -> Value {
    let p = r.key.placement.0.as_deref();
    json!({
        "placed": u8::from(p.is_some()),
        "namespace": p.map_or("", |l| l.namespace.as_str()),
        "pod": p.map_or("", |l| l.pod.as_str()),
        "node": p.map_or("", |l| l.node.as_str()),
        "share": p.map_or(ShareMethod::Exclusive, |l| l.share).as_str(),
        "bucket_ms": r.key.bucket_start.0,
        "gpu_uuid": r.key.gpu_uuid,
        "deployment_id": r.key.deployment_id,
        "owner": owner_text(r.key.owner),
        "model": r.key.model,
        "first_window_start_ms": r.first_window_start.0,
        "last_window_start_ms": r.last_window_start.0,
        "samples": r.samples,
        "estimated_samples": r.estimated_samples,
        "gpu_seconds": dec(r.q.gpu_seconds),
        "busy_gpu_seconds": dec(r.q.busy_gpu_seconds),
        "estimated_gpu_seconds": dec(r.q.estimated_gpu_seconds),
        "memory_gb_seconds": dec(r.q.memory_gb_seconds),
        "energy_ws": dec(r.q.energy_ws),
        "storage_gb_seconds": dec(r.q.storage_gb_seconds),
        "deleted": u8::from(deleted),
    })
}

/// The name of a GPU set in `gpu_groups.gpu_set` and `gpu_sets`: the hex SHA-256 of its sorted uuids joined by
/// newlines (`lower(hex(SHA256(arrayStringConcat(gpus, '\\n'))))` in ClickHouse).
pub fn gpu_set_name(gpus: &[Arc<str>]) -> String {
    let mut h = Sha256::new();
    for (i, g) in gpus.iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(g.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The `gpu_sets` row of a GPU set (sorted uuids).
pub fn gpu_set_row(gpus: &[Arc<str>]) -> Value {
    json!({ "gpu_set": gpu_set_name(gpus), "gpus": gpus.iter().map(|g| g.as_ref()).collect::<Vec<_>>() })
}

/// The `gpu_groups` row of a group rollup (one of the primary's `deployment_rollups`, its GPU set in `gpus`;
/// `deleted` marks a group the primary removed): its GPU set goes as its name, the set itself as a
/// [`gpu_set_row`].
pub fn group_row(g: &Rollup, deleted: bool) -> Value {
    let gpus = g.gpus.as_deref().unwrap_or(&[]);
    json!({
        "bucket_ms": g.key.bucket_start.0,
        "deployment_id": g.key.deployment_id,
        "owner": owner_text(g.key.owner),
        "model": g.key.model,
        "first_window_start_ms": g.first_window_start.0,
        "last_window_start_ms": g.last_window_start.0,
        "samples": g.samples,
        "estimated_samples": g.estimated_samples,
        "gpu_seconds": dec(g.q.gpu_seconds),
        "busy_gpu_seconds": dec(g.q.busy_gpu_seconds),
        "estimated_gpu_seconds": dec(g.q.estimated_gpu_seconds),
        "memory_gb_seconds": dec(g.q.memory_gb_seconds),
        "energy_ws": dec(g.q.energy_ws),
        "storage_gb_seconds": dec(g.q.storage_gb_seconds),
        "gpu_set": gpu_set_name(gpus),
        "deleted": u8::from(deleted),
    })
}

/// The `usage_claims` row of a claim (`events`: how many events add up to it; `deleted` for a claim no event
/// adds up to any more).
pub fn claim_row(c: &UsageClaim, events: i64, deleted: bool) -> Value {
    json!({
        "bucket_ms": c.bucket_start.0,
        "deployment_id": c.deployment_id,
        "tenant_id": c.tenant_id.to_string(),
        "gpu_seconds": dec(c.gpu_seconds),
        "tokens": dec(c.tokens),
        "events": events,
        "deleted": u8::from(deleted),
    })
}

/// The `gpu_gaps` row of a gap.
pub fn gap_row(g: &Gap, deleted: bool) -> Value {
    json!({
        "gpu_uuid": g.gpu_uuid, "from_ms": g.from.0, "to_ms": g.to.0, "reason": g.reason.as_str(),
        "deployment_id": g.deployment_id, "node": g.node, "deleted": u8::from(deleted),
    })
}

/// The `gpu_samples` row of a sample.
pub fn sample_row(s: &Sample) -> Value {
    json!({
        "gpu_uuid": s.gpu_uuid, "end_ms": s.end.0, "end_at": datetime(s.end), "node": s.node, "model": s.model,
        "namespace": s.namespace, "pod": s.pod, "deployment_id": s.deployment_id, "owner": owner_text(s.owner),
        "window_ms": s.window_ms.get(), "utilization": dec(s.utilization.get()), "memory_used_gb": dec(s.memory_used_gb.get()),
        "power_w": dec(s.power_w.get()), "storage_gb": dec(s.storage_gb.get()), "gpu_fraction": dec(s.gpu_fraction.get()),
        "share": s.share_method.as_str(),
    })
}

/// The `usage_events` row of an event.
pub fn event_row(e: &UsageEvent) -> Value {
    let unit = |n: &str| e.unit(n).map(dec).unwrap_or_default();
    let units: BTreeMap<&str, String> = e
        .units
        .iter()
        .map(|(k, v)| (k.as_str(), dec(v.get())))
        .collect();
    json!({
        "event_id": e.event_id.to_string(),
        "tenant_id": e.tenant_id.to_string(),
        "usage_type": e.usage_type,
        "source": e.source,
        "occurred_at": datetime(e.occurred_at),
        "occurred_at_ms": e.occurred_at.0,
        "deployment_id": e.deployment_id.clone().unwrap_or_default(),
        "model_provider": e.model.as_ref().map(|m| m.provider.clone()).unwrap_or_default(),
        "model_name": e.model.as_ref().map(|m| m.name.clone()).unwrap_or_default(),
        "units": serde_json::to_string(&units).unwrap_or_default(),
        "tokens_in": unit("tokens_in"),
        "tokens_out": unit("tokens_out"),
        "gpu_seconds": unit("gpu_seconds"),
        "gpu_memory_gb_seconds": unit("gpu_memory_gb_seconds"),
        "energy_wh": unit("energy_wh"),
        "cost_amount": e.cost.map(|(a, _)| dec(a.get())).unwrap_or_default(),
        "cost_currency": e.cost.map(|(_, c)| c.to_string()).unwrap_or_default(),
        "allocation_policy_id": e.allocation_policy_id.clone().unwrap_or_default(),
        "project": e.project.clone().unwrap_or_default(),
        "agent_id": e.agent_id.clone().unwrap_or_default(),
        "run_id": e.run_id.clone().unwrap_or_default(),
    })
}

/// A delivery that did not happen: nothing was acknowledged, the entries stay in the outbox for the next try.
#[derive(Debug, thiserror::Error)]
pub enum ReplicateError {
    #[error("reading or acknowledging the outbox failed: {0}")]
    Store(#[from] crate::StoreError),
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
}

/// What one [`replicate_once`] delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delivered {
    pub entries: usize,
    pub rows: usize,
}

/// Delivers up to `limit` pending outbox entries: reads them, applies them to ClickHouse, and acknowledges
/// them only once ClickHouse answered. At least once: a crash or a failure between the insert and the
/// acknowledgement delivers the entries again, which the replica's `ReplacingMergeTree(version)` and `FINAL`
/// reads make harmless.
#[tracing::instrument(name = "replicate", skip_all, fields(limit))]
pub async fn replicate_once(
    store: &dyn crate::Store,
    ch: &ClickHouse,
    limit: u64,
) -> std::result::Result<Delivered, ReplicateError> {
    let pending = store.outbox_pending(limit).await?;
    let Some(last) = pending.last().map(|e| e.seq) else {
        return Ok(Delivered::default());
    };
    ch.apply(&pending).await?;
    store.outbox_ack(last).await?;
    Ok(Delivered {
        entries: pending.len(),
        rows: pending.iter().map(|e| e.rows.len()).sum(),
    })
}

/// The version of every row [`backfill`] writes: below any outbox sequence (both backends number the outbox
/// from 1), so that a row the outbox carries wins over the backfill's copy of it, whichever arrives first.
pub const BACKFILL_VERSION: u64 = 0;

/// What a [`backfill`] has copied so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backfilled {
    /// Steps done and in all.
    pub steps: u64,
    pub total_steps: u64,
    pub samples: u64,
    pub rollups: u64,
    pub gaps: u64,
    pub events: u64,
    /// Group rollups and usage claims.
    pub groups: u64,
    pub claims: u64,
}

impl Backfilled {
    pub fn rows(&self) -> u64 {
        self.samples + self.rollups + self.gaps + self.events + self.groups + self.claims
    }
}

/// Copies what the primary holds of `[from, to)` into the replica (a replica added to an existing database:
/// the outbox only carries changes made while it was on), `step_ms` at a time: each step is one snapshot of
/// the primary ([`crate::ReplicaStore::replica_rows`], [`crate::UsageStore::usage_events`]) and one insert per table.
/// `progress` is called after each step. When `[from, to)` covers all the primary holds
/// ([`crate::ReplicaStore::replica_extent`]), the replica is marked as holding every group row and claim
/// ([`ClickHouse::mark_groups_complete`]): the allocation reads them from then on.
///
/// Safe while servers ingest and replicate, and safe to run again: every row carries [`BACKFILL_VERSION`], so
/// any row the outbox delivers, before or after, replaces the backfill's copy; and a row copied twice is one
/// row (`ReplacingMergeTree`, `FINAL`). What it needs: the outbox on (the servers started with
/// `EAI_CLICKHOUSE_URL`) before it starts, so that every change it does not see is in the outbox; and a replica
/// that holds nothing older than the primary (a replica detached while the primary changed is dropped and
/// backfilled anew: its stale rows carry versions the backfill's cannot beat).
pub async fn backfill(
    store: &dyn crate::Store,
    ch: &ClickHouse,
    from: Timestamp,
    to: Timestamp,
    step_ms: i64,
    mut progress: impl FnMut(&Backfilled),
) -> std::result::Result<Backfilled, ReplicateError> {
    let step_ms = step_ms.max(1);
    let span = to.0.saturating_sub(from.0).max(0);
    let mut done = Backfilled {
        total_steps: u64::try_from((span + step_ms - 1) / step_ms).unwrap_or(0),
        ..Backfilled::default()
    };
    let mut at = from.0;
    while at < to.0 {
        let end = at.saturating_add(step_ms).min(to.0);
        let rows = store.replica_rows(Timestamp(at), Timestamp(end)).await?;
        let events = store
            .usage_events(crate::Scope::Platform, Timestamp(at), Timestamp(end))
            .await?;
        done.steps += 1;
        done.samples += rows.samples.len() as u64;
        done.rollups += rows.rollups.len() as u64;
        done.gaps += rows.gaps.len() as u64;
        done.events += events.len() as u64;
        done.groups += rows.groups.len() as u64;
        done.claims += rows.claims.len() as u64;
        let mut sets = BTreeMap::new();
        for g in &rows.groups {
            let gpus = g.gpus.as_deref().unwrap_or(&[]);
            sets.entry(gpu_set_name(gpus))
                .or_insert_with(|| gpu_set_row(gpus));
        }
        // As outbox entries of sequence BACKFILL_VERSION: `apply` writes it as every row's version.
        let entry = |table: &str, rows: Vec<Value>| OutboxEntry {
            seq: BACKFILL_VERSION,
            table: table.to_string(),
            rows,
        };
        ch.apply(&[
            entry("gpu_samples", rows.samples.iter().map(sample_row).collect()),
            entry(
                "gpu_rollups",
                rows.rollups.iter().map(|r| rollup_row(r, false)).collect(),
            ),
            entry(
                "gpu_gaps",
                rows.gaps.iter().map(|g| gap_row(g, false)).collect(),
            ),
            entry("usage_events", events.iter().map(event_row).collect()),
            entry("gpu_sets", sets.into_values().collect()),
            entry(
                "gpu_groups",
                rows.groups.iter().map(|g| group_row(g, false)).collect(),
            ),
            entry(
                "usage_claims",
                rows.claims
                    .iter()
                    .map(|(c, n)| claim_row(c, *n, false))
                    .collect(),
            ),
        ])
        .await?;
        progress(&done);
        at = end;
    }
    // Every row of the primary copied (the period covers all it holds): the reads may use the group rows.
    let covered = match store.replica_extent().await? {
        Some((lo, hi)) => from <= lo && hi <= to,
        None => true,
    };
    if covered {
        ch.mark_groups_complete().await?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_are_what_clickhouse_reads() {
        assert_eq!(
            datetime(Timestamp(1_790_812_800_123)),
            "2026-10-01 00:00:00"
        );
    }
}
