//! The store contract. Each case in [`contract`] is a function over `&dyn Store`, so that every backend runs the
//! same cases: the embedded SQLite file ([`sqlite_harness`], one fresh file in a temp dir per case) and
//! PostgreSQL ([`postgres_harness`], one fresh database per case on the server at `EAI_TEST_POSTGRES_URL`,
//! default `postgres://postgres@127.0.0.1:5432/postgres`; an unreachable server fails these tests, it never
//! skips them). Cases that open the SQLite file directly (tampering, forced failures, reopening, bytes on disk)
//! are in [`sqlite_only`]; those that need SQL as the service role (row level security proven at the database,
//! settings, reopening) are in [`postgres_only`].

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::allocate::{
    allocate, allocate_samples, sum_claims, AllocationConfig, AllocationInput, Period,
};
use eai_engine::domain::{
    GpuFraction, IdleCapacity, ModelRef, NonNegative, Policy, PolicySpec, Pue, Sample, TenantId,
    UnitInterval, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::report::{Allocation, Finding, GapReason};
use eai_engine::rollup::{aggregate, group, Rollup};
use eai_engine::series::{cells, SeriesConfig};
use eai_engine::time::Timestamp;
use eai_store::sqlite::SqliteStore;
use eai_store::{AuditDraft, Role, Scope, Store, StoreError};
use rust_decimal::Decimal;
use uuid::Uuid;

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

// --- fixtures -------------------------------------------------------------------------------------------------

fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

fn ts(ms: i64) -> Timestamp {
    Timestamp(ms)
}

fn tenant(n: u8) -> TenantId {
    TenantId(Uuid::from_bytes([n; 16]))
}

fn sample(gpu: &str, dep: &str, end_ms: i64) -> Sample {
    Sample {
        node: "gpu-node-1".into(),
        gpu_uuid: gpu.into(),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("{dep}-0"),
        deployment_id: dep.into(),
        owner: None,
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(end_ms),
        utilization: UnitInterval::new(d("0.5")).unwrap(),
        memory_used_gb: NonNegative::new(d("40")).unwrap(),
        power_w: NonNegative::new(d("400")).unwrap(),
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    }
}

/// `gpus` GPUs sampled every 15 s over `[from, to)`, in time order.
fn fleet(dep: &str, gpus: usize, from: i64, to: i64) -> Vec<Sample> {
    let mut v = Vec::new();
    let mut end = from + 15_000;
    while end <= to {
        for g in 0..gpus {
            v.push(sample(&format!("GPU-{dep}-{g}"), dep, end));
        }
        end += 15_000;
    }
    v
}

fn spec(name: &str) -> PolicySpec {
    PolicySpec {
        name: name.into(),
        deployment_pattern: Glob::any(),
        gpu_model: None,
        currency: Currency::EUR,
        gpu_hourly_cost: NonNegative::new(d("2.10")).unwrap(),
        overhead_pct: NonNegative::new(d("18")).unwrap(),
        energy_kwh_price: NonNegative::new(d("0.21")).unwrap(),
        pue: Pue::new(d("1.4")).unwrap(),
        storage_gb_month_price: NonNegative::ZERO,
        idle_capacity: IdleCapacity::Unallocated,
        output_token_weight: Default::default(),
        enabled: true,
        effective_from: Timestamp(0),
        effective_to: None,
    }
}

fn tokens(t: TenantId, dep: &str, at_ms: i64, n: u64) -> UsageEvent {
    let mut units = BTreeMap::new();
    units.insert(
        "tokens_in".to_string(),
        NonNegative::new(Decimal::from(n)).unwrap(),
    );
    UsageEvent {
        event_id: Uuid::new_v4(),
        tenant_id: t,
        usage_type: "llm_tokens".into(),
        source: "gateway".into(),
        occurred_at: Timestamp(at_ms),
        deployment_id: Some(dep.into()),
        model: None,
        units,
        cost: None,
        allocation_policy_id: None,
        project: None,
        agent_id: None,
        run_id: None,
    }
}

/// The audit event a test's change records.
fn audit() -> AuditDraft {
    AuditDraft::system("test", "test.change", Timestamp(T0), serde_json::json!({}))
}

/// A key to store.
fn new_key(
    hash: &str,
    role: Role,
    tenant_id: Option<TenantId>,
    name: Option<&str>,
    at: Timestamp,
) -> eai_store::NewApiKey {
    eai_store::NewApiKey {
        hash: hash.to_string(),
        role,
        tenant_id,
        name: name.map(str::to_string),
        nodes: Vec::new(),
        expires_at: None,
        created_at: at,
    }
}

fn draft(action: &str, tenant_id: Option<TenantId>) -> AuditDraft {
    AuditDraft {
        occurred_at: Timestamp(T0),
        actor: "key_1".into(),
        actor_role: Some("platform_admin".into()),
        tenant_id,
        action: action.into(),
        decision: "allow".into(),
        resource: None,
        request_id: Some("req-1".into()),
        details: serde_json::json!({"n": 1, "note": "x"}),
    }
}

fn period(from: i64, to: i64) -> Period {
    Period::new(Timestamp(from), Timestamp(to), H).unwrap()
}

/// What the engine computes from raw samples, grouped per deployment-hour: what the store must read back, in
/// the order it reads.
fn expected_rollups(samples: &[Sample]) -> Vec<Rollup> {
    in_read_order(group(aggregate(
        cells(samples, &SeriesConfig::default()).cells,
    )))
}

fn in_read_order(mut rollups: Vec<Rollup>) -> Vec<Rollup> {
    eai_store::rollups::sort_for_read(&mut rollups);
    rollups
}

async fn all_usage(s: &dyn Store) -> eai_store::UsageRead {
    let read = s
        .usage_for(ts(T0 - 48 * H), ts(T0 + 48 * H), &[])
        .await
        .unwrap();
    // Every backend answers in one order.
    let mut sorted = read.clone().in_order();
    sort_claims(&mut sorted.claims);
    assert_eq!(
        (&read.rollups, &read.gaps, &read.claims),
        (&sorted.rollups, &sorted.gaps, &sorted.claims),
        "usage_for answers in order"
    );
    read
}

/// The order of `sum_claims`.
fn sort_claims(v: &mut [eai_engine::allocate::UsageClaim]) {
    v.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
}

/// The allocation of what a store read for `p`.
fn allocation_of(
    read: &eai_store::UsageRead,
    p: Period,
    policies: &[Policy],
    usage: &[UsageEvent],
) -> Allocation {
    allocate(&AllocationInput {
        period: p,
        claims: &read.claims,
        rollups: &read.rollups,
        usage,
        policies,
        gaps: &read.gaps,
        config: AllocationConfig::default(),
    })
}

/// The allocation of `p` from raw samples (the engine alone).
fn raw_allocation(
    samples: &[Sample],
    p: Period,
    policies: &[Policy],
    usage: &[UsageEvent],
) -> Allocation {
    allocate_samples(
        samples,
        usage,
        policies,
        p,
        &SeriesConfig::default(),
        AllocationConfig::default(),
    )
}

/// Inserts the batches in turn; returns (inserted, duplicates) summed.
async fn insert_all(s: &dyn Store, batches: &[Vec<Sample>]) -> (u64, u64) {
    let mut total = (0, 0);
    for b in batches {
        let o = s.insert_samples(b, &audit()).await.unwrap();
        total.0 += o.inserted;
        total.1 += o.duplicates;
    }
    total
}

/// The contract: every backend must pass these.
mod contract {
    use super::*;

    pub async fn answers_ping(s: &dyn Store) {
        s.ping().await.unwrap();
        assert!(!s.backend().is_empty());
    }

    pub async fn ingest_is_idempotent(s: &dyn Store) {
        let batch = fleet("vllm-a", 2, T0, T0 + H);
        let o = s.insert_samples(&batch, &audit()).await.unwrap();
        assert_eq!((o.inserted, o.duplicates), (480, 0));
        let first = all_usage(s).await;
        assert_eq!(first.rollups, expected_rollups(&batch));

        let o = s.insert_samples(&batch, &audit()).await.unwrap();
        assert_eq!(
            (o.inserted, o.duplicates),
            (0, 480),
            "a re-sent batch is counted as duplicates"
        );
        let again = all_usage(s).await;
        assert_eq!(again.rollups, first.rollups, "figures unchanged");
        assert_eq!(again.gaps, first.gaps);

        // A re-send inside one batch counts once; an empty batch is a no-op.
        let one = sample("GPU-x", "vllm-a", T0 + 15_000);
        let o = s
            .insert_samples(&[one.clone(), one], &audit())
            .await
            .unwrap();
        assert_eq!((o.inserted, o.duplicates), (1, 1));
        assert_eq!(
            s.insert_samples(&[], &audit()).await.unwrap(),
            Default::default()
        );
    }

    pub async fn first_received_wins(s: &dyn Store) {
        let a = sample("GPU-1", "vllm-a", T0 + 15_000);
        let mut b = a.clone();
        b.utilization = UnitInterval::new(d("0.9")).unwrap();
        b.deployment_id = "vllm-z".into();
        s.insert_samples(std::slice::from_ref(&a), &audit())
            .await
            .unwrap();
        let o = s.insert_samples(&[b], &audit()).await.unwrap();
        assert_eq!(o.duplicates, 1);
        let r = all_usage(s).await.rollups;
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].q.busy_gpu_seconds,
            d("7.5"),
            "the first sample's utilization (0.5) is kept"
        );
        let seen: Vec<String> = s
            .deployments_seen()
            .await
            .unwrap()
            .into_iter()
            .map(|x| x.deployment_id)
            .collect();
        assert_eq!(
            seen,
            vec!["vllm-a"],
            "a discarded re-send shows no deployment"
        );
    }

    pub async fn the_worked_example_prices_from_the_store(s: &dyn Store) {
        let samples = fleet("vllm-llama-70b", 2, T0, T0 + H);
        for chunk in samples.chunks(16) {
            s.insert_samples(chunk, &audit()).await.unwrap();
        }
        let usage = vec![
            tokens(tenant(1), "vllm-llama-70b", T0 + 60_000, 7000),
            tokens(tenant(2), "vllm-llama-70b", T0 + 1_800_000, 3000),
        ];
        s.upsert_usage_events(&usage, &audit()).await.unwrap();
        let p = s
            .create_policy(&spec("local-gpu-default"), &audit())
            .await
            .unwrap();
        let read = s.usage_for(ts(T0), ts(T0 + H), &[]).await.unwrap();
        assert_eq!(read.rollups.len(), 1, "one rollup per deployment-hour");
        assert_eq!(read.rollups[0].gpus.as_ref().map(|g| g.len()), Some(2));
        assert_eq!(read.claims.len(), 2, "one claim per tenant-hour");
        let policies = s.policies().await.unwrap();
        assert_eq!(policies, vec![p]);
        let a = allocate(&AllocationInput {
            period: period(T0, T0 + H),
            claims: &read.claims,
            rollups: &read.rollups,
            usage: &[],
            policies: &policies,
            gaps: &read.gaps,
            config: AllocationConfig::default(),
        });
        let row = &a.deployments[0];
        assert_eq!(
            (row.gpu_seconds, row.energy_wh, row.samples),
            (d("7200"), d("800"), 480)
        );
        assert_eq!(row.cost, d("5.19"));
        let cost = |t| a.tenants.iter().find(|r| r.tenant_id == t).map(|r| r.cost);
        assert_eq!(cost(tenant(1)), Some(d("3.63")));
        assert_eq!(cost(tenant(2)), Some(d("1.56")));
    }

    pub async fn short_gaps_are_estimated_and_long_ones_reported(s: &dyn Store) {
        // One GPU: 10 min of samples, a 5 min hole, 10 min, a 30 min hole, 10 min.
        let mut v = fleet("vllm-a", 1, T0, T0 + 600_000);
        v.extend(fleet("vllm-a", 1, T0 + 900_000, T0 + 1_500_000));
        v.extend(fleet("vllm-a", 1, T0 + 3_300_000, T0 + 3_900_000));
        s.insert_samples(&v, &audit()).await.unwrap();
        let read = all_usage(s).await;
        let est: Decimal = read.rollups.iter().map(|r| r.q.estimated_gpu_seconds).sum();
        assert_eq!(est, d("300"), "the 5 minute hole is interpolated");
        assert_eq!(read.gaps.len(), 1, "{:?}", read.gaps);
        let g = &read.gaps[0];
        assert_eq!(
            (g.from, g.to, g.reason),
            (ts(T0 + 1_500_000), ts(T0 + 3_300_000), GapReason::TooLong)
        );
        assert_eq!(read.rollups, expected_rollups(&v));
    }

    pub async fn late_samples_fill_their_hole(s: &dyn Store) {
        let all = fleet("vllm-a", 2, T0, T0 + 2 * H);
        // Everything but 20 minutes around the hour, then the missing part, then one re-send.
        let (hole_from, hole_to) = (T0 + H - 600_000, T0 + H + 600_000);
        let (missing, first): (Vec<Sample>, Vec<Sample>) = all
            .iter()
            .cloned()
            .partition(|x| x.end.0 > hole_from && x.end.0 <= hole_to);
        s.insert_samples(&first, &audit()).await.unwrap();
        let read = all_usage(s).await;
        assert_eq!(read.gaps.len(), 2, "a 20 minute hole per GPU is a gap");
        let o = s.insert_samples(&missing, &audit()).await.unwrap();
        assert_eq!(o.inserted, missing.len() as u64);
        let read = all_usage(s).await;
        assert!(read.gaps.is_empty(), "{:?}", read.gaps);
        assert_eq!(read.rollups, expected_rollups(&all));
    }

    pub async fn a_late_sample_reinterpolates_across_the_hour(s: &dyn Store) {
        let at = |gpu: &str, end: i64, util: &str| {
            let mut x = sample(gpu, "vllm-a", end);
            x.utilization = UnitInterval::new(d(util)).unwrap();
            x
        };
        // Stored: 6 min before the hour and 5 min after it; the span between is interpolated across the hour.
        let (a, n) = (
            at("GPU-1", T0 + H - 360_000, "0.1"),
            at("GPU-1", T0 + H + 300_000, "0.9"),
        );
        s.insert_samples(&[a.clone(), n.clone()], &audit())
            .await
            .unwrap();
        assert_eq!(
            all_usage(s).await.rollups,
            expected_rollups(&[a.clone(), n.clone()])
        );
        // A late sample 3 min before the hour changes the interpolation on both sides of the hour.
        let late = at("GPU-1", T0 + H - 180_000, "0.5");
        s.insert_samples(std::slice::from_ref(&late), &audit())
            .await
            .unwrap();
        let gpu1 = vec![a, n, late];
        assert_eq!(all_usage(s).await.rollups, expected_rollups(&gpu1));

        // Another GPU: a sample earlier than everything stored, whose span to the first one crosses the hour.
        let b = at("GPU-2", T0 + H + 300_000, "0.9");
        s.insert_samples(std::slice::from_ref(&b), &audit())
            .await
            .unwrap();
        let early = at("GPU-2", T0 + H - 240_000, "0.3");
        s.insert_samples(std::slice::from_ref(&early), &audit())
            .await
            .unwrap();
        let all: Vec<Sample> = gpu1.into_iter().chain([b, early]).collect();
        assert_eq!(all_usage(s).await.rollups, expected_rollups(&all));
    }

    pub async fn exact_hours_come_back_as_cells(s: &dyn Store) {
        let all = fleet("vllm-a", 2, T0, T0 + 3 * H);
        s.insert_samples(&all, &audit()).await.unwrap();
        let plain = s.usage_for(ts(T0), ts(T0 + 3 * H), &[]).await.unwrap();
        assert_eq!(
            plain.rollups.len(),
            3,
            "one group rollup per deployment-hour"
        );
        // An hour named by any instant inside it; an hour outside the period is ignored.
        let exact = s
            .usage_for(ts(T0), ts(T0 + 3 * H), &[ts(T0 + H + 1234), ts(T0 + 7 * H)])
            .await
            .unwrap();
        let in_hour = |r: &Rollup| r.key.bucket_start == ts(T0 + H);
        assert_eq!(
            exact.rollups.iter().filter(|r| in_hour(r)).count(),
            480,
            "one cell per sample of the hour"
        );
        assert!(exact
            .rollups
            .iter()
            .filter(|r| in_hour(r))
            .all(|r| r.first_window_start == r.last_window_start));
        assert_eq!(
            exact.rollups.iter().filter(|r| !in_hour(r)).count(),
            2,
            "the other hours as group rollups"
        );
        assert_eq!(
            group(exact.rollups),
            plain.rollups,
            "cells sum to the rollups"
        );
    }

    /// The claims read for a period are the engine's sums of the stored events: a re-sent event replaces its
    /// claim (even in another hour or deployment), the allocation's own events and events without a
    /// deployment claim nothing.
    pub async fn claims_are_the_sums_of_the_stored_events(s: &dyn Store) {
        let mut e1 = tokens(tenant(1), "vllm-a", T0 + 60_000, 7000);
        let mut e2 = tokens(tenant(1), "vllm-a", T0 + 120_000, 0);
        e2.units.clear();
        e2.units
            .insert("gpu_seconds".into(), NonNegative::new(d("900.5")).unwrap());
        let e3 = tokens(tenant(2), "vllm-b", T0 + H + 5, 3000);
        let mut e4 = tokens(tenant(2), "vllm-a", T0 + 30_000, 99);
        e4.source = "allocation".into();
        let mut e5 = tokens(tenant(2), "vllm-a", T0 + 40_000, 11);
        e5.deployment_id = None;
        let e6 = tokens(tenant(3), "vllm-a", T0 + 3_599_999, 1);
        s.upsert_usage_events(
            &[
                e1.clone(),
                e2.clone(),
                e3.clone(),
                e4.clone(),
                e5.clone(),
                e6.clone(),
            ],
            &audit(),
        )
        .await
        .unwrap();
        let first = all_usage(s).await.claims;
        assert_eq!(
            first,
            sum_claims(&[
                e1.clone(),
                e2.clone(),
                e3.clone(),
                e4.clone(),
                e5.clone(),
                e6.clone()
            ])
        );
        assert_eq!(first.len(), 3, "{first:?}");

        // Re-sent: e1 moved to another hour with other figures, e3 unchanged, e6 moved to another deployment.
        e1.occurred_at = ts(T0 + 2 * H + 1);
        e1.units
            .insert("tokens_out".into(), NonNegative::new(d("0.25")).unwrap());
        let mut e6b = e6.clone();
        e6b.deployment_id = Some("vllm-c".into());
        s.upsert_usage_events(&[e1.clone(), e3.clone(), e6b.clone()], &audit())
            .await
            .unwrap();
        let all = [e1.clone(), e2.clone(), e3.clone(), e4, e5, e6b];
        let read = all_usage(s).await;
        assert_eq!(read.claims, sum_claims(&all));
        assert!(
            read.claims
                .iter()
                .all(|c| c.deployment_id != "vllm-a" || c.tenant_id != tenant(3)),
            "e6's old claim is gone"
        );

        // For a period: its hours only.
        let hour1 = s
            .usage_for(ts(T0 + H), ts(T0 + 2 * H), &[])
            .await
            .unwrap()
            .claims;
        assert_eq!(hour1, sum_claims(&[e3]));
    }

    pub async fn usage_is_read_for_the_period_only(s: &dyn Store) {
        let mut v = fleet("vllm-a", 1, T0, T0 + H);
        v.extend(fleet("vllm-a", 1, T0 + 3 * H, T0 + 4 * H));
        s.insert_samples(&v, &audit()).await.unwrap();
        let r = s.usage_for(ts(T0 + H), ts(T0 + 3 * H), &[]).await.unwrap();
        assert!(r.rollups.is_empty());
        assert_eq!(r.gaps.len(), 1, "the gap that spans the period is reported");
        let r = s
            .usage_for(ts(T0 + 3 * H), ts(T0 + 4 * H), &[])
            .await
            .unwrap();
        assert_eq!(r.rollups.len(), 1);
        assert_eq!(r.rollups[0].key.bucket_start, ts(T0 + 3 * H));
        assert!(s
            .usage_for(ts(T0 + 5 * H), ts(T0 + 6 * H), &[])
            .await
            .unwrap()
            .gaps
            .is_empty());
    }

    /// Per-GPU rollups with their placement: the platform reads every row, a tenant only its dedicated
    /// deployments' (never a shared deployment's, nor another tenant's), the reserved platform tenant none; an
    /// exact hour comes as the raw cells of its GPUs.
    pub async fn gpu_usage_carries_its_pod_and_is_scoped(s: &dyn Store) {
        let (a, b) = (tenant(1), tenant(2));
        let mut batch = fleet("vllm-shared", 1, T0, T0 + H);
        for (t, dep) in [(a, "train-a"), (b, "train-b")] {
            batch.extend(fleet(dep, 1, T0, T0 + H).into_iter().map(|mut x| {
                x.owner = Some(t);
                x
            }));
        }
        // The shared GPU's pod is replaced half way through the hour.
        for x in batch
            .iter_mut()
            .filter(|x| x.deployment_id == "vllm-shared")
        {
            if x.end.0 > T0 + H / 2 {
                x.pod = "vllm-shared-1".into();
            }
        }
        s.insert_samples(&batch, &audit()).await.unwrap();
        let keys = |rs: &[Rollup]| -> Vec<(String, Option<String>)> {
            let mut v: Vec<_> = rs
                .iter()
                .map(|r| {
                    (
                        r.key.deployment_id.clone(),
                        r.key.placement.pod().map(str::to_string),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let read = |scope: Scope, exact: Vec<Timestamp>| async move {
            s.gpu_usage(scope, ts(T0), ts(T0 + H), &exact)
                .await
                .unwrap()
                .to_rollups()
        };
        let all = read(Scope::Platform, vec![]).await;
        // Read again (from the cache where the backend has one): the same rows.
        assert_eq!(read(Scope::Platform, vec![]).await, all);
        assert_eq!(
            keys(&all),
            vec![
                ("train-a".to_string(), Some("train-a-0".to_string())),
                ("train-b".to_string(), Some("train-b-0".to_string())),
                ("vllm-shared".to_string(), Some("vllm-shared-0".to_string())),
                ("vllm-shared".to_string(), Some("vllm-shared-1".to_string())),
            ]
        );
        let gs = |rs: &[Rollup], dep: &str| -> Decimal {
            rs.iter()
                .filter(|r| r.key.deployment_id == dep)
                .map(|r| r.q.gpu_seconds)
                .sum()
        };
        assert_eq!(gs(&all, "vllm-shared"), d("3600"));
        let mine = read(Scope::Tenant(a), vec![]).await;
        assert_eq!(
            keys(&mine),
            vec![("train-a".to_string(), Some("train-a-0".to_string()))]
        );
        assert!(read(
            Scope::Tenant(eai_engine::domain::TenantId::PLATFORM),
            vec![]
        )
        .await
        .is_empty());
        // Read exactly, the hour is the raw path's cells: the same sums per placement.
        let exact = read(Scope::Platform, vec![ts(T0)]).await;
        assert_eq!(
            eai_engine::rollup::coarsen(exact, H)
                .iter()
                .map(|r| (r.key.clone(), r.q))
                .collect::<Vec<_>>(),
            eai_engine::rollup::coarsen(all.clone(), H)
                .iter()
                .map(|r| (r.key.clone(), r.q))
                .collect::<Vec<_>>()
        );
        // A GPU more in the hour, in a third pod: the next read has it (a cached hour is read again once it
        // changed), and every row read before, unchanged.
        let mut late = fleet("vllm-shared", 1, T0, T0 + H);
        for x in &mut late {
            x.gpu_uuid = "GPU-late".into();
            x.pod = "vllm-shared-2".into();
        }
        s.insert_samples(&late, &audit()).await.unwrap();
        let after = read(Scope::Platform, vec![]).await;
        assert_eq!(after.len(), all.len() + 1);
        assert!(all.iter().all(|r| after.contains(r)));
        assert_eq!(gs(&after, "vllm-shared"), d("7200"));
    }

    pub async fn pruning_raw_samples_keeps_rollups(s: &dyn Store) {
        let mut v = fleet("vllm-a", 2, T0, T0 + 3 * H);
        // A third GPU that stopped reporting after the first hour.
        v.extend(fleet("vllm-b", 1, T0, T0 + H));
        s.insert_samples(&v, &audit()).await.unwrap();
        let before = all_usage(s).await;
        let deployments = s.deployments_seen().await.unwrap();

        let deleted = s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap();
        // Samples ended before 2 h: 2 x 478 of vllm-a and 238 of vllm-b. Kept whole: the first sample of each GPU
        // (nothing before it), and vllm-b's latest sample.
        assert_eq!(deleted, 2 * 478 + 238);
        assert_eq!(
            s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap(),
            0,
            "pruning twice deletes nothing more"
        );
        let after = all_usage(s).await;
        assert_eq!(after.rollups, before.rollups, "rollups are kept");
        assert_eq!(after.gaps, before.gaps);
        assert_eq!(s.deployments_seen().await.unwrap(), deployments);

        // The silent GPU comes back: its gap starts at its last sample, which pruning kept.
        let back = fleet("vllm-b", 1, T0 + 4 * H, T0 + 4 * H + 60_000);
        s.insert_samples(&back, &audit()).await.unwrap();
        let gaps = all_usage(s).await.gaps;
        assert_eq!(gaps.len(), 1);
        assert_eq!((gaps[0].from, gaps[0].to), (ts(T0 + H), ts(T0 + 4 * H)));

        // A sample arriving after its hour was pruned is merged there exactly, once.
        let late = sample("GPU-vllm-a-0", "vllm-a", T0 + 7_500);
        let o = s
            .insert_samples(std::slice::from_ref(&late), &audit())
            .await
            .unwrap();
        assert_eq!(o.inserted, 1);
        let mut all = v.clone();
        all.extend(back);
        all.push(late.clone());
        let merged = all_usage(s).await;
        assert_eq!(hourly(&merged.rollups), hourly(&expected_rollups(&all)));
        let o = s.insert_samples(&[late], &audit()).await.unwrap();
        assert_eq!(
            (o.inserted, o.duplicates),
            (0, 1),
            "a re-send is a duplicate"
        );
    }

    pub async fn deployments_seen_come_from_samples(s: &dyn Store) {
        let mut v = fleet("vllm-a", 1, T0, T0 + 60_000);
        let mut moved = sample("GPU-vllm-a-0", "vllm-a", T0 + H);
        moved.namespace = "eai-inference-2".into();
        moved.model = "L40S".into();
        v.push(moved);
        v.extend(fleet("tgi-b", 1, T0 + 30_000, T0 + 90_000));
        s.insert_samples(&v, &audit()).await.unwrap();
        let seen = s.deployments_seen().await.unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].deployment_id, "tgi-b");
        assert_eq!(
            (seen[0].first_seen, seen[0].last_seen),
            (ts(T0 + 45_000), ts(T0 + 90_000))
        );
        let a = &seen[1];
        assert_eq!(a.deployment_id, "vllm-a");
        assert_eq!(
            (a.namespace.as_str(), a.model.as_str()),
            ("eai-inference-2", "L40S"),
            "as seen last"
        );
        assert_eq!((a.first_seen, a.last_seen), (ts(T0 + 15_000), ts(T0 + H)));
    }

    /// What `/metrics` shows of each GPU and node: the latest sample per GPU (newest first, bounded, counted in
    /// all), the latest window end per node; a late sample changes neither, and pruning keeps both.
    pub async fn the_latest_sample_of_each_gpu_and_node(s: &dyn Store) {
        let empty = s.latest_samples(ts(0), 10).await.unwrap();
        assert_eq!((empty.samples.len(), empty.gpus), (0, 0));
        assert!(s.nodes_last_seen(ts(0)).await.unwrap().is_empty());

        let mut v = fleet("vllm-a", 1, T0, T0 + 60_000); // GPU-vllm-a-0 on gpu-node-1, up to T0+60s
        let mut last = sample("GPU-vllm-a-0", "vllm-b", T0 + 75_000);
        last.utilization = UnitInterval::new(d("0.25")).unwrap();
        last.memory_used_gb = NonNegative::new(d("61.2")).unwrap();
        last.power_w = NonNegative::new(d("312.5")).unwrap();
        v.push(last.clone());
        let mut mig = sample("GPU-c/mig-1g.10gb-13", "vllm-a", T0 + 75_000);
        mig.gpu_fraction = GpuFraction::new(d("0.142857")).unwrap();
        v.push(mig.clone());
        // A dedicated deployment on another node (a tenant's rows: read on the platform path), seen earlier.
        let mut owned = sample("GPU-z", "acme-train", T0 + 30_000);
        owned.node = "gpu-node-2".into();
        owned.owner = Some(tenant(7));
        v.push(owned.clone());
        s.insert_samples(&v, &audit()).await.unwrap();
        // A late sample of GPU-vllm-a-0 is not its latest.
        s.insert_samples(&[sample("GPU-vllm-a-0", "vllm-a", T0)], &audit())
            .await
            .unwrap();

        let all = s.latest_samples(ts(T0), 10).await.unwrap();
        assert_eq!(all.gpus, 3);
        let uuids: Vec<&str> = all.samples.iter().map(|x| x.gpu_uuid.as_str()).collect();
        assert_eq!(
            uuids,
            ["GPU-c/mig-1g.10gb-13", "GPU-vllm-a-0", "GPU-z"],
            "newest first, equal ends by uuid"
        );
        assert_eq!(all.samples[1], last, "the latest sample, exactly as sent");
        assert_eq!(all.samples[0], mig);
        assert_eq!(all.samples[2], owned);

        let bounded = s.latest_samples(ts(T0), 2).await.unwrap();
        assert_eq!(
            (bounded.samples.len(), bounded.gpus),
            (2, 3),
            "the limit leaves the oldest out, still counted"
        );
        assert_eq!(bounded.samples[..], all.samples[..2]);
        let recent = s.latest_samples(ts(T0 + 60_000), 10).await.unwrap();
        assert_eq!(
            (recent.samples.len(), recent.gpus),
            (2, 2),
            "GPU-z was last seen before"
        );

        let nodes = s.nodes_last_seen(ts(T0)).await.unwrap();
        let got: Vec<(&str, Timestamp)> = nodes
            .iter()
            .map(|n| (n.node.as_str(), n.last_seen))
            .collect();
        assert_eq!(
            got,
            [
                ("gpu-node-1", ts(T0 + 75_000)),
                ("gpu-node-2", ts(T0 + 30_000))
            ]
        );
        let got = s.nodes_last_seen(ts(T0 + 60_000)).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].node, "gpu-node-1");

        // Pruning every raw sample keeps each GPU's latest.
        s.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap();
        assert_eq!(s.latest_samples(ts(T0), 10).await.unwrap(), all);
        assert_eq!(s.nodes_last_seen(ts(T0)).await.unwrap(), nodes);
    }

    pub async fn usage_events_upsert_and_scope(s: &dyn Store) {
        let mut e1 = tokens(tenant(1), "vllm-a", T0 + 1000, 100);
        e1.model = Some(ModelRef {
            provider: "vllm".into(),
            name: "llama-3-70b".into(),
        });
        e1.cost = Some((NonNegative::new(d("0.0123")).unwrap(), Currency::EUR));
        e1.project = Some("p".into());
        e1.agent_id = Some("a".into());
        e1.run_id = Some("r".into());
        e1.allocation_policy_id = Some("alp_1".into());
        e1.units.insert(
            "gpu_seconds".into(),
            NonNegative::new(d("1.500001")).unwrap(),
        );
        let e2 = tokens(tenant(2), "vllm-a", T0 + 2000, 200);
        let mut e3 = tokens(tenant(1), "vllm-a", T0 + H, 300);
        e3.deployment_id = None;
        assert_eq!(
            s.upsert_usage_events(&[e1.clone(), e2.clone(), e3.clone()], &audit())
                .await
                .unwrap(),
            3
        );

        let all = s
            .usage_events(Scope::Platform, ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(
            all,
            vec![e1.clone(), e2.clone(), e3.clone()],
            "every field round-trips, oldest first"
        );
        let mine = s
            .usage_events(Scope::Tenant(tenant(2)), ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(mine, vec![e2.clone()], "a tenant sees only its own events");
        let window = s
            .usage_events(Scope::Platform, ts(T0 + 1000), ts(T0 + 2000))
            .await
            .unwrap();
        assert_eq!(window, vec![e1.clone()], "[from, to)");

        // A re-sent event replaces, never doubles.
        let mut e1b = e1.clone();
        e1b.units
            .insert("tokens_in".into(), NonNegative::new(d("150")).unwrap());
        e1b.occurred_at = ts(T0 + 3000);
        assert_eq!(
            s.upsert_usage_events(&[e1b.clone()], &audit())
                .await
                .unwrap(),
            1
        );
        let all = s
            .usage_events(Scope::Platform, ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(all, vec![e2.clone(), e1b.clone(), e3.clone()]);

        // Another tenant using the same event id writes an event of its own: ids are per tenant, so nothing of
        // tenant 1 is touched or told.
        let mut same_id = e1.clone();
        same_id.tenant_id = tenant(2);
        same_id.units.insert(
            "tokens_in".into(),
            NonNegative::new(Decimal::from(9)).unwrap(),
        );
        s.upsert_usage_events(std::slice::from_ref(&same_id), &audit())
            .await
            .unwrap();
        let mine = s
            .usage_events(Scope::Tenant(tenant(2)), ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(mine, vec![same_id, e2], "in time order");
        let theirs = s
            .usage_events(Scope::Tenant(tenant(1)), ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(theirs, vec![e1b.clone(), e3.clone()]);

        // The allocation batch's record of a charge is replaced only by the batch.
        let mut charge = tokens(tenant(1), "vllm-a", T0 + 5000, 0);
        charge.source = eai_engine::domain::ALLOCATION_SOURCE.into();
        charge.usage_type = "gpu_local".into();
        s.upsert_usage_events(std::slice::from_ref(&charge), &audit())
            .await
            .unwrap();
        let mut forged = charge.clone();
        forged.source = "gateway".into();
        let fresh = tokens(tenant(1), "vllm-a", T0 + 6000, 1);
        let err = s
            .upsert_usage_events(&[fresh, forged], &audit())
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Forbidden(_)), "{err}");
        let after = s
            .usage_events(Scope::Tenant(tenant(1)), ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(after, vec![e1b, charge.clone(), e3], "nothing of the batch");
        let mut again = charge;
        again.units.insert("gpu_seconds".into(), NonNegative::ZERO);
        s.upsert_usage_events(&[again], &audit()).await.unwrap();
    }

    pub async fn policies_are_superseded_never_edited(s: &dyn Store) {
        let mut a = spec("default");
        a.effective_from = ts(T0);
        let p1 = s.create_policy(&a, &audit()).await.unwrap();
        assert_eq!((p1.id.as_str(), p1.seq), ("alp_1", 1));
        let mut b = spec("l40s");
        b.gpu_model = Some("L40S".into());
        b.deployment_pattern = Glob::new("vllm-*").unwrap();
        b.gpu_hourly_cost = NonNegative::new(d("1.2345678901")).unwrap();
        b.idle_capacity = IdleCapacity::Proportional;
        b.currency = "JPY".parse().unwrap();
        b.effective_from = ts(T0);
        b.effective_to = Some(ts(T0 + 10 * H));
        let p2 = s.create_policy(&b, &audit()).await.unwrap();
        assert_eq!(p2.id, "alp_2");

        let mut c = a.clone();
        c.gpu_hourly_cost = NonNegative::new(d("2.50")).unwrap();
        c.effective_from = ts(T0 + H);
        let (closed, opened) = s
            .supersede_policy("alp_1", ts(T0 + H), Some(&c), &audit())
            .await
            .unwrap();
        assert_eq!(closed.spec.effective_to, Some(ts(T0 + H)));
        assert_eq!(
            closed.spec.gpu_hourly_cost, a.gpu_hourly_cost,
            "pricing is never edited"
        );
        let opened = opened.unwrap();
        assert_eq!(opened.id, "alp_3");
        assert_eq!(
            s.policies().await.unwrap(),
            vec![closed.clone(), p2.clone(), opened.clone()],
            "oldest first, every field"
        );

        // Closed already, closing before its start, unknown ids.
        let conflict = |r: Result<_, StoreError>| matches!(r, Err(StoreError::Conflict { .. }));
        assert!(conflict(
            s.supersede_policy("alp_1", ts(T0 + 2 * H), None, &audit())
                .await
        ));
        assert!(conflict(
            s.supersede_policy("alp_1", ts(T0 + H), None, &audit())
                .await
        ));
        assert!(conflict(
            s.supersede_policy("alp_3", ts(T0 + H), None, &audit())
                .await
        ));
        assert!(conflict(
            s.supersede_policy("alp_2", ts(T0 + 11 * H), None, &audit())
                .await
        ));
        assert!(matches!(
            s.supersede_policy("alp_9", ts(T0 + 2 * H), None, &audit())
                .await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            s.supersede_policy("nope", ts(T0 + 2 * H), None, &audit())
                .await,
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(
            s.policies().await.unwrap().len(),
            3,
            "a refused supersede writes nothing"
        );

        // Closing earlier than a scheduled end, without a replacement.
        let (closed2, none) = s
            .supersede_policy("alp_2", ts(T0 + 5 * H), None, &audit())
            .await
            .unwrap();
        assert!(none.is_none());
        assert_eq!(closed2.spec.effective_to, Some(ts(T0 + 5 * H)));
        assert_eq!(s.policies().await.unwrap()[1], closed2);
    }

    /// No change may name the reserved platform tenant (the id of rows that belong to no tenant): as a sample's
    /// owner, an event's tenant, a key's, a budget's, or a registered tenant's. Nothing is stored or audited.
    pub async fn the_platform_tenant_id_is_reserved(s: &dyn Store) {
        use eai_engine::domain::Tenant;
        let nil = TenantId(eai_store::PLATFORM_TENANT_ID);
        let conflict = |r: eai_store::Result<()>, what: &str| {
            assert!(
                matches!(r, Err(StoreError::Conflict { .. })),
                "{what}: {r:?}"
            );
        };
        let mut owned = sample("GPU-0", "vllm-a", T0 + 15_000);
        owned.owner = Some(nil);
        conflict(
            s.insert_samples(&[owned], &audit()).await.map(drop),
            "a sample owned by it",
        );
        conflict(
            s.upsert_usage_events(&[tokens(nil, "vllm-a", T0, 1)], &audit())
                .await
                .map(drop),
            "a usage event of it",
        );
        conflict(
            s.create_api_key(
                &new_key("h", Role::Viewer, Some(nil), None, ts(T0)),
                &audit(),
            )
            .await
            .map(drop),
            "a key of it",
        );
        let t = Tenant {
            id: nil,
            slug: "platform".parse().unwrap(),
            name: "Platform".into(),
        };
        conflict(
            s.create_tenant(&t, &audit()).await.map(drop),
            "its registration",
        );
        assert_eq!(s.audit_head().await.unwrap(), None, "nothing audited");
        assert!(all_usage(s).await.rollups.is_empty());
        assert_eq!(s.api_key_count().await.unwrap(), 0);
    }

    /// A read scoped to the reserved platform tenant finds nothing, on every backend alike: no error, and never
    /// the platform's rows (its keys, its audit events) nor a tenant's.
    pub async fn reads_scoped_to_the_platform_tenant_find_nothing(s: &dyn Store) {
        let nil = Scope::Tenant(TenantId(eai_store::PLATFORM_TENANT_ID));
        s.create_api_key(
            &new_key("h0", Role::PlatformAdmin, None, None, ts(T0)),
            &audit(),
        )
        .await
        .unwrap();
        s.upsert_usage_events(&[tokens(tenant(1), "vllm-a", T0, 5)], &audit())
            .await
            .unwrap();
        assert!(s.api_keys(Scope::Platform).await.unwrap().len() == 1);
        assert!(!s
            .audit_events(Scope::Platform, 0, 100)
            .await
            .unwrap()
            .is_empty());
        assert!(s
            .usage_events(nil, ts(0), ts(T0 + H))
            .await
            .unwrap()
            .is_empty());
        assert!(s.api_keys(nil).await.unwrap().is_empty());
        assert!(s.tenants(nil).await.unwrap().is_empty());
        assert!(s.audit_events(nil, 0, 100).await.unwrap().is_empty());
        assert!(s.budgets(nil).await.unwrap().is_empty());
        assert!(s.budget_standings(nil, ts(T0)).await.unwrap().is_empty());
        assert_eq!(s.reservation(nil, "res_x").await.unwrap(), None);
        // Nor does a change find anything to change.
        let r = s.revoke_api_key(nil, "key_1", ts(T0), &audit()).await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
        let r = s.release_reservation(nil, "res_x", ts(T0), &audit()).await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    }

    pub async fn tenants_are_registered_once_and_read_in_scope(s: &dyn Store) {
        use eai_engine::domain::Tenant;
        use eai_store::TenantRef;
        let reg = |n: u8, slug: &str, name: &str| Tenant {
            id: tenant(n),
            slug: slug.parse().unwrap(),
            name: name.to_string(),
        };
        let acme = reg(1, "acme", "Acme Corp");
        let globex = reg(2, "globex", "Globex");
        assert_eq!(s.tenants(Scope::Platform).await.unwrap(), vec![]);
        let before = s.audit_head().await.unwrap().map_or(0, |h| h.seq);
        assert_eq!(
            s.create_tenant(&globex, &draft("tenant.create", None))
                .await
                .unwrap(),
            globex
        );
        assert_eq!(
            s.create_tenant(&acme, &draft("tenant.create", None))
                .await
                .unwrap(),
            acme
        );
        assert_eq!(
            s.audit_head().await.unwrap().map_or(0, |h| h.seq),
            before + 2,
            "each registration is audited with it"
        );
        // The slug and the id are each registered once; a refused registration writes no audit event.
        for dup in [reg(3, "acme", "Other"), reg(1, "acme-2", "Other")] {
            let r = s.create_tenant(&dup, &draft("tenant.create", None)).await;
            assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
        }
        assert_eq!(
            s.audit_head().await.unwrap().map_or(0, |h| h.seq),
            before + 2
        );
        assert_eq!(
            s.tenants(Scope::Platform).await.unwrap(),
            vec![acme.clone(), globex.clone()],
            "by slug"
        );
        assert_eq!(
            s.tenants(Scope::Tenant(tenant(1))).await.unwrap(),
            vec![acme.clone()]
        );
        assert_eq!(
            s.tenants(Scope::Tenant(tenant(9))).await.unwrap(),
            vec![],
            "a tenant only seen in data has no registration"
        );
        for key in [
            TenantRef::Id(tenant(1)),
            TenantRef::Slug("acme".parse().unwrap()),
        ] {
            assert_eq!(s.tenant(&key).await.unwrap(), Some(acme.clone()));
        }
        assert_eq!(
            s.tenant(&TenantRef::Slug("nobody".parse().unwrap()))
                .await
                .unwrap(),
            None
        );
        assert_eq!(s.tenant(&TenantRef::Id(tenant(9))).await.unwrap(), None);
    }

    pub async fn api_keys_are_found_by_hash(s: &dyn Store) {
        assert_eq!(s.api_key_count().await.unwrap(), 0);
        let k1 = s
            .create_api_key(
                &new_key("h1", Role::PlatformAdmin, None, Some("bootstrap"), ts(T0)),
                &audit(),
            )
            .await
            .unwrap();
        let k2 = s
            .create_api_key(
                &new_key("h2", Role::Auditor, Some(tenant(3)), None, ts(T0 + 1)),
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!((k1.id.as_str(), k2.id.as_str()), ("key_1", "key_2"));
        assert_eq!(
            s.api_key_by_hash("h2").await.unwrap().map(|m| m.key),
            Some(k2.clone())
        );
        assert_eq!(
            s.api_key_by_hash("h1").await.unwrap().map(|m| m.key),
            Some(k1)
        );
        assert_eq!(s.api_key_by_hash("h3").await.unwrap().map(|m| m.key), None);
        assert_eq!(s.api_key_count().await.unwrap(), 2);
        let dup = s
            .create_api_key(&new_key("h2", Role::Viewer, None, None, ts(T0)), &audit())
            .await;
        assert!(matches!(dup, Err(StoreError::Conflict { .. })));
        assert_eq!(s.api_key_count().await.unwrap(), 2);
        for role in Role::ALL {
            let k = s
                .create_api_key(&new_key(role.as_str(), role, None, None, ts(T0)), &audit())
                .await
                .unwrap();
            assert_eq!(
                s.api_key_by_hash(role.as_str())
                    .await
                    .unwrap()
                    .unwrap()
                    .key
                    .role,
                k.role
            );
        }
    }

    pub async fn the_audit_chain_links_and_verifies(s: &dyn Store) {
        assert_eq!(
            s.verify_audit_chain(None).await.unwrap(),
            None,
            "an empty chain is intact"
        );
        let mut events = Vec::new();
        for i in 0..6u8 {
            let t = (i % 2 == 1).then(|| tenant(1));
            events.push(
                s.append_audit(&draft(&format!("action.{i}"), t))
                    .await
                    .unwrap(),
            );
        }
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5, 6]
        );
        assert_eq!(events[0].prev_hash, eai_store::audit::GENESIS_HASH);
        assert!(events.windows(2).all(|w| w[1].prev_hash == w[0].hash));
        assert_eq!(eai_store::audit::verify(&events), None);
        assert_eq!(
            s.audit_events(Scope::Platform, 0, 100).await.unwrap(),
            events,
            "read back as written"
        );
        assert_eq!(
            s.audit_events(Scope::Platform, 2, 3).await.unwrap(),
            events[2..5].to_vec(),
            "after, limit"
        );
        let mine = s
            .audit_events(Scope::Tenant(tenant(1)), 0, 100)
            .await
            .unwrap();
        assert_eq!(
            mine.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![2, 4, 6]
        );
        assert!(s
            .audit_events(Scope::Tenant(tenant(2)), 0, 100)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(s.verify_audit_chain(None).await.unwrap(), None);
    }

    pub async fn concurrent_appends_never_fork_the_chain(s: &dyn Store) {
        let futs = (0..16).map(|i| {
            let d = draft(&format!("concurrent.{i}"), None);
            async move { s.append_audit(&d).await.unwrap().seq }
        });
        let mut seqs: Vec<u64> = futures_join_all(futs).await;
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=16).collect::<Vec<_>>());
        assert_eq!(s.verify_audit_chain(None).await.unwrap(), None);
    }

    pub async fn concurrent_batches_of_one_gpu_count_each_sample_once(s: &dyn Store) {
        // Four writers send overlapping, interleaved slices of the same two GPUs' hour at once.
        let all = fleet("vllm-a", 2, T0, T0 + H);
        let futs = (0..4usize).map(|w| {
            let mine: Vec<Sample> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| (i / 40) % 4 == w || i % 7 == w)
                .map(|(_, x)| x.clone())
                .collect();
            async move {
                let mut n = 0;
                for b in mine.chunks(50) {
                    n += s.insert_samples(b, &audit()).await.unwrap().inserted;
                }
                n
            }
        });
        let inserted: u64 = futures_join_all(futs).await.into_iter().sum();
        assert_eq!(inserted, all.len() as u64, "each sample stored once");
        let read = all_usage(s).await;
        assert_eq!(read.rollups, expected_rollups(&all));
        assert!(read.gaps.is_empty(), "{:?}", read.gaps);
    }

    // --- budgets and reservations ---------------------------------------------------------------------------

    fn eur() -> Currency {
        Currency::from_str("EUR").unwrap()
    }

    pub fn budget_spec(t: TenantId, limit: &str, enforce: bool) -> eai_engine::budget::BudgetSpec {
        eai_engine::budget::BudgetSpec {
            tenant_id: t,
            name: format!("{t} monthly"),
            limit: d(limit),
            currency: eur(),
            tokens_limit: None,
            thresholds_pct: vec![50, 80, 100],
            enforce,
            webhook_url: Some("https://hooks.example.com/eai".into()),
            effective_from: ts(T0),
            effective_to: None,
        }
    }

    pub fn new_budget(spec: eai_engine::budget::BudgetSpec) -> eai_store::budgets::NewBudget {
        eai_store::budgets::NewBudget {
            spec,
            webhook_secret: Some("whsec_test".into()),
        }
    }

    fn reservation(t: TenantId, cost: &str, at: i64) -> eai_store::budgets::NewReservation {
        eai_store::budgets::NewReservation::new(
            eai_engine::budget::ReservationRequest {
                tenant_id: t,
                action: "llm.invoke".into(),
                estimate: eai_engine::budget::Amounts {
                    cost: d(cost),
                    tokens: Decimal::from(100),
                },
                currency: None,
                deployment_id: Some("vllm-a".into()),
                ttl_ms: 60_000,
            },
            ts(at),
        )
    }

    fn amounts(cost: &str, tokens: i64) -> eai_engine::budget::Amounts {
        eai_engine::budget::Amounts {
            cost: d(cost),
            tokens: Decimal::from(tokens),
        }
    }

    /// The allocation batch's `gpu_local` charge of a tenant for October.
    fn gpu_local(t: TenantId, cost: &str) -> UsageEvent {
        let mut e = tokens(t, "vllm-a", T0, 0);
        e.event_id = eai_engine::batch::event_id("2026-10", &t.to_string(), "vllm-a", "alp_1");
        e.source = eai_engine::domain::ALLOCATION_SOURCE.into();
        e.usage_type = eai_engine::batch::GPU_LOCAL.into();
        e.units = BTreeMap::new();
        e.cost = Some((NonNegative::new(d(cost)).unwrap(), eur()));
        e
    }

    fn granted(o: eai_store::budgets::ReserveOutcome) -> Option<eai_store::budgets::Reservation> {
        match o {
            eai_store::budgets::ReserveOutcome::Granted(r) => Some(r),
            eai_store::budgets::ReserveOutcome::Refused(_) => None,
        }
    }

    async fn standing(s: &dyn Store, t: TenantId, at: i64) -> eai_engine::budget::Standing {
        let all = s.budget_standings(Scope::Tenant(t), ts(at)).await.unwrap();
        assert_eq!(all.len(), 1, "{all:?}");
        all.into_iter().next().unwrap()
    }

    pub async fn budgets_are_scoped_and_superseded_never_edited(s: &dyn Store) {
        let (a, b) = (tenant(1), tenant(2));
        let ba = s
            .create_budget(&new_budget(budget_spec(a, "100", true)), &audit())
            .await
            .unwrap();
        s.create_budget(&new_budget(budget_spec(b, "50", false)), &audit())
            .await
            .unwrap();
        assert_eq!(ba.budget.id, "bud_1");
        assert_eq!(s.budgets(Scope::Platform).await.unwrap().len(), 2);
        let mine = s.budgets(Scope::Tenant(a)).await.unwrap();
        assert_eq!(mine, vec![ba.clone()]);
        assert_eq!(mine[0].webhook_secret.as_deref(), Some("whsec_test"));

        // Another tenant's budget is not found; closing at its start is a conflict.
        let r = s
            .supersede_budget(Scope::Tenant(b), "bud_1", ts(T0 + H), None, &audit())
            .await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
        let r = s
            .supersede_budget(Scope::Platform, "bud_1", ts(T0), None, &audit())
            .await;
        assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
        let mut raised = budget_spec(a, "150", true);
        raised.effective_from = ts(T0 + H);
        let (closed, opened) = s
            .supersede_budget(
                Scope::Tenant(a),
                "bud_1",
                ts(T0 + H),
                Some(&raised),
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!(closed.budget.spec.effective_to, Some(ts(T0 + H)));
        let opened = opened.unwrap();
        assert_eq!(opened.budget.id, "bud_3");
        assert_eq!(
            opened.webhook_secret.as_deref(),
            Some("whsec_test"),
            "carried over"
        );
        let mut other = budget_spec(b, "1", true);
        other.effective_from = ts(T0 + 2 * H);
        let r = s
            .supersede_budget(
                Scope::Platform,
                "bud_3",
                ts(T0 + 2 * H),
                Some(&other),
                &audit(),
            )
            .await;
        assert!(
            matches!(r, Err(StoreError::Conflict { .. })),
            "a successor of another tenant: {r:?}"
        );
        // In force: the successor only.
        let now = s
            .budget_standings(Scope::Tenant(a), ts(T0 + 2 * H))
            .await
            .unwrap();
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].budget.id, "bud_3");
    }

    pub async fn spend_is_gpu_local_cost_and_commits_and_follows_replacements(s: &dyn Store) {
        let (a, b) = (tenant(1), tenant(2));
        s.create_budget(&new_budget(budget_spec(a, "100", true)), &audit())
            .await
            .unwrap();
        s.create_budget(&new_budget(budget_spec(b, "100", true)), &audit())
            .await
            .unwrap();
        let mut gateway = tokens(a, "vllm-a", T0 + 60_000, 10);
        gateway.cost = Some((NonNegative::new(d("99")).unwrap(), eur()));
        s.upsert_usage_events(
            &[gpu_local(a, "10.25"), gpu_local(b, "1"), gateway],
            &audit(),
        )
        .await
        .unwrap();
        let at = T0 + 10 * H;
        assert_eq!(
            standing(s, a, at).await.spent.cost,
            d("10.25"),
            "gpu_local only"
        );
        // The batch re-runs with a corrected charge: replaced, never added.
        s.upsert_usage_events(&[gpu_local(a, "12.50")], &audit())
            .await
            .unwrap();
        assert_eq!(standing(s, a, at).await.spent.cost, d("12.5"));
        assert_eq!(standing(s, b, at).await.spent.cost, d("1"));
        // The next month starts from nothing.
        assert_eq!(
            standing(s, a, T0 + 32 * 24 * H).await.spent.cost,
            Decimal::ZERO
        );
        // A commit counts at once, with its tokens.
        let r = granted(s.reserve(&reservation(a, "5", at), &audit()).await.unwrap()).unwrap();
        assert_eq!(standing(s, a, at).await.held.cost, d("5"));
        s.commit_reservation(
            Scope::Tenant(a),
            &r.id,
            amounts("4.10", 321),
            ts(at + 1),
            &audit(),
        )
        .await
        .unwrap();
        let after = standing(s, a, at + 2).await;
        assert_eq!(
            (after.spent.cost, after.spent.tokens),
            (d("16.6"), Decimal::from(321))
        );
        assert_eq!(after.held.cost, Decimal::ZERO);
    }

    pub async fn reservations_hold_commit_once_release_and_expire(s: &dyn Store) {
        let a = tenant(1);
        s.create_budget(&new_budget(budget_spec(a, "1.00", true)), &audit())
            .await
            .unwrap();
        let at = T0 + H;
        let first = granted(
            s.reserve(&reservation(a, "0.50", at), &audit())
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(first.currency, eur(), "the budget's currency");
        let second = granted(
            s.reserve(&reservation(a, "0.50", at), &audit())
                .await
                .unwrap(),
        )
        .unwrap();
        let refused = s
            .reserve(&reservation(a, "0.01", at), &audit())
            .await
            .unwrap();
        let eai_store::budgets::ReserveOutcome::Refused(why) = refused else {
            panic!("a full budget grants nothing: {refused:?}");
        };
        assert_eq!((why.by, why.standing.left()), ("cost", Decimal::ZERO));
        assert_eq!(why.standing.held.cost, d("1"));

        // Releasing frees the hold; a second release changes nothing.
        let released = s
            .release_reservation(Scope::Tenant(a), &first.id, ts(at + 1), &audit())
            .await
            .unwrap();
        assert_eq!(released.status.as_str(), "released");
        let again = s
            .release_reservation(Scope::Tenant(a), &first.id, ts(at + 2), &audit())
            .await
            .unwrap();
        assert_eq!(again, released);
        let third = granted(
            s.reserve(&reservation(a, "0.30", at + 3), &audit())
                .await
                .unwrap(),
        )
        .unwrap();

        // A commit records one event; a re-commit changes nothing, whatever it says.
        let c = s
            .commit_reservation(
                Scope::Tenant(a),
                &second.id,
                amounts("0.40", 90),
                ts(at + 4),
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.actual),
            ("committed", Some(amounts("0.40", 90)))
        );
        let c2 = s
            .commit_reservation(
                Scope::Tenant(a),
                &second.id,
                amounts("9.99", 1),
                ts(at + 5),
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!(c2, c);
        let events = s
            .usage_events(Scope::Tenant(a), ts(T0), ts(T0 + 2 * H))
            .await
            .unwrap();
        let recorded: Vec<_> = events
            .iter()
            .filter(|e| e.source == eai_engine::domain::RESERVATION_SOURCE)
            .collect();
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0].event_id, c.event_id.unwrap());
        assert_eq!(
            recorded[0].cost,
            Some((NonNegative::new(d("0.40")).unwrap(), eur()))
        );
        assert_eq!(recorded[0].usage_type, "llm.invoke");
        let s_now = standing(s, a, at + 6).await;
        assert_eq!((s_now.spent.cost, s_now.held.cost), (d("0.4"), d("0.3")));
        // Committed cannot be released; released cannot be committed; another tenant's is not found.
        let r = s
            .release_reservation(Scope::Tenant(a), &second.id, ts(at + 7), &audit())
            .await;
        assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
        let r = s
            .commit_reservation(
                Scope::Tenant(a),
                &first.id,
                amounts("0.1", 0),
                ts(at + 7),
                &audit(),
            )
            .await;
        assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
        let r = s
            .reservation(Scope::Tenant(tenant(2)), &second.id)
            .await
            .unwrap();
        assert_eq!(r, None);
        let r = s
            .commit_reservation(
                Scope::Tenant(tenant(2)),
                &second.id,
                amounts("0", 0),
                ts(at + 7),
                &audit(),
            )
            .await;
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");

        // A hold past its expiry stops counting at once; housekeeping marks it; a late commit still records.
        let late = at + 120_000;
        assert_eq!(standing(s, a, late).await.held.cost, Decimal::ZERO);
        assert_eq!(s.expire_reservations(ts(late)).await.unwrap(), 1);
        let expired = s
            .reservation(Scope::Tenant(a), &third.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(expired.status.as_str(), "expired");
        assert_eq!(s.expire_reservations(ts(late)).await.unwrap(), 0);
        let c = s
            .commit_reservation(
                Scope::Tenant(a),
                &third.id,
                amounts("0.25", 5),
                ts(late + 1),
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!(
            c.status.as_str(),
            "committed",
            "what was spent is recorded, expired hold or not"
        );
        assert_eq!(standing(s, a, late + 2).await.spent.cost, d("0.65"));
    }

    pub async fn concurrent_reservations_never_over_grant(s: &dyn Store) {
        let a = tenant(1);
        s.create_budget(&new_budget(budget_spec(a, "50", true)), &audit())
            .await
            .unwrap();
        let at = T0 + H;
        let futs = (0..200).map(|_| async move {
            let r = s.reserve(&reservation(a, "1", at), &audit()).await.unwrap();
            u64::from(granted(r).is_some())
        });
        let granted: u64 = futures_join_all(futs).await.into_iter().sum();
        assert_eq!(granted, 50, "a budget that fits 50 grants exactly 50");
        assert_eq!(standing(s, a, at).await.held.cost, d("50"));
    }

    pub async fn thresholds_are_recorded_once_and_delivered_until_acknowledged(s: &dyn Store) {
        let (a, b) = (tenant(1), tenant(2));
        s.create_budget(&new_budget(budget_spec(a, "100", false)), &audit())
            .await
            .unwrap();
        let mut quiet = budget_spec(b, "100", false);
        quiet.webhook_url = None;
        s.create_budget(
            &eai_store::budgets::NewBudget {
                spec: quiet,
                webhook_secret: None,
            },
            &audit(),
        )
        .await
        .unwrap();
        let at = T0 + 10 * H;
        assert!(s.record_crossings(ts(at)).await.unwrap().is_empty());
        s.upsert_usage_events(&[gpu_local(a, "60"), gpu_local(b, "100")], &audit())
            .await
            .unwrap();
        let head = s.audit_head().await.unwrap().map_or(0, |h| h.seq);
        let first = s.record_crossings(ts(at)).await.unwrap();
        let mut seen: Vec<(String, u32)> = first
            .iter()
            .map(|x| (x.budget_id.clone(), x.threshold_pct))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            vec![
                ("bud_1".into(), 50),
                ("bud_2".into(), 50),
                ("bud_2".into(), 80),
                ("bud_2".into(), 100)
            ]
        );
        assert_eq!(
            s.audit_head().await.unwrap().map_or(0, |h| h.seq),
            head + 4,
            "each crossing audited"
        );
        let crossed = s.audit_events(Scope::Tenant(b), 0, 100).await.unwrap();
        assert_eq!(
            crossed
                .iter()
                .filter(|e| e.draft.action == "budget.threshold_crossed")
                .count(),
            3,
            "on the tenant's own trail"
        );
        assert!(
            s.record_crossings(ts(at + 1)).await.unwrap().is_empty(),
            "once each"
        );
        s.upsert_usage_events(&[gpu_local(a, "100")], &audit())
            .await
            .unwrap();
        let more = s.record_crossings(ts(at + 2)).await.unwrap();
        assert_eq!(
            more.iter().map(|x| x.threshold_pct).collect::<Vec<_>>(),
            vec![80, 100]
        );

        // Deliveries: only the budget with a webhook; until acknowledged; retried later after a failure.
        let due = s.due_deliveries(ts(at + 3), 100).await.unwrap();
        assert_eq!(due.len(), 3);
        assert!(due
            .iter()
            .all(|x| x.url == "https://hooks.example.com/eai" && x.secret == "whsec_test"));
        s.delivery_attempted(due[0].alert.id, ts(at + 4), Ok(()), None)
            .await
            .unwrap();
        s.delivery_attempted(
            due[1].alert.id,
            ts(at + 4),
            Err("503".into()),
            Some(ts(at + 60_000)),
        )
        .await
        .unwrap();
        let now = s.due_deliveries(ts(at + 5), 100).await.unwrap();
        assert_eq!(now.len(), 1, "delivered and backing-off ones wait");
        let later = s.due_deliveries(ts(at + 60_000), 100).await.unwrap();
        assert_eq!(later.len(), 2);
        let retried = later
            .iter()
            .find(|x| x.alert.id == due[1].alert.id)
            .unwrap();
        assert_eq!(retried.alert.attempts, 1);
        s.delivery_attempted(due[2].alert.id, ts(at + 60_001), Err("gone".into()), None)
            .await
            .unwrap();
        let left = s.due_deliveries(ts(at + 120_000), 100).await.unwrap();
        assert_eq!(left.len(), 1, "an abandoned delivery is not tried again");
        let trail = s.audit_events(Scope::Platform, 0, 1000).await.unwrap();
        assert!(trail
            .iter()
            .any(|e| e.draft.action == "budget.webhook_abandoned"));
    }

    /// Joins futures without an extra dependency (they run concurrently on the one task).
    async fn futures_join_all<F: std::future::Future<Output = u64>>(
        futs: impl Iterator<Item = F>,
    ) -> Vec<u64> {
        let mut pinned: Vec<std::pin::Pin<Box<F>>> = futs.map(Box::pin).collect();
        let mut out: Vec<Option<u64>> = vec![None; pinned.len()];
        std::future::poll_fn(|cx| {
            for (i, f) in pinned.iter_mut().enumerate() {
                if out[i].is_none() {
                    if let std::task::Poll::Ready(v) = f.as_mut().poll(cx) {
                        out[i] = Some(v);
                    }
                }
            }
            if out.iter().all(Option::is_some) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
        out.into_iter().flatten().collect()
    }

    /// One insertion plan of the property test: the samples in the order received, cut into batches.
    #[derive(Debug, Clone)]
    pub struct Plan {
        pub batches: Vec<Vec<Sample>>,
        pub usage: Vec<UsageEvent>,
        pub policies: Vec<Policy>,
    }

    /// The store's rollups are the engine's `aggregate(cells(all samples))` whatever the order and batching of
    /// inserts, and the allocation from the store's rollups is the raw path's.
    pub async fn rollups_equal_the_raw_path(s: &dyn Store, plan: &Plan) {
        let received: Vec<Sample> = plan.batches.concat();
        let (inserted, duplicates) = insert_all(s, &plan.batches).await;
        let distinct: std::collections::HashSet<(&str, Timestamp)> = received
            .iter()
            .map(|x| (x.gpu_uuid.as_str(), x.end))
            .collect();
        assert_eq!(inserted, distinct.len() as u64);
        assert_eq!(inserted + duplicates, received.len() as u64);

        let raw = cells(&received, &SeriesConfig::default());
        let read = all_usage(s).await;
        assert_eq!(
            read.rollups,
            in_read_order(group(aggregate(raw.cells.clone()))),
            "rollups"
        );
        per_gpu_rollups_are_the_raw_paths(s, &received).await;
        let mut gaps = raw.gaps.clone();
        gaps.sort();
        assert_eq!(read.gaps, gaps, "gaps");

        // Allocation: hours where a policy starts or ends inside the hour are read exactly.
        let p = period(T0, T0 + 6 * H);
        let mut exact: Vec<Timestamp> = Vec::new();
        for pol in &plan.policies {
            for t in std::iter::once(pol.spec.effective_from).chain(pol.spec.effective_to) {
                if t.floor_to(H) != t {
                    exact.push(t);
                }
            }
        }
        let read = s.usage_for(p.from, p.to, &exact).await.unwrap();
        let stored = allocate(&AllocationInput {
            period: p,
            claims: &[],
            rollups: &read.rollups,
            usage: &plan.usage,
            policies: &plan.policies,
            gaps: &read.gaps,
            config: AllocationConfig::default(),
        });
        let mut from_raw: Allocation = allocate_samples(
            &received,
            &plan.usage,
            &plan.policies,
            p,
            &SeriesConfig::default(),
            AllocationConfig::default(),
        );
        from_raw
            .findings
            .retain(|f| !matches!(f, Finding::ConflictingDuplicate { .. }));
        assert_eq!(stored, from_raw, "allocation");
    }

    /// With the outbox on: each change queues its replica rows (inserted samples, rollups with their new
    /// full value, events), re-sends queue nothing, and acknowledged entries are gone.
    pub async fn the_outbox_carries_each_change_and_acked_entries_go(s: &dyn Store) {
        use eai_store::clickhouse;
        let mut batch = fleet("vllm-a", 1, T0, T0 + H);
        let late = batch.remove(100);
        s.insert_samples(&batch, &audit()).await.unwrap();
        let e = tokens(tenant(1), "vllm-a", T0 + 60_000, 10);
        s.upsert_usage_events(std::slice::from_ref(&e), &audit())
            .await
            .unwrap();
        s.insert_samples(std::slice::from_ref(&late), &audit())
            .await
            .unwrap();
        let o = s.insert_samples(&batch[..10], &audit()).await.unwrap();
        assert_eq!(o.inserted, 0);

        let pending = s.outbox_pending(1000).await.unwrap();
        assert!(pending.windows(2).all(|w| w[0].seq < w[1].seq));
        let rows = |t: &str| -> Vec<serde_json::Value> {
            pending
                .iter()
                .filter(|x| x.table == t)
                .flat_map(|x| x.rows.clone())
                .collect()
        };
        assert_eq!(rows("gpu_samples").len(), 240, "every inserted sample once");
        assert_eq!(rows("usage_events"), vec![clickhouse::event_row(&e)]);
        batch.push(late);
        // The replica holds per-GPU rollups.
        let want = aggregate(cells(&batch, &SeriesConfig::default()).cells);
        assert_eq!(want.len(), 1);
        assert_eq!(
            rows("gpu_rollups").last().unwrap(),
            &clickhouse::rollup_row(&want[0], false),
            "the last rollup row queued is the hour's full value after the late sample"
        );
        let stats = s.outbox_stats().await.unwrap();
        assert_eq!(stats.pending, pending.len() as u64);
        assert!(stats.oldest_ms.is_some());

        let last = pending.last().unwrap().seq;
        assert_eq!(s.outbox_ack(last).await.unwrap(), pending.len() as u64);
        assert!(s.outbox_pending(1000).await.unwrap().is_empty());
        assert_eq!(
            s.outbox_stats().await.unwrap(),
            eai_store::OutboxStats::default()
        );
        // Sequences go on after an acknowledgement (they are the replica's row versions).
        s.upsert_usage_events(&[e], &audit()).await.unwrap();
        let next = s.outbox_pending(10).await.unwrap();
        assert_eq!(next.len(), 1);
        assert!(next[0].seq > last);
    }

    // --- late samples in pruned hours (crate::pruned) -------------------------------------------------------

    /// Group rollups summed per hour, first and last window starts left out: what late samples merged into
    /// pruned hours must reproduce (merging by terms cannot tell how far a rollup's first window moved when a
    /// term is taken out; the allocation does not depend on it within a segment).
    /// The store's per-GPU rollups, hour by hour (policy cuts apart), are the engine's from the raw samples: each
    /// GPU's time in each hour per deployment, owner, model and placement (the pod, namespace and node it ran in).
    async fn per_gpu_rollups_are_the_raw_paths(s: &dyn Store, samples: &[Sample]) {
        let hours = |rollups: Vec<Rollup>| -> Vec<Rollup> {
            let mut v = eai_engine::rollup::coarsen(rollups, H);
            for r in &mut v {
                // Where a cut splits an hour, its window starts are the segments'.
                (r.first_window_start, r.last_window_start) = (Timestamp(0), Timestamp(0));
            }
            v
        };
        let stored = s
            .replica_rows(ts(T0 - 48 * H), ts(T0 + 48 * H))
            .await
            .unwrap()
            .rollups;
        assert!(stored.iter().all(|r| r.key.placement.pod().is_some()));
        assert_eq!(
            hours(stored),
            hours(aggregate(cells(samples, &SeriesConfig::default()).cells)),
            "per-GPU rollups with their placement"
        );
    }

    fn hourly(rollups: &[Rollup]) -> Vec<String> {
        type Sums = (u64, u64, eai_engine::rollup::Quantities, Vec<String>);
        let mut by: BTreeMap<String, Sums> = BTreeMap::new();
        for r in rollups {
            let k = format!(
                "{} {:?} {} {}",
                r.key.deployment_id,
                r.key.owner,
                r.key.model,
                r.key.bucket_start.floor_to(H)
            );
            let e = by.entry(k).or_default();
            e.0 += r.samples;
            e.1 += r.estimated_samples;
            e.2.add(&r.q);
            e.3.extend(eai_engine::rollup::gpus_of(r).map(str::to_string));
        }
        by.into_iter()
            .map(|(k, (samples, estimated, mut q, mut gpus))| {
                q.round(15);
                gpus.sort();
                gpus.dedup();
                let q = q.values().map(|v| v.normalize().to_string()).join(" ");
                format!("{k}: {samples} samples, {estimated} estimated, {q}, gpus {gpus:?}")
            })
            .collect()
    }

    /// What the issue reproduced: for one GPU, the sample ending 40 days ago at 10:00:30, then the one ending at
    /// 10:00:15, with the raw retention passed. Both are counted; a re-send of either is a duplicate.
    pub async fn late_samples_older_than_the_retention_are_counted(s: &dyn Store) {
        let t = T0 + 10 * H;
        let first = sample("GPU-1", "vllm-a", t + 30_000);
        let o = s
            .insert_samples(std::slice::from_ref(&first), &audit())
            .await
            .unwrap();
        assert_eq!((o.inserted, o.duplicates), (1, 0));
        // The retention passes over that hour (40 days later, 35 days kept).
        s.prune_raw_samples(ts(t + 5 * 24 * H)).await.unwrap();
        let late = sample("GPU-1", "vllm-a", t + 15_000);
        let o = s
            .insert_samples(std::slice::from_ref(&late), &audit())
            .await
            .unwrap();
        assert_eq!((o.inserted, o.duplicates), (1, 0));
        let read = s.usage_for(ts(t), ts(t + H), &[]).await.unwrap();
        assert_eq!(read.rollups.len(), 1);
        assert_eq!(read.rollups[0].samples, 2, "both samples are counted");
        assert_eq!(read.rollups[0].q.gpu_seconds, d("30"));
        assert!(read.gaps.is_empty(), "the windows touch: no gap");
        assert_eq!(
            hourly(&read.rollups),
            hourly(&expected_rollups(&[first.clone(), late.clone()]))
        );
        // Re-sends of both, after another pruning: duplicates, never counted again.
        s.prune_raw_samples(ts(t + 6 * 24 * H)).await.unwrap();
        let o = s.insert_samples(&[late, first], &audit()).await.unwrap();
        assert_eq!((o.inserted, o.duplicates), (0, 2));
        let again = s.usage_for(ts(t), ts(t + H), &[]).await.unwrap();
        assert_eq!(hourly(&again.rollups), hourly(&read.rollups));
    }

    /// A window that cannot be merged exactly into a pruned hour (it leaves a hole after a window of which only
    /// the end is kept, while overlapping the next one) is refused with its index, and nothing of its batch is
    /// stored; the same window inside the retention is stored as usual.
    pub async fn an_unmergeable_late_sample_is_refused_and_nothing_is_stored(s: &dyn Store) {
        let batch = fleet("vllm-a", 1, T0, T0 + H);
        s.insert_samples(&batch, &audit()).await.unwrap();
        s.prune_raw_samples(ts(T0 + 5 * H)).await.unwrap();
        let before = all_usage(s).await;
        // Windows end every 15 s; the 40th ends at T0 + 600 s. A 5 s window ending at T0 + 607 s starts after
        // it ends and overlaps the next one.
        let mut odd = sample("GPU-vllm-a-0", "vllm-a", T0 + 607_000);
        odd.window_ms = eai_engine::domain::WindowMs::new(5_000).expect("a window");
        let fine = sample("GPU-other", "vllm-a", T0 + 15_000);
        let err = s.insert_samples(&[fine, odd], &audit()).await.unwrap_err();
        match err {
            StoreError::Refused(errors) => {
                assert_eq!(errors.len(), 1, "{errors:?}");
                assert_eq!(errors[0].index, Some(1));
                assert_eq!(errors[0].field, "timestamp");
                assert!(
                    errors[0].reason.contains("cannot be merged exactly"),
                    "{errors:?}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let after = all_usage(s).await;
        assert_eq!(
            after.rollups, before.rollups,
            "nothing of the batch was stored"
        );
        assert_eq!(after.gaps, before.gaps);
        // A re-send of a counted window of that hour is still a duplicate.
        let o = s.insert_samples(&batch[39..41], &audit()).await.unwrap();
        assert_eq!((o.inserted, o.duplicates), (0, 2));
    }

    /// Two GPUs (one a MIG slice) sampled every 5 minutes for a month older than the retention, with windows
    /// missing (one at a time: interpolated; runs of them: gaps), a series change, and re-sends, arrive shuffled
    /// in batches with the pruner running between them: the store holds exactly what the same samples give in
    /// order, and the allocation is the raw path's.
    pub async fn a_shuffled_backfill_older_than_the_retention_is_exact(s: &dyn Store) {
        let days = 30;
        let mut all = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for g in 0..2 {
            let mut slot = 0;
            while slot < days * 288 {
                let r = next() % 1000;
                if r < 20 {
                    slot += 1; // one window missing: interpolated
                    continue;
                }
                if r < 23 {
                    slot += 4 + (next() % 30) as i64; // a run missing: a gap
                    continue;
                }
                let dep = if g == 1 && slot > 10 * 288 && slot < 11 * 288 {
                    "tgi-b"
                } else {
                    "vllm-a"
                };
                let mut v = sample(&format!("GPU-{g}"), dep, T0 + (slot + 1) * 300_000);
                v.window_ms = eai_engine::domain::WindowMs::new(300_000).expect("a window");
                v.power_w = NonNegative::new(Decimal::from(100 + next() % 600)).unwrap();
                v.utilization = UnitInterval::new(Decimal::new((next() % 101) as i64, 2)).unwrap();
                if g == 1 {
                    v.gpu_fraction = GpuFraction::new(d("0.428571")).unwrap();
                }
                all.push(v);
                slot += 1;
            }
        }
        let mut sent = all.clone();
        for i in (1..sent.len()).rev() {
            sent.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        for i in 0..200 {
            let again = sent[(i * 37) % sent.len()].clone();
            sent.push(again);
        }
        // Everything is older than the retention from the start.
        let now = T0 + (days + 40) * 24 * H;
        s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
        let mut inserted = 0;
        for (i, b) in sent.chunks(500).enumerate() {
            inserted += s.insert_samples(b, &audit()).await.unwrap().inserted;
            if i % 3 == 2 {
                s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
            }
        }
        s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
        assert_eq!(inserted, all.len() as u64);
        let p = period(T0, T0 + days * 24 * H);
        let read = s.usage_for(p.from, p.to, &[]).await.unwrap();
        assert_eq!(
            hourly(&read.rollups),
            hourly(&expected_rollups(&all)),
            "rollups"
        );
        let mut gaps = cells(&all, &SeriesConfig::default()).gaps;
        gaps.sort();
        assert!(!gaps.is_empty());
        assert_eq!(read.gaps, gaps, "gaps");
        let policies = vec![Policy::new(1, spec("a"))];
        let stored = allocation_of(&read, p, &policies, &[]);
        let raw = raw_allocation(&all, p, &policies, &[]);
        assert_eq!(stored, raw, "allocation");
        // Sent again, all of it: duplicates only.
        let mut dup = 0;
        for b in all.chunks(2000) {
            let o = s.insert_samples(b, &audit()).await.unwrap();
            assert_eq!(o.inserted, 0);
            dup += o.duplicates;
        }
        assert_eq!(dup, all.len() as u64);
    }

    /// Two policies, the second starting at minute 20 of an hour, made before a backfill of that hour arrives
    /// after its raw samples' retention: both parts of the hour are priced exactly (the rollups are cut at
    /// minute 20), with no finding.
    pub async fn a_policy_made_before_a_backfill_prices_both_parts_of_its_hour(s: &dyn Store) {
        let mut a = spec("a");
        a.effective_from = ts(T0 - 24 * H);
        let a = s.create_policy(&a, &audit()).await.unwrap();
        let at = ts(T0 + 20 * 60_000);
        let mut b = spec("b");
        b.gpu_hourly_cost = NonNegative::new(d("3.30")).unwrap();
        b.effective_from = at;
        let (_, b) = s
            .supersede_policy(&a.id, at, Some(&b), &audit())
            .await
            .unwrap();
        let b = b.unwrap();
        s.prune_raw_samples(ts(T0 + 30 * 24 * H)).await.unwrap();
        // Dedicated to a tenant, so that each policy's part is an item of its own.
        let mut batch = fleet("vllm-a", 2, T0, T0 + H);
        for x in &mut batch {
            x.owner = Some(tenant(1));
        }
        batch.reverse();
        for chunk in batch.chunks(37) {
            s.insert_samples(chunk, &audit()).await.unwrap();
        }
        let policies = s.policies().await.unwrap();
        let p = period(T0, T0 + H);
        let read = s.usage_for(p.from, p.to, &[at]).await.unwrap();
        let stored = allocation_of(&read, p, &policies, &[]);
        let raw = raw_allocation(&batch, p, &policies, &[]);
        assert_eq!(stored, raw);
        assert!(stored.findings.is_empty(), "{:?}", stored.findings);
        let ids: Vec<_> = stored.items.iter().map(|i| i.policy_id.clone()).collect();
        assert!(ids.contains(&a.id) && ids.contains(&b.id), "{ids:?}");
    }

    /// An hour holding a policy boundary is read from raw samples while it has them; when the pruner freezes
    /// it, it first cuts its rollups at the boundary: the allocation is the same before and after.
    pub async fn pruning_cuts_an_hour_at_its_policy_boundary_before_freezing_it(s: &dyn Store) {
        let batch = fleet("vllm-a", 2, T0, T0 + 2 * H);
        s.insert_samples(&batch, &audit()).await.unwrap();
        let mut a = spec("a");
        a.effective_from = ts(T0 - 24 * H);
        let a = s.create_policy(&a, &audit()).await.unwrap();
        let at = ts(T0 + H + 17 * 60_000 + 7_500);
        let mut b = spec("b");
        b.gpu_hourly_cost = NonNegative::new(d("9.99")).unwrap();
        b.effective_from = at;
        s.supersede_policy(&a.id, at, Some(&b), &audit())
            .await
            .unwrap();
        let policies = s.policies().await.unwrap();
        let p = period(T0, T0 + 2 * H);
        let alloc = |read: eai_store::UsageRead| allocation_of(&read, p, &policies, &[]);
        let before = alloc(s.usage_for(p.from, p.to, &[at]).await.unwrap());
        let raw = raw_allocation(&batch, p, &policies, &[]);
        assert_eq!(before, raw);
        s.prune_raw_samples(ts(T0 + 10 * H)).await.unwrap();
        let after = alloc(s.usage_for(p.from, p.to, &[at]).await.unwrap());
        assert_eq!(after, raw, "priced exactly from the cut rollups");
        assert!(after.findings.is_empty());
    }

    /// A policy made after its hour's raw samples were pruned cannot cut that hour any more: the allocation
    /// says so, with the GPU-seconds concerned.
    pub async fn a_policy_made_after_its_hour_froze_is_reported_with_its_gpu_seconds(
        s: &dyn Store,
    ) {
        s.insert_samples(&fleet("vllm-a", 2, T0, T0 + 2 * H), &audit())
            .await
            .unwrap();
        s.prune_raw_samples(ts(T0 + 10 * H)).await.unwrap();
        let mut a = spec("a");
        a.effective_from = ts(T0 - 24 * H);
        let a = s.create_policy(&a, &audit()).await.unwrap();
        let at = ts(T0 + H + 20 * 60_000);
        s.supersede_policy(&a.id, at, Some(&spec("b")), &audit())
            .await
            .unwrap();
        let policies = s.policies().await.unwrap();
        let p = period(T0, T0 + 2 * H);
        let read = s.usage_for(p.from, p.to, &[at]).await.unwrap();
        let got = allocation_of(&read, p, &policies, &[]);
        let f: Vec<_> = got
            .findings
            .iter()
            .filter_map(|f| match f {
                Finding::PolicyBoundaryInsideRollup {
                    bucket_start,
                    gpu_seconds,
                    ..
                } => Some((*bucket_start, *gpu_seconds)),
                _ => None,
            })
            .collect();
        assert_eq!(f, vec![(ts(T0 + H), d("7200"))], "{:?}", got.findings);
    }

    /// Samples split equally between the pods of a shared GPU are tallied per hour and deployment at ingest,
    /// each once (a re-send adds nothing); the finding made from the tally is the raw path's.
    pub async fn equal_shares_are_tallied_once_and_reported_as_the_raw_path_does(s: &dyn Store) {
        use eai_engine::domain::ShareMethod;
        let shared = |gpu: &str, dep: &str, end: i64, m: ShareMethod| {
            let mut x = sample(gpu, dep, end);
            x.gpu_fraction = GpuFraction::new(d("0.5")).unwrap();
            x.share_method = m;
            x
        };
        let mut batch = Vec::new();
        for k in 1..=8 {
            let end = T0 + k * 15_000;
            batch.push(shared("GPU-s", "chat", end, ShareMethod::Equal));
            batch.push(shared(
                "GPU-s/shared/ns/embed-0",
                "embed",
                end,
                ShareMethod::Equal,
            ));
            batch.push(shared("GPU-m", "meas", end, ShareMethod::Measured));
        }
        // Across an hour: the tally goes by the hour each window starts in.
        batch.push(shared("GPU-s", "chat", T0 + H + 15_000, ShareMethod::Equal));
        s.insert_samples(&batch, &audit()).await.unwrap();
        let again = s.insert_samples(&batch[..6], &audit()).await.unwrap();
        assert_eq!(again.inserted, 0);
        let tally = s.equal_shares(ts(T0), ts(T0 + 2 * H)).await.unwrap();
        let got: Vec<(i64, &str, u64, Decimal)> = tally
            .iter()
            .map(|e| {
                (
                    e.bucket_start.0,
                    e.deployment_id.as_str(),
                    e.samples,
                    e.gpu_seconds,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (T0, "chat", 8, d("60")),
                (T0, "embed", 8, d("60")),
                (T0 + H, "chat", 1, d("7.5")),
            ]
        );
        assert!(
            s.equal_shares(ts(T0 + H), ts(T0 + 2 * H))
                .await
                .unwrap()
                .len()
                == 1
        );
        let policies = s.policies().await.unwrap();
        let p = period(T0, T0 + 2 * H);
        let mut stored = allocation_of(
            &s.usage_for(p.from, p.to, &[]).await.unwrap(),
            p,
            &policies,
            &[],
        );
        stored
            .findings
            .extend(eai_engine::shares::findings(&tally, p));
        let mut received = batch.clone();
        received.extend(batch[..6].iter().cloned());
        assert_eq!(stored, raw_allocation(&received, p, &policies, &[]));
        let codes: Vec<&str> = stored.findings.iter().map(Finding::code).collect();
        assert_eq!(
            codes.iter().filter(|c| **c == "equal_gpu_shares").count(),
            2,
            "{codes:?}"
        );
    }

    /// How a pod's share of its GPU was obtained is kept with its series (SPEC §11): the samples read back
    /// carry it, and a pod whose GPU went from its own to shared (measured, then split equally) has one
    /// placement per method with its own time, read from the rollups or exactly from the raw rows alike.
    pub async fn a_share_method_is_kept_with_its_series(s: &dyn Store) {
        use eai_engine::domain::ShareMethod::{self, Equal, Exclusive, Measured};
        let method = |k: i64| match k {
            1..=80 => Exclusive,
            81..=160 => Measured,
            _ => Equal,
        };
        let embed = "GPU-x/shared/eai-inference/embed-0";
        let mut batch = Vec::new();
        for k in 1..=240 {
            let end = T0 + k * 15_000;
            let mut x = sample("GPU-x", "chat", end);
            x.pod = "chat-0".into();
            x.share_method = method(k);
            if x.share_method != Exclusive {
                x.gpu_fraction = GpuFraction::new(d("0.5")).unwrap();
                let mut y = x.clone();
                y.gpu_uuid = embed.into();
                y.deployment_id = "embed".into();
                y.pod = "embed-0".into();
                batch.push(y);
            }
            batch.push(x);
        }
        s.insert_samples(&batch, &audit()).await.unwrap();
        type Sums = BTreeMap<(String, Option<String>, Option<ShareMethod>), Decimal>;
        let sums = |rs: &[Rollup]| -> Sums {
            let mut m = Sums::new();
            for r in rs {
                let p = &r.key.placement;
                *m.entry((
                    r.key.gpu_uuid.clone(),
                    p.pod().map(str::to_string),
                    p.share(),
                ))
                .or_default() += r.q.gpu_seconds;
            }
            m
        };
        let key = |g: &str, pod: &str, m| (g.to_string(), Some(pod.to_string()), Some(m));
        let want: Sums = [
            // 80 windows of 15 s alone, then 80 of half the GPU per method; the holes between methods are
            // gaps (the fraction changed), never filled.
            (key("GPU-x", "chat-0", Exclusive), d("1200")),
            (key("GPU-x", "chat-0", Measured), d("600")),
            (key("GPU-x", "chat-0", Equal), d("600")),
            (key(embed, "embed-0", Measured), d("600")),
            (key(embed, "embed-0", Equal), d("600")),
        ]
        .into_iter()
        .collect();
        for exact in [vec![], vec![ts(T0)]] {
            let usage = s
                .gpu_usage(Scope::Platform, ts(T0), ts(T0 + H), &exact)
                .await
                .unwrap();
            assert_eq!(sums(&usage.to_rollups()), want, "exact hours {exact:?}");
        }
        let rows = s.replica_rows(ts(T0), ts(T0 + 2 * H)).await.unwrap();
        assert_eq!(rows.samples.len(), batch.len());
        for x in &rows.samples {
            let k = (x.end.0 - T0) / 15_000;
            assert_eq!(x.share_method, method(k), "{} at {k}", x.gpu_uuid);
        }
        let latest = s.latest_samples(ts(T0), 10).await.unwrap();
        let methods: Vec<(&str, ShareMethod)> = latest
            .samples
            .iter()
            .map(|x| (x.gpu_uuid.as_str(), x.share_method))
            .collect();
        assert_eq!(methods, vec![("GPU-x", Equal), (embed, Equal)]);
    }

    /// A backfill older than the raw retention, after its policies: the pruner ran first (a server's runs at its
    /// start, with nothing to prune), then policy A (3.60/h) from hour H and policy B (7.20/h) from H+20 min,
    /// then 240 samples of one GPU covering [H, H+1h). The hour costs 20/60 x 3.60 + 40/60 x 7.20 = 6.00
    /// (SPEC §2), with H 60 days before the horizon as with H 2 days before, and no finding says its samples
    /// were pruned before the policy existed.
    pub async fn a_backfill_older_than_the_retention_is_priced_by_the_policies_it_names(
        s: &dyn Store,
    ) {
        let now = T0 + 90 * 24 * H;
        for days_ago in [60, 2] {
            let s_h = now - days_ago * 24 * H;
            // Each round its own deployment and GPU, so that the rounds do not meet.
            let dep = format!("backfill-{days_ago}d");
            let gpu = format!("GPU-backfill-{days_ago}");
            s.prune_raw_samples(ts(now - 35 * 24 * H)).await.unwrap();
            let pattern = |mut p: PolicySpec| {
                p.deployment_pattern = Glob::new(&dep).unwrap();
                p.overhead_pct = NonNegative::ZERO;
                p.energy_kwh_price = NonNegative::ZERO;
                p
            };
            let mut a = pattern(spec(&format!("a-{days_ago}")));
            a.gpu_hourly_cost = NonNegative::new(d("3.60")).unwrap();
            a.effective_from = ts(s_h);
            let a = s.create_policy(&a, &audit()).await.unwrap();
            let mut b = pattern(spec(&format!("b-{days_ago}")));
            b.gpu_hourly_cost = NonNegative::new(d("7.20")).unwrap();
            let at = ts(s_h + 20 * 60_000);
            b.effective_from = at;
            s.supersede_policy(&a.id, at, Some(&b), &audit())
                .await
                .unwrap();
            let samples: Vec<Sample> = (1..=240)
                .map(|k| sample(&gpu, &dep, s_h + k * 15_000))
                .collect();
            for chunk in samples.chunks(60) {
                s.insert_samples(chunk, &audit()).await.unwrap();
            }
            let policies = s.policies().await.unwrap();
            let p = period(s_h, s_h + H);
            let read = s.usage_for(p.from, p.to, &[at]).await.unwrap();
            let got = allocation_of(&read, p, &policies, &[]);
            let cost: Vec<Decimal> = got
                .deployments
                .iter()
                .filter(|r| r.deployment_id == dep)
                .map(|r| r.cost)
                .collect();
            assert_eq!(
                cost,
                vec![d("6.00")],
                "{days_ago} days ago: {:?}",
                got.deployments
            );
            assert!(
                got.findings.is_empty(),
                "{days_ago} days ago: {:?}",
                got.findings
            );
            assert_eq!(got, raw_allocation(&samples, p, &policies, &[]));
        }
    }

    /// Random arrival orders, batchings and re-sends, with the pruner run at random horizons between batches
    /// (policies made first): whatever is accepted is counted exactly once, and what is refused leaves nothing.
    /// The pruner also runs before each policy is made (`before_policies[i]`: a horizon in
    /// quarter hours after `T0` before policy `i`, none: no pruning), as a server's pruner runs from its start:
    /// a policy's boundary may fall in an hour already past the horizon when the policy is made, with none of
    /// its samples stored yet (a backfill of last quarter after the team's price change is entered). Whenever
    /// the policies come before the samples, every hour costs what the raw path says, and no hour is reported
    /// as pruned before its policy existed.
    pub async fn pruned_arrivals_equal_the_raw_path(
        s: &dyn Store,
        plan: &Plan,
        before_policies: &[Option<i64>],
        prunes: &[Option<i64>],
    ) {
        for (i, p) in plan.policies.iter().enumerate() {
            if let Some(Some(k)) = before_policies.get(i) {
                s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
            }
            s.create_policy(&p.spec, &audit()).await.unwrap();
        }
        let mut accepted: Vec<Sample> = Vec::new();
        let (mut inserted, mut duplicates) = (0, 0);
        for (i, b) in plan.batches.iter().enumerate() {
            if let Some(Some(k)) = prunes.get(i) {
                s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
            }
            match s.insert_samples(b, &audit()).await {
                Ok(o) => {
                    accepted.extend(b.iter().cloned());
                    inserted += o.inserted;
                    duplicates += o.duplicates;
                }
                Err(StoreError::Refused(errors)) => assert!(!errors.is_empty()),
                Err(e) => panic!("{e}"),
            }
        }
        if let Some(Some(k)) = prunes.last() {
            s.prune_raw_samples(ts(T0 + k * 15 * 60_000)).await.unwrap();
        }
        let distinct: std::collections::HashSet<(&str, Timestamp)> = accepted
            .iter()
            .map(|x| (x.gpu_uuid.as_str(), x.end))
            .collect();
        assert_eq!(inserted, distinct.len() as u64);
        assert_eq!(inserted + duplicates, accepted.len() as u64);

        let read = all_usage(s).await;
        assert_eq!(
            hourly(&read.rollups),
            hourly(&expected_rollups(&accepted)),
            "rollups"
        );
        per_gpu_rollups_are_the_raw_paths(s, &accepted).await;
        let mut gaps = cells(&accepted, &SeriesConfig::default()).gaps;
        gaps.sort();
        assert_eq!(read.gaps, gaps, "gaps");

        let policies = s.policies().await.unwrap();
        assert_eq!(policies, plan.policies);
        let p = period(T0, T0 + 6 * H);
        let exact: Vec<Timestamp> = policies
            .iter()
            .flat_map(|pol| std::iter::once(pol.spec.effective_from).chain(pol.spec.effective_to))
            .filter(|t| t.floor_to(H) != *t)
            .collect();
        let read = s.usage_for(p.from, p.to, &exact).await.unwrap();
        let stored = allocation_of(&read, p, &policies, &plan.usage);
        let mut from_raw = raw_allocation(&accepted, p, &policies, &plan.usage);
        from_raw
            .findings
            .retain(|f| !matches!(f, Finding::ConflictingDuplicate { .. }));
        assert_eq!(stored, from_raw, "allocation");
        breakdown_sums_to_the_allocation(s, p, &exact, &policies, &stored).await;
    }

    /// The breakdown of the stored per-GPU rollups (by pod, by node and GPU, by deployment and pod) sums to the
    /// allocation to the cent, per deployment and currency, and counts every GPU-second and sample of it.
    async fn breakdown_sums_to_the_allocation(
        s: &dyn Store,
        p: Period,
        exact: &[Timestamp],
        policies: &[Policy],
        allocation: &Allocation,
    ) {
        use eai_engine::breakdown::{breakdown, Dimension};
        let rollups = s
            .gpu_usage(Scope::Platform, p.from, p.to, exact)
            .await
            .unwrap();
        for group_by in [
            vec![Dimension::Pod],
            vec![Dimension::Node, Dimension::Gpu],
            vec![Dimension::Deployment, Dimension::Pod],
        ] {
            let b = breakdown(p, H, policies, allocation, &rollups, &group_by, &[]);
            let mut got: BTreeMap<(String, Currency), Decimal> = BTreeMap::new();
            let at = b.group_by.iter().position(|d| *d == Dimension::Deployment);
            let mut total_gs = Decimal::ZERO;
            for r in &b.rows {
                total_gs += r.q.gpu_seconds;
                let dep = at.and_then(|i| r.key[i].clone()).unwrap_or_default();
                for (c, a) in &r.cost {
                    *got.entry((dep.clone(), *c)).or_default() += *a;
                }
            }
            let mut want: BTreeMap<(String, Currency), Decimal> = BTreeMap::new();
            for d in &allocation.deployments {
                if let (Some(c), false) = (d.currency, d.cost.is_zero()) {
                    let dep = if at.is_some() {
                        d.deployment_id.clone()
                    } else {
                        String::new()
                    };
                    *want.entry((dep, c)).or_default() += d.cost;
                }
            }
            got.retain(|_, v| !v.is_zero());
            assert_eq!(got, want, "breakdown by {group_by:?}");
            let want_gs: Decimal = allocation.deployments.iter().map(|d| d.gpu_seconds).sum();
            assert_eq!(total_gs, want_gs, "GPU-seconds by {group_by:?}");
        }
    }

    /// With the outbox off (no replica configured), nothing is queued.
    pub async fn without_the_outbox_nothing_is_queued(s: &dyn Store) {
        s.insert_samples(&fleet("vllm-a", 1, T0, T0 + H), &audit())
            .await
            .unwrap();
        s.upsert_usage_events(&[tokens(tenant(1), "vllm-a", T0, 1)], &audit())
            .await
            .unwrap();
        assert!(s.outbox_pending(10).await.unwrap().is_empty());
        assert_eq!(s.outbox_stats().await.unwrap().pending, 0);
    }
}

/// Random insertion plans for the property test, shared by every backend's harness.
mod plans {
    use super::contract::Plan;
    use super::*;
    use proptest::prelude::*;

    /// (gpu, slot, jitter, window, util, padded util, power, memory, other deployment, fraction)
    pub type Raw = (u8, i64, bool, u8, u32, bool, u32, u32, bool, u8);

    pub fn to_sample((g, slot, jitter, window, util, pad, power, mem, other, frac): Raw) -> Sample {
        let deps = ["vllm-a", "tgi-b"];
        // Mostly one deployment per GPU and half hour, sometimes another: series changes.
        let dep = deps[((slot / 120 + i64::from(g)) % 2) as usize ^ usize::from(other)];
        let end = T0 + (slot + 1) * 15_000 + if jitter { 3_000 } else { 0 };
        let mut s = sample(&format!("GPU-{g}"), dep, end);
        s.window_ms = eai_engine::domain::WindowMs::new(
            [15_000, 15_000, 15_000, 40_000, 5_000][window as usize],
        )
        .expect("a window");
        // The same value written with trailing zeros must be stored and read back as the same number.
        s.utilization = UnitInterval::new(if pad {
            Decimal::new(i64::from(util) * 10_000, 6)
        } else {
            Decimal::new(util.into(), 2)
        })
        .unwrap();
        s.power_w = NonNegative::new(Decimal::new(power.into(), 1)).unwrap();
        s.memory_used_gb = NonNegative::new(Decimal::from(mem) + d("0.0009765625")).unwrap();
        s.gpu_fraction =
            GpuFraction::new([d("1"), d("0.5"), d("0.142857")][frac as usize]).unwrap();
        if g == 2 && slot < 480 {
            s.owner = Some(tenant(10));
        }
        s.pod = format!("{dep}-{}", slot / 300);
        s
    }

    fn policies() -> Vec<Policy> {
        // One closes and the next opens in the middle of an hour; one more specific for tgi-*.
        let mut a = spec("a");
        a.effective_from = ts(T0 - 24 * H);
        a.effective_to = Some(ts(T0 + H + H / 2));
        let mut b = spec("b");
        b.gpu_hourly_cost = NonNegative::new(d("3.30")).unwrap();
        b.effective_from = ts(T0 + H + H / 2);
        let mut c = spec("c");
        c.deployment_pattern = Glob::new("tgi-*").unwrap();
        c.gpu_hourly_cost = NonNegative::new(d("0.99")).unwrap();
        c.effective_from = ts(T0 + 2 * H);
        c.idle_capacity = IdleCapacity::Proportional;
        vec![Policy::new(1, a), Policy::new(2, b), Policy::new(3, c)]
    }

    /// Pruning horizons (quarter hours after `T0`, none: no pruning) before each batch and once at the end:
    /// never, everything from the start, or a horizon creeping forward as a retention would.
    pub fn arb_prunes() -> impl Strategy<Value = Vec<Option<i64>>> {
        prop_oneof![
            1 => Just(Vec::new()),
            1 => Just(vec![Some(40)]),
            3 => prop::collection::vec(prop::option::weighted(0.3, -4i64..16), 120),
        ]
    }

    /// Pruning horizons (quarter hours after `T0`) before each of the plan's policies is made: often past the
    /// hour of the boundary between policies a and b (`T0 + 1.5 h`), so that the policy finds it frozen.
    pub fn arb_prunes_before_policies() -> impl Strategy<Value = Vec<Option<i64>>> {
        prop::collection::vec(prop::option::weighted(0.6, -4i64..24), 3)
    }

    /// Raw parts of a plan: (samples, order, seed, batch sizes, re-sends, events).
    pub type Parts = (
        u8,
        u64,
        Vec<usize>,
        Vec<prop::sample::Index>,
        Vec<(u8, bool, i64, u64)>,
    );

    pub fn parts() -> impl Strategy<Value = Parts> {
        let event = (1u8..4, any::<bool>(), 0i64..(5 * H), 1u64..10_000);
        (
            0u8..5,
            any::<u64>(),
            prop::collection::vec(1usize..40, 1..20),
            prop::collection::vec(any::<prop::sample::Index>(), 0..20),
            prop::collection::vec(event, 0..12),
        )
    }

    /// Orders, re-sends and batches samples as a plan says.
    pub fn make_plan(mut v: Vec<Sample>, (order, seed, sizes, resends, events): Parts) -> Plan {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        match order {
            // In order: the sampler appending.
            0 => v.sort_by_key(|x| x.end),
            // Reversed: every batch lands before everything stored.
            1 => v.sort_by_key(|x| std::cmp::Reverse(x.end)),
            // Shuffled.
            2 => {
                for i in (1..v.len()).rev() {
                    v.swap(i, (next() % (i as u64 + 1)) as usize);
                }
            }
            // In order with stragglers: about one sample in six arrives later than it should.
            _ => {
                v.sort_by_key(|x| x.end);
                for i in 0..v.len() {
                    if next() % 6 == 0 {
                        let s = v.remove(i);
                        let to = (i + 1 + (next() % 40) as usize).min(v.len());
                        v.insert(to, s);
                    }
                }
            }
        }
        // Re-sends of earlier samples, later in the stream.
        if !v.is_empty() {
            for (k, ix) in resends.iter().enumerate() {
                let again = v[ix.index(v.len())].clone();
                let at = (ix.index(v.len()) + k * 7 + 1).min(v.len());
                v.insert(at, again);
            }
        }
        let mut batches = Vec::new();
        let mut rest = v.as_slice();
        for n in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (b, r) = rest.split_at((*n).min(rest.len()));
            batches.push(b.to_vec());
            rest = r;
        }
        let usage = events
            .into_iter()
            .map(|(t, dep, at, n)| {
                tokens(tenant(t), if dep { "vllm-a" } else { "tgi-b" }, T0 + at, n)
            })
            .collect();
        Plan {
            batches,
            usage,
            policies: policies(),
        }
    }

    pub fn arb_raw() -> impl Strategy<Value = Raw> {
        (
            0u8..3,
            0i64..(4 * 240),
            prop::bool::weighted(0.2),
            0u8..5,
            0u32..=100,
            any::<bool>(),
            0u32..8000,
            0u32..80,
            prop::bool::weighted(0.1),
            0u8..3,
        )
    }

    pub fn arb_plan() -> impl Strategy<Value = Plan> {
        (prop::collection::vec(arb_raw(), 0..160), parts())
            .prop_map(|(raws, parts)| make_plan(raws.into_iter().map(to_sample).collect(), parts))
    }

    /// Dense series, as samplers send them: two GPUs with contiguous 15 s windows over two hours and a half,
    /// a few windows missing (one at a time or in runs), and a few odd windows (5 s or 40 s long, off the grid)
    /// that overlap their neighbours: pruning leaves most of them as ends only, so that late samples meet
    /// pruned neighbours, and some cannot be merged.
    pub fn arb_dense_plan() -> impl Strategy<Value = Plan> {
        let odd = (0u8..2, 0i64..600, 1i64..14, any::<bool>());
        (any::<u64>(), prop::collection::vec(odd, 0..6), parts()).prop_map(|(seed, odd, parts)| {
            let mut x = seed | 1;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut v = Vec::new();
            for g in 0..2u8 {
                let mut slot = 0;
                while slot < 600 {
                    match next() % 100 {
                        0..=1 => slot += 1,
                        2 => slot += 2 + (next() % 80) as i64,
                        _ => {
                            let mut s = to_sample((
                                g,
                                slot,
                                false,
                                0,
                                (next() % 101) as u32,
                                false,
                                4000,
                                40,
                                false,
                                0,
                            ));
                            s.pod = "p".into();
                            v.push(s);
                            slot += 1;
                        }
                    }
                }
            }
            let mut plan = make_plan(v, parts);
            // Odd windows last, one batch each: by then pruning may have left their neighbours as ends.
            for (g, slot, off, long) in odd {
                let mut s = to_sample((g, slot, false, 0, 50, false, 4000, 40, false, 0));
                s.pod = "p".into();
                s.end = Timestamp(s.end.0 + off * 1_000);
                s.window_ms = eai_engine::domain::WindowMs::new(if long { 40_000 } else { 5_000 })
                    .expect("a window");
                plan.batches.push(vec![s]);
            }
            plan
        })
    }
}

/// Runs the contract on fresh SQLite files.
mod sqlite_harness {
    use super::*;

    pub fn fresh() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("data").join("eai.db")).unwrap();
        (dir, store)
    }

    macro_rules! cases {
        ($($name:ident),* $(,)?) => {$(
            #[tokio::test]
            async fn $name() {
                let (_dir, store) = fresh();
                contract::$name(&store).await;
            }
        )*};
    }

    cases!(
        answers_ping,
        ingest_is_idempotent,
        first_received_wins,
        the_worked_example_prices_from_the_store,
        short_gaps_are_estimated_and_long_ones_reported,
        late_samples_fill_their_hole,
        a_late_sample_reinterpolates_across_the_hour,
        exact_hours_come_back_as_cells,
        usage_is_read_for_the_period_only,
        claims_are_the_sums_of_the_stored_events,
        pruning_raw_samples_keeps_rollups,
        gpu_usage_carries_its_pod_and_is_scoped,
        late_samples_older_than_the_retention_are_counted,
        an_unmergeable_late_sample_is_refused_and_nothing_is_stored,
        a_shuffled_backfill_older_than_the_retention_is_exact,
        a_policy_made_before_a_backfill_prices_both_parts_of_its_hour,
        pruning_cuts_an_hour_at_its_policy_boundary_before_freezing_it,
        a_policy_made_after_its_hour_froze_is_reported_with_its_gpu_seconds,
        a_backfill_older_than_the_retention_is_priced_by_the_policies_it_names,
        equal_shares_are_tallied_once_and_reported_as_the_raw_path_does,
        a_share_method_is_kept_with_its_series,
        deployments_seen_come_from_samples,
        the_latest_sample_of_each_gpu_and_node,
        usage_events_upsert_and_scope,
        policies_are_superseded_never_edited,
        api_keys_are_found_by_hash,
        tenants_are_registered_once_and_read_in_scope,
        the_platform_tenant_id_is_reserved,
        reads_scoped_to_the_platform_tenant_find_nothing,
        budgets_are_scoped_and_superseded_never_edited,
        spend_is_gpu_local_cost_and_commits_and_follows_replacements,
        reservations_hold_commit_once_release_and_expire,
        concurrent_reservations_never_over_grant,
        thresholds_are_recorded_once_and_delivered_until_acknowledged,
        the_audit_chain_links_and_verifies,
        concurrent_appends_never_fork_the_chain,
        concurrent_batches_of_one_gpu_count_each_sample_once,
        without_the_outbox_nothing_is_queued,
    );

    /// A fresh file opened with the replica outbox on.
    pub fn fresh_with_outbox() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = eai_store::sqlite::SqliteConfig {
            outbox: true,
            ..Default::default()
        };
        let store = SqliteStore::open_with(&dir.path().join("eai.db"), cfg).unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn the_outbox_carries_each_change_and_acked_entries_go() {
        let (_dir, store) = fresh_with_outbox();
        contract::the_outbox_carries_each_change_and_acked_entries_go(&store).await;
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

            #[test]
            fn rollups_equal_the_raw_path(plan in super::super::plans::arb_plan()) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let (_dir, store) = fresh();
                rt.block_on(contract::rollups_equal_the_raw_path(&store, &plan));
            }

            #[test]
            fn pruned_arrivals_equal_the_raw_path(
                plan in prop_oneof![super::super::plans::arb_plan(), super::super::plans::arb_dense_plan()],
                prunes in super::super::plans::arb_prunes(),
                before in super::super::plans::arb_prunes_before_policies(),
            ) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let (_dir, store) = fresh();
                rt.block_on(contract::pruned_arrivals_equal_the_raw_path(&store, &plan, &before, &prunes));
            }
        }
    }
}

/// Cases that reach into the SQLite file itself.
mod sqlite_only {
    use super::sqlite_harness::fresh;
    use super::*;
    use eai_store::sqlite::SqliteConfig;

    fn raw(store: &SqliteStore) -> rusqlite::Connection {
        rusqlite::Connection::open(store.path()).unwrap()
    }

    fn rows(c: &rusqlite::Connection, table: &str) -> i64 {
        c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    #[tokio::test]
    async fn the_file_is_wal_and_fully_synchronous() {
        let (_dir, store) = fresh();
        let c = raw(&store);
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let version: i64 = c
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 13);
        assert_eq!(store.backend(), "sqlite");
    }

    /// What schema 10 (change counts), 12 (equal shares) and 13 (the series' share method) added, taken out
    /// again.
    const UNDO_V10: &str = "PRAGMA foreign_keys = OFF; \
        CREATE TABLE series_v12 (id INTEGER PRIMARY KEY, node TEXT NOT NULL, model TEXT NOT NULL, \
        namespace TEXT NOT NULL, pod TEXT NOT NULL, deployment_id TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', \
        first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, \
        UNIQUE (deployment_id, owner, model, namespace, pod, node)); \
        INSERT INTO series_v12 SELECT id, node, model, namespace, pod, deployment_id, owner, first_seen_ms, \
        last_seen_ms FROM series; DROP TABLE series; ALTER TABLE series_v12 RENAME TO series; \
        PRAGMA foreign_keys = ON; \
        DROP TABLE equal_shares; DROP TRIGGER deployment_rollups_inserted; DROP TRIGGER deployment_rollups_updated; \
        DROP TRIGGER deployment_rollups_deleted; DROP TRIGGER usage_claims_inserted; \
        DROP TRIGGER usage_claims_updated; DROP TRIGGER usage_claims_deleted; DROP TABLE hour_changes;";

    /// What schemas 9 (providers), 8 (budgets) and 7 (registered tenants) added, taken out again.
    const UNDO_V7: &str =
        "DROP TABLE providers; DROP TABLE budgets; DROP TABLE reservations; DROP TABLE spend; \
        DROP TABLE budget_alerts; DROP TABLE tenants;";

    /// What schema 6 added, taken out again: a file as an older binary left it.
    const UNDO_V6: &str = "DROP INDEX api_keys_by_previous_hash; \
        ALTER TABLE api_keys DROP COLUMN nodes; ALTER TABLE api_keys DROP COLUMN expires_at_ms; \
        ALTER TABLE api_keys DROP COLUMN revoked_at_ms; ALTER TABLE api_keys DROP COLUMN previous_hash; \
        ALTER TABLE api_keys DROP COLUMN previous_valid_until_ms; ALTER TABLE api_keys DROP COLUMN rotated_at_ms; \
        DELETE FROM meta WHERE key = 'audit_v2_from_seq';";

    /// A file pruned by a binary older than end sets (schema 4) has no index of its pruned windows: opened by
    /// this one, its horizon becomes where the index starts, a late sample that would need the older hours is
    /// refused (it could be a re-send), and one that does not is merged. Its policies' boundaries in hours not
    /// frozen yet become cuts.
    #[tokio::test]
    async fn a_file_pruned_before_end_sets_refuses_what_it_cannot_tell_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eai.db");
        let store = SqliteStore::open(&path).unwrap();
        store
            .insert_samples(&fleet("vllm-a", 1, T0, T0 + 4 * H), &audit())
            .await
            .unwrap();
        let mut p = spec("a");
        p.effective_from = ts(T0 + 3 * H + 60_000);
        store.create_policy(&p, &audit()).await.unwrap();
        store.prune_raw_samples(ts(T0 + 2 * H)).await.unwrap();
        drop(store);
        // What an older binary left: every pruned row gone, no end sets, no cuts.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!(
            "DELETE FROM gpu_samples WHERE end_ms < {cut}; {UNDO_V10} {UNDO_V7} {UNDO_V6} \
             DROP TABLE pruned_ends; DROP TABLE prune_pending; DROP TABLE rollup_cuts; \
             UPDATE schema_version SET version = 4;",
            cut = T0 + 2 * H
        ))
        .unwrap();
        drop(c);

        let store = SqliteStore::open(&path).unwrap();
        let c = raw(&store);
        let indexed: i64 = c
            .query_row(
                "SELECT value FROM meta WHERE key = 'pruned_indexed_from_ms'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, T0 + 2 * H);
        assert_eq!(rows(&c, "rollup_cuts"), 1, "the boundary at 3 h + 1 min");
        let err = store
            .insert_samples(
                &[sample("GPU-vllm-a-0", "vllm-a", T0 + H + 7_500)],
                &audit(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Refused(e) if e[0].reason.contains("before eai-gpu kept an index")),
            "{err:?}"
        );
        // A new GPU's history there has no older neighbour to miss: appended, counted.
        let o = store
            .insert_samples(&[sample("GPU-new", "vllm-a", T0 + H + 7_500)], &audit())
            .await
            .unwrap();
        assert_eq!(o.inserted, 1);
    }

    /// A file from before budgets (schema 7) gets its spend built from the allocation charges already stored.
    #[tokio::test]
    async fn a_file_from_before_budgets_gets_its_spend_built_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eai.db");
        let store = SqliteStore::open(&path).unwrap();
        let a = tenant(1);
        let mut charge = tokens(a, "vllm-a", T0, 0);
        charge.source = eai_engine::domain::ALLOCATION_SOURCE.into();
        charge.usage_type = eai_engine::batch::GPU_LOCAL.into();
        charge.cost = Some((
            NonNegative::new(d("7.25")).unwrap(),
            Currency::from_str("EUR").unwrap(),
        ));
        store
            .upsert_usage_events(&[charge], &audit())
            .await
            .unwrap();
        drop(store);
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!(
            "{UNDO_V10} DROP TABLE providers; DROP TABLE budgets; DROP TABLE reservations; DROP TABLE spend; \
             DROP TABLE budget_alerts; UPDATE schema_version SET version = 7;"
        ))
        .unwrap();
        drop(c);
        let store = SqliteStore::open(&path).unwrap();
        let spec = super::contract::budget_spec(a, "10", true);
        store
            .create_budget(
                &eai_store::budgets::NewBudget {
                    spec,
                    webhook_secret: None,
                },
                &audit(),
            )
            .await
            .unwrap();
        let st = store
            .budget_standings(Scope::Tenant(a), ts(T0 + H))
            .await
            .unwrap();
        assert_eq!(st[0].spent.cost, d("7.25"));
    }

    /// A file written before group rollups and claims existed (schema 3) gets them built from its rows when a
    /// newer binary opens it: the reads are what they were.
    #[tokio::test]
    async fn a_file_from_before_groups_gets_them_built_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eai.db");
        let store = SqliteStore::open(&path).unwrap();
        let mut batch = fleet("vllm-a", 3, T0, T0 + 2 * H);
        batch.extend(fleet("vllm-b", 2, T0 + H, T0 + 3 * H));
        let late = batch.remove(7);
        store.insert_samples(&batch, &audit()).await.unwrap();
        store.insert_samples(&[late], &audit()).await.unwrap();
        let mut events = vec![
            tokens(tenant(1), "vllm-a", T0 + 60_000, 7000),
            tokens(tenant(2), "vllm-a", T0 + 61_000, 3000),
            tokens(tenant(2), "vllm-b", T0 + H + 1, 5),
        ];
        store.upsert_usage_events(&events, &audit()).await.unwrap();
        events[0]
            .units
            .insert("tokens_out".into(), NonNegative::new(d("1")).unwrap());
        store
            .upsert_usage_events(&events[..1], &audit())
            .await
            .unwrap();
        let before = all_usage(&store).await;
        assert_eq!(before.rollups.len(), 4, "two deployments, two hours each");
        assert_eq!(before.claims, sum_claims(&events));
        drop(store);

        // Back to schema 3: what an older binary left.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!(
            "{UNDO_V10} {UNDO_V7} {UNDO_V6} DROP TABLE pruned_ends; DROP TABLE prune_pending; DROP TABLE rollup_cuts; \
             DROP TABLE deployment_rollups; DROP TABLE usage_claims; UPDATE schema_version SET version = 3;"
        ))
        .unwrap();
        drop(c);

        let store = SqliteStore::open(&path).unwrap();
        let after = all_usage(&store).await;
        assert_eq!(after.rollups, before.rollups);
        assert_eq!(after.claims, before.claims);
        assert_eq!(after.gaps, before.gaps);
    }

    #[tokio::test]
    async fn a_failed_batch_leaves_nothing() {
        let (_dir, store) = fresh();
        let batch = fleet("vllm-a", 2, T0, T0 + H);
        // Make the database refuse the very last row written (the batch is written sorted by GPU and time).
        let last_end = batch.iter().map(|x| x.end.0).max().unwrap();
        let c = raw(&store);
        c.execute_batch(&format!(
            "CREATE TRIGGER refuse BEFORE INSERT ON gpu_samples WHEN NEW.end_ms = {last_end} AND NEW.gpu_id = 2 \
             BEGIN SELECT RAISE(ABORT, 'refused by test'); END;"
        ))
        .unwrap();
        let err = store.insert_samples(&batch, &audit()).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Internal(ref m) if m.contains("refused by test")),
            "{err}"
        );
        for table in ["gpu_samples", "gpus", "series", "rollups", "gaps"] {
            assert_eq!(rows(&c, table), 0, "{table} after a failed batch");
        }
        c.execute_batch("DROP TRIGGER refuse").unwrap();
        let o = store.insert_samples(&batch, &audit()).await.unwrap();
        assert_eq!(
            (o.inserted, o.duplicates),
            (480, 0),
            "the same batch goes through once the fault is gone"
        );
        assert_eq!(all_usage(&store).await.rollups, expected_rollups(&batch));
    }

    #[tokio::test]
    async fn the_outbox_is_written_in_the_transaction_of_the_change() {
        let (_dir, store) = super::sqlite_harness::fresh_with_outbox();
        let batch = fleet("vllm-a", 1, T0, T0 + H);
        let c = raw(&store);
        // The outbox refuses: the change goes with it.
        c.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'refused by test'); END;",
        )
        .unwrap();
        let err = store.insert_samples(&batch, &audit()).await.unwrap_err();
        assert!(err.to_string().contains("refused by test"), "{err}");
        let err = store
            .upsert_usage_events(&[tokens(tenant(1), "vllm-a", T0, 1)], &audit())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("refused by test"), "{err}");
        for table in ["gpu_samples", "rollups", "usage_events", "outbox"] {
            assert_eq!(rows(&c, table), 0, "{table} after a refused outbox entry");
        }
        // The change refuses: no outbox entry.
        c.execute_batch(
            "DROP TRIGGER refuse; CREATE TRIGGER refuse BEFORE INSERT ON gpu_samples WHEN NEW.end_ms = 1790812815000 \
             BEGIN SELECT RAISE(ABORT, 'refused by test'); END;",
        )
        .unwrap();
        assert!(store.insert_samples(&batch, &audit()).await.is_err());
        assert_eq!(rows(&c, "outbox"), 0);
        c.execute_batch("DROP TRIGGER refuse").unwrap();
        store.insert_samples(&batch, &audit()).await.unwrap();
        assert!(rows(&c, "outbox") > 0);
    }

    #[tokio::test]
    async fn a_figure_that_cannot_be_stored_exactly_rejects_the_batch() {
        let (_dir, store) = fresh();
        let mut bad = sample("GPU-1", "vllm-a", T0 + 30_000);
        bad.utilization = UnitInterval::new(d("0.1234567")).unwrap();
        let err = store
            .insert_samples(&[sample("GPU-1", "vllm-a", T0 + 15_000), bad], &audit())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("utilization"), "{err}");
        assert_eq!(rows(&raw(&store), "gpu_samples"), 0);
    }

    #[tokio::test]
    async fn reopening_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eai.db");
        let samples = fleet("vllm-a", 2, T0, T0 + 2 * H);
        let events = vec![tokens(tenant(1), "vllm-a", T0 + 5, 10)];
        let (usage, policies, key, chain) = {
            let s = SqliteStore::open(&path).unwrap();
            s.insert_samples(&samples, &audit()).await.unwrap();
            s.upsert_usage_events(&events, &audit()).await.unwrap();
            s.create_policy(&spec("p"), &audit()).await.unwrap();
            let key = s
                .create_api_key(
                    &new_key("h", Role::Finops, Some(tenant(1)), None, ts(T0)),
                    &audit(),
                )
                .await
                .unwrap();
            s.append_audit(&draft("one", None)).await.unwrap();
            s.append_audit(&draft("two", Some(tenant(1))))
                .await
                .unwrap();
            (
                all_usage(&s).await,
                s.policies().await.unwrap(),
                key,
                s.audit_events(Scope::Platform, 0, 10).await.unwrap(),
            )
        };
        let s = SqliteStore::open(&path).unwrap();
        let again = all_usage(&s).await;
        assert_eq!((again.rollups, again.gaps), (usage.rollups, usage.gaps));
        assert_eq!(
            s.usage_events(Scope::Platform, ts(T0), ts(T0 + H))
                .await
                .unwrap(),
            events
        );
        assert_eq!(s.policies().await.unwrap(), policies);
        assert_eq!(
            s.api_key_by_hash("h").await.unwrap().map(|m| m.key),
            Some(key)
        );
        assert_eq!(s.audit_events(Scope::Platform, 0, 10).await.unwrap(), chain);
        // Sequences continue; appending continues the chain; re-sent samples are still duplicates.
        assert_eq!(
            s.create_policy(&spec("q"), &audit()).await.unwrap().id,
            "alp_2"
        );
        // Six events so far: four changes and two appends.
        assert_eq!(chain.len(), 6);
        assert_eq!(s.append_audit(&draft("three", None)).await.unwrap().seq, 8);
        assert_eq!(s.verify_audit_chain(None).await.unwrap(), None);
        assert_eq!(
            s.insert_samples(&samples, &audit())
                .await
                .unwrap()
                .duplicates,
            samples.len() as u64
        );
    }

    #[tokio::test]
    async fn a_file_is_not_reopened_with_other_rollup_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eai.db");
        drop(SqliteStore::open(&path).unwrap());
        let other = SqliteConfig {
            bucket_ms: 15 * 60_000,
            ..SqliteConfig::default()
        };
        let err = SqliteStore::open_with(&path, other).unwrap_err();
        assert!(err.to_string().contains("bucket_ms"), "{err}");
        assert!(SqliteStore::open(&path).is_ok());
    }

    #[tokio::test]
    async fn tampering_with_an_audit_row_is_detected_at_that_seq() {
        let (_dir, store) = fresh();
        for i in 0..5 {
            store
                .append_audit(&draft(&format!("action.{i}"), None))
                .await
                .unwrap();
        }
        assert_eq!(store.verify_audit_chain(None).await.unwrap(), None);
        let c = raw(&store);
        let n = c.execute("UPDATE audit_events SET body = replace(body, '\"allow\"', '\"deny\"') WHERE seq = 3", []).unwrap();
        assert_eq!(n, 1);
        let broken = store
            .verify_audit_chain(None)
            .await
            .unwrap()
            .expect("tampering is detected");
        assert_eq!(broken.seq, 3, "{broken:?}");

        // Garbage in a body, and a deleted row, are broken links too.
        let (_dir2, store2) = fresh();
        for i in 0..5 {
            store2
                .append_audit(&draft(&format!("action.{i}"), None))
                .await
                .unwrap();
        }
        let c2 = raw(&store2);
        c2.execute("DELETE FROM audit_events WHERE seq = 4", [])
            .unwrap();
        assert_eq!(
            store2
                .verify_audit_chain(None)
                .await
                .unwrap()
                .map(|b| b.seq),
            Some(4)
        );
        c2.execute(
            "UPDATE audit_events SET body = 'not json' WHERE seq = 2",
            [],
        )
        .unwrap();
        assert_eq!(
            store2
                .verify_audit_chain(None)
                .await
                .unwrap()
                .map(|b| b.seq),
            Some(2)
        );
    }

    /// Bytes on disk per raw sample: 8 GPUs every 15 s, pushed in batches of 8 x 30 windows (a sampler's
    /// 7.5 minute spool), WAL checkpointed. The figure is printed (`--nocapture`) and bounded.
    #[tokio::test]
    async fn a_raw_sample_costs_few_bytes_on_disk() {
        let (_dir, store) = fresh();
        let per_gpu = 2_500i64;
        let mut v = Vec::with_capacity(8 * per_gpu as usize);
        for k in 1..=per_gpu {
            for g in 0..8 {
                let mut x = sample(
                    &format!("GPU-5e1f0c2a-4b7d-4c55-9a51-2f3e6d7c9b1{g}"),
                    "vllm-llama-70b",
                    T0 + k * 15_000,
                );
                x.utilization = UnitInterval::new(Decimal::new((k * 7 + g) % 1000, 3)).unwrap();
                x.memory_used_gb = NonNegative::new(Decimal::new(612 + (k % 50), 1)).unwrap();
                x.power_w = NonNegative::new(Decimal::new(4000 + (k % 1200), 1)).unwrap();
                v.push(x);
            }
        }
        for b in v.chunks(240) {
            store.insert_samples(b, &audit()).await.unwrap();
        }
        let c = raw(&store);
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let rows = rows(&c, "gpu_samples");
        assert_eq!(rows, v.len() as i64);
        let page_size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let table_pages: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM dbstat WHERE name = 'gpu_samples'",
                [],
                |r| r.get(0),
            )
            .unwrap_or(-1);
        let file = std::fs::metadata(store.path()).unwrap().len();
        let per_row = file as f64 / rows as f64;
        println!(
            "{rows} raw samples: file {file} bytes = {per_row:.1} bytes/sample (gpu_samples table alone: {})",
            if table_pages >= 0 { format!("{:.1} bytes/sample", (table_pages * page_size) as f64 / rows as f64) } else { "n/a".into() }
        );
        assert!(per_row <= 60.0, "{per_row:.1} bytes per raw sample");
    }
}

/// Runs the contract on fresh PostgreSQL databases (one per case, created on the server and dropped after).
mod postgres_harness {
    use super::*;
    use eai_store::postgres::scratch::{test_server_url, ScratchDb};
    use eai_store::postgres::PgStore;

    /// A fresh, migrated database and a store on it. Panics, saying how to start PostgreSQL, when the server
    /// cannot be reached: these tests never skip.
    pub async fn fresh() -> (ScratchDb, PgStore) {
        let db = ScratchDb::create(&test_server_url())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let store = PgStore::open(db.url())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (db, store)
    }

    macro_rules! cases {
        ($($name:ident),* $(,)?) => {$(
            #[tokio::test]
            async fn $name() {
                let (_db, store) = fresh().await;
                contract::$name(&store).await;
            }
        )*};
    }

    cases!(
        answers_ping,
        ingest_is_idempotent,
        first_received_wins,
        the_worked_example_prices_from_the_store,
        short_gaps_are_estimated_and_long_ones_reported,
        late_samples_fill_their_hole,
        a_late_sample_reinterpolates_across_the_hour,
        exact_hours_come_back_as_cells,
        usage_is_read_for_the_period_only,
        claims_are_the_sums_of_the_stored_events,
        pruning_raw_samples_keeps_rollups,
        gpu_usage_carries_its_pod_and_is_scoped,
        late_samples_older_than_the_retention_are_counted,
        an_unmergeable_late_sample_is_refused_and_nothing_is_stored,
        a_shuffled_backfill_older_than_the_retention_is_exact,
        a_policy_made_before_a_backfill_prices_both_parts_of_its_hour,
        pruning_cuts_an_hour_at_its_policy_boundary_before_freezing_it,
        a_policy_made_after_its_hour_froze_is_reported_with_its_gpu_seconds,
        a_backfill_older_than_the_retention_is_priced_by_the_policies_it_names,
        equal_shares_are_tallied_once_and_reported_as_the_raw_path_does,
        a_share_method_is_kept_with_its_series,
        deployments_seen_come_from_samples,
        the_latest_sample_of_each_gpu_and_node,
        usage_events_upsert_and_scope,
        policies_are_superseded_never_edited,
        api_keys_are_found_by_hash,
        tenants_are_registered_once_and_read_in_scope,
        the_platform_tenant_id_is_reserved,
        reads_scoped_to_the_platform_tenant_find_nothing,
        budgets_are_scoped_and_superseded_never_edited,
        spend_is_gpu_local_cost_and_commits_and_follows_replacements,
        reservations_hold_commit_once_release_and_expire,
        concurrent_reservations_never_over_grant,
        thresholds_are_recorded_once_and_delivered_until_acknowledged,
        the_audit_chain_links_and_verifies,
        concurrent_appends_never_fork_the_chain,
        concurrent_batches_of_one_gpu_count_each_sample_once,
        without_the_outbox_nothing_is_queued,
    );

    /// A fresh database opened with the replica outbox on.
    pub async fn fresh_with_outbox() -> (ScratchDb, PgStore) {
        let db = ScratchDb::create(&test_server_url())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let cfg = eai_store::rollups::RollupConfig {
            outbox: true,
            ..Default::default()
        };
        let store = PgStore::open_with(db.url(), cfg)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (db, store)
    }

    #[tokio::test]
    async fn the_outbox_carries_each_change_and_acked_entries_go() {
        let (_db, store) = fresh_with_outbox().await;
        contract::the_outbox_carries_each_change_and_acked_entries_go(&store).await;
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            // Fewer cases than on SQLite: each one creates and drops a database.
            #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

            #[test]
            fn rollups_equal_the_raw_path(plan in super::super::plans::arb_plan()) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let (_db, store) = fresh().await;
                    contract::rollups_equal_the_raw_path(&store, &plan).await;
                });
            }

            #[test]
            fn pruned_arrivals_equal_the_raw_path(
                plan in prop_oneof![super::super::plans::arb_plan(), super::super::plans::arb_dense_plan()],
                prunes in super::super::plans::arb_prunes(),
                before in super::super::plans::arb_prunes_before_policies(),
            ) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let (_db, store) = fresh().await;
                    contract::pruned_arrivals_equal_the_raw_path(&store, &plan, &before, &prunes).await;
                });
            }
        }
    }
}

/// Cases that need SQL on the PostgreSQL database itself, as the service role.
mod postgres_only {
    /// What schemas 11 (placements), 12 (equal shares) and 13 (share methods) added, taken out again (every
    /// rollup of one placement per key).
    const PG_UNDO_V11: &str = "ALTER TABLE eai.series DROP CONSTRAINT series_labels_key; \
        ALTER TABLE eai.series DROP COLUMN share; \
        ALTER TABLE eai.series ADD UNIQUE (deployment_id, tenant_id, model, namespace, pod, node); \
        DROP TABLE eai.equal_shares; ALTER TABLE eai.rollups DROP CONSTRAINT rollups_pkey; \
        ALTER TABLE eai.rollups DROP COLUMN series_id; \
        ALTER TABLE eai.rollups ADD PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model);";

    use super::postgres_harness::fresh;
    use super::*;
    use eai_store::postgres::scratch::ScratchDb;
    use eai_store::postgres::{PgStore, PLATFORM_TENANT, SERVICE_ROLE};
    use eai_store::rollups::RollupConfig;
    use tokio_postgres::{Client, NoTls};

    /// TLS to PostgreSQL, end to end: a cluster of its own that serves TLS only, with a certificate of a private
    /// CA for `localhost`. `sslmode=verify-full` with that CA connects (and the connection is encrypted); a plain
    /// connection, another CA, or a host name the certificate does not name, is refused; `verify-ca` checks the
    /// chain only.
    #[tokio::test]
    async fn the_store_reaches_postgres_over_tls_with_verify_full() {
        use eai_store::postgres::tls::{self, Connector};
        use eai_store::testing::{ScratchTlsCluster, TestCa};
        let dir = tempfile::tempdir().unwrap();
        let files = TestCa::new(&["localhost"])
            .unwrap()
            .write(dir.path())
            .unwrap();
        let cluster = ScratchTlsCluster::start(&files).unwrap_or_else(|e| panic!("{e}"));
        let ca = files.ca.display().to_string();
        let url = cluster.url(&format!("sslmode=verify-full&sslrootcert={ca}"));

        let store = PgStore::open(&url).await.unwrap();
        let batch = fleet("vllm-a", 1, T0, T0 + H);
        assert_eq!(
            store
                .insert_samples(&batch, &audit())
                .await
                .unwrap()
                .inserted,
            240
        );
        assert_eq!(all_usage(&store).await.rollups, expected_rollups(&batch));
        let (cfg, connector) = tls::parse(&url).unwrap();
        let Connector::Tls(tls) = connector else {
            panic!("verify-full must use TLS")
        };
        let (client, conn) = cfg.connect(tls).await.unwrap();
        tokio::spawn(conn);
        let ssl: bool = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(ssl, "the connection is encrypted");

        let refused = |url: String| async move {
            match PgStore::open(&url).await {
                Ok(_) => panic!("{url} must be refused"),
                Err(e) => e.to_string(),
            }
        };
        refused(cluster.url("sslmode=disable")).await;
        let other = tempfile::tempdir().unwrap();
        let stranger = TestCa::new(&["localhost"])
            .unwrap()
            .write(other.path())
            .unwrap();
        refused(cluster.url(&format!(
            "sslmode=verify-full&sslrootcert={}",
            stranger.ca.display()
        )))
        .await;
        let by_ip = url.replace("@localhost:", "@127.0.0.1:");
        refused(by_ip.clone()).await;
        PgStore::open(&by_ip.replace("verify-full", "verify-ca"))
            .await
            .unwrap();
    }

    /// Every table that holds tenant rows.
    const TENANT_TABLES: [&str; 14] = [
        "budgets",
        "reservations",
        "spend",
        "budget_alerts",
        "tenants",
        "usage_events",
        "audit_events",
        "api_keys",
        "gpu_samples",
        "rollups",
        "gaps",
        "series",
        "deployment_rollups",
        "usage_claims",
    ];

    /// A plain connection to the scratch database, switched to the service role as the store's are.
    async fn as_service_role(db: &ScratchDb) -> Client {
        let (client, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!("SET ROLE {SERVICE_ROLE}"))
            .await
            .unwrap();
        client
    }

    /// Runs `sql` in a transaction acting for `tenant` (`app.tenant_id` set with `set_config(…, true)`, as the
    /// store does), then rolls it back. Returns the rows of a query, or the error.
    async fn as_tenant(
        c: &mut Client,
        tenant: TenantId,
        sql: &str,
    ) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        let tx = c.transaction().await.unwrap();
        tx.execute(
            "SELECT set_config('app.tenant_id', $1, true)",
            &[&tenant.to_string()],
        )
        .await
        .unwrap();
        let out = tx.query(sql, &[]).await;
        tx.rollback().await.unwrap();
        out
    }

    fn rls_refused(r: &Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>) -> bool {
        matches!(r, Err(e) if e.as_db_error().is_some_and(|d| d.code().code() == "42501"
            && d.message().contains("row-level security")))
    }

    fn not_granted(r: &Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>) -> bool {
        matches!(r, Err(e) if e.as_db_error().is_some_and(|d| d.code().code() == "42501"
            && d.message().contains("permission denied")))
    }

    /// The read cache's change log: every write of groups or claims appends to it (under a tenant's scope too),
    /// the service role may read it on the platform path and compact it but never write it, and a compaction
    /// keeps every bucket's sum.
    #[tokio::test]
    async fn the_change_log_counts_every_write_and_only_the_owner_writes_it() {
        let (db, store) = super::postgres_harness::fresh().await;
        let (a, b) = (tenant(1), tenant(2));
        two_tenants(&store, a, b).await;
        for i in 0..5u64 {
            store
                .upsert_usage_events(&[tokens(a, "dep-GPU-s", T0 + 1000, 10 + i)], &audit())
                .await
                .unwrap();
        }
        let mut c = as_service_role(&db).await;
        c.batch_execute("SELECT set_config('app.platform', 'on', false)")
            .await
            .unwrap();
        let before = change_counts(&c).await;
        let hour = before.iter().find(|(b, _, _)| *b == T0).copied().unwrap();
        assert!(
            hour.1 >= 7 && hour.2 >= 7,
            "one row per write statement: {before:?}"
        );

        // Written only through the triggers: the service role can neither add, change nor delete a count.
        for sql in [
            "INSERT INTO eai.hour_changes (bucket_ms, n) VALUES (0, 1)",
            "UPDATE eai.hour_changes SET n = n + 1",
            "DELETE FROM eai.hour_changes",
        ] {
            let r = c.query(sql, &[]).await;
            assert!(not_granted(&r), "{sql}: {r:?}");
        }
        // Not readable under a tenant's scope.
        c.batch_execute("SELECT set_config('app.platform', '', false)")
            .await
            .unwrap();
        let r = as_tenant(&mut c, a, "SELECT * FROM eai.hour_changes").await;
        assert!(r.as_ref().is_ok_and(|rows| rows.is_empty()), "{r:?}");

        // The compaction folds each bucket into one row of the same sum.
        c.batch_execute("SELECT set_config('app.platform', 'on', false)")
            .await
            .unwrap();
        c.query_one("SELECT eai.compact_hour_changes()", &[])
            .await
            .unwrap();
        let after = change_counts(&c).await;
        assert_eq!(
            after.iter().map(|(b, n, _)| (*b, *n)).collect::<Vec<_>>(),
            before.iter().map(|(b, n, _)| (*b, *n)).collect::<Vec<_>>()
        );
        assert!(after.iter().all(|(_, _, rows)| *rows == 1), "{after:?}");
        // And the store reads the same afterwards, from its cache or not.
        let cached = all_usage(&store).await;
        let cold = eai_store::postgres::PgStore::open_with(
            db.url(),
            eai_store::rollups::RollupConfig {
                read_cache_rows: 0,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let fresh = all_usage(&cold).await;
        assert_eq!(
            (cached.rollups, cached.claims),
            (fresh.rollups, fresh.claims)
        );
    }

    /// The change log's sum and rows per bucket.
    async fn change_counts(c: &Client) -> Vec<(i64, i64, i64)> {
        c.query(
            "SELECT bucket_ms, sum(n)::bigint, count(*) FROM eai.hour_changes \
             GROUP BY bucket_ms ORDER BY bucket_ms",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
    }

    /// Two tenants' rows in every tenant table, plus platform rows, written through the store.
    async fn two_tenants(s: &PgStore, a: TenantId, b: TenantId) {
        let mut v = Vec::new();
        for (gpu, owner) in [("GPU-a", Some(a)), ("GPU-b", Some(b)), ("GPU-s", None)] {
            // Ten minutes, a 30 minute hole (a gap), ten minutes.
            let mut mine = fleet("dep", 1, T0, T0 + 600_000);
            mine.extend(fleet("dep", 1, T0 + 2_400_000, T0 + 3_000_000));
            for mut x in mine {
                x.gpu_uuid = gpu.into();
                x.owner = owner;
                x.deployment_id = format!("dep-{gpu}");
                v.push(x);
            }
        }
        s.insert_samples(&v, &audit()).await.unwrap();
        s.upsert_usage_events(
            &[
                tokens(a, "dep-GPU-s", T0 + 1000, 10),
                tokens(b, "dep-GPU-s", T0 + 2000, 20),
            ],
            &audit(),
        )
        .await
        .unwrap();
        for (hash, t) in [("ha", Some(a)), ("hb", Some(b)), ("hp", None)] {
            s.create_api_key(&new_key(hash, Role::Viewer, t, None, ts(T0)), &audit())
                .await
                .unwrap();
        }
        for t in [Some(a), Some(b), None] {
            s.append_audit(&draft("x", t)).await.unwrap();
        }
        for t in [a, b] {
            let spec = super::contract::budget_spec(t, "1", true);
            s.create_budget(
                &eai_store::budgets::NewBudget {
                    spec,
                    webhook_secret: None,
                },
                &audit(),
            )
            .await
            .unwrap();
            let mut charge = tokens(t, "dep-GPU-s", T0, 0);
            charge.source = eai_engine::domain::ALLOCATION_SOURCE.into();
            charge.usage_type = eai_engine::batch::GPU_LOCAL.into();
            charge.cost = Some((
                NonNegative::new(d("0.6")).unwrap(),
                Currency::from_str("EUR").unwrap(),
            ));
            s.upsert_usage_events(&[charge], &audit()).await.unwrap();
            let req = eai_engine::budget::ReservationRequest {
                tenant_id: t,
                action: "llm.invoke".into(),
                estimate: eai_engine::budget::Amounts {
                    cost: d("0.1"),
                    tokens: Decimal::ZERO,
                },
                currency: None,
                deployment_id: None,
                ttl_ms: 60_000,
            };
            s.reserve(
                &eai_store::budgets::NewReservation::new(req, ts(T0 + H)),
                &audit(),
            )
            .await
            .unwrap();
        }
        assert_eq!(s.record_crossings(ts(T0 + H)).await.unwrap().len(), 2);
        for (t, slug) in [(a, "tenant-a"), (b, "tenant-b")] {
            let reg = eai_engine::domain::Tenant {
                id: t,
                slug: slug.parse().unwrap(),
                name: slug.to_uppercase(),
            };
            s.create_tenant(&reg, &audit()).await.unwrap();
        }
    }

    /// The issue's "done when": as the service role, with `app.tenant_id` = A, plain SQL with no tenant clause
    /// sees none of B's rows in any tenant table, and writing a row of B is refused by the policy's check.
    #[tokio::test]
    async fn row_level_security_hides_and_protects_another_tenants_rows_at_the_database() {
        let (db, store) = fresh().await;
        let (a, b) = (tenant(1), tenant(2));
        two_tenants(&store, a, b).await;
        let mut c = as_service_role(&db).await;

        // Who the service is: not superuser, no BYPASSRLS, owns no table; every tenant table forces RLS.
        let me = c
            .query_one(
                "SELECT current_user::text, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(me.get::<_, String>(0), SERVICE_ROLE);
        assert!(!me.get::<_, bool>(1), "the service role is not a superuser");
        assert!(!me.get::<_, bool>(2), "the service role lacks BYPASSRLS");
        let owned: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'eai' AND tableowner = current_user",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(owned, 0, "the service role owns no table");
        for t in TENANT_TABLES {
            let r = c
                .query_one(
                    "SELECT c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner)::text \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = 'eai' AND c.relname = $1",
                    &[&t],
                )
                .await
                .unwrap();
            assert!(
                r.get::<_, bool>(0) && r.get::<_, bool>(1),
                "eai.{t}: ENABLE and FORCE row level security"
            );
            assert_ne!(
                r.get::<_, String>(2),
                SERVICE_ROLE,
                "eai.{t} is not owned by the service role"
            );
        }

        for t in TENANT_TABLES {
            // No tenant set (nor the platform path): nothing at all.
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM eai.{t}"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(n, 0, "eai.{t} without app.tenant_id shows nothing");

            // As A, plain SQL with no WHERE clause: only A's rows, some of them.
            let rows = as_tenant(&mut c, a, &format!("SELECT tenant_id FROM eai.{t}"))
                .await
                .unwrap();
            assert!(!rows.is_empty(), "eai.{t}: A sees its own rows");
            assert!(
                rows.iter().all(|r| r.get::<_, Uuid>(0) == a.0),
                "eai.{t}: A sees no row of another tenant nor of the platform"
            );
            let bs = as_tenant(
                &mut c,
                a,
                &format!("SELECT * FROM eai.{t} WHERE tenant_id = '{b}'"),
            )
            .await
            .unwrap();
            assert!(bs.is_empty(), "eai.{t}: B's rows are invisible to A");
            let bs = as_tenant(&mut c, b, &format!("SELECT tenant_id FROM eai.{t}"))
                .await
                .unwrap();
            assert!(
                !bs.is_empty() && bs.iter().all(|r| r.get::<_, Uuid>(0) == b.0),
                "eai.{t}: and B sees its own"
            );
        }

        // Inserting a row of B while acting for A fails the policy's WITH CHECK; the same row for A goes in
        // (so the refusal is the tenant's, not a malformed statement).
        let inserts = [
            ("budgets", "INSERT INTO eai.budgets (tenant_id, body, effective_from_ms, created_at_ms) \
              VALUES ('{T}', '{}', 0, 0) RETURNING 1"),
            ("reservations", "INSERT INTO eai.reservations (id, tenant_id, action, currency, estimate_cost, \
              estimate_tokens, status, created_at_ms, expires_at_ms) \
              VALUES ('res_' || md5(random()::text), '{T}', 'x', 'EUR', 0, 0, 'held', 0, 0) RETURNING 1"),
            ("spend", "INSERT INTO eai.spend (tenant_id, month_ms, currency, cost, tokens) \
              VALUES ('{T}', 7, 'EUR', 0, 0) RETURNING 1"),
            ("budget_alerts", "INSERT INTO eai.budget_alerts (id, budget_seq, tenant_id, month_ms, threshold_pct, \
              spent, crossed_at_ms, attempts, next_attempt_ms) \
              VALUES (gen_random_uuid(), 999, '{T}', 7, 1, 0, 0, 0, 0) RETURNING 1"),
            ("tenants", "INSERT INTO eai.tenants (tenant_id, slug, name, created_at_ms) \
              VALUES ('{T}', 'new-' || md5(random()::text), 'New', 0) RETURNING 1"),
            ("usage_events", "INSERT INTO eai.usage_events (event_id, tenant_id, occurred_at_ms, body) \
              VALUES (gen_random_uuid(), '{T}', 0, '{}') RETURNING 1"),
            ("audit_events", "INSERT INTO eai.audit_events (seq, prev_hash, hash, tenant_id, body) \
              VALUES (999, 'p', 'h', '{T}', '{}') RETURNING 1"),
            ("api_keys", "INSERT INTO eai.api_keys (hash, role, tenant_id, created_at_ms) \
              VALUES ('h-new', 'viewer', '{T}', 0) RETURNING 1"),
            ("series", "INSERT INTO eai.series (tenant_id, deployment_id, model, namespace, pod, node, first_seen_ms, last_seen_ms) \
              VALUES ('{T}', 'd', 'm', 'n', 'p', 'x', 0, 0) RETURNING 1"),
            ("gpu_samples", "INSERT INTO eai.gpu_samples (gpu_id, end_ms, tenant_id, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
              SELECT g.id, 1, '{T}', (SELECT min(id) FROM eai.series), 15000, 0, 0, 0, 0, 1000000 FROM eai.gpus g WHERE g.uuid = 'GPU-a' RETURNING 1"),
            ("rollups", "INSERT INTO eai.rollups (gpu_id, bucket_ms, deployment_id, tenant_id, model, first_window_start_ms, last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, memory_gb_seconds, energy_ws, storage_gb_seconds) \
              SELECT g.id, 0, 'd', '{T}', 'm', 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 FROM eai.gpus g WHERE g.uuid = 'GPU-a' RETURNING 1"),
            ("gaps", "INSERT INTO eai.gaps (gpu_id, from_ms, to_ms, reason, deployment_id, node, tenant_id) \
              SELECT g.id, 1, 2, 'too_long', 'd', 'n', '{T}' FROM eai.gpus g WHERE g.uuid = 'GPU-a' RETURNING 1"),
            ("deployment_rollups", "INSERT INTO eai.deployment_rollups (bucket_ms, deployment_id, tenant_id, model, first_window_start_ms, last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, memory_gb_seconds, energy_ws, storage_gb_seconds, gpus) \
              VALUES (7, 'd-new', '{T}', 'm', 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, '{}') RETURNING 1"),
            ("usage_claims", "INSERT INTO eai.usage_claims (bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events) \
              VALUES (7, 'd-new', '{T}', 0, 0, 1) RETURNING 1"),
        ];
        assert_eq!(inserts.len(), TENANT_TABLES.len());
        for (t, sql) in inserts {
            let of = |x: TenantId| sql.replace("{T}", &x.to_string());
            let r = as_tenant(&mut c, a, &of(b)).await;
            assert!(
                rls_refused(&r),
                "eai.{t}: inserting a row of B as A must be refused: {r:?}"
            );
            let r = as_tenant(&mut c, a, &of(a)).await;
            if t == "tenants" {
                // A is registered already: its second row passes the policy and stops at the primary key.
                let unique = r
                    .as_ref()
                    .err()
                    .and_then(|e| e.as_db_error())
                    .map(|d| d.code().code());
                assert_eq!(
                    unique,
                    Some("23505"),
                    "eai.tenants: A's row passes the policy: {r:?}"
                );
                continue;
            }
            assert_eq!(
                r.map(|v| v.len()).ok(),
                Some(1),
                "eai.{t}: the same row of A goes in"
            );
        }

        // Updating: moving A's rows to B fails the WITH CHECK; B's rows cannot even be reached.
        for t in ["usage_events", "series", "rollups", "gaps"] {
            let r = as_tenant(
                &mut c,
                a,
                &format!("UPDATE eai.{t} SET tenant_id = '{b}' RETURNING 1"),
            )
            .await;
            assert!(
                rls_refused(&r),
                "eai.{t}: giving A's rows to B must be refused: {r:?}"
            );
            let r = as_tenant(
                &mut c,
                a,
                &format!(
                    "UPDATE eai.{t} SET tenant_id = tenant_id WHERE tenant_id = '{b}' RETURNING 1"
                ),
            )
            .await
            .unwrap();
            assert!(r.is_empty(), "eai.{t}: B's rows are out of A's reach");
        }
        let r = as_tenant(
            &mut c,
            a,
            &format!("UPDATE eai.api_keys SET revoked = true WHERE tenant_id = '{b}' RETURNING 1"),
        )
        .await
        .unwrap();
        assert!(r.is_empty(), "eai.api_keys: B's keys are out of A's reach");
        for t in ["gpu_samples", "rollups", "gaps"] {
            let r = as_tenant(
                &mut c,
                a,
                &format!("DELETE FROM eai.{t} WHERE tenant_id = '{b}' RETURNING 1"),
            )
            .await
            .unwrap();
            assert!(r.is_empty(), "eai.{t}: B's rows cannot be deleted by A");
        }
        // Raw samples, audit events and API key owners are never updated by the service at all.
        for sql in [
            format!("UPDATE eai.audit_events SET body = '{{}}' WHERE tenant_id = '{a}'"),
            format!("UPDATE eai.gpu_samples SET util_e6 = 0 WHERE tenant_id = '{a}'"),
            format!("UPDATE eai.api_keys SET tenant_id = '{a}'"),
            format!("UPDATE eai.tenants SET slug = 'renamed' WHERE tenant_id = '{a}'"),
            format!("DELETE FROM eai.tenants WHERE tenant_id = '{a}'"),
            format!("UPDATE eai.budgets SET body = '{{}}' WHERE tenant_id = '{a}'"),
            format!("UPDATE eai.reservations SET estimate_cost = 0 WHERE tenant_id = '{a}'"),
            format!("DELETE FROM eai.spend WHERE tenant_id = '{a}'"),
            format!("DELETE FROM eai.budget_alerts WHERE tenant_id = '{a}'"),
        ] {
            let r = as_tenant(&mut c, a, &sql).await;
            assert!(not_granted(&r), "{sql}: {r:?}");
        }

        // The platform path sees every row: A's, B's and the platform's.
        let tx = c.transaction().await.unwrap();
        tx.execute("SELECT set_config('app.platform', 'on', true)", &[])
            .await
            .unwrap();
        for t in TENANT_TABLES {
            let tenants: Vec<Uuid> = tx
                .query(&format!("SELECT DISTINCT tenant_id FROM eai.{t}"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            for want in [a.0, b.0] {
                assert!(
                    tenants.contains(&want),
                    "eai.{t} on the platform path: {tenants:?}"
                );
            }
            if !matches!(
                t,
                "usage_events"
                    | "usage_claims"
                    | "tenants"
                    | "budgets"
                    | "reservations"
                    | "spend"
                    | "budget_alerts"
            ) {
                assert!(
                    tenants.contains(&PLATFORM_TENANT),
                    "eai.{t}: platform rows carry the platform tenant"
                );
            }
        }
        tx.rollback().await.unwrap();

        // And the store's own scoped reads are the database's: A's usage and audit only.
        let mine = store
            .usage_events(Scope::Tenant(a), ts(T0), ts(T0 + H))
            .await
            .unwrap();
        // Its token usage and its gpu_local charge.
        assert!(mine.len() == 2 && mine.iter().all(|e| e.tenant_id == a));
        let audit = store.audit_events(Scope::Tenant(a), 0, 100).await.unwrap();
        // Its own event and its budget's crossing.
        assert!(audit.len() == 2 && audit.iter().all(|e| e.draft.tenant_id == Some(a)));
    }

    #[tokio::test]
    async fn reopening_migrates_once_and_keeps_everything() {
        let (db, s) = fresh().await;
        let samples = fleet("vllm-a", 2, T0, T0 + 2 * H);
        s.insert_samples(&samples, &audit()).await.unwrap();
        s.create_policy(&spec("p"), &audit()).await.unwrap();
        s.append_audit(&draft("one", None)).await.unwrap();
        let usage = all_usage(&s).await;
        drop(s);
        // Two processes starting together: both migrate, one waits for the other.
        let (x, y) = tokio::join!(PgStore::open(db.url()), PgStore::open(db.url()));
        let (x, y) = (x.unwrap(), y.unwrap());
        let again = all_usage(&x).await;
        assert_eq!((again.rollups, again.gaps), (usage.rollups, usage.gaps));
        assert_eq!(
            y.create_policy(&spec("q"), &audit()).await.unwrap().id,
            "alp_2"
        );
        // Ingest, policy, "one", policy: the fifth event.
        assert_eq!(y.append_audit(&draft("two", None)).await.unwrap().seq, 5);
        assert_eq!(x.verify_audit_chain(None).await.unwrap(), None);
        assert_eq!(
            x.insert_samples(&samples, &audit())
                .await
                .unwrap()
                .duplicates,
            samples.len() as u64
        );
        assert_eq!(x.backend(), "postgres");
    }

    /// A database from before `gpus.last_end_ms` (schema 9) gets each GPU's latest end from its samples: the
    /// latest samples read by it, an appended sample is appended, a re-sent latest one is a duplicate.
    #[tokio::test]
    async fn a_database_from_before_last_ends_gets_them_from_its_samples() {
        let (db, s) = fresh().await;
        let samples: Vec<Sample> = (1..=8)
            .flat_map(|k| {
                [
                    sample("GPU-A", "vllm-a", T0 + k * 15_000),
                    sample("GPU-B", "vllm-a", T0 + k * 7_500),
                ]
            })
            .collect();
        s.insert_samples(&samples, &audit()).await.unwrap();
        drop(s);
        let (c, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        c.batch_execute(&format!(
            "{PG_UNDO_V11} ALTER TABLE eai.gpus DROP COLUMN last_end_ms; UPDATE eai.schema_version SET version = 9;"
        ))
        .await
        .unwrap();
        let s = PgStore::open(db.url()).await.unwrap();
        let latest = s.latest_samples(Timestamp(T0), 10).await.unwrap();
        let ends: Vec<(String, i64)> = latest
            .samples
            .iter()
            .map(|x| (x.gpu_uuid.clone(), x.end.0))
            .collect();
        assert_eq!(
            ends,
            vec![
                ("GPU-A".to_string(), T0 + 8 * 15_000),
                ("GPU-B".to_string(), T0 + 8 * 7_500)
            ]
        );
        assert_eq!(latest.gpus, 2);
        let out = s
            .insert_samples(
                &[
                    sample("GPU-A", "vllm-a", T0 + 8 * 15_000),
                    sample("GPU-A", "vllm-a", T0 + 9 * 15_000),
                ],
                &audit(),
            )
            .await
            .unwrap();
        assert_eq!((out.inserted, out.duplicates), (1, 1));
        let latest = s.latest_samples(Timestamp(T0), 1).await.unwrap();
        assert_eq!(latest.samples[0].end.0, T0 + 9 * 15_000);
        assert_eq!(
            s.latest_samples(Timestamp(T0 + 8 * 15_000), 10)
                .await
                .unwrap()
                .gpus,
            1
        );
    }

    /// A database from before budgets (schema 6) gets its spend built from the stored charges, exactly.
    #[tokio::test]
    async fn a_database_from_before_budgets_gets_its_spend_built_on_open() {
        let (db, s) = fresh().await;
        let a = tenant(1);
        let eur = Currency::from_str("EUR").unwrap();
        let mut events = Vec::new();
        for (i, cost) in ["7.25", "0.1", "0.2"].iter().enumerate() {
            let mut charge = tokens(a, &format!("vllm-{i}"), T0, 0);
            charge.source = eai_engine::domain::ALLOCATION_SOURCE.into();
            charge.usage_type = eai_engine::batch::GPU_LOCAL.into();
            charge.cost = Some((NonNegative::new(d(cost)).unwrap(), eur));
            events.push(charge);
        }
        let mut gateway = tokens(a, "vllm-a", T0 + 1, 5);
        gateway.cost = Some((NonNegative::new(d("99")).unwrap(), eur));
        events.push(gateway);
        s.upsert_usage_events(&events, &audit()).await.unwrap();
        drop(s);
        let (c, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        c.batch_execute(&format!(
            "{PG_UNDO_V11} DROP TABLE eai.providers, eai.budgets, eai.reservations, eai.spend, eai.budget_alerts; \
             DROP FUNCTION eai.count_changed_buckets() CASCADE; DROP FUNCTION eai.compact_hour_changes(); \
             DROP TABLE eai.hour_changes; ALTER TABLE eai.gpus DROP COLUMN last_end_ms; \
             UPDATE eai.schema_version SET version = 6;"
        ))
        .await
        .unwrap();
        let s = PgStore::open(db.url()).await.unwrap();
        let spec = super::contract::budget_spec(a, "10", true);
        s.create_budget(
            &eai_store::budgets::NewBudget {
                spec,
                webhook_secret: None,
            },
            &audit(),
        )
        .await
        .unwrap();
        let st = s
            .budget_standings(Scope::Tenant(a), ts(T0 + H))
            .await
            .unwrap();
        assert_eq!(
            st[0].spent.cost,
            d("7.55"),
            "the charges, not the gateway's cost"
        );
    }

    #[tokio::test]
    async fn a_database_is_not_reopened_with_other_rollup_settings() {
        let (db, s) = fresh().await;
        drop(s);
        let other = RollupConfig {
            bucket_ms: 15 * 60_000,
            ..RollupConfig::default()
        };
        let err = PgStore::open_with(db.url(), other).await.unwrap_err();
        assert!(err.to_string().contains("bucket_ms"), "{err}");
        assert!(PgStore::open(db.url()).await.is_ok());
    }

    #[tokio::test]
    async fn a_failed_batch_leaves_nothing() {
        let (db, store) = fresh().await;
        let batch = fleet("vllm-a", 2, T0, T0 + H);
        let (c, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        // The owner makes the database refuse one row of the batch.
        c.batch_execute(
            "CREATE FUNCTION eai.refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF NEW.end_ms % 3600000 = 0 THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON eai.gpu_samples FOR EACH ROW EXECUTE FUNCTION eai.refuse()",
        )
        .await
        .unwrap();
        let err = store.insert_samples(&batch, &audit()).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Internal(ref m) if m.contains("refused by test")),
            "{err}"
        );
        c.batch_execute("SELECT set_config('app.platform', 'on', false)")
            .await
            .unwrap();
        for t in ["gpu_samples", "gpus", "series", "rollups", "gaps"] {
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM eai.{t}"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(n, 0, "{t} after a failed batch");
        }
        c.batch_execute("DROP TRIGGER refuse ON eai.gpu_samples")
            .await
            .unwrap();
        let o = store.insert_samples(&batch, &audit()).await.unwrap();
        assert_eq!((o.inserted, o.duplicates), (480, 0));
        assert_eq!(all_usage(&store).await.rollups, expected_rollups(&batch));
    }

    #[tokio::test]
    async fn the_outbox_is_platform_data_written_in_the_transaction_of_the_change() {
        let (db, store) = super::postgres_harness::fresh_with_outbox().await;
        let (c, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        c.batch_execute(
            "CREATE FUNCTION eai.refuse() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON eai.outbox FOR EACH ROW EXECUTE FUNCTION eai.refuse()",
        )
        .await
        .unwrap();
        let batch = fleet("vllm-a", 1, T0, T0 + H);
        let err = store.insert_samples(&batch, &audit()).await.unwrap_err();
        assert!(err.to_string().contains("refused by test"), "{err}");
        let a = tenant(1);
        let err = store
            .upsert_usage_events(&[tokens(a, "vllm-a", T0, 1)], &audit())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("refused by test"), "{err}");
        c.batch_execute("SELECT set_config('app.platform', 'on', false)")
            .await
            .unwrap();
        for t in ["gpu_samples", "rollups", "usage_events", "outbox"] {
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM eai.{t}"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(n, 0, "{t} after a refused outbox entry");
        }
        c.batch_execute("DROP TRIGGER refuse ON eai.outbox")
            .await
            .unwrap();
        store.insert_samples(&batch, &audit()).await.unwrap();
        store
            .upsert_usage_events(&[tokens(a, "vllm-a", T0, 1)], &audit())
            .await
            .unwrap();
        assert!(store.outbox_stats().await.unwrap().pending >= 2);

        // Row level security: a tenant sees no entry (they carry every tenant's rows) and cannot write one;
        // the service role cannot edit one.
        let mut app = as_service_role(&db).await;
        let seen = as_tenant(&mut app, a, "SELECT * FROM eai.outbox")
            .await
            .unwrap();
        assert!(seen.is_empty(), "a tenant reads no outbox entry");
        let r = as_tenant(
            &mut app,
            a,
            "INSERT INTO eai.outbox (table_name, rows, created_at_ms) VALUES ('usage_events', '[]', 0) RETURNING seq",
        )
        .await;
        assert!(rls_refused(&r), "{r:?}");
        let r = app
            .query("UPDATE eai.outbox SET rows = '[]' RETURNING seq", &[])
            .await;
        assert!(not_granted(&r), "{r:?}");
    }
}

/// A deployment that wants the service's login to hold no DDL right at all: an owner migrates once, and the
/// service logs in as a plain member of `eai_app`.
mod postgres_member_login {
    use super::postgres_harness::fresh;
    use super::*;
    use eai_store::postgres::scratch::with_dbname;
    use eai_store::postgres::{PgStore, SERVICE_ROLE};
    use tokio_postgres::NoTls;

    #[tokio::test]
    async fn a_member_of_the_service_role_serves_a_database_an_owner_migrated() {
        let (db, owner) = fresh().await;
        owner.create_policy(&spec("p"), &audit()).await.unwrap();
        let (admin, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        let login = format!("eai_t_login_{}", &Uuid::new_v4().simple().to_string()[..12]);
        admin
            .batch_execute(&format!("CREATE ROLE {login} LOGIN IN ROLE {SERVICE_ROLE}"))
            .await
            .unwrap();
        // The same server and database, as the new login.
        let (_, rest) = db.url().split_once("://").unwrap();
        let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        let url = with_dbname(&format!("postgres://{login}@{host}"), db.name()).unwrap();
        let served = PgStore::open(&url).await;
        let result = async {
            let s = served?;
            s.insert_samples(&fleet("vllm-a", 1, T0, T0 + H), &audit())
                .await?;
            let n = s.usage_for(ts(T0), ts(T0 + H), &[]).await?.rollups.len();
            let p = s.policies().await?.len();
            let sessions: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND datname = $2",
                    &[&login, &db.name()],
                )
                .await
                .map_err(|e| StoreError::Internal(e.to_string()))?
                .get(0);
            Ok::<_, StoreError>((n, p, sessions > 0))
        }
        .await;
        let _ = admin
            .batch_execute(&format!("DROP OWNED BY {login}; DROP ROLE {login}"))
            .await;
        assert_eq!(result.unwrap(), (1, 1, true), "served by the member login");
    }
}

/// The two backends answer alike: random sequences of operations (sample batches in any order, with late
/// samples and re-sends; usage events with replacements, some refused; policies created and superseded; pruning;
/// reads) go through a fresh SQLite file and a fresh PostgreSQL database, and every answer (values, order,
/// errors), the state read after each operation, the audit chain (hashes included) and the final allocation are
/// the same on both.
mod differential {
    use super::contract::{budget_spec, new_budget};
    use super::plans::{arb_raw, make_plan, parts, to_sample};
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Ingest(Vec<Sample>),
        Usage(Vec<UsageEvent>),
        CreatePolicy(PolicySpec),
        Supersede {
            policy: u8,
            at: i64,
            replacement: Option<PolicySpec>,
        },
        Prune(i64),
        Read {
            from: i64,
            to: i64,
        },
        CreateTenant(u8),
        CreateKey {
            hash: u8,
            tenant: Option<u8>,
        },
        RevokeKey {
            scope: Option<u8>,
            key: u8,
            at: i64,
        },
        RotateKey {
            scope: Option<u8>,
            key: u8,
            hash: u8,
            at: i64,
        },
        CreateBudget {
            tenant: u8,
            limit: u64,
            enforce: bool,
        },
        SupersedeBudget {
            scope: Option<u8>,
            budget: u8,
            at: i64,
            replacement: Option<(u8, u64)>,
        },
        /// A reservation request: its id is drawn once, so both stores get the same one.
        Reserve(eai_store::budgets::NewReservation),
        Commit {
            scope: Option<u8>,
            nth: u8,
            cost: u64,
            at: i64,
        },
        Release {
            scope: Option<u8>,
            nth: u8,
            at: i64,
        },
        Expire(i64),
    }

    /// A tenant of the sequences (1 to 3), or the reserved platform tenant (0).
    fn who(n: u8) -> TenantId {
        match n % 4 {
            0 => TenantId(eai_store::PLATFORM_TENANT_ID),
            n => tenant(n),
        }
    }

    fn scope_of(s: Option<u8>) -> Scope {
        s.map_or(Scope::Platform, |n| Scope::Tenant(who(n)))
    }

    fn cents(n: u64) -> Decimal {
        Decimal::new((n % 20_000) as i64, 2)
    }

    /// (kind, index, quarter hours after `T0`, flag, amount)
    type RawOp = (u8, u8, i64, bool, u64);

    fn policy_spec(name: String, quarter: i64, flag: bool, n: u64) -> PolicySpec {
        let mut p = spec(&name);
        p.effective_from = ts(T0 + quarter * H / 4);
        p.gpu_hourly_cost = NonNegative::new(Decimal::new(100 + (n % 400) as i64, 2)).unwrap();
        if flag {
            p.deployment_pattern = Glob::new("tgi-*").unwrap();
            p.idle_capacity = IdleCapacity::Proportional;
        }
        p
    }

    /// Turns raw parts into a sequence: ingest ops take the plan's batches in turn (those left go last), usage
    /// ops its events (and re-send earlier ones, changed: replacements, some by another source).
    fn ops(plan: super::contract::Plan, raw: Vec<RawOp>) -> Vec<Op> {
        let mut batches = plan.batches.into_iter();
        let mut usage = plan.usage.into_iter();
        let mut sent: Vec<UsageEvent> = Vec::new();
        let mut out = Vec::new();
        for (i, (kind, ix, quarter, flag, n)) in raw.into_iter().enumerate() {
            match kind {
                0..=3 => out.extend(batches.next().map(Op::Ingest)),
                4 | 5 => {
                    let mut v: Vec<UsageEvent> = usage.by_ref().take(1 + ix as usize % 3).collect();
                    if !sent.is_empty() && (flag || v.is_empty()) {
                        let mut again = sent[ix as usize % sent.len()].clone();
                        again.units.insert(
                            "tokens_in".into(),
                            NonNegative::new(Decimal::from(n % 5_000)).unwrap(),
                        );
                        again.occurred_at = ts(T0 + quarter.rem_euclid(20) * H / 4);
                        // Now and then the platform's record, or a gateway's event replacing one (refused).
                        again.source = if n % 5 == 0 { "allocation" } else { "gateway" }.into();
                        v.push(again);
                    }
                    sent.extend(v.iter().cloned());
                    if !v.is_empty() {
                        out.push(Op::Usage(v));
                    }
                }
                6 => out.push(Op::CreatePolicy(policy_spec(
                    format!("p{i}"),
                    quarter,
                    flag,
                    n,
                ))),
                7 => out.push(Op::Supersede {
                    policy: ix % 6,
                    at: quarter,
                    replacement: flag.then(|| policy_spec(format!("r{i}"), quarter, n % 2 == 0, n)),
                }),
                8 => out.push(Op::Prune(quarter)),
                9 => out.push(Op::Read {
                    from: quarter.min(quarter + i64::from(ix % 12)),
                    to: quarter + i64::from(ix % 12) + 1,
                }),
                10 => out.push(Op::CreateTenant(ix)),
                11 => out.push(Op::CreateKey {
                    hash: ix % 8,
                    tenant: flag.then_some((n % 4) as u8),
                }),
                12 => out.push(Op::RevokeKey {
                    scope: flag.then_some((n % 4) as u8),
                    key: ix % 6,
                    at: quarter,
                }),
                13 => out.push(Op::RotateKey {
                    scope: flag.then_some((n % 4) as u8),
                    key: ix % 6,
                    hash: (n % 8) as u8,
                    at: quarter,
                }),
                14 => out.push(Op::CreateBudget {
                    tenant: ix,
                    limit: n,
                    enforce: flag,
                }),
                15 => out.push(Op::SupersedeBudget {
                    scope: (n % 3 == 0).then_some(ix),
                    budget: ix % 5,
                    at: quarter,
                    replacement: flag.then_some(((n % 4) as u8, n / 7)),
                }),
                16 | 17 => out.push(Op::Reserve(reservation_request(ix, n, quarter))),
                18 => {
                    let scope = (n % 3 == 0).then_some(ix);
                    out.push(if flag {
                        Op::Commit {
                            scope,
                            nth: ix,
                            cost: n / 3,
                            at: quarter,
                        }
                    } else {
                        Op::Release {
                            scope,
                            nth: ix,
                            at: quarter,
                        }
                    })
                }
                _ => out.push(Op::Expire(quarter)),
            }
        }
        out.extend(batches.map(Op::Ingest));
        out
    }

    fn reservation_request(t: u8, n: u64, quarter: i64) -> eai_store::budgets::NewReservation {
        eai_store::budgets::NewReservation::new(
            eai_engine::budget::ReservationRequest {
                tenant_id: who(t),
                action: "llm.invoke".into(),
                estimate: eai_engine::budget::Amounts {
                    cost: cents(n),
                    tokens: Decimal::from(n % 1_000),
                },
                currency: n
                    .is_multiple_of(5)
                    .then(|| Currency::from_str("EUR").unwrap()),
                deployment_id: Some("vllm-a".into()),
                ttl_ms: 60_000 * (1 + (n % 90) as i64),
            },
            ts(T0 + quarter * H / 4),
        )
    }

    fn arb_ops() -> impl Strategy<Value = Vec<Op>> {
        let raw_op = (0u8..20, any::<u8>(), -8i64..24, any::<bool>(), any::<u64>());
        (
            prop::collection::vec(arb_raw(), 0..120),
            parts(),
            prop::collection::vec(raw_op, 4..40),
        )
            .prop_map(|(raws, parts, raw_ops)| {
                let plan = make_plan(raws.into_iter().map(to_sample).collect(), parts);
                ops(plan, raw_ops)
            })
    }

    /// An answer as compared: the value, or the error's text (an internal error is a failure). Values are
    /// compared as values: decimals by number (SQLite reads sums at 15 places, PostgreSQL's `numeric` at the
    /// scale written).
    fn answer<T>(r: eai_store::Result<T>) -> Result<T, String> {
        match r {
            Ok(v) => Ok(v),
            Err(StoreError::Internal(e) | StoreError::Unavailable(e) | StoreError::Full(e)) => {
                panic!("a store failed: {e}")
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The hours a policy starts or ends inside, from the policies stored.
    fn exact_of(policies: &[Policy]) -> Vec<Timestamp> {
        policies
            .iter()
            .flat_map(|p| std::iter::once(p.spec.effective_from).chain(p.spec.effective_to))
            .filter(|t| t.floor_to(H) != *t)
            .collect()
    }

    /// A usage read as compared: rollups, gaps and claims, in the order read.
    type Read = (
        Vec<Rollup>,
        Vec<eai_engine::report::Gap>,
        Vec<eai_engine::allocate::UsageClaim>,
    );

    /// Two reads compared part by part, the first difference named.
    fn same_read(x: Result<Read, String>, y: Result<Read, String>, what: &str) {
        let (Ok(x), Ok(y)) = (&x, &y) else {
            assert_eq!(x, y, "{what}");
            return;
        };
        fn first<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T], part: &str, what: &str) {
            if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
                panic!(
                    "{what}: {part} differ at {i} (of {} / {}):\n  sqlite:   {:?}\n  postgres: {:?}",
                    a.len(),
                    b.len(),
                    a.get(i),
                    b.get(i)
                );
            }
        }
        first(&x.0, &y.0, "rollups", what);
        first(&x.1, &y.1, "gaps", what);
        first(&x.2, &y.2, "claims", what);
    }

    async fn read(s: &dyn Store, from: i64, to: i64) -> Result<Read, String> {
        let exact = exact_of(&s.policies().await.unwrap());
        answer(s.usage_for(ts(from), ts(to), &exact).await).map(|r| (r.rollups, r.gaps, r.claims))
    }

    /// Applies `op` to both stores and compares the answers; `held` gathers the reservations granted.
    async fn apply(a: &dyn Store, b: &dyn Store, op: &Op, i: usize, held: &mut Vec<String>) {
        macro_rules! same {
            ($s:ident => $call:expr) => {{
                let x = {
                    let $s = a;
                    answer($call.await)
                };
                let y = {
                    let $s = b;
                    answer($call.await)
                };
                assert_eq!(x, y, "operation {i} answered differently: {op:?}");
            }};
        }
        match op {
            Op::Ingest(batch) => same!(s => s.insert_samples(batch, &audit())),
            Op::Usage(v) => same!(s => s.upsert_usage_events(v, &audit())),
            Op::CreatePolicy(p) => same!(s => s.create_policy(p, &audit())),
            Op::Supersede {
                policy,
                at,
                replacement,
            } => {
                let id = format!("alp_{policy}");
                same!(s => s.supersede_policy(
                    &id,
                    ts(T0 + at * H / 4),
                    replacement.as_ref(),
                    &audit()
                ))
            }
            Op::Prune(q) => same!(s => s.prune_raw_samples(ts(T0 + q * H / 4))),
            Op::CreateTenant(n) => {
                let t = eai_engine::domain::Tenant {
                    id: who(*n),
                    slug: format!("team-{}", n % 4).parse().unwrap(),
                    name: format!("Team {n}"),
                };
                same!(s => s.create_tenant(&t, &audit()))
            }
            Op::CreateKey { hash, tenant } => {
                let key = new_key(
                    &format!("hash-{hash}"),
                    if tenant.is_some() {
                        Role::TenantAdmin
                    } else {
                        Role::PlatformAdmin
                    },
                    tenant.map(who),
                    Some("k"),
                    ts(T0),
                );
                same!(s => s.create_api_key(&key, &audit()))
            }
            Op::RevokeKey { scope, key, at } => {
                let id = format!("key_{key}");
                same!(s => s.revoke_api_key(scope_of(*scope), &id, ts(T0 + at * H / 4), &audit()))
            }
            Op::RotateKey {
                scope,
                key,
                hash,
                at,
            } => {
                let (id, hash, at) = (
                    format!("key_{key}"),
                    format!("hash-{hash}"),
                    ts(T0 + at * H / 4),
                );
                same!(s => s.rotate_api_key(scope_of(*scope), &id, &hash, at, ts(at.0 + H), &audit()))
            }
            Op::CreateBudget {
                tenant,
                limit,
                enforce,
            } => {
                let nb = new_budget(budget_spec(
                    who(*tenant),
                    &cents(*limit).to_string(),
                    *enforce,
                ));
                same!(s => s.create_budget(&nb, &audit()))
            }
            Op::SupersedeBudget {
                scope,
                budget,
                at,
                replacement,
            } => {
                let (id, at) = (format!("bud_{budget}"), ts(T0 + at * H / 4));
                let replacement = replacement.map(|(t, limit)| {
                    let mut spec = budget_spec(who(t), &cents(limit).to_string(), limit % 2 == 0);
                    spec.effective_from = at;
                    spec
                });
                same!(s => s.supersede_budget(scope_of(*scope), &id, at, replacement.as_ref(), &audit()))
            }
            Op::Reserve(req) => {
                let x = answer(a.reserve(req, &audit()).await);
                let y = answer(b.reserve(req, &audit()).await);
                assert_eq!(x, y, "operation {i} answered differently: {op:?}");
                if let Ok(eai_store::budgets::ReserveOutcome::Granted(r)) = x {
                    held.push(r.id);
                }
            }
            Op::Commit {
                scope,
                nth,
                cost,
                at,
            } => {
                let id = held
                    .get(*nth as usize % held.len().max(1))
                    .cloned()
                    .unwrap_or_default();
                let actual = eai_engine::budget::Amounts {
                    cost: cents(*cost),
                    tokens: Decimal::from(cost % 700),
                };
                let at = ts(T0 + at * H / 4);
                same!(s => s.commit_reservation(scope_of(*scope), &id, actual, at, &audit()))
            }
            Op::Release { scope, nth, at } => {
                let id = held
                    .get(*nth as usize % held.len().max(1))
                    .cloned()
                    .unwrap_or_default();
                let at = ts(T0 + at * H / 4);
                same!(s => s.release_reservation(scope_of(*scope), &id, at, &audit()))
            }
            Op::Expire(q) => same!(s => s.expire_reservations(ts(T0 + q * H / 4))),
            Op::Read { from, to } => {
                let (from, to) = (T0 + from * H / 4, T0 + to * H / 4);
                same_read(
                    read(a, from, to).await,
                    read(b, from, to).await,
                    &format!("operation {i} answered differently: {op:?}"),
                );
            }
        }
    }

    /// What both stores hold, read back in the order each answers, compared after operation `i`.
    async fn same_state(a: &dyn Store, b: &dyn Store, i: usize, held: &[String]) {
        macro_rules! same {
            ($what:literal, $s:ident => $call:expr) => {{
                let x = {
                    let $s = a;
                    answer($call.await)
                };
                let y = {
                    let $s = b;
                    answer($call.await)
                };
                assert_eq!(x, y, "{} after operation {i}", $what);
            }};
        }
        let end = ts(T0 + 48 * H);
        same_read(
            read(a, T0 - 4 * H, T0 + 8 * H).await,
            read(b, T0 - 4 * H, T0 + 8 * H).await,
            &format!("usage after operation {i}"),
        );
        same!("usage events", s => s.usage_events(Scope::Platform, ts(0), end));
        same!("a tenant's events", s => s
            .usage_events(Scope::Tenant(tenant(2)), ts(0), end));
        same!("policies", s => s.policies());
        same!("deployments", s => s.deployments_seen());
        same!("latest samples", s => s.latest_samples(ts(0), 100));
        same!("nodes", s => s.nodes_last_seen(ts(0)));
        same!("audit head", s => s.audit_head());
        // Every scope: the platform, each tenant, and the reserved platform tenant (which finds nothing).
        for scope in [None, Some(0), Some(1), Some(2), Some(3)].map(scope_of) {
            same!("keys", s => s.api_keys(scope));
            same!("tenants", s => s.tenants(scope));
            same!("budgets", s => s.budgets(scope));
            same!("standings", s => s.budget_standings(scope, ts(T0 + 2 * H)));
            same!("audit events", s => s.audit_events(scope, 0, 10_000));
            for id in held {
                same!("a reservation", s => s.reservation(scope, id));
            }
        }
        same!("key count", s => s.api_key_count());
        for h in 0..8 {
            let hash = format!("hash-{h}");
            same!("a key by hash", s => s.api_key_by_hash(&hash));
        }
    }

    /// Stores on the same database as the one written: one reading through its own read cache (it never
    /// writes: every change reaches it from another store) and one without a cache.
    struct Readers {
        cached: Box<dyn Store>,
        cold: Box<dyn Store>,
    }

    impl Readers {
        /// The cached reads (of the store written and of the other one) equal the uncached read, after
        /// operation `i`: a cached bucket that a change touched is never served.
        async fn agree(&self, written: &dyn Store, i: usize) {
            let (from, to) = (T0 - 4 * H, T0 + 8 * H);
            let cold = read(self.cold.as_ref(), from, to).await;
            let what = format!("a cached read after operation {i}");
            same_read(read(written, from, to).await, cold.clone(), &what);
            same_read(read(self.cached.as_ref(), from, to).await, cold, &what);
        }
    }

    async fn run(ops: &[Op]) {
        let (dir, lite) = super::sqlite_harness::fresh();
        let (db, pg) = super::postgres_harness::fresh().await;
        let path = dir.path().join("data").join("eai.db");
        let cold = eai_store::rollups::RollupConfig {
            read_cache_rows: 0,
            ..Default::default()
        };
        let lite_readers = Readers {
            cached: Box::new(SqliteStore::open(&path).unwrap()),
            cold: Box::new(SqliteStore::open_with(&path, cold).unwrap()),
        };
        let pg_readers = Readers {
            cached: Box::new(eai_store::postgres::PgStore::open(db.url()).await.unwrap()),
            cold: Box::new(
                eai_store::postgres::PgStore::open_with(db.url(), cold)
                    .await
                    .unwrap(),
            ),
        };
        let mut held = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            apply(&lite, &pg, op, i, &mut held).await;
            same_state(&lite, &pg, i, &held).await;
            lite_readers.agree(&lite, i).await;
            pg_readers.agree(&pg, i).await;
        }
        assert_eq!(chain(&lite).await, chain(&pg).await, "the audit chains");
        assert_eq!(answer(lite.verify_audit_chain(None).await), Ok(None));
        assert_eq!(answer(pg.verify_audit_chain(None).await), Ok(None));
        assert_eq!(
            final_allocation(&lite).await,
            final_allocation(&pg).await,
            "the allocations"
        );
    }

    async fn chain(s: &dyn Store) -> Result<Vec<eai_store::AuditEvent>, String> {
        answer(s.audit_events(Scope::Platform, 0, 10_000).await)
    }

    /// The allocation of the whole span, from a store's reads.
    async fn final_allocation(s: &dyn Store) -> Allocation {
        let p = period(T0 - 4 * H, T0 + 8 * H);
        let policies = s.policies().await.unwrap();
        let read = s
            .usage_for(p.from, p.to, &exact_of(&policies))
            .await
            .unwrap();
        let usage = s.usage_events(Scope::Platform, p.from, p.to).await.unwrap();
        allocation_of(&read, p, &policies, &usage)
    }

    proptest! {
        // Each case creates and drops a PostgreSQL database and reads both stores after every operation.
        #![proptest_config(ProptestConfig { cases: 12, max_shrink_iters: 64, ..ProptestConfig::default() })]

        #[test]
        fn both_backends_answer_alike(ops in arb_ops()) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(run(&ops));
        }
    }
}
