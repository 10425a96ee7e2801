use super::sqlite_harness::fresh;
use super::*;
use eai_store::sqlite::SqliteConfig;
use eai_store::{AuditStore, BudgetStore, KeyStore, PolicyStore, SampleStore, UsageStore};

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
    assert_eq!(version, 17);
    assert_eq!(store.backend(), "sqlite");
}

/// What schema 10 (change counts), 12 (equal shares), 13 (the series' share method), 14 (idempotency keys), 15
/// (anomalies) and 17 (statements) added, taken out again.
const UNDO_V10: &str = "DROP TABLE statements; DROP TABLE anomalies; DROP TABLE idempotency_keys; PRAGMA foreign_keys = OFF; \
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
        .insert_samples(fleet("vllm-a", 1, T0, T0 + 4 * H), &audit())
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
            vec![sample("GPU-vllm-a-0", "vllm-a", T0 + H + 7_500)],
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
        .insert_samples(vec![sample("GPU-new", "vllm-a", T0 + H + 7_500)], &audit())
        .await
        .unwrap();
    assert_eq!(o.inserted, 1);
}

/// A file from before the alerts' kinds (schema 16; the budget alerts table rebuilt for its unique key) keeps its
/// threshold alerts, due and recorded once, beside which a forecast alert may be recorded.
#[tokio::test]
async fn a_file_from_before_alert_kinds_keeps_its_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eai.db");
    let store = SqliteStore::open(&path).unwrap();
    super::contract::a_threshold_alert_recorded(&store).await;
    drop(store);
    let c = rusqlite::Connection::open(&path).unwrap();
    // Schemas 17 and 16 taken out again: no statements, the alerts table as schema 8 made it, and the version
    // before 16's.
    c.execute_batch(
        "DROP TABLE statements;
         CREATE TABLE budget_alerts_v8 (
            id TEXT PRIMARY KEY, budget_seq INTEGER NOT NULL, tenant_id TEXT NOT NULL, month_ms INTEGER NOT NULL,
            threshold_pct INTEGER NOT NULL, spent TEXT NOT NULL, crossed_at_ms INTEGER NOT NULL,
            attempts INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, delivered_at_ms INTEGER, last_error TEXT,
            UNIQUE (budget_seq, month_ms, threshold_pct));
         INSERT INTO budget_alerts_v8 SELECT id, budget_seq, tenant_id, month_ms, threshold_pct, spent,
            crossed_at_ms, attempts, next_attempt_ms, delivered_at_ms, last_error FROM budget_alerts;
         DROP TABLE budget_alerts;
         ALTER TABLE budget_alerts_v8 RENAME TO budget_alerts;
         CREATE INDEX budget_alerts_due ON budget_alerts (delivered_at_ms, next_attempt_ms);
         UPDATE schema_version SET version = 15;",
    )
    .unwrap();
    drop(c);
    let store = SqliteStore::open(&path).unwrap();
    super::contract::the_threshold_alert_is_kept(&store).await;
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
    store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap();
    store.insert_samples(vec![late], &audit()).await.unwrap();
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
    let err = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Internal(ref m) if m.contains("refused by test")),
        "{err}"
    );
    for table in ["gpu_samples", "gpus", "series", "rollups", "gaps"] {
        assert_eq!(rows(&c, table), 0, "{table} after a failed batch");
    }
    c.execute_batch("DROP TRIGGER refuse").unwrap();
    let o = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap();
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
    let err = store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap_err();
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
    assert!(store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .is_err());
    assert_eq!(rows(&c, "outbox"), 0);
    c.execute_batch("DROP TRIGGER refuse").unwrap();
    store
        .insert_samples(batch.to_vec(), &audit())
        .await
        .unwrap();
    assert!(rows(&c, "outbox") > 0);
}

#[tokio::test]
async fn a_figure_that_cannot_be_stored_exactly_rejects_the_batch() {
    let (_dir, store) = fresh();
    let mut bad = sample("GPU-1", "vllm-a", T0 + 30_000);
    bad.utilization = UnitInterval::new(d("0.1234567")).unwrap();
    let err = store
        .insert_samples(vec![sample("GPU-1", "vllm-a", T0 + 15_000), bad], &audit())
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
        s.insert_samples(samples.to_vec(), &audit()).await.unwrap();
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
        s.insert_samples(samples.to_vec(), &audit())
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
    let n = c
        .execute(
            "UPDATE audit_events SET body = replace(body, '\"allow\"', '\"deny\"') WHERE seq = 3",
            [],
        )
        .unwrap();
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
        store.insert_samples(b.to_vec(), &audit()).await.unwrap();
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

/// A statement never changes: the file refuses every update and delete of one, even through raw SQL.
#[tokio::test]
async fn an_issued_statement_cannot_be_updated_nor_deleted() {
    use eai_store::StatementStore;
    let (_dir, store) = fresh();
    let draft = AuditDraft::system("cli", "gpu_statement.issue", ts(0), serde_json::json!({}));
    let new = super::contract::new_statement(tenant(1), "2026-10", "3.10");
    let (issued, _) = store.issue_statement(&new, &draft).await.unwrap();
    let c = raw(&store);
    for sql in [
        "UPDATE statements SET content = '{}'",
        "UPDATE statements SET tenant_id = 'x' WHERE number = 'ST-2026-10-0001'",
        "DELETE FROM statements",
    ] {
        let e = c.execute(sql, []).expect_err(sql);
        assert!(
            e.to_string().contains("statements are immutable"),
            "{sql}: {e}"
        );
    }
    drop(c);
    let got = store
        .statement(Scope::Platform, &issued.number)
        .await
        .unwrap();
    assert_eq!(got, Some(issued));
}
