//! The allocation of a period, computed from a store: policies, the group rollups (one per deployment-hour;
//! raw cells for the hours in which a policy starts or ends off the hour), the gaps and every tenant's usage as
//! hourly claims, through the engine. Used by
//! `GET /v1/finops/gpu/allocation`, the breakdown and the allocation batch, which read from the [`Source`]
//! `EAI_ALLOCATION_SOURCE` names.
//!
//! From ClickHouse: group rollups (the per-GPU rollups summed by ClickHouse per deployment-hour), gaps and usage
//! claims (the events summed per deployment, tenant and hour by ClickHouse) come from the replica (`FINAL`),
//! policies from the primary,
//! and the exact hours (a policy starting or ending off the hour) as raw cells from the primary
//! (`SampleStore::allocation_usage` for those hours only; the replica has no reason to hold raw cells): the same inputs, so
//! the same figures, as the primary on the same data.

use std::collections::BTreeSet;

use std::sync::OnceLock;

use eai_engine::allocate::{
    allocate_cached, AllocationConfig, AllocationInput, Period, SplitCache,
};
use eai_engine::domain::Policy;
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_store::clickhouse::ClickHouse;
use eai_store::{rollups, PolicyStore, SampleStore, StoreError, UsageStore};

/// Where an allocation reads rollups, gaps and usage events.
#[derive(Debug, Clone, Default)]
pub enum Source {
    /// The primary store.
    #[default]
    Primary,
    /// The ClickHouse replica (policies and exact hours still from the primary).
    ClickHouse(ClickHouse),
}

impl Source {
    /// `primary` or `clickhouse`, for spans and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Primary => "primary",
            Source::ClickHouse(_) => "clickhouse",
        }
    }
}

const HOUR_MS: i64 = 3_600_000;

/// What the allocation and the answers built on it read: the samples' rollups, the policies, the usage events.
/// Any store with those roles (the server's `dyn Store`, a backend) serves.
pub trait AllocationStore: SampleStore + PolicyStore + UsageStore {}

impl<S: SampleStore + PolicyStore + UsageStore + ?Sized> AllocationStore for S {}

/// The hours of the period in which a policy starts or ends off the hour: those are read as raw cells so
/// that each window is priced by the policy in effect when it starts.
pub fn exact_hours(policies: &[Policy], period: Period) -> Vec<Timestamp> {
    let mut hours = BTreeSet::new();
    for p in policies {
        for t in [Some(p.spec.effective_from), p.spec.effective_to]
            .into_iter()
            .flatten()
        {
            if t.0.rem_euclid(HOUR_MS) != 0 {
                let h = t.floor_to(HOUR_MS);
                if period.contains(h) {
                    hours.insert(h);
                }
            }
        }
    }
    hours.into_iter().collect()
}

/// The whole allocation of `period` from the primary (every tenant; scope it before showing it to a tenant).
pub async fn compute(
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
) -> Result<Allocation, StoreError> {
    compute_from(&Source::Primary, store, period, config).await
}

fn replica_failed(e: eai_store::clickhouse::ClickHouseError) -> StoreError {
    StoreError::Internal(format!("reading the ClickHouse replica: {e}"))
}

/// What an allocation of a period reads: the policies (always from the primary), the rollups, gaps and
/// claims, and (from the replica) raw usage events.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub policies: Vec<Policy>,
    pub read: eai_store::UsageRead,
    pub usage: Vec<eai_engine::domain::UsageEvent>,
    /// The equal shares of GPUs shared by several pods (always from the primary, which tallies them at
    /// ingest): reported as findings.
    pub equal_shares: Vec<eai_engine::shares::EqualShares>,
}

/// Reads the inputs of `period` from `source` (policies always from the primary `store`).
pub async fn read_inputs(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
) -> Result<Inputs, StoreError> {
    let policies = store.policies().await?;
    let exact = exact_hours(&policies, period);
    let (read, usage) = match source {
        // Group rollups and every tenant's usage as hourly claims (the split of a shared deployment weighs
        // them all), read in one snapshot.
        Source::Primary => (
            store
                .allocation_usage(period.from, period.to, &exact)
                .await?,
            Vec::new(),
        ),
        Source::ClickHouse(ch) => {
            let hours: BTreeSet<i64> = exact.iter().map(|h| h.0).collect();
            // Groups, gaps and claims are three queries to ClickHouse: sent at once (each answer is decoded as
            // it arrives, so the decoding of one overlaps the server's work on the others).
            let (groups, gaps, claims) = tokio::try_join!(
                ch.group_rollups(period.from, period.to),
                ch.gaps(period.from, period.to),
                // Usage as claims summed by ClickHouse, as the primary's claim table holds them.
                ch.claims(period.from, period.to),
            )
            .map_err(replica_failed)?;
            let mut found: Vec<_> = groups
                .into_iter()
                .filter(|r| !hours.contains(&r.key.bucket_start.floor_to(HOUR_MS).0))
                .collect();
            for h in &exact {
                // The exact hours as raw cells, from the primary (which serves a frozen hour from its rollups,
                // as it does for a whole period).
                let cells = store
                    .allocation_usage(*h, Timestamp(h.0 + HOUR_MS), &[*h])
                    .await?;
                found.extend(cells.rollups);
            }
            rollups::sort_for_read(&mut found);
            let mut gaps = gaps;
            gaps.sort();
            (
                eai_store::UsageRead {
                    rollups: found,
                    gaps,
                    claims,
                },
                Vec::new(),
            )
        }
    };
    let equal_shares = store.equal_shares(period.from, period.to).await?;
    Ok(Inputs {
        policies,
        read,
        usage,
        equal_shares,
    })
}

impl Inputs {
    /// What the engine reads, for `period` under `config`.
    pub fn engine_input(&self, period: Period, config: AllocationConfig) -> AllocationInput<'_> {
        AllocationInput {
            period,
            rollups: &self.read.rollups,
            usage: &self.usage,
            claims: &self.read.claims,
            policies: &self.policies,
            gaps: &self.read.gaps,
            config,
        }
    }
}

/// The settled splits of shared deployment-buckets kept by this process (`EAI_SPLIT_CACHE_BUCKETS`). One per
/// process, whatever the store: a kept split is used only for the very inputs it was computed from (see
/// `eai_engine::allocate::SplitCache`), so sharing it never changes an answer.
static SPLITS: OnceLock<SplitCache> = OnceLock::new();

/// Sizes the process's split cache (deployment-buckets; 0 turns it off). Only the first call counts, and only
/// before the first allocation (which sizes it with the default otherwise); false when it was already sized.
pub fn configure_split_cache(buckets: usize) -> bool {
    SPLITS.set(SplitCache::new(buckets)).is_ok()
}

/// The process's split cache.
pub fn split_cache() -> &'static SplitCache {
    SPLITS.get_or_init(SplitCache::default)
}

/// The engine on `inputs` (CPU work: call it off the async workers), with the equal shares it rests on as
/// findings. Shared deployment-buckets settled by an earlier allocation of the same inputs are taken from the
/// process's [`split_cache`].
pub fn allocate_inputs(inputs: &Inputs, period: Period, config: AllocationConfig) -> Allocation {
    let mut a = allocate_cached(&inputs.engine_input(period, config), split_cache());
    a.findings
        .extend(eai_engine::shares::findings(&inputs.equal_shares, period));
    a
}

/// The inputs of one step `[from, to)` of the period they were read for (steps are whole allocation
/// buckets: every rollup, claim and event falls in exactly one).
pub fn cut(inputs: &Inputs, from: Timestamp, to: Timestamp) -> Inputs {
    let within = |t: Timestamp| from <= t && t < to;
    Inputs {
        policies: inputs.policies.clone(),
        read: eai_store::UsageRead {
            rollups: inputs
                .read
                .rollups
                .iter()
                .filter(|r| within(r.key.bucket_start))
                .cloned()
                .collect(),
            gaps: inputs.read.gaps.clone(),
            claims: inputs
                .read
                .claims
                .iter()
                .filter(|c| within(c.bucket_start))
                .cloned()
                .collect(),
        },
        usage: inputs
            .usage
            .iter()
            .filter(|e| within(e.occurred_at))
            .cloned()
            .collect(),
        equal_shares: inputs
            .equal_shares
            .iter()
            .filter(|e| within(e.bucket_start))
            .cloned()
            .collect(),
    }
}

/// The whole allocation of `period`, read from `source` (policies always from the primary `store`). One span
/// (`allocation`) with the phases as children: the reads (store spans), then `allocation.compute`.
#[tracing::instrument(name = "allocation", skip_all, fields(from = %period.from, to = %period.to, source = source.name()))]
pub async fn compute_from(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
) -> Result<Allocation, StoreError> {
    let inputs = read_inputs(source, store, period).await?;
    // The engine is CPU work (a month of a fleet): off the async workers.
    let span = tracing::info_span!(
        "allocation.compute",
        rollups = inputs.read.rollups.len(),
        claims = inputs.read.claims.len()
    );
    tokio::task::spawn_blocking(move || {
        let _in = span.enter();
        allocate_inputs(&inputs, period, config)
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the allocation task failed: {e}")))
}

/// The explanation of `deployment_id`'s cost over `period` (read from `source` as the allocation is), as
/// `viewer` may see it: `None` (the platform) every tenant; a tenant only a deployment it is charged on (or owns
/// time of), with every other tenant summed. `None` when there is nothing the viewer may see.
pub async fn explain_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    deployment_id: &str,
    viewer: Option<eai_engine::domain::TenantId>,
) -> Result<Option<Explained>, StoreError> {
    use eai_engine::allocate::Party;
    use eai_engine::breakdown::Dimension;
    let inputs = read_inputs(source, store, period).await?;
    let dep = deployment_id.to_string();
    // The inputs come back from the task: the breakdown of where the time ran reads the same ones.
    let (explained, inputs) = tokio::task::spawn_blocking(move || {
        let e = eai_engine::allocate::explain(&inputs.engine_input(period, config), &dep);
        (e, inputs)
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the explanation task failed: {e}")))?;
    let explanation = explained.and_then(|e| match viewer {
        None => Some(e),
        Some(t) => {
            let concerned = e
                .rounding
                .iter()
                .flat_map(|r| &r.lines)
                .any(|l| l.party == Some(Party::Tenant(t)))
                || e.buckets.iter().any(|b| b.owner == Some(Party::Tenant(t)));
            concerned.then(|| e.for_tenant(t))
        }
    });
    let Some(explanation) = explanation else {
        return Ok(None);
    };
    let scope = viewer.map_or(eai_store::Scope::Platform, eai_store::Scope::Tenant);
    let pods = breakdown_from(
        source,
        inputs,
        store,
        period,
        config,
        scope,
        vec![
            Dimension::Namespace,
            Dimension::Pod,
            Dimension::Gpu,
            Dimension::Share,
        ],
        vec![(Dimension::Deployment, deployment_id.to_string())],
    )
    .await?;
    Ok(Some(Explained { explanation, pods }))
}

/// A deployment's explanation, and where its time ran: its breakdown by namespace, pod, GPU and share method
/// (as the viewer may see it: a tenant, its dedicated deployments' pods only).
#[derive(Debug, Clone)]
pub struct Explained {
    pub explanation: eai_engine::allocate::Explanation,
    pub pods: eai_engine::breakdown::Breakdown,
}

/// The breakdown of a period (see `eai_engine::breakdown`): the allocation of every tenant (its deployments'
/// rounded costs are what the rows share), and the per-GPU rollups `scope` may see (a tenant: its dedicated
/// deployments'), both read from `source` (the per-GPU rollups from the replica with `clickhouse`, see
/// `gpu_usage_from_replica`), the hours where a policy changes inside the hour read exactly from the primary.
pub async fn breakdown_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    scope: eai_store::Scope,
    group_by: Vec<eai_engine::breakdown::Dimension>,
    filter: Vec<(eai_engine::breakdown::Dimension, String)>,
) -> Result<eai_engine::breakdown::Breakdown, StoreError> {
    let inputs = read_inputs(source, store, period).await?;
    breakdown_from(
        source, inputs, store, period, config, scope, group_by, filter,
    )
    .await
}

/// The per-GPU usage of `period` that `scope` may see, from the replica: its per-GPU rollups (a tenant's
/// dedicated deployments' only), and the exact hours (a policy starting or ending off the hour) from the primary,
/// as the allocation from the replica reads them.
pub(crate) async fn gpu_usage_from_replica(
    ch: &ClickHouse,
    store: &(impl AllocationStore + ?Sized),
    scope: eai_store::Scope,
    period: Period,
    exact: &[Timestamp],
) -> Result<eai_engine::gpu_usage::GpuUsage, StoreError> {
    use eai_engine::rollup::{Rollup, RollupKey};
    let hours: BTreeSet<i64> = exact.iter().map(|h| h.0).collect();
    let owner = match scope {
        eai_store::Scope::Tenant(t) => Some(t),
        eai_store::Scope::Platform => None,
    };
    let mut rollups: Vec<Rollup> = ch
        .gpu_rollups(period.from, period.to, owner)
        .await
        .map_err(replica_failed)?
        .into_iter()
        .filter(|r| !hours.contains(&r.key.bucket_start.floor_to(HOUR_MS).0))
        .collect();
    for h in exact {
        let cells = store
            .gpu_usage(scope, *h, Timestamp(h.0 + HOUR_MS), &[*h])
            .await?;
        for row in cells.rows() {
            // Labels the scope may not see are `None`: their rows are left out.
            let Some(l) = cells.labels[row.labels as usize].as_deref() else {
                continue;
            };
            rollups.push(Rollup {
                key: RollupKey {
                    gpu_uuid: cells.gpus[row.gpu as usize].to_string(),
                    deployment_id: l.deployment_id.clone(),
                    owner: l.owner,
                    model: l.model.clone(),
                    bucket_start: row.bucket_start,
                    placement: l.placement.clone(),
                },
                first_window_start: row.first_window_start,
                last_window_start: row.last_window_start,
                samples: u64::from(row.samples),
                estimated_samples: u64::from(row.estimated_samples),
                q: eai_engine::gpu_usage::quantities(&row.q),
                gpus: None,
            });
        }
    }
    eai_engine::gpu_usage::GpuUsage::from_rollups(&rollups)
        .map_err(|e| StoreError::Internal(format!("the replica's per-GPU rollups: {e}")))
}

/// [`breakdown_of`] on inputs already read.
#[allow(clippy::too_many_arguments)]
async fn breakdown_from(
    source: &Source,
    mut inputs: Inputs,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    scope: eai_store::Scope,
    group_by: Vec<eai_engine::breakdown::Dimension>,
    filter: Vec<(eai_engine::breakdown::Dimension, String)>,
) -> Result<eai_engine::breakdown::Breakdown, StoreError> {
    let exact = exact_hours(&inputs.policies, period);
    let mut usage = match source {
        Source::Primary => {
            store
                .gpu_usage(scope, period.from, period.to, &exact)
                .await?
        }
        Source::ClickHouse(ch) => gpu_usage_from_replica(ch, store, scope, period, &exact).await?,
    };
    // Filtered to deployments: only theirs are allocated (a deployment's cost depends on its own time and
    // claims alone), so that a deployment's pods cost its allocation, not the fleet's.
    let deployments: BTreeSet<String> = filter
        .iter()
        .filter(|(d, _)| *d == eai_engine::breakdown::Dimension::Deployment)
        .map(|(_, v)| v.clone())
        .collect();
    if !deployments.is_empty() {
        let kept = |d: &str| deployments.contains(d);
        inputs.read.rollups.retain(|r| kept(&r.key.deployment_id));
        inputs.read.claims.retain(|c| kept(&c.deployment_id));
        inputs.read.gaps.retain(|g| kept(&g.deployment_id));
        inputs
            .usage
            .retain(|e| e.deployment_id.as_deref().is_some_and(kept));
        usage.retain_labels(|l| kept(&l.deployment_id));
    }
    let span = tracing::info_span!("breakdown.compute", rollups = usage.len());
    let mut b = tokio::task::spawn_blocking(move || {
        let _in = span.enter();
        let allocation = allocate_inputs(&inputs, period, config);
        eai_engine::breakdown::breakdown(
            period,
            config.bucket_ms,
            &inputs.policies,
            &allocation,
            &usage,
            &group_by,
            &filter,
        )
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the breakdown task failed: {e}")))?;
    // A row's share of its GPU weighs it against the GPU's other pods: a tenant is not told how much of a GPU
    // the others used (nor could it be: the database shows it its own rows only).
    if let eai_store::Scope::Tenant(_) = scope {
        for r in &mut b.rows {
            r.gpu_share = None;
        }
    }
    Ok(b)
}

/// The token costs of a period (every tenant's, or `tenant`'s share only), read from `source` (usage events
/// from the primary: every tenant's and the vLLM servers', since a deployment's measures are all of them).
#[allow(clippy::too_many_arguments)]
pub async fn token_costs_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    basis: eai_engine::tokens::Basis,
    aggregate: eai_engine::tokens::Aggregate,
    tenant: Option<eai_engine::domain::TenantId>,
) -> Result<Vec<eai_engine::tokens::TokenCost>, StoreError> {
    let inputs = read_inputs(source, store, period).await?;
    let events = store
        .usage_events(eai_store::Scope::Platform, period.from, period.to)
        .await?;
    let span = tracing::info_span!("token_costs.compute", events = events.len());
    tokio::task::spawn_blocking(move || {
        let _in = span.enter();
        let allocation = allocate_inputs(&inputs, period, config);
        eai_engine::tokens::token_costs(
            &eai_engine::tokens::TokenCostInput {
                allocation: &allocation,
                events: &events,
                policies: &inputs.policies,
                basis,
            },
            aggregate,
            tenant,
        )
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the token cost task failed: {e}")))
}

/// The Slurm reconciliation of a period (`eai_engine::slurm`): Slurm's jobs `sacct` (as `sacct --json` lists
/// them) beside what was measured of each, from the breakdown `scope` may see (a tenant: its dedicated
/// deployments, so its accounts' jobs; the others' jobs are left out). `now` ends a job still running.
#[allow(clippy::too_many_arguments)]
pub async fn slurm_reconciliation_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    scope: eai_store::Scope,
    mut sacct: Vec<eai_engine::slurm::SacctJob>,
    now: eai_engine::time::Timestamp,
    idle_below: rust_decimal::Decimal,
) -> Result<eai_engine::slurm::Reconciliation, StoreError> {
    let b = breakdown_of(
        source,
        store,
        period,
        config,
        scope,
        eai_engine::slurm::GROUPING.to_vec(),
        Vec::new(),
    )
    .await?;
    let measured = eai_engine::slurm::measured_jobs(&b);
    if let eai_store::Scope::Tenant(_) = scope {
        let mine: BTreeSet<&str> = measured.iter().map(|m| m.job_id.as_str()).collect();
        sacct.retain(|j| mine.contains(j.job_id.as_str()));
    }
    Ok(eai_engine::slurm::reconcile(
        &sacct, &measured, period, now, idle_below,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).expect("timestamp")
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
            3_600_000,
        )
        .expect("period");
        assert_eq!(
            exact_hours(&policies, period),
            vec![ts("2026-10-01T10:00:00Z")]
        );
    }
}
