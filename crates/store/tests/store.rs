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
        .allocation_usage(ts(T0 - 48 * H), ts(T0 + 48 * H), &[])
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
        let o = s.insert_samples(b.to_vec(), &audit()).await.unwrap();
        total.0 += o.inserted;
        total.1 += o.duplicates;
    }
    total
}

/// The contract: every backend must pass these.
#[path = "store/contract/mod.rs"]
mod contract;

/// Random insertion plans for the property test, shared by every backend's harness.
#[path = "store/plans.rs"]
mod plans;

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
        concurrent_reserves_and_commits_race_for_the_last_of_a_budget,
        thresholds_are_recorded_once_and_delivered_until_acknowledged,
        forecast_alerts_are_recorded_once_a_month_and_delivered,
        the_audit_chain_links_and_verifies,
        concurrent_appends_never_fork_the_chain,
        concurrent_batches_of_one_gpu_count_each_sample_once,
        without_the_outbox_nothing_is_queued,
        idempotency_keys_are_claimed_once_and_replayed,
        idempotency_keys_are_released_and_taken_over,
        idempotency_keys_are_pruned_by_age,
        concurrent_claims_of_one_key_run_once,
        anomalies_are_recorded_once_scoped_and_delivered_until_acknowledged,
        statements_are_numbered_per_month_issued_once_and_read_in_scope,
        concurrent_issues_store_each_statement_once,
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
            fn holes_filled_equal_the_raw_path(plan in super::super::plans::arb_hole_plan()) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let (_dir, store) = fresh();
                rt.block_on(contract::holes_filled_equal_the_raw_path(&store, &plan));
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
#[path = "store/sqlite_only.rs"]
mod sqlite_only;

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
        concurrent_reserves_and_commits_race_for_the_last_of_a_budget,
        thresholds_are_recorded_once_and_delivered_until_acknowledged,
        forecast_alerts_are_recorded_once_a_month_and_delivered,
        the_audit_chain_links_and_verifies,
        concurrent_appends_never_fork_the_chain,
        concurrent_batches_of_one_gpu_count_each_sample_once,
        without_the_outbox_nothing_is_queued,
        idempotency_keys_are_claimed_once_and_replayed,
        idempotency_keys_are_released_and_taken_over,
        idempotency_keys_are_pruned_by_age,
        concurrent_claims_of_one_key_run_once,
        anomalies_are_recorded_once_scoped_and_delivered_until_acknowledged,
        statements_are_numbered_per_month_issued_once_and_read_in_scope,
        concurrent_issues_store_each_statement_once,
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
            fn holes_filled_equal_the_raw_path(plan in super::super::plans::arb_hole_plan()) {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let (_db, store) = fresh().await;
                    contract::holes_filled_equal_the_raw_path(&store, &plan).await;
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
#[path = "store/postgres_only.rs"]
mod postgres_only;

/// A deployment that wants the service's login to hold no DDL right at all: an owner migrates once, and the
/// service logs in as a plain member of `eai_app`.
#[path = "store/postgres_member_login.rs"]
mod postgres_member_login;

/// The two backends answer alike: random sequences of operations (sample batches in any order, with late
/// samples and re-sends; usage events with replacements, some refused; policies created and superseded; pruning;
/// reads) go through a fresh SQLite file and a fresh PostgreSQL database, and every answer (values, order,
/// errors), the state read after each operation, the audit chain (hashes included) and the final allocation are
/// the same on both.
#[path = "store/differential.rs"]
mod differential;
