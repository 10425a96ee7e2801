//! The ClickHouse replica against a real ClickHouse server, started by each test as a plain process
//! (`eai_store::clickhouse::scratch`; a missing or broken server fails the test, it never skips): the
//! allocation read from ClickHouse equals the primary's, the allocation batch run twice leaves one corrected
//! event per key, and the replica converges after ClickHouse was killed in the middle of ingest.

use std::str::FromStr;

use eai_app::allocation::{compute, compute_from, Source};
use eai_app::batch::run_month_from;
use eai_engine::allocate::{AllocationConfig, Period, UsageClaim};
use eai_engine::batch::GPU_LOCAL;
use eai_engine::domain::{
    GpuFraction, IdleCapacity, NonNegative, PolicySpec, Pue, Sample, TenantId, UnitInterval,
    UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_store::clickhouse::scratch::ScratchClickHouse;
use eai_store::clickhouse::{self, backfill, replicate_once, ClickHouse};
use eai_store::Scope;
use rust_decimal::Decimal;

use super::*;
#[allow(unused_imports)]
use super::{Backend, BACKEND};

const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

/// The audit event a test's change records.
fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("test", "test.change", Timestamp(T0), json!({}))
}

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).expect("decimal")
}

fn tenant(s: &str) -> TenantId {
    TenantId::from_str(s).expect("tenant")
}

async fn clickhouse() -> ScratchClickHouse {
    ScratchClickHouse::start()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh primary store of the test's backend with the outbox on, its replica (schema created) and the
/// server (none when the replica is a cluster the test holds).
pub(crate) struct Replicated {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) ch: ClickHouse,
    /// The store's configuration (with the replica's URL), to open a second handle on it.
    pub(crate) config: Config,
    _server: Option<ScratchClickHouse>,
    _dir: tempfile::TempDir,
    _db: Option<ScratchDb>,
}

async fn replicated() -> Replicated {
    let server = clickhouse().await;
    let mut r = replicated_at(&server.url("eai"), None).await;
    r._server = Some(server);
    r
}

/// [`Replicated`] on the ClickHouse server at `url` (on `cluster` when given: `EAI_CLICKHOUSE_CLUSTER`).
pub(crate) async fn replicated_at(url: &str, cluster: Option<&str>) -> Replicated {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = BACKEND.try_with(|b| *b).unwrap_or(Backend::Sqlite);
    let (database_url, db) = match backend {
        Backend::Sqlite => (
            format!("sqlite://{}", dir.path().join("eai-gpu.db").display()),
            None,
        ),
        Backend::Postgres => {
            let db = ScratchDb::create(&test_server_url())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            (db.url().to_string(), Some(db))
        }
    };
    let config = Config {
        data_dir: dir.path().to_path_buf(),
        database_url: Some(database_url.into()),
        clickhouse_url: Some(url.to_string().into()),
        clickhouse_cluster: cluster.map(str::to_string),
        ..Config::default()
    };
    let store = eai_api::open_store(&config).await.expect("store");
    let ch = config.clickhouse().expect("url").expect("replica");
    ch.migrate().await.expect("ClickHouse schema");
    Replicated {
        store,
        ch,
        config,
        _server: None,
        _dir: dir,
        _db: db,
    }
}

/// Delivers the whole outbox.
pub(crate) async fn drain(store: &dyn Store, ch: &ClickHouse) {
    loop {
        let d = replicate_once(store, ch, 50).await.expect("delivered");
        if d.entries == 0 {
            break;
        }
    }
    assert_eq!(store.outbox_stats().await.expect("stats").pending, 0);
}

fn gpu_sample(gpu: &str, dep: &str, owner: Option<TenantId>, end_ms: i64, power: &str) -> Sample {
    Sample {
        node: "gpu-node-1".into(),
        gpu_uuid: gpu.into(),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("{dep}-0"),
        deployment_id: dep.into(),
        owner,
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(end_ms),
        utilization: UnitInterval::new(dec("0.75")).expect("util"),
        memory_used_gb: NonNegative::new(dec("40.5")).expect("mem"),
        power_w: NonNegative::new(dec(power)).expect("power"),
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    }
}

fn policy(name: &str, hourly: &str, from: i64) -> PolicySpec {
    PolicySpec {
        name: name.into(),
        deployment_pattern: Glob::any(),
        gpu_model: None,
        currency: Currency::EUR,
        gpu_hourly_cost: NonNegative::new(dec(hourly)).expect("cost"),
        overhead_pct: NonNegative::new(dec("18")).expect("overhead"),
        energy_kwh_price: NonNegative::new(dec("0.21")).expect("kwh"),
        pue: Pue::new(dec("1.4")).expect("pue"),
        storage_gb_month_price: NonNegative::ZERO,
        idle_capacity: IdleCapacity::Unallocated,
        output_token_weight: Default::default(),
        enabled: true,
        effective_from: Timestamp(from),
        effective_to: None,
    }
}

fn tokens(id: Uuid, t: TenantId, dep: &str, at_ms: i64, n: u64) -> UsageEvent {
    let mut units = std::collections::BTreeMap::new();
    units.insert(
        "tokens_in".to_string(),
        NonNegative::new(Decimal::from(n)).expect("tokens"),
    );
    UsageEvent {
        event_id: id,
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

/// The sample of the shared GPU held back to arrive late.
const LATE_END: i64 = T0 + 30 * 60_000;
/// The event of tenant B on the shared deployment (moved away later, so that B's key disappears).
const B_EVENT: Uuid = Uuid::from_u128(0xb0b);

/// A month's beginning on both primaries: a shared deployment split 70/30 by tokens with a long gap, a
/// dedicated one, a policy that changes at 01:30 (so hour 01:00 is read exactly), a sample held back.
pub(crate) async fn load(store: &dyn Store) {
    let (a, b) = (tenant(TENANT_A), tenant(TENANT_B));
    let mut batch = Vec::new();
    let mut end = T0 + 15_000;
    while end <= T0 + 4 * HOUR_MS {
        let in_hole = end > T0 + 2 * HOUR_MS + 10 * 60_000 && end <= T0 + 2 * HOUR_MS + 40 * 60_000;
        if end != LATE_END && !in_hole {
            batch.push(gpu_sample("GPU-1", "vllm-shared", None, end, "400"));
        }
        if end <= T0 + 3 * HOUR_MS {
            batch.push(gpu_sample("GPU-2", "train-a", Some(a), end, "650.5"));
        }
        // A second GPU of train-a for its first 90 minutes: groups of two GPUs, then of one.
        if end <= T0 + 90 * 60_000 {
            batch.push(gpu_sample("GPU-3", "train-a", Some(a), end, "612.25"));
        }
        end += 15_000;
    }
    store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .expect("ingest");
    let p1 = store
        .create_policy(&policy("base", "2.10", 0), &audit())
        .await
        .expect("policy");
    store
        .supersede_policy(
            &p1.id,
            Timestamp(T0 + 90 * 60_000),
            Some(&policy("raised", "2.45", T0 + 90 * 60_000)),
            &audit(),
        )
        .await
        .expect("supersede");
    store
        .upsert_usage_events(
            &[
                tokens(Uuid::from_u128(0xa1), a, "vllm-shared", T0 + 600_000, 700),
                tokens(B_EVENT, b, "vllm-shared", T0 + 700_000, 300),
                tokens(
                    Uuid::from_u128(0xa2),
                    a,
                    "vllm-shared",
                    T0 + HOUR_MS + 60_000,
                    500,
                ),
            ],
            &audit(),
        )
        .await
        .expect("usage");
}

/// The sample of the shared GPU that [`load`] held back arrives (GPU-1's first hour is recomputed).
pub(crate) async fn late_sample_arrives(store: &dyn Store) {
    store
        .insert_samples(
            vec![gpu_sample("GPU-1", "vllm-shared", None, LATE_END, "400")],
            &audit(),
        )
        .await
        .expect("late sample");
}

/// B's only event moves to a deployment without GPUs: B's share of the shared deployment disappears.
async fn b_moves_away(store: &dyn Store) {
    store
        .upsert_usage_events(
            &[tokens(
                B_EVENT,
                tenant(TENANT_B),
                "elsewhere",
                T0 + 700_000,
                300,
            )],
            &audit(),
        )
        .await
        .expect("moved event");
}

pub(crate) fn period() -> Period {
    Period::new(Timestamp(T0), Timestamp(T0 + 5 * HOUR_MS), HOUR_MS).expect("period")
}

async fn allocation_from_clickhouse_equals_the_primary() {
    allocation_equals_the_primary(&replicated().await).await;
}

/// The primary's month beginning with claims of every kind, replicated: the groups and claims ClickHouse sums
/// and the allocation from ClickHouse are the primary's.
pub(crate) async fn allocation_equals_the_primary(r: &Replicated) {
    load(r.store.as_ref()).await;
    late_sample_arrives(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;
    // Claims of every kind: tokens in and out, GPU-seconds (which then count alone), and events that claim
    // nothing (a vLLM server's own counters, no deployment).
    let (a, b) = (tenant(TENANT_A), tenant(TENANT_B));
    let mut both = tokens(
        Uuid::from_u128(0xa3),
        a,
        "vllm-shared",
        T0 + 3 * HOUR_MS + 5,
        40,
    );
    both.units.insert(
        "tokens_out".into(),
        NonNegative::new(dec("2.5")).expect("tokens"),
    );
    let mut gpu_seconds = tokens(
        Uuid::from_u128(0xb3),
        b,
        "vllm-shared",
        T0 + 3 * HOUR_MS,
        99,
    );
    gpu_seconds.units.insert(
        "gpu_seconds".into(),
        NonNegative::new(dec("120.000001")).expect("gpu-seconds"),
    );
    let mut vllm = tokens(
        Uuid::from_u128(0xc3),
        TenantId::PLATFORM,
        "vllm-shared",
        T0 + 3 * HOUR_MS,
        7,
    );
    vllm.source = eai_engine::domain::VLLM_SOURCE.into();
    let mut nowhere = tokens(Uuid::from_u128(0xd3), a, "vllm-shared", T0 + 3 * HOUR_MS, 7);
    nowhere.deployment_id = None;
    // An explicit 0 GPU-seconds claims that (nothing), not its tokens.
    let mut zero = tokens(
        Uuid::from_u128(0xe3),
        a,
        "vllm-shared",
        T0 + 3 * HOUR_MS,
        50,
    );
    zero.units.insert("gpu_seconds".into(), NonNegative::ZERO);
    r.store
        .upsert_usage_events(&[both, gpu_seconds, vllm, nowhere, zero], &audit())
        .await
        .expect("more usage");
    drain(r.store.as_ref(), &r.ch).await;
    // The groups and claims ClickHouse sums are the primary's, GPU sets included (what the allocation reads).
    let read = r
        .store
        .allocation_usage(period().from, period().to, &[])
        .await
        .expect("primary groups");
    let mut groups = read.rollups;
    eai_store::rollups::sort_for_read(&mut groups);
    assert_eq!(
        r.ch.claims(period().from, period().to)
            .await
            .expect("replica claims"),
        read.claims
    );
    assert!(read.claims.iter().any(|c| !c.gpu_seconds.is_zero()));
    assert!(groups
        .iter()
        .any(|g| g.gpus.as_ref().is_some_and(|s| s.len() == 2)));
    assert_eq!(
        r.ch.group_rollups(period().from, period().to)
            .await
            .expect("replica groups"),
        groups
    );
    replica_equals_primary(r).await;
    breakdown_equals_the_primary(r).await;
}

/// The breakdown of [`period`] from the replica (its per-GPU rollups read from ClickHouse, the exact hour from
/// the primary) equals the primary's, row for row, for the platform and for a tenant (its dedicated
/// deployments only).
async fn breakdown_equals_the_primary(r: &Replicated) {
    use eai_app::allocation::breakdown_of;
    use eai_engine::breakdown::Dimension;
    let config = AllocationConfig::default();
    let replica = Source::ClickHouse(r.ch.clone());
    for scope in [Scope::Platform, Scope::Tenant(tenant(TENANT_A))] {
        for (group_by, filter) in [
            (
                vec![
                    Dimension::Deployment,
                    Dimension::Pod,
                    Dimension::Gpu,
                    Dimension::Share,
                ],
                vec![],
            ),
            (
                vec![Dimension::Tenant, Dimension::Node],
                vec![(Dimension::Deployment, "vllm-shared".to_string())],
            ),
        ] {
            let mut found = Vec::new();
            for source in [&Source::Primary, &replica] {
                found.push(
                    breakdown_of(
                        source,
                        r.store.as_ref(),
                        period(),
                        config,
                        scope,
                        group_by.clone(),
                        filter.clone(),
                    )
                    .await
                    .expect("breakdown"),
                );
            }
            let (primary, replicated) = (&found[0], &found[1]);
            assert!(
                !primary.rows.is_empty() || scope != Scope::Platform,
                "{primary:?}"
            );
            assert_eq!(replicated, primary, "{scope:?} {group_by:?}");
        }
    }
}

/// The allocation of [`period`] from the replica equals the primary's, to the cent, tenant by tenant, then in
/// full; returns it.
pub(crate) async fn replica_equals_primary(r: &Replicated) -> eai_engine::report::Allocation {
    let config = AllocationConfig::default();
    let primary = compute(r.store.as_ref(), period(), config)
        .await
        .expect("primary");
    let replica = compute_from(
        &Source::ClickHouse(r.ch.clone()),
        r.store.as_ref(),
        period(),
        config,
    )
    .await
    .expect("replica");
    assert!(!primary.tenants.is_empty());
    for (p, c) in primary.tenants.iter().zip(replica.tenants.iter()) {
        assert_eq!(format!("{p:?}"), format!("{c:?}"));
    }
    assert_eq!(primary, replica);
    primary
}

async fn gpu_local_in_clickhouse(ch: &ClickHouse) -> Vec<(String, String, u64)> {
    let rows = ch
        .select(&format!(
            "SELECT event_id, toString(any(cost_amount)) AS cost_amount, count() AS n \
             FROM {}.usage_events_by_tenant FINAL \
             WHERE usage_type = '{GPU_LOCAL}' GROUP BY event_id ORDER BY event_id",
            ch.database()
        ))
        .await
        .expect("query");
    rows.iter()
        .map(|r| {
            (
                r["event_id"].as_str().expect("id").to_string(),
                // A `Decimal128(15)` column: its exact text, normalized as the primary's.
                dec(r["cost_amount"].as_str().expect("cost"))
                    .normalize()
                    .to_string(),
                r["n"]
                    .as_str()
                    .and_then(|n| n.parse().ok())
                    .or_else(|| r["n"].as_u64())
                    .expect("count"),
            )
        })
        .collect()
}

async fn month(s: &dyn Store) -> Vec<UsageEvent> {
    s.usage_events(
        Scope::Platform,
        Timestamp(T0),
        Timestamp(T0 + 31 * 24 * HOUR_MS),
    )
    .await
    .expect("events")
}

fn gpu_local_in(events: &[UsageEvent]) -> Vec<(String, String, u64)> {
    let mut v: Vec<_> = events
        .iter()
        .filter(|e| e.usage_type == GPU_LOCAL)
        .map(|e| {
            (
                e.event_id.to_string(),
                e.cost
                    .map(|(a, _)| a.get().normalize().to_string())
                    .unwrap_or_default(),
                1,
            )
        })
        .collect();
    v.sort();
    v
}

async fn the_batch_run_twice_leaves_one_corrected_event_per_key_in_clickhouse() {
    let r = replicated().await;
    let source = Source::ClickHouse(r.ch.clone());
    let store = r.store.as_ref();
    load(store).await;
    drain(store, &r.ch).await;
    let now = Timestamp(T0 + 5 * HOUR_MS);
    let first = run_month_from(&source, store, "2026-10", now, AllocationConfig::default())
        .await
        .expect("first run");
    assert!(first.events >= 3, "{first:?}");
    drain(store, &r.ch).await;
    let before = gpu_local_in(&month(store).await);
    assert_eq!(gpu_local_in_clickhouse(&r.ch).await, before);

    // A late sample raises the shared deployment's cost; B's only event moves to a deployment without GPUs,
    // so B's share of the shared deployment disappears.
    late_sample_arrives(store).await;
    b_moves_away(store).await;
    drain(store, &r.ch).await;
    let second = run_month_from(&source, store, "2026-10", now, AllocationConfig::default())
        .await
        .expect("second run");
    assert_eq!(second.zeroed, 1, "{second:?}");
    drain(store, &r.ch).await;

    let after = gpu_local_in(&month(store).await);
    let replica = gpu_local_in_clickhouse(&r.ch).await;
    assert_eq!(
        replica, after,
        "one event per key, with the corrected figure"
    );
    assert!(replica.iter().all(|(_, _, n)| *n == 1));
    assert_ne!(after, before, "the late sample corrected the figures");
    assert_eq!(after.len(), before.len());
    assert!(
        after.iter().any(|(_, cost, _)| cost == "0"),
        "B's disappeared key is zeroed: {after:?}"
    );
}

/// A replica added to a database that already held data: what was written before the outbox was on reaches
/// it only through the backfill; a change the outbox carries wins over the backfill's copy whether it arrives
/// before or after it; a second backfill changes nothing.
async fn a_replica_added_later_is_backfilled_and_the_outbox_wins() {
    backfilled_and_the_outbox_wins(&replicated().await).await;
}

/// [`a_replica_added_later_is_backfilled_and_the_outbox_wins`] on the replica of `r`.
pub(crate) async fn backfilled_and_the_outbox_wins(r: &Replicated) {
    let without_outbox = eai_api::open_store(&Config {
        clickhouse_url: None,
        ..r.config.clone()
    })
    .await
    .expect("a handle on the same store, outbox off");
    load(without_outbox.as_ref()).await;
    assert_eq!(r.store.outbox_stats().await.expect("stats").pending, 0);

    // With the outbox on, before the backfill: the held-back sample (GPU-1's first hour recomputed).
    late_sample_arrives(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;

    let (from, to) = r
        .store
        .replica_extent()
        .await
        .expect("extent")
        .expect("the store holds rows");
    assert!(from.0 <= T0 && to.0 > T0 + 4 * HOUR_MS, "{from}..{to}");
    let mut steps = 0;
    let done = backfill(r.store.as_ref(), &r.ch, from, to, HOUR_MS, |d| {
        steps = d.steps;
    })
    .await
    .expect("backfill");
    assert_eq!((steps, done.steps), (done.total_steps, done.total_steps));
    let held = r.store.replica_rows(from, to).await.expect("rows");
    assert_eq!(
        done.samples,
        held.samples.len() as u64,
        "each sample copied once"
    );
    assert_eq!(done.rollups, held.rollups.len() as u64);
    assert_eq!(done.events, 3);
    assert!(done.gaps >= 1, "the hole in GPU-1's samples: {done:?}");

    // After the backfill: B's event moves away (the outbox delivers it after the backfill's copy).
    b_moves_away(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;

    let first = replica_equals_primary(r).await;
    let samples = scalar(&r.ch, "SELECT count() AS v FROM eai.gpu_samples FINAL").await;
    assert_eq!(samples, held.samples.len().to_string());

    // Again: the backfill's older copy of B's event loses to the outbox's, nothing is doubled.
    backfill(r.store.as_ref(), &r.ch, from, to, 2 * HOUR_MS, |_| {})
        .await
        .expect("second backfill");
    assert_eq!(replica_equals_primary(r).await, first);
    assert_eq!(
        scalar(&r.ch, "SELECT count() AS v FROM eai.gpu_samples FINAL").await,
        samples
    );
}

/// The tables of the replica as binaries before `Decimal128` columns created them (quantities as text).
const TEXT_LAYOUT: [&str; 3] = [
    "CREATE TABLE eai.usage_events_by_tenant (event_id String, tenant_id String, usage_type String, \
     source String, occurred_at DateTime('UTC'), occurred_at_ms Int64, deployment_id String, \
     model_provider String, model_name String, units String, tokens_in String, tokens_out String, \
     gpu_seconds String, gpu_memory_gb_seconds String, energy_wh String, cost_amount String, \
     cost_currency String, allocation_policy_id String, project String, agent_id String, run_id String, \
     version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (tenant_id, event_id)",
    "CREATE TABLE eai.gpu_samples (gpu_uuid String, end_ms Int64, end_at DateTime('UTC'), \
     node String, model String, namespace String, pod String, deployment_id String, owner String, \
     window_ms Int64, utilization String, memory_used_gb String, power_w String, storage_gb String, \
     gpu_fraction String, share String DEFAULT 'exclusive', version UInt64) \
     ENGINE = ReplacingMergeTree(version) ORDER BY (gpu_uuid, end_ms)",
    "CREATE TABLE eai.gpu_rollups (bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, \
     model String, placed UInt8, namespace String, pod String, node String, share String, \
     first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, \
     gpu_seconds String, busy_gpu_seconds String, estimated_gpu_seconds String, memory_gb_seconds String, \
     energy_ws String, storage_gb_seconds String, deleted UInt8, version UInt64) \
     ENGINE = ReplacingMergeTree(version) ORDER BY (bucket_ms, gpu_uuid, deployment_id, owner, model, \
     placed, namespace, pod, node, share)",
];

/// A replica an older binary created and filled (quantities as text) is migrated to `Decimal128` columns:
/// every row kept with its version, and the allocation from it equals the primary's, before and after more
/// changes are delivered to the migrated tables.
async fn a_replica_of_text_quantities_is_migrated_and_allocates_as_the_primary() {
    let r = replicated().await;
    // Older binaries had no group tables either (nor their marker).
    for t in [
        "usage_events_by_tenant",
        "gpu_samples",
        "gpu_rollups",
        "gpu_groups",
        "gpu_sets",
        "usage_claims",
        "replica_meta",
    ] {
        r.ch.exec(&format!("DROP TABLE eai.{t}"))
            .await
            .expect("drop");
    }
    for ddl in TEXT_LAYOUT {
        r.ch.exec(ddl).await.expect("old table");
    }
    let store = r.store.as_ref();
    load(store).await;
    late_sample_arrives(store).await;
    // Delivered as the older binaries did: the outbox's rows as they are, decimals as JSON strings.
    loop {
        let pending = store.outbox_pending(50).await.expect("pending");
        let Some(last) = pending.last().map(|e| e.seq) else {
            break;
        };
        // Not the group rows and claims, which older binaries did not write.
        for e in pending
            .iter()
            .filter(|e| !["gpu_groups", "gpu_sets", "usage_claims"].contains(&e.table.as_str()))
        {
            let rows: Vec<_> = e
                .rows
                .iter()
                .map(|row| {
                    let mut row = row.clone();
                    row["version"] = json!(e.seq);
                    row
                })
                .collect();
            insert_as_text(&r.ch, clickhouse::physical(&e.table), &rows).await;
        }
        store.outbox_ack(last).await.expect("ack");
    }
    let count = |t: &str| format!("SELECT count() AS n FROM eai.{t}");
    let rows_before = scalar(&r.ch, &count("gpu_rollups")).await;

    r.ch.migrate().await.expect("migrated");
    r.ch.migrate()
        .await
        .expect("migrating again changes nothing");
    // Rows held already: the group tables are new but not complete, the reads sum the per-GPU rows.
    assert!(!r.ch.groups_complete().await.expect("marker"));
    for (t, c) in [
        ("gpu_rollups", "energy_ws"),
        ("gpu_samples", "power_w"),
        ("usage_events_by_tenant", "cost_amount"),
    ] {
        assert_eq!(
            scalar(
                &r.ch,
                &format!(
                    "SELECT type FROM system.columns WHERE database = 'eai' AND table = '{t}' \
                     AND name = '{c}'"
                )
            )
            .await,
            "Decimal(38, 15)"
        );
    }
    assert_eq!(
        scalar(
            &r.ch,
            "SELECT count() AS n FROM system.tables WHERE database = 'eai' AND name LIKE '%_text'"
        )
        .await,
        "0",
        "the tables renamed aside are dropped"
    );
    assert_eq!(scalar(&r.ch, &count("gpu_rollups")).await, rows_before);
    let first = replica_equals_primary(&r).await;

    // Changes after the migration go to the new columns and win over the migrated rows.
    b_moves_away(store).await;
    drain(store, &r.ch).await;
    let second = replica_equals_primary(&r).await;
    assert_ne!(first, second);
}

/// The primary's group rows and claims of [`period`] (what the outbox replicates), in read order.
async fn primary_groups_and_claims(
    store: &dyn Store,
) -> (Vec<eai_engine::rollup::Rollup>, Vec<UsageClaim>) {
    let rows = store
        .replica_rows(period().from, period().to)
        .await
        .expect("the primary's rows");
    let mut groups = rows.groups;
    eai_store::rollups::sort_for_read(&mut groups);
    let mut claims: Vec<UsageClaim> = rows.claims.into_iter().map(|(c, _)| c).collect();
    claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
    (groups, claims)
}

/// Rows of a replica table, `deleted` ones only or all (`FINAL`).
async fn count_rows(ch: &ClickHouse, table: &str, deleted_only: bool) -> u64 {
    let filter = if deleted_only {
        " WHERE deleted = 1"
    } else {
        ""
    };
    let rows = ch
        .select_tsv(&format!(
            "SELECT count() FROM {}.{table} FINAL{filter}",
            ch.database()
        ))
        .await
        .expect("count");
    rows[0][0].parse().expect("a count")
}

async fn the_replicated_groups_and_claims_equal_the_primary() {
    let r = replicated().await;
    // A fresh replica: the outbox fills the group tables from the first row on.
    assert!(r.ch.groups_complete().await.expect("marker"));
    load(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;
    // GPU-1's first hour recomputed (its group row rewritten), B's only claim emptied (its row deleted).
    late_sample_arrives(r.store.as_ref()).await;
    b_moves_away(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;
    let (groups, claims) = primary_groups_and_claims(r.store.as_ref()).await;
    assert!(groups
        .iter()
        .any(|g| g.gpus.as_ref().is_some_and(|s| s.len() == 2)));
    let (from, to) = (period().from, period().to);
    assert_eq!(
        r.ch.replicated_group_rollups(from, to)
            .await
            .expect("replicated groups"),
        groups
    );
    assert_eq!(
        r.ch.summed_group_rollups(from, to)
            .await
            .expect("summed groups"),
        groups
    );
    assert_eq!(
        r.ch.replicated_claims(from, to)
            .await
            .expect("replicated claims"),
        claims
    );
    assert_eq!(
        r.ch.summed_claims(from, to).await.expect("summed claims"),
        claims
    );
    assert!(!claims
        .iter()
        .any(|c| c.tenant_id == tenant(TENANT_B) && c.deployment_id == "vllm-shared"));
    assert!(count_rows(&r.ch, "usage_claims", true).await > 0);
    // Nothing but the primary's rows (and the deleted ones) in the tables.
    assert_eq!(
        count_rows(&r.ch, "gpu_groups", false).await - count_rows(&r.ch, "gpu_groups", true).await,
        groups.len() as u64
    );
    replica_equals_primary(&r).await;
}

async fn an_old_replica_allocates_through_the_fallback_until_backfilled() {
    let r = replicated().await;
    load(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;
    // The replica of an older binary: per-GPU rollups and events, no group tables; the new binary's migration
    // creates them but cannot fill them (the replica holds rows already).
    for t in ["gpu_groups", "gpu_sets", "usage_claims", "replica_meta"] {
        r.ch.exec(&format!("DROP TABLE {}.{t}", r.ch.database()))
            .await
            .expect("drop");
    }
    r.ch.migrate().await.expect("migrate");
    assert!(!r.ch.groups_complete().await.expect("marker"));
    // Changes from now on carry their group rows and claims, which alone are not the primary's.
    late_sample_arrives(r.store.as_ref()).await;
    b_moves_away(r.store.as_ref()).await;
    drain(r.store.as_ref(), &r.ch).await;
    let (groups, claims) = primary_groups_and_claims(r.store.as_ref()).await;
    let (from, to) = (period().from, period().to);
    assert_ne!(
        r.ch.replicated_group_rollups(from, to)
            .await
            .expect("replicated groups"),
        groups
    );
    // The fallback: the per-GPU rollups and the events summed.
    assert_eq!(r.ch.group_rollups(from, to).await.expect("groups"), groups);
    assert_eq!(r.ch.claims(from, to).await.expect("claims"), claims);
    let first = replica_equals_primary(&r).await;

    let (lo, hi) = r
        .store
        .replica_extent()
        .await
        .expect("extent")
        .expect("the store holds rows");
    let done = backfill(r.store.as_ref(), &r.ch, lo, hi, HOUR_MS, |_| {})
        .await
        .expect("backfill");
    assert_eq!(done.groups as usize, groups.len());
    assert!(r.ch.groups_complete().await.expect("marker"));
    assert_eq!(
        r.ch.replicated_group_rollups(from, to)
            .await
            .expect("replicated groups"),
        groups
    );
    assert_eq!(
        r.ch.replicated_claims(from, to)
            .await
            .expect("replicated claims"),
        claims
    );
    assert_eq!(first, replica_equals_primary(&r).await);
}

on_both_backends!(
    a_replica_of_text_quantities_is_migrated_and_allocates_as_the_primary,
    allocation_from_clickhouse_equals_the_primary,
    the_batch_run_twice_leaves_one_corrected_event_per_key_in_clickhouse,
    a_replica_added_later_is_backfilled_and_the_outbox_wins,
    the_replicated_groups_and_claims_equal_the_primary,
    an_old_replica_allocates_through_the_fallback_until_backfilled,
);

/// Rows into a table of an older binary's layout, its quantities as text (as those binaries wrote them: JSON
/// strings; `ClickHouse::insert` writes the current layout's numbers).
async fn insert_as_text(ch: &ClickHouse, table: &str, rows: &[serde_json::Value]) {
    let body: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    ch.exec(&format!(
        "INSERT INTO {}.{table} FORMAT JSONEachRow\n{}",
        ch.database(),
        body.join("\n")
    ))
    .await
    .expect("rows of the old layout");
}

/// One figure of the replica, read with FINAL.
pub(crate) async fn scalar(ch: &ClickHouse, sql: &str) -> String {
    let rows = ch.select(sql).await.expect("query");
    let v = rows
        .first()
        .and_then(|r| r.as_object())
        .and_then(|o| o.values().next())
        .cloned()
        .expect("one value");
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

pub(crate) fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
}

/// Waits until `/metrics` satisfies `ok` (or fails after a minute and a half).
pub(crate) async fn wait_for_metrics(
    app: &TestApp,
    what: &str,
    ok: impl Fn(&str) -> bool,
) -> String {
    for _ in 0..900 {
        let (_, text) = app.get_text("/metrics", "").await;
        if ok(&text) {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, text) = app.get_text("/metrics", "").await;
    panic!("timed out waiting for {what}:\n{text}");
}

#[tokio::test]
async fn the_replica_converges_after_clickhouse_was_killed_during_ingest() {
    let mut server = clickhouse().await;
    let url = server.url("eai");
    let app = spawn_app_with(|c| c.clickhouse_url = Some(url.clone().into())).await;
    let ch = ClickHouse::from_url(&url).expect("url");
    let hour = recent_hour();
    app.ingest(hour_of_samples(
        "GPU-OUT-1",
        "vllm-a",
        Timestamp(hour.0 - 2 * HOUR_MS),
        400,
    ))
    .await;
    wait_for_metrics(&app, "the first hour replicated", |m| {
        metric(m, "eai_replica_delivered_rows_total") > 240
            && metric(m, "eai_replica_outbox_pending") == 0
    })
    .await;

    // ClickHouse dies; ingest goes on.
    server.kill();
    app.ingest(hour_of_samples(
        "GPU-OUT-1",
        "vllm-a",
        Timestamp(hour.0 - HOUR_MS),
        410,
    ))
    .await;
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &dev_a,
            &json!({ "events": [usage_event("vllm-a", Timestamp(hour.0 - HOUR_MS), json!({"tokens_in": 10}))] }),
        )
        .await;
    assert!(status.is_success(), "{status} {v}");
    app.ingest(hour_of_samples("GPU-OUT-1", "vllm-a", hour, 420))
        .await;
    let down = wait_for_metrics(&app, "failures while ClickHouse is down", |m| {
        metric(m, "eai_replica_failures_total") > 0 && metric(m, "eai_replica_outbox_pending") > 0
    })
    .await;
    assert!(metric(&down, "eai_replica_last_success_timestamp_seconds") > 0);

    // Back on the same data: the outbox drains.
    server.restart().await.unwrap_or_else(|e| panic!("{e}"));
    wait_for_metrics(&app, "the outbox drained after the restart", |m| {
        metric(m, "eai_replica_outbox_pending") == 0
    })
    .await;

    let store = app.second_store().await;
    let db = ch.database().to_string();
    assert_eq!(
        scalar(
            &ch,
            &format!("SELECT count() AS n FROM {db}.gpu_samples FINAL")
        )
        .await,
        "720",
        "nothing lost or doubled"
    );
    assert_eq!(
        scalar(
            &ch,
            &format!(
                "SELECT toString(sum(toDecimal128(power_w, 6))) AS s FROM {db}.gpu_samples FINAL"
            )
        )
        .await
        .trim_end_matches('0')
        .trim_end_matches('.'),
        (240 * (400 + 410 + 420)).to_string()
    );
    let (from, to) = (Timestamp(hour.0 - 2 * HOUR_MS), Timestamp(hour.0 + HOUR_MS));
    let mut primary = store
        .allocation_usage(from, to, &[])
        .await
        .expect("primary")
        .rollups;
    // The replica holds per-GPU rollups; the primary reads them grouped per deployment-hour.
    let replica = eai_engine::rollup::group(ch.rollups(from, to).await.expect("replica"));
    eai_store::rollups::sort_for_read(&mut primary);
    assert_eq!(replica, primary, "the replica's rollups are the primary's");
    // And grouped by ClickHouse itself (what the allocation reads).
    let grouped = ch.group_rollups(from, to).await.expect("replica groups");
    assert_eq!(grouped, primary, "ClickHouse's groups are the primary's");
    let events = store
        .usage_events(Scope::Platform, from, to)
        .await
        .expect("events");
    let replica_events = ch.usage_events(from, to).await.expect("replica events");
    assert_eq!(replica_events.len(), events.len());
    app.stop().await;
}

/// A replica from before placements (its `gpu_rollups` keyed without them) is migrated in place: its rows are
/// kept, as rollups of no placement; afterwards two placements of one GPU-hour are two rows, each read back with
/// its own.
#[tokio::test]
async fn a_replica_from_before_placements_keeps_its_rollups() {
    use eai_engine::domain::ShareMethod;
    use eai_engine::rollup::{Placement, Quantities, Rollup, RollupKey};
    let server = clickhouse().await;
    let ch = ClickHouse::from_url(&server.url("eai")).expect("url");
    ch.exec("CREATE DATABASE IF NOT EXISTS eai")
        .await
        .expect("db");
    ch.exec(
        "CREATE TABLE eai.gpu_rollups (bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, \
         model String, first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, \
         estimated_samples UInt64, gpu_seconds String, busy_gpu_seconds String, estimated_gpu_seconds String, \
         memory_gb_seconds String, energy_ws String, storage_gb_seconds String, deleted UInt8, version UInt64) \
         ENGINE = ReplacingMergeTree(version) ORDER BY (bucket_ms, gpu_uuid, deployment_id, owner, model)",
    )
    .await
    .expect("old table");
    let rollup = |pod: Option<&str>, gs: &str| Rollup {
        key: RollupKey {
            gpu_uuid: "GPU-1".into(),
            deployment_id: "vllm-a".into(),
            owner: None,
            model: "H100-80GB".into(),
            bucket_start: Timestamp(T0),
            placement: pod.map_or(Placement::default(), |p| {
                Placement::new("inference", p, "node-1", ShareMethod::Exclusive)
            }),
        },
        first_window_start: Timestamp(T0),
        last_window_start: Timestamp(T0 + 1_800_000),
        samples: 120,
        estimated_samples: 0,
        q: Quantities {
            gpu_seconds: dec(gs),
            ..Quantities::default()
        },
        gpus: None,
    };
    let mut old = clickhouse::rollup_row(&rollup(None, "1800"), false);
    for k in ["placed", "namespace", "pod", "node", "share"] {
        old.as_object_mut().expect("a row").remove(k);
    }
    old["version"] = json!(1);
    insert_as_text(&ch, "gpu_rollups", &[old]).await;

    ch.migrate().await.expect("migrated");
    ch.migrate().await.expect("migrating again changes nothing");
    let read = ch
        .rollups(Timestamp(T0), Timestamp(T0 + HOUR_MS))
        .await
        .expect("read");
    assert_eq!(read, vec![rollup(None, "1800")]);

    let mut placed = clickhouse::rollup_row(&rollup(Some("vllm-a-7"), "900"), false);
    placed["version"] = json!(2);
    ch.insert("gpu_rollups", &[placed])
        .await
        .expect("placed row");
    let mut read = ch
        .rollups(Timestamp(T0), Timestamp(T0 + HOUR_MS))
        .await
        .expect("read");
    read.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(
        read,
        vec![rollup(None, "1800"), rollup(Some("vllm-a-7"), "900")]
    );
}

/// A replica from before share methods (placements kept, `gpu_rollups` keyed without the method) gets the column
/// and the sorting key in place: its rows read back `exclusive`; afterwards one pod's measured and equal shares
/// of one GPU-hour are two rows, each read back with its method.
#[tokio::test]
async fn a_replica_from_before_share_methods_keeps_its_rollups() {
    use eai_engine::domain::ShareMethod;
    use eai_engine::rollup::{Placement, Quantities, Rollup, RollupKey};
    let server = clickhouse().await;
    let ch = ClickHouse::from_url(&server.url("eai")).expect("url");
    ch.exec("CREATE DATABASE IF NOT EXISTS eai")
        .await
        .expect("db");
    ch.exec(
        "CREATE TABLE eai.gpu_rollups (bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, \
         model String, placed UInt8, namespace String, pod String, node String, first_window_start_ms Int64, \
         last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, gpu_seconds String, \
         busy_gpu_seconds String, estimated_gpu_seconds String, memory_gb_seconds String, energy_ws String, \
         storage_gb_seconds String, deleted UInt8, version UInt64) ENGINE = ReplacingMergeTree(version) \
         ORDER BY (bucket_ms, gpu_uuid, deployment_id, owner, model, placed, namespace, pod, node)",
    )
    .await
    .expect("old table");
    let rollup = |share: ShareMethod, gs: &str| Rollup {
        key: RollupKey {
            gpu_uuid: "GPU-1".into(),
            deployment_id: "vllm-a".into(),
            owner: None,
            model: "H100-80GB".into(),
            bucket_start: Timestamp(T0),
            placement: Placement::new("inference", "vllm-a-7", "node-1", share),
        },
        first_window_start: Timestamp(T0),
        last_window_start: Timestamp(T0 + 1_800_000),
        samples: 120,
        estimated_samples: 0,
        q: Quantities {
            gpu_seconds: dec(gs),
            ..Quantities::default()
        },
        gpus: None,
    };
    let mut old = clickhouse::rollup_row(&rollup(ShareMethod::Exclusive, "1800"), false);
    old.as_object_mut().expect("a row").remove("share");
    old["version"] = json!(1);
    insert_as_text(&ch, "gpu_rollups", &[old]).await;

    ch.migrate().await.expect("migrated");
    ch.migrate().await.expect("migrating again changes nothing");
    let read = ch
        .rollups(Timestamp(T0), Timestamp(T0 + HOUR_MS))
        .await
        .expect("read");
    assert_eq!(read, vec![rollup(ShareMethod::Exclusive, "1800")]);

    let rows: Vec<_> = [(ShareMethod::Measured, "600"), (ShareMethod::Equal, "300")]
        .into_iter()
        .map(|(m, gs)| {
            let mut r = clickhouse::rollup_row(&rollup(m, gs), false);
            r["version"] = json!(2);
            r
        })
        .collect();
    ch.insert("gpu_rollups", &rows).await.expect("shared rows");
    let mut read = ch
        .rollups(Timestamp(T0), Timestamp(T0 + HOUR_MS))
        .await
        .expect("read");
    read.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(
        read,
        vec![
            rollup(ShareMethod::Exclusive, "1800"),
            rollup(ShareMethod::Measured, "600"),
            rollup(ShareMethod::Equal, "300"),
        ]
    );
}
