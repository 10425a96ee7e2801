//! The allocation batch: each tenant's allocated GPU cost of a calendar month recorded as `gpu_local` usage
//! events (one per tenant, deployment, policy and month, ids derived from those keys), so that GPU cost sits
//! beside token cost in every FinOps report and replicates to ClickHouse with the other usage events.
//!
//! A month is allocated over its closed hours (up to the current hour for the running month). A re-run
//! replaces the month's events; an event of an earlier run that the new run no longer produces (a corrected
//! policy, a re-attributed deployment) is replaced by a zeroed one, never left to double the cost.
//! `serve` runs the batch every hour for the running month, and for the previous month during the first three
//! days of a month (late samples); `eai-gpu allocate --period YYYY-MM` runs it on demand.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::batch::{gpu_local_events, month, month_of, GPU_LOCAL};
use eai_engine::domain::{NonNegative, ALLOCATION_SOURCE};
use eai_engine::time::Timestamp;
use eai_store::{AuditDraft, Scope, Store};

use crate::allocation::AllocationStore;
use serde_json::json;

use crate::allocation::Source;
use crate::clock::Clock;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// What one run wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOutcome {
    pub period: String,
    pub from: Timestamp,
    pub to: Timestamp,
    /// Events written for the tenants' allocated cost.
    pub events: usize,
    /// Events of an earlier run replaced by zeroed ones.
    pub zeroed: usize,
}

/// Allocates month `period` (`YYYY-MM`) over its closed hours at `now`, from the primary, and records the
/// `gpu_local` events.
pub async fn run_month(
    store: &(impl AllocationStore + ?Sized),
    period: &str,
    now: Timestamp,
    config: AllocationConfig,
) -> anyhow::Result<BatchOutcome> {
    run_month_from(&Source::Primary, store, period, now, config).await
}

/// Like [`run_month`], reading usage from `source` (the events are always written to the primary `store`).
#[tracing::instrument(name = "allocation_batch.run", skip_all, fields(period = %period, instance = crate::leader::instance()))]
pub async fn run_month_from(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: &str,
    now: Timestamp,
    config: AllocationConfig,
) -> anyhow::Result<BatchOutcome> {
    let Some((start, end)) = month(period) else {
        bail!("the period must be a month YYYY-MM, not {period:?}");
    };
    let to = end.min(now.floor_to(HOUR_MS));
    if to <= start {
        bail!("{period} has no closed hour yet");
    }
    // With the line of its end, an operator (and the kill -9 test) can tell a run that never finished.
    tracing::info!(period = %period, "allocation batch started");
    let p = Period::new(start, to, config.bucket_ms).map_err(|e| anyhow::anyhow!(e.reason))?;
    let allocation = crate::allocation::compute_from(source, store, p, config)
        .await
        .context("cannot allocate the period")?;
    let mut events = gpu_local_events(&allocation, period);
    // Every event of an earlier run of this period: those not produced again are zeroed.
    let fresh: BTreeSet<_> = events.iter().map(|e| e.event_id).collect();
    let earlier = store.usage_events(Scope::Platform, start, end).await?;
    let mut zeroed = 0;
    for mut e in earlier.into_iter().filter(|e| {
        e.source == ALLOCATION_SOURCE
            && e.usage_type == GPU_LOCAL
            && e.run_id.as_deref() == Some(period)
            && !fresh.contains(&e.event_id)
    }) {
        if e.units.values().all(|v| v.get().is_zero())
            && e.cost.is_none_or(|(a, _)| a.get().is_zero())
        {
            continue; // already zeroed
        }
        for v in e.units.values_mut() {
            *v = NonNegative::ZERO;
        }
        e.cost = e.cost.map(|(_, c)| (NonNegative::ZERO, c));
        events.push(e);
        zeroed += 1;
    }
    let written = events.len() - zeroed;
    // One transaction: the month's events and the audit event of the run, together or not at all.
    let mut audit = AuditDraft::system(
        "system",
        "allocation_batch.run",
        now,
        json!({
            "from": p.from.to_string(),
            "to": p.to.to_string(),
            "events": written,
            "zeroed": zeroed,
            "instance": crate::leader::instance(),
        }),
    );
    audit.resource = Some(format!("gpu_local/{period}"));
    store
        .upsert_usage_events(&events, &audit)
        .await
        .context("cannot record the gpu_local events")?;
    Ok(BatchOutcome {
        period: period.to_string(),
        from: p.from,
        to: p.to,
        events: written,
        zeroed,
    })
}

/// The months the schedule allocates at `now`: the running month, and the previous one during the first
/// three days of a month.
pub fn months_due(now: Timestamp) -> Vec<String> {
    let current = month_of(now);
    let mut due = Vec::new();
    let Some((start, _)) = month(&current) else {
        return due;
    };
    if now.0 - start.0 < 3 * DAY_MS {
        due.push(month_of(Timestamp(start.0 - 1)));
    }
    if now.floor_to(HOUR_MS) > start {
        due.push(current);
    }
    due
}

/// How the scheduled batch runs.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Between two runs on the leading replica (`EAI_ALLOCATION_BATCH_INTERVAL_SECONDS`, an hour).
    pub every: Duration,
    /// Between two lease checks (`EAI_LEADER_POLL_SECONDS`): a replica takes over within this once the
    /// leader is gone.
    pub poll: Duration,
}

/// Runs the batch forever on the replica that holds its lease, reading from `source`: every `every` while it
/// leads, and at once when it takes the lease over (the last leader may have died before its run). The first
/// run waits a minute (or `every`, if shorter) after start. Time is `clock`'s.
pub async fn schedule(
    store: Arc<dyn Store>,
    source: Source,
    config: AllocationConfig,
    schedule: Schedule,
    metrics: Arc<crate::metrics::Metrics>,
    clock: Arc<dyn Clock>,
) {
    let lease = crate::leader::Lease::new(
        store.clone(),
        eai_store::lease::LeaderJob::AllocationBatch,
        metrics.clone(),
    );
    clock
        .sleep(Duration::from_secs(60).min(schedule.every))
        .await;
    let (every, poll) = (schedule.every, schedule.poll);
    crate::leader::every_while_leading(lease, clock.clone(), every, poll, |now| {
        run_due(
            &source,
            store.as_ref(),
            config,
            &metrics,
            clock.as_ref(),
            now,
        )
    })
    .await;
}

/// One scheduled run at `now`: each month due, recorded in the batch's metrics.
pub async fn run_due(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    config: AllocationConfig,
    metrics: &crate::metrics::Metrics,
    clock: &dyn Clock,
    now: Timestamp,
) {
    for period in months_due(now) {
        let started = std::time::Instant::now();
        let result = run_month_from(source, store, &period, now, config).await;
        let at = u64::try_from(clock.now().0 / 1000).unwrap_or(0);
        metrics
            .jobs
            .batch_ran(result.is_ok(), started.elapsed(), at);
        match result {
            Ok(o) => {
                tracing::info!(period = %o.period, events = o.events, zeroed = o.zeroed, "allocation batch recorded gpu_local events")
            }
            Err(e) => {
                tracing::error!(period = %period, error = %format!("{e:#}"), "allocation batch failed; retried next run")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).expect("ts")
    }

    #[test]
    fn the_schedule_covers_the_running_month_and_late_samples_of_the_last() {
        assert_eq!(months_due(ts("2026-11-15T10:20:00Z")), vec!["2026-11"]);
        assert_eq!(
            months_due(ts("2026-12-02T10:00:00Z")),
            vec!["2026-11", "2026-12"]
        );
        assert_eq!(months_due(ts("2027-01-01T00:30:00Z")), vec!["2026-12"]);
    }
}
