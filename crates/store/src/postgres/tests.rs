//! PostgreSQL cases of group rollups and usage claims that need the database itself (SQL as the service role, a
//! database built by an older schema, concurrent writers). They complement the contract suite
//! (`crates/store/tests/store.rs`), which runs the same reads on both backends. Each case gets a fresh scratch
//! database on the server at `EAI_TEST_POSTGRES_URL`, like the contract suite's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::{ReplicaStore, SampleStore, UsageStore};
use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::allocate::sum_claims;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, TenantId, UnitInterval, UsageEvent};
use eai_engine::rollup::{aggregate, group, Rollup};
use eai_engine::series::{cells, SeriesConfig};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use tokio_postgres::{Client, NoTls};
use uuid::Uuid;

use super::scratch::{test_server_url, with_dbname, ScratchDb};
use super::{PgStore, PLATFORM_TENANT, SERVICE_ROLE};
use crate::{Scope, Store};

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

/// The audit event a test's change records.
fn audit() -> crate::AuditDraft {
    crate::AuditDraft::system("test", "test.change", Timestamp(T0), serde_json::json!({}))
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

/// `gpus` GPUs of `dep`, sampled every 15 s over `[from, to)`, in time order.
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

fn event(t: TenantId, dep: Option<&str>, at_ms: i64, units: &[(&str, &str)]) -> UsageEvent {
    UsageEvent {
        event_id: Uuid::new_v4(),
        tenant_id: t,
        usage_type: "llm_tokens".into(),
        source: "gateway".into(),
        occurred_at: Timestamp(at_ms),
        deployment_id: dep.map(str::to_string),
        model: None,
        units: units
            .iter()
            .map(|(k, v)| (k.to_string(), NonNegative::new(d(v)).unwrap()))
            .collect::<BTreeMap<_, _>>(),
        cost: None,
        allocation_policy_id: None,
        project: None,
        agent_id: None,
        run_id: None,
    }
}

/// What the store must read back for these samples: the engine's group rollups.
/// The group rollups of `samples`, in the order `usage_for` answers in.
fn expected(samples: &[Sample]) -> Vec<Rollup> {
    let mut groups = group(aggregate(cells(samples, &SeriesConfig::default()).cells));
    crate::rollups::sort_for_read(&mut groups);
    groups
}

async fn fresh() -> (ScratchDb, PgStore) {
    let db = ScratchDb::create(&test_server_url())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let store = PgStore::open(db.url())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (db, store)
}

async fn connect(url: &str) -> Client {
    let (c, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    c
}

/// A tiny xorshift, so that the orders below are arbitrary but the same on every run.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// As the service role, with `app.tenant_id` = A, plain SQL with no tenant clause sees none of B's group rollups
/// or claims, nor the platform's; a row of B is refused; the platform path sees every row.
#[tokio::test]
async fn row_level_security_binds_group_rollups_and_claims_at_the_database() {
    let (db, store) = fresh().await;
    let (a, b) = (tenant(1), tenant(2));
    let mut v = Vec::new();
    for (dep, owner) in [("dep-a", Some(a)), ("dep-b", Some(b)), ("dep-s", None)] {
        for mut x in fleet(dep, 2, T0, T0 + 600_000) {
            x.owner = owner;
            v.push(x);
        }
    }
    store.insert_samples(v.to_vec(), &audit()).await.unwrap();
    store
        .upsert_usage_events(
            &[
                event(a, Some("dep-s"), T0 + 1000, &[("tokens_in", "10")]),
                event(b, Some("dep-s"), T0 + 2000, &[("tokens_in", "20")]),
            ],
            &audit(),
        )
        .await
        .unwrap();

    let mut c = connect(db.url()).await;
    c.batch_execute(&format!("SET ROLE {SERVICE_ROLE}"))
        .await
        .unwrap();
    let tables = ["deployment_rollups", "usage_claims"];
    for t in tables {
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
            "eai.{t}: ENABLE and FORCE"
        );
        assert_ne!(
            r.get::<_, String>(2),
            SERVICE_ROLE,
            "eai.{t}: not the service's"
        );
        let n: i64 = c
            .query_one(&format!("SELECT count(*) FROM eai.{t}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "eai.{t} without a scope shows nothing");
    }

    /// Runs `sql` acting for `t` (or on the platform path), then rolls back.
    async fn acting(
        c: &mut Client,
        t: Option<TenantId>,
        sql: &str,
    ) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        let tx = c.transaction().await.unwrap();
        match t {
            Some(t) => tx
                .execute(
                    "SELECT set_config('app.tenant_id', $1, true)",
                    &[&t.to_string()],
                )
                .await
                .unwrap(),
            None => tx
                .execute("SELECT set_config('app.platform', 'on', true)", &[])
                .await
                .unwrap(),
        };
        let out = tx.query(sql, &[]).await;
        tx.rollback().await.unwrap();
        out
    }
    fn refused(r: &Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>) -> bool {
        matches!(r, Err(e) if e.as_db_error().is_some_and(|d| d.code().code() == "42501"
            && d.message().contains("row-level security")))
    }

    for t in tables {
        for (me, other) in [(a, b), (b, a)] {
            let rows = acting(&mut c, Some(me), &format!("SELECT tenant_id FROM eai.{t}"))
                .await
                .unwrap();
            assert!(
                !rows.is_empty() && rows.iter().all(|r| r.get::<_, Uuid>(0) == me.0),
                "eai.{t}: {me} sees its own rows only"
            );
            let theirs = acting(
                &mut c,
                Some(me),
                &format!("SELECT 1 FROM eai.{t} WHERE tenant_id = '{other}'"),
            )
            .await
            .unwrap();
            assert!(theirs.is_empty(), "eai.{t}: {other}'s rows are invisible");
        }
        let all: Vec<Uuid> = acting(
            &mut c,
            None,
            &format!("SELECT DISTINCT tenant_id FROM eai.{t}"),
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
        assert!(all.contains(&a.0) && all.contains(&b.0), "eai.{t}: {all:?}");
        if t == "deployment_rollups" {
            assert!(
                all.contains(&PLATFORM_TENANT),
                "shared groups are platform rows"
            );
        }
    }

    let inserts = [
        "INSERT INTO eai.deployment_rollups (bucket_ms, deployment_id, tenant_id, model, first_window_start_ms, \
         last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
         memory_gb_seconds, energy_ws, storage_gb_seconds, gpus) \
         VALUES (0, 'd', '{T}', 'm', 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, '{1}') RETURNING 1",
        "INSERT INTO eai.usage_claims (bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events) \
         VALUES (0, 'd', '{T}', 0, 1, 1) RETURNING 1",
    ];
    for sql in inserts {
        let of = |x: TenantId| sql.replace("{T}", &x.to_string());
        let r = acting(&mut c, Some(a), &of(b)).await;
        assert!(
            refused(&r),
            "a row of B inserted as A must be refused: {r:?}"
        );
        let r = acting(&mut c, Some(a), &of(a)).await;
        assert_eq!(
            r.map(|v| v.len()).ok(),
            Some(1),
            "the same row of A goes in"
        );
    }
    for t in tables {
        let r = acting(
            &mut c,
            Some(a),
            &format!("UPDATE eai.{t} SET tenant_id = '{b}' RETURNING 1"),
        )
        .await;
        assert!(
            refused(&r),
            "eai.{t}: giving A's rows to B must be refused: {r:?}"
        );
        for sql in [
            format!("UPDATE eai.{t} SET tenant_id = tenant_id WHERE tenant_id = '{b}' RETURNING 1"),
            format!("DELETE FROM eai.{t} WHERE tenant_id = '{b}' RETURNING 1"),
        ] {
            let r = acting(&mut c, Some(a), &sql).await.unwrap();
            assert!(
                r.is_empty(),
                "eai.{t}: B's rows are out of A's reach: {sql}"
            );
        }
    }
}

/// A database migrated by an older binary (schema 2, before group rollups and claims), with per-GPU rollups and
/// usage events in it, opened by this one: migration 3 builds the groups and claims from those rows, in SQL, as
/// an owner that is no superuser (so row level security binds it too), and the reads equal the engine's.
#[tokio::test]
async fn migration_3_builds_groups_and_claims_from_an_older_database() {
    let server = test_server_url();
    let db = ScratchDb::create(&server).await.unwrap();
    let admin = connect(db.url()).await;
    let owner = format!("eai_t_owner_{}", &Uuid::new_v4().simple().to_string()[..12]);
    admin
        .batch_execute(super::schema::SERVICE_ROLE_SQL)
        .await
        .unwrap();
    admin
        .batch_execute(&format!(
            "CREATE ROLE {owner} LOGIN NOSUPERUSER NOBYPASSRLS; GRANT {SERVICE_ROLE} TO {owner}; \
             GRANT CREATE ON DATABASE {} TO {owner}",
            db.name()
        ))
        .await
        .unwrap();
    let (_, rest) = db.url().split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let url = with_dbname(&format!("postgres://{owner}@{host}"), db.name()).unwrap();

    // In a task of its own, so that a failed assertion still drops the role below.
    let result = tokio::spawn(async move {
        let mut c = connect(&url).await;
        assert_eq!(super::schema::migrate_to(&mut c, 2).await.unwrap(), 2);

        // What schema 2 held: per-GPU rollups (as ingest computed them) and usage events, written as the owner on
        // the platform path (FORCE binds the owner too).
        let mut samples = fleet("vllm-a", 3, T0, T0 + 2 * H);
        samples.extend(fleet("vllm-b", 2, T0 + H, T0 + 3 * H));
        for x in samples.iter_mut().filter(|x| x.gpu_uuid.ends_with("-2")) {
            x.owner = Some(tenant(7)); // a dedicated GPU: its own group
        }
        samples.retain(|x| x.end.0 % (7 * 15_000) != 0); // holes: estimated cells
        let rollups = aggregate(cells(&samples, &SeriesConfig::default()).cells);
        let events = vec![
            event(tenant(1), Some("vllm-a"), T0 + 60_000, &[("tokens_in", "7000")]),
            event(tenant(1), Some("vllm-a"), T0 + 61_000, &[("tokens_in", "1"), ("tokens_out", "0.25")]),
            event(tenant(2), Some("vllm-a"), T0 + 62_000, &[("gpu_seconds", "900.5"), ("tokens_in", "5")]),
            event(tenant(2), Some("vllm-b"), T0 + H + 1, &[("tokens_out", "3000")]),
            event(tenant(2), None, T0 + H + 2, &[("tokens_in", "11")]),
            event(tenant(3), Some("vllm-b"), T0 + 2 * H - 1, &[("requests", "4")]),
            {
                let mut e = event(tenant(3), Some("vllm-b"), T0 + H + 3, &[("tokens_in", "99")]);
                e.source = eai_engine::domain::ALLOCATION_SOURCE.into();
                e
            },
            event(tenant(1), Some("vllm-a"), T0 - 1, &[("tokens_in", "2")]),
        ];
        let tx = c.transaction().await.unwrap();
        tx.batch_execute("SELECT set_config('app.platform', 'on', true)")
            .await
            .unwrap();
        for r in &rollups {
            let id: i64 = tx
                .query_one(
                    "INSERT INTO eai.gpus (uuid) VALUES ($1) ON CONFLICT (uuid) DO UPDATE SET uuid = EXCLUDED.uuid \
                     RETURNING id",
                    &[&r.key.gpu_uuid],
                )
                .await
                .unwrap()
                .get(0);
            tx.execute(
                "INSERT INTO eai.rollups VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                &[
                    &id,
                    &r.key.bucket_start.0,
                    &r.key.deployment_id,
                    &super::owner_uuid(r.key.owner).unwrap(),
                    &r.key.model,
                    &r.first_window_start.0,
                    &r.last_window_start.0,
                    &i64::try_from(r.samples).unwrap(),
                    &i64::try_from(r.estimated_samples).unwrap(),
                    &r.q.gpu_seconds,
                    &r.q.busy_gpu_seconds,
                    &r.q.estimated_gpu_seconds,
                    &r.q.memory_gb_seconds,
                    &r.q.energy_ws,
                    &r.q.storage_gb_seconds,
                ],
            )
            .await
            .unwrap();
        }
        for e in &events {
            tx.execute(
                "INSERT INTO eai.usage_events (event_id, tenant_id, occurred_at_ms, deployment_id, body) \
                 VALUES ($1, $2, $3, $4, $5::text::jsonb)",
                &[
                    &e.event_id,
                    &e.tenant_id.0,
                    &e.occurred_at.0,
                    &e.deployment_id,
                    &crate::records::event_json(e).unwrap(),
                ],
            )
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
        drop(c);

        let store = PgStore::open(&url).await.unwrap();
        let read = store
            .allocation_usage(Timestamp(T0 - 2 * H), Timestamp(T0 + 4 * H), &[])
            .await
            .unwrap();
        assert_eq!(read.rollups, expected(&samples), "groups built from the per-GPU rollups");
        assert_eq!(read.claims, sum_claims(&events), "claims built from the events");
        assert_eq!(read.claims.len(), 5, "{:?}", read.claims);

        // And kept from there on: an event replaced, more samples.
        let mut moved = events[0].clone();
        moved.occurred_at = Timestamp(T0 + 2 * H);
        store.upsert_usage_events(std::slice::from_ref(&moved), &audit()).await.unwrap();
        let more = fleet("vllm-b", 2, T0 + 3 * H, T0 + 4 * H);
        store.insert_samples(more.to_vec(), &audit()).await.unwrap();
        samples.extend(more);
        let mut all_events = events.clone();
        all_events[0] = moved;
        let read = store
            .allocation_usage(Timestamp(T0 - 2 * H), Timestamp(T0 + 4 * H), &[])
            .await
            .unwrap();
        assert_eq!(read.rollups, expected(&samples));
        assert_eq!(read.claims, sum_claims(&all_events));
    })
    .await;
    drop(admin);
    drop(db);
    let admin = connect(&server).await;
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {owner}"))
        .await
        .unwrap();
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Writers of different GPUs of one deployment, appending and sending late samples at once: the fast path adds
/// into the group rows that the slow path of another writer rebuilds. The groups read back are the engine's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_of_one_deployment_keep_its_groups_exact() {
    for round in 0..3u64 {
        let (_db, store) = fresh().await;
        let all = fleet("vllm-a", 8, T0, T0 + 2 * H);
        let mut next = xorshift(round + 11);
        let mut handles = Vec::new();
        for w in 0..4usize {
            // Writer w: GPUs 2w and 2w+1, in order, except that about one sample in five comes later.
            let mut mine: Vec<Sample> = all
                .iter()
                .filter(|x| {
                    let g: usize = x.gpu_uuid.rsplit('-').next().unwrap().parse().unwrap();
                    g / 2 == w
                })
                .cloned()
                .collect();
            for i in 0..mine.len() {
                if next().is_multiple_of(5) {
                    let s = mine.remove(i);
                    let to = (i + 1 + (next() % 150) as usize).min(mine.len());
                    mine.insert(to, s);
                }
            }
            let store = store.clone();
            let sizes = [7usize, 31, 64, 13];
            handles.push(tokio::spawn(async move {
                let mut rest = mine.as_slice();
                let mut k = 0;
                let mut n = 0;
                while !rest.is_empty() {
                    let (b, r) = rest.split_at(sizes[k % sizes.len()].min(rest.len()));
                    n += store
                        .insert_samples(b.to_vec(), &audit())
                        .await
                        .unwrap()
                        .inserted;
                    rest = r;
                    k += 1;
                }
                n
            }));
        }
        let mut inserted = 0;
        for h in handles {
            inserted += h.await.unwrap();
        }
        assert_eq!(inserted, all.len() as u64);
        let read = store
            .allocation_usage(Timestamp(T0), Timestamp(T0 + 2 * H), &[])
            .await
            .unwrap();
        assert_eq!(read.rollups, expected(&all), "round {round}");
    }
}

/// The interleaving that a rebuild must survive, forced: batch B adds a delta into group `K` and is held before
/// its commit (a test trigger sleeps once B's upsert has locked the row) while batch A, a late sample of another
/// GPU of `K`, rebuilds `K`. A must lock `K` before it reads the per-GPU rows: it then waits for B and reads
/// them with B's delta; reading first, it would set `K` without B's delta after B committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rebuild_waits_for_a_concurrent_delta_into_its_group() {
    let (db, store) = fresh().await;
    let mut all = fleet("vllm-a", 2, T0, T0 + H);
    // On two nodes: batches of one node share its series row, and would wait for each other there.
    for x in all.iter_mut().filter(|x| x.gpu_uuid.ends_with("-1")) {
        x.node = "gpu-node-2".into();
    }
    let (gpu0, gpu1): (Vec<Sample>, Vec<Sample>) = all
        .iter()
        .cloned()
        .partition(|x| x.gpu_uuid.ends_with("-0"));
    // GPU 0 misses one sample in the middle of the hour (it comes late, from A); GPU 1 misses its last three
    // (they are appended by B).
    let (late, gpu0_first): (Vec<Sample>, Vec<Sample>) =
        gpu0.into_iter().partition(|x| x.end.0 == T0 + H / 2);
    let (appended, gpu1_first): (Vec<Sample>, Vec<Sample>) =
        gpu1.into_iter().partition(|x| x.end.0 > T0 + H - 45_000);
    assert_eq!((late.len(), appended.len()), (1, 3));
    store
        .insert_samples(gpu0_first.to_vec(), &audit())
        .await
        .unwrap();
    store
        .insert_samples(gpu1_first.to_vec(), &audit())
        .await
        .unwrap();

    let owner = connect(db.url()).await;
    owner
        .batch_execute(
            "CREATE FUNCTION eai.hold() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF NEW.samples - OLD.samples = 3 THEN PERFORM pg_sleep(1.5); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER hold AFTER UPDATE ON eai.deployment_rollups FOR EACH ROW EXECUTE FUNCTION eai.hold()",
        )
        .await
        .unwrap();
    let b = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .insert_samples(appended.to_vec(), &audit())
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let a = store.insert_samples(late.to_vec(), &audit()).await.unwrap();
    assert_eq!(a.inserted, 1);
    assert_eq!(b.await.unwrap().inserted, 3);
    let read = store
        .allocation_usage(Timestamp(T0), Timestamp(T0 + H), &[])
        .await
        .unwrap();
    assert_eq!(read.rollups, expected(&all));
}

/// Concurrent upserts that re-send the same event ids with other hours, deployments and figures: the claims
/// read back are the sums of the events stored in the end (each replacement took out the claim it replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_resends_of_one_event_keep_its_claims_exact() {
    let (_db, store) = fresh().await;
    let ids: Vec<Uuid> = (0..24).map(|_| Uuid::new_v4()).collect();
    let mut handles = Vec::new();
    for w in 0..4u64 {
        let store = store.clone();
        let ids = ids.clone();
        handles.push(tokio::spawn(async move {
            let mut next = xorshift(w + 5);
            for _ in 0..10 {
                let mine: Vec<Uuid> = ids
                    .iter()
                    .copied()
                    .filter(|_| next().is_multiple_of(2))
                    .collect();
                let batch: Vec<UsageEvent> = mine
                    .iter()
                    .map(|id| {
                        let t = tenant(1 + (id.as_bytes()[0] % 2));
                        let dep = ["vllm-a", "vllm-b"][(next() % 2) as usize];
                        let at = T0 + (next() % 3) as i64 * H + 17;
                        let n = (next() % 1000).to_string();
                        let mut e = if next().is_multiple_of(4) {
                            event(t, Some(dep), at, &[("gpu_seconds", &n)])
                        } else {
                            event(
                                t,
                                Some(dep),
                                at,
                                &[("tokens_in", &n), ("tokens_out", "0.5")],
                            )
                        };
                        e.event_id = *id;
                        e
                    })
                    .collect();
                store.upsert_usage_events(&batch, &audit()).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let stored = store
        .usage_events(Scope::Platform, Timestamp(T0 - H), Timestamp(T0 + 4 * H))
        .await
        .unwrap();
    let read = store
        .allocation_usage(Timestamp(T0 - H), Timestamp(T0 + 4 * H), &[])
        .await
        .unwrap();
    assert!(!stored.is_empty());
    assert_eq!(read.claims, sum_claims(&stored));
}

/// A frozen hour (its raw samples pruned) named exact comes back as its group rollup (cut at the policy boundaries
/// known when it froze); an exact hour that is not frozen comes back as cells.
#[tokio::test]
async fn a_frozen_exact_hour_comes_back_as_its_group_rollup() {
    let (_db, store) = fresh().await;
    let all = fleet("vllm-a", 2, T0, T0 + 4 * H);
    store.insert_samples(all.to_vec(), &audit()).await.unwrap();
    store
        .prune_raw_samples(Timestamp(T0 + 2 * H))
        .await
        .unwrap();
    let read = store
        .allocation_usage(
            Timestamp(T0),
            Timestamp(T0 + 4 * H),
            &[Timestamp(T0 + 1), Timestamp(T0 + 3 * H + H / 2)],
        )
        .await
        .unwrap();
    let per_gpu = aggregate(cells(&all, &SeriesConfig::default()).cells);
    let hour = |h: i64| move |r: &&Rollup| r.key.bucket_start == Timestamp(T0 + h * H);
    let frozen: Vec<Rollup> = read.rollups.iter().filter(hour(0)).cloned().collect();
    let want = group(per_gpu.iter().filter(hour(0)).cloned());
    assert_eq!(frozen, want, "the frozen hour as its group rollup");
    assert_eq!(
        read.rollups.iter().filter(hour(3)).count(),
        480,
        "the other exact hour as cells"
    );
    let groups: Vec<&Rollup> = read.rollups.iter().filter(|r| r.gpus.is_some()).collect();
    assert_eq!(groups.len(), 3, "hours 0, 1 and 2 as groups");
    assert_eq!(group(read.rollups.clone()), expected(&all));
}

#[test]
fn event_lock_keys_fold_every_byte() {
    let a = Uuid::from_bytes([0; 16]);
    let mut b = [0u8; 16];
    b[15] = 1;
    let t = tenant(1);
    assert_ne!(
        super::tx::event_lock_key(&t, &a),
        super::tx::event_lock_key(&t, &Uuid::from_bytes(b))
    );
    let mut u = [1u8; 16];
    u[3] = 7;
    assert_ne!(
        super::tx::event_lock_key(&t, &a),
        super::tx::event_lock_key(&TenantId(Uuid::from_bytes(u)), &a),
        "the tenant counts"
    );
}

#[test]
fn the_backfill_skips_the_allocations_own_events() {
    assert!(super::schema::MIGRATIONS[2].contains(&format!(
        "IS DISTINCT FROM '{}'",
        eai_engine::domain::ALLOCATION_SOURCE
    )));
}

/// Two stores on one database (two replicas): each job's lease goes to one; the other's stays free; a holder
/// keeps its lease on every check; when the holder's session ends, the other takes the lease over.
#[tokio::test]
async fn each_lease_has_one_holder_and_passes_on_when_its_session_ends() {
    use crate::lease::LeaderJob;
    let (db, first) = fresh().await;
    let second = PgStore::open(db.url()).await.unwrap();
    assert!(first.try_lead(LeaderJob::AllocationBatch).await.unwrap());
    assert!(!second.try_lead(LeaderJob::AllocationBatch).await.unwrap());
    assert!(second.try_lead(LeaderJob::Replicator).await.unwrap());
    assert!(!first.try_lead(LeaderJob::Replicator).await.unwrap());
    // A holder keeps what it holds.
    assert!(first.try_lead(LeaderJob::AllocationBatch).await.unwrap());
    assert!(second.try_lead(LeaderJob::Replicator).await.unwrap());
    // The first replica's lease session ends (as when its process dies): its locks go with it.
    let c = connect(db.url()).await;
    c.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid \
         AND objid = $2::oid AND granted",
        &[
            &(crate::lease::LOCK_CLASS as u32),
            &(LeaderJob::AllocationBatch.lock_key() as u32),
        ],
    )
    .await
    .unwrap();
    let mut took_over = false;
    for _ in 0..50 {
        if second.try_lead(LeaderJob::AllocationBatch).await.unwrap() {
            took_over = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(took_over, "the lease did not pass on");
    // The first replica notices: it no longer leads (an error or false), and does not get the lease back.
    let again = first.try_lead(LeaderJob::AllocationBatch).await;
    assert!(!again.unwrap_or(false), "two holders of one lease");
}

/// Whether a session-private staging table exists on this server's database (temporary tables are in the
/// shared catalog, in the `pg_temp_N` schema of their session).
async fn staging_tables(c: &Client) -> i64 {
    c.query_one(
        "SELECT count(*) FROM pg_class WHERE relname = 'eai_samples_stage' AND relpersistence = 't'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// A batch of [`super::samples::ingest::STAGE_ROWS`] rows or more goes through the session's staging table (a
/// binary `COPY`, then one `INSERT … SELECT` under row level security) and stores exactly what the same samples
/// store in small batches (multi-row inserts); a re-send of it counts nothing twice; and where the service role
/// may not create temporary tables, the batch is stored the other way, alike.
#[tokio::test]
async fn large_batches_are_staged_and_store_what_small_ones_do() {
    let batch = fleet("vllm-a", 10, T0, T0 + H);
    assert!(batch.len() >= super::samples::ingest::STAGE_ROWS);
    let (_r, reference) = fresh().await;
    for b in batch.chunks(500) {
        reference
            .insert_samples(b.to_vec(), &audit())
            .await
            .unwrap();
    }
    let everything = |s: PgStore| async move {
        let rows = s
            .replica_rows(Timestamp(T0 - H), Timestamp(T0 + 2 * H))
            .await
            .unwrap();
        let read = s
            .allocation_usage(Timestamp(T0), Timestamp(T0 + 2 * H), &[])
            .await
            .unwrap();
        format!(
            "{:?}",
            (rows.samples, rows.rollups, rows.gaps, read.rollups)
        )
    };
    let want = everything(reference.clone()).await;

    for temporary in [true, false] {
        let (db, store) = fresh().await;
        let admin = connect(db.url()).await;
        if !temporary {
            admin
                .batch_execute(&format!(
                    "REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC",
                    db.name()
                ))
                .await
                .unwrap();
        }
        let out = store
            .insert_samples(batch.to_vec(), &audit())
            .await
            .unwrap();
        assert_eq!((out.inserted, out.duplicates), (batch.len() as u64, 0));
        assert_eq!(
            staging_tables(&admin).await,
            i64::from(temporary),
            "staged only where temporary tables are allowed"
        );
        let again = store
            .insert_samples(batch.to_vec(), &audit())
            .await
            .unwrap();
        assert_eq!((again.inserted, again.duplicates), (0, batch.len() as u64));
        assert_eq!(
            everything(store.clone()).await,
            want,
            "temporary tables allowed: {temporary}"
        );
    }
}
