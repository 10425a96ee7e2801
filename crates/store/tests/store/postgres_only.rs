/// What schemas 11 (placements), 12 (equal shares), 13 (share methods), 14 (idempotency keys), 15 (anomalies),
/// 16 (budget alert kinds) and 17 (statements) added, taken out again (every rollup of one placement per key).
const PG_UNDO_V11: &str = "DROP TABLE eai.statements; DROP FUNCTION eai.statements_immutable(); ALTER TABLE eai.budget_alerts DROP CONSTRAINT budget_alerts_once_key; \
    ALTER TABLE eai.budget_alerts DROP COLUMN kind, DROP COLUMN expected, DROP COLUMN exhausted_on_ms; \
    ALTER TABLE eai.budget_alerts ADD UNIQUE (budget_seq, month_ms, threshold_pct); \
    DROP TABLE eai.anomalies; DROP TABLE eai.idempotency_keys; \
    ALTER TABLE eai.series DROP CONSTRAINT series_labels_key; \
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
use eai_store::{
    AnomalyStore, AuditStore, BudgetStore, IdempotencyStore, KeyStore, PolicyStore, ReplicaStore,
    SampleStore, StatementStore, TenantStore, UsageStore,
};
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
            .insert_samples(batch.to_vec(), &audit())
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
const TENANT_TABLES: [&str; 17] = [
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
    "idempotency_keys",
    "anomalies",
    "statements",
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
    s.insert_samples(v.to_vec(), &audit()).await.unwrap();
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
    for (caller, t) in [("key_a", Some(a)), ("key_b", Some(b)), ("key_p", None)] {
        let claim = eai_store::idempotency::Claim {
            caller: caller.into(),
            tenant: t,
            key: "k".into(),
            fingerprint: "f".into(),
            token: Uuid::new_v4(),
            at: ts(T0),
            stale_before: ts(T0 - 300_000),
        };
        assert_eq!(
            s.claim_idempotency_key(&claim).await.unwrap(),
            eai_store::idempotency::Claimed::Run
        );
    }
    for (dep, owner) in [
        ("dep-GPU-a", Some(a)),
        ("dep-GPU-b", Some(b)),
        ("dep-GPU-s", None),
    ] {
        let finding = eai_store::anomalies::NewAnomaly {
            deployment_id: dep.into(),
            owner,
            hour: ts(T0),
            metric: eai_engine::anomaly::Metric::GpuSeconds,
            currency: None,
            value: 4.into(),
            median: 1.into(),
            mad: 0.into(),
            deviation: None,
            direction: eai_engine::anomaly::Direction::Above,
            baseline_hours: 24,
            detected_at: ts(T0 + H),
            deliver: false,
        };
        assert!(s.record_anomaly(&finding).await.unwrap().is_some());
    }
    for t in [a, b, TenantId::PLATFORM] {
        let new = super::contract::new_statement(t, "2026-10", "1.00");
        let (_, issued) = s.issue_statement(&new, &audit()).await.unwrap();
        assert!(issued);
    }
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
        ("idempotency_keys", "INSERT INTO eai.idempotency_keys (caller, key, tenant_id, fingerprint, claim, claimed_at_ms) \
          VALUES ('key_new', md5(random()::text), '{T}', 'f', gen_random_uuid(), 0) RETURNING 1"),
        ("anomalies", "INSERT INTO eai.anomalies (deployment_id, tenant_id, hour_ms, metric, currency, value, median, mad, direction, baseline_hours, detected_at_ms) \
          VALUES ('d-new', '{T}', 0, 'gpu_seconds', '', 1, 1, 0, 'above', 24, 0) RETURNING 1"),
        ("statements", "INSERT INTO eai.statements (number, tenant_id, month_ms, to_ms, seq, issued_at_ms, issued_by, content) \
          VALUES ('ST-new', '{T}', 7, 8, 1, 0, 'k', '{}') RETURNING 1"),
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
        format!("UPDATE eai.statements SET content = '{{}}' WHERE tenant_id = '{a}'"),
        format!("DELETE FROM eai.statements WHERE tenant_id = '{a}'"),
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
    // Its own event, its budget's crossing, its deployment's anomaly and its statement's issue.
    assert!(audit.len() == 4 && audit.iter().all(|e| e.draft.tenant_id == Some(a)));
}

#[tokio::test]
async fn reopening_migrates_once_and_keeps_everything() {
    let (db, s) = fresh().await;
    let samples = fleet("vllm-a", 2, T0, T0 + 2 * H);
    s.insert_samples(samples.to_vec(), &audit()).await.unwrap();
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
        x.insert_samples(samples.to_vec(), &audit())
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
    s.insert_samples(samples.to_vec(), &audit()).await.unwrap();
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
            vec![
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

/// A database from before the alerts' kinds (schema 16) keeps its threshold alerts, due and recorded once, beside
/// which a forecast alert may be recorded.
#[tokio::test]
async fn a_database_from_before_alert_kinds_keeps_its_alerts() {
    let (db, s) = fresh().await;
    super::contract::a_threshold_alert_recorded(&s).await;
    drop(s);
    let (c, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
    tokio::spawn(connection);
    c.batch_execute(
        "DROP TABLE eai.statements; DROP FUNCTION eai.statements_immutable(); \
         ALTER TABLE eai.budget_alerts DROP CONSTRAINT budget_alerts_once_key; \
         ALTER TABLE eai.budget_alerts DROP COLUMN kind, DROP COLUMN expected, DROP COLUMN exhausted_on_ms; \
         ALTER TABLE eai.budget_alerts ADD UNIQUE (budget_seq, month_ms, threshold_pct); \
         UPDATE eai.schema_version SET version = 15;",
    )
    .await
    .unwrap();
    let s = PgStore::open(db.url()).await.unwrap();
    super::contract::the_threshold_alert_is_kept(&s).await;
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
    let err = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap_err();
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
    let o = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap();
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
    let err = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap_err();
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
    store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap();
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

/// A statement never changes: the service role holds no grant to update or delete one, and the trigger refuses
/// the owner too (update, delete, truncate), through raw SQL.
#[tokio::test]
async fn an_issued_statement_cannot_be_updated_nor_deleted() {
    let (db, s) = fresh().await;
    let new = super::contract::new_statement(tenant(1), "2026-10", "3.10");
    let (issued, _) = s.issue_statement(&new, &audit()).await.unwrap();
    let service = as_service_role(&db).await;
    service
        .batch_execute("SELECT set_config('app.platform', 'on', false)")
        .await
        .unwrap();
    for sql in [
        "UPDATE eai.statements SET content = '{}'",
        "DELETE FROM eai.statements",
    ] {
        let r = service.query(sql, &[]).await;
        assert!(not_granted(&r), "{sql}: {r:?}");
    }
    let (owner, connection) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
    tokio::spawn(connection);
    for sql in [
        "UPDATE eai.statements SET content = '{}'",
        "DELETE FROM eai.statements",
        "TRUNCATE eai.statements",
    ] {
        let e = owner.batch_execute(sql).await.expect_err(sql);
        let text = e.as_db_error().map(|d| d.message().to_string());
        assert_eq!(
            text.as_deref(),
            Some("statements are immutable"),
            "{sql}: {e:?}"
        );
    }
    let got = s.statement(Scope::Platform, &issued.number).await.unwrap();
    assert_eq!(got, Some(issued));
}
