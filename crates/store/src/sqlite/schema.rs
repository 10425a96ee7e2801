//! The SQLite schema, as embedded migrations. `schema_version` holds the number of migrations applied; opening a
//! file applies the missing ones in order, each in its own transaction, and refuses a file written by a newer
//! binary. A migration, once released, is never edited: changes are new entries at the end of [`MIGRATIONS`].

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::codec::Ctx;
use crate::{Result, StoreError};

/// 1: GPU samples and what is derived from them.
const V1_SAMPLES: &str = r#"
-- Interned GPUs (or MIG slices): samples name them by a small integer.
CREATE TABLE gpus (
    id   INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE
);

-- Interned slowly changing labels of samples. owner is the tenant uuid, or '' for a shared deployment.
-- first_seen_ms / last_seen_ms: the earliest and latest window end stored for the series.
CREATE TABLE series (
    id            INTEGER PRIMARY KEY,
    node          TEXT NOT NULL,
    model         TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    pod           TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL,
    UNIQUE (deployment_id, owner, model, namespace, pod, node)
);

-- Raw samples, compact: figures as exact scaled integers (utilization, power, storage and fraction x 10^6,
-- memory x 10^10). Identified by (gpu, end of window): the first received wins.
CREATE TABLE gpu_samples (
    gpu_id      INTEGER NOT NULL REFERENCES gpus (id),
    end_ms      INTEGER NOT NULL,
    series_id   INTEGER NOT NULL REFERENCES series (id),
    window_ms   INTEGER NOT NULL,
    util_e6     INTEGER NOT NULL,
    mem_e10     INTEGER NOT NULL,
    power_e6    INTEGER NOT NULL,
    storage_e6  INTEGER NOT NULL,
    fraction_e6 INTEGER NOT NULL,
    PRIMARY KEY (gpu_id, end_ms)
) WITHOUT ROWID;

-- Sums of one GPU series in one bucket (eai_engine::rollup::Rollup); decimals as exact text.
CREATE TABLE rollups (
    gpu_id                INTEGER NOT NULL REFERENCES gpus (id),
    bucket_ms             INTEGER NOT NULL,
    deployment_id         TEXT NOT NULL,
    owner                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    first_window_start_ms INTEGER NOT NULL,
    last_window_start_ms  INTEGER NOT NULL,
    samples               INTEGER NOT NULL,
    estimated_samples     INTEGER NOT NULL,
    gpu_seconds           TEXT NOT NULL,
    busy_gpu_seconds      TEXT NOT NULL,
    estimated_gpu_seconds TEXT NOT NULL,
    memory_gb_seconds     TEXT NOT NULL,
    energy_ws             TEXT NOT NULL,
    storage_gb_seconds    TEXT NOT NULL,
    PRIMARY KEY (gpu_id, bucket_ms, deployment_id, owner, model)
) WITHOUT ROWID;
CREATE INDEX rollups_by_bucket ON rollups (bucket_ms);

-- Missing spans left unfilled (eai_engine::report::Gap); a gap belongs to the bucket holding its from_ms.
CREATE TABLE gaps (
    gpu_id        INTEGER NOT NULL REFERENCES gpus (id),
    from_ms       INTEGER NOT NULL,
    to_ms         INTEGER NOT NULL,
    reason        TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    node          TEXT NOT NULL,
    PRIMARY KEY (gpu_id, from_ms)
) WITHOUT ROWID;
CREATE INDEX gaps_by_end ON gaps (to_ms);

-- Settings a file is built with, and bookkeeping (raw_pruned_before_ms).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// 2: usage events, policies, API keys, the audit chain.
const V2_RECORDS: &str = r#"
-- body: the event as contract JSON (usage-event.schema.json), decimals as strings.
CREATE TABLE usage_events (
    event_id       TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    occurred_at_ms INTEGER NOT NULL,
    deployment_id  TEXT,
    body           TEXT NOT NULL
);
CREATE INDEX usage_events_by_time ON usage_events (occurred_at_ms);
CREATE INDEX usage_events_by_tenant ON usage_events (tenant_id, occurred_at_ms);

-- body: the pricing terms (never edited); the effective dates are columns (closing a policy sets effective_to_ms).
CREATE TABLE allocation_policies (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    body              TEXT NOT NULL,
    effective_from_ms INTEGER NOT NULL,
    effective_to_ms   INTEGER,
    created_at_ms     INTEGER NOT NULL
);

-- hash: hex SHA-256 of the key text; the key itself is never stored.
CREATE TABLE api_keys (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    hash          TEXT NOT NULL UNIQUE,
    role          TEXT NOT NULL,
    tenant_id     TEXT,
    name          TEXT,
    created_at_ms INTEGER NOT NULL,
    revoked       INTEGER NOT NULL DEFAULT 0
);

-- The hash chain. body: the draft as JSON; tenant_id: copied from it for scoped reads.
CREATE TABLE audit_events (
    seq       INTEGER PRIMARY KEY,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL,
    tenant_id TEXT,
    body      TEXT NOT NULL
);
CREATE INDEX audit_events_by_tenant ON audit_events (tenant_id, seq);
"#;

/// 3: the replica outbox (`crate::outbox`): ClickHouse rows written in the transaction of the change, deleted
/// once delivered. AUTOINCREMENT: a sequence is never reused after its rows are deleted, since it is the
/// replica's row version.
const V3_OUTBOX: &str = r#"
CREATE TABLE outbox (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    table_name    TEXT NOT NULL,
    rows          TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
"#;

/// 4: what an allocation reads (`crate::rollups::groups`): group rollups, one per deployment-hour (the sum of the
/// per-GPU rollups of the key and their GPUs), and usage claims, one per tenant-hour of a deployment. Clustered
/// by bucket, so that a period is one range scan. Quantities are exact integers (10^-15 for rollups, 10^-6 for
/// claims) as little-endian 16-byte words, since SQLite's integers have 64 bits; `gpus`: sorted `gpus.id`s as
/// little-endian 4-byte words. Filled from the rows already there when the migration runs ([`backfill_v4`]).
const V4_GROUPS: &str = r#"
CREATE TABLE deployment_rollups (
    bucket_ms             INTEGER NOT NULL,
    deployment_id         TEXT NOT NULL,
    owner                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    first_window_start_ms INTEGER NOT NULL,
    last_window_start_ms  INTEGER NOT NULL,
    samples               INTEGER NOT NULL,
    estimated_samples     INTEGER NOT NULL,
    q                     BLOB NOT NULL,
    gpus                  BLOB NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id, owner, model)
) WITHOUT ROWID;

CREATE TABLE usage_claims (
    bucket_ms     INTEGER NOT NULL,
    deployment_id TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    gpu_seconds   BLOB NOT NULL,
    tokens        BLOB NOT NULL,
    events        INTEGER NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id, tenant_id)
) WITHOUT ROWID;
"#;

/// 5: what is kept of pruned hours (`crate::rollups::pruned`) and the policy boundaries rollups are cut at
/// (`crate::rollups::Cuts`). `pruned_ends`: per GPU and bucket, the ends of the pruned windows that are not
/// edges (`EndSet` bytes); `prune_pending`: per GPU, where rows written below the pruning horizon start (the
/// next pruning classifies from there); `rollup_cuts`: instants where a policy starts or ends inside an hour.
/// A file pruned before this version records its horizon as `pruned_indexed_from_ms` ([`backfill_v5`]).
const V5_PRUNED: &str = r#"
CREATE TABLE pruned_ends (
    gpu_id    INTEGER NOT NULL REFERENCES gpus (id),
    bucket_ms INTEGER NOT NULL,
    ends      BLOB NOT NULL,
    PRIMARY KEY (gpu_id, bucket_ms)
) WITHOUT ROWID;

CREATE TABLE prune_pending (
    gpu_id  INTEGER PRIMARY KEY REFERENCES gpus (id),
    from_ms INTEGER NOT NULL
);

CREATE TABLE rollup_cuts (
    at_ms INTEGER PRIMARY KEY
) WITHOUT ROWID;
"#;

/// 6: usage events identified by `(tenant_id, event_id)` (tenants' ids never collide); API keys bound to node
/// names (a JSON array), with an expiry, a revocation time and a rotation (the previous secret's hash and until
/// when it still works). A file with audit events records where the current hash form starts ([`backfill_v6`]).
const V6_TRUST: &str = r#"
CREATE TABLE usage_events_v6 (
    tenant_id      TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    occurred_at_ms INTEGER NOT NULL,
    deployment_id  TEXT,
    body           TEXT NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
) WITHOUT ROWID;
INSERT INTO usage_events_v6 (tenant_id, event_id, occurred_at_ms, deployment_id, body)
    SELECT tenant_id, event_id, occurred_at_ms, deployment_id, body FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events_v6 RENAME TO usage_events;
CREATE INDEX usage_events_by_time ON usage_events (occurred_at_ms);
CREATE INDEX usage_events_by_tenant ON usage_events (tenant_id, occurred_at_ms);

ALTER TABLE api_keys ADD COLUMN nodes TEXT;
ALTER TABLE api_keys ADD COLUMN expires_at_ms INTEGER;
ALTER TABLE api_keys ADD COLUMN revoked_at_ms INTEGER;
ALTER TABLE api_keys ADD COLUMN previous_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_valid_until_ms INTEGER;
ALTER TABLE api_keys ADD COLUMN rotated_at_ms INTEGER;
UPDATE api_keys SET revoked_at_ms = created_at_ms WHERE revoked <> 0;
CREATE UNIQUE INDEX api_keys_by_previous_hash ON api_keys (previous_hash);
"#;

/// 7: registered tenants (id, unique immutable slug, display name).
const V7_TENANTS: &str = r#"
CREATE TABLE tenants (
    id            TEXT PRIMARY KEY,
    slug          TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
"#;

/// 8: budgets (terms as a body, dates as columns, the webhook secret), reservations, spend per tenant, month
/// and currency (maintained with the usage events), and threshold alerts with their deliveries.
const V8_BUDGETS: &str = r#"
CREATE TABLE budgets (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id         TEXT NOT NULL,
    body              TEXT NOT NULL,
    effective_from_ms INTEGER NOT NULL,
    effective_to_ms   INTEGER,
    webhook_secret    TEXT,
    created_at_ms     INTEGER NOT NULL
);
CREATE INDEX budgets_by_tenant ON budgets (tenant_id, seq);

CREATE TABLE reservations (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    action          TEXT NOT NULL,
    deployment_id   TEXT,
    currency        TEXT NOT NULL,
    estimate_cost   TEXT NOT NULL,
    estimate_tokens TEXT NOT NULL,
    status          TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL,
    closed_at_ms    INTEGER,
    actual_cost     TEXT,
    actual_tokens   TEXT,
    event_id        TEXT
);
CREATE INDEX reservations_held ON reservations (tenant_id, status, expires_at_ms);
CREATE INDEX reservations_expiring ON reservations (status, expires_at_ms);

CREATE TABLE spend (
    tenant_id TEXT NOT NULL,
    month_ms  INTEGER NOT NULL,
    currency  TEXT NOT NULL,
    cost      TEXT NOT NULL,
    tokens    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, month_ms, currency)
) WITHOUT ROWID;

CREATE TABLE budget_alerts (
    id              TEXT PRIMARY KEY,
    budget_seq      INTEGER NOT NULL,
    tenant_id       TEXT NOT NULL,
    month_ms        INTEGER NOT NULL,
    threshold_pct   INTEGER NOT NULL,
    spent           TEXT NOT NULL,
    crossed_at_ms   INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_ms INTEGER NOT NULL,
    delivered_at_ms INTEGER,
    last_error      TEXT,
    UNIQUE (budget_seq, month_ms, threshold_pct)
);
CREATE INDEX budget_alerts_due ON budget_alerts (delivered_at_ms, next_attempt_ms);
"#;

/// A migration: its SQL, then what Rust must compute from the rows already there.
pub struct Migration {
    pub sql: &'static str,
    pub backfill: Option<fn(&Connection) -> Result<()>>,
    /// It rebuilds a table other tables' foreign keys name (SQLite's way to change a table's constraints):
    /// foreign keys are off while it runs, and checked before it commits.
    pub foreign_keys_off: bool,
}

const fn sql(sql: &'static str) -> Migration {
    Migration {
        sql,
        backfill: None,
        foreign_keys_off: false,
    }
}

/// 9: registered local inference providers, one per deployment (the body: `crate::providers`).
const V9_PROVIDERS: &str = r#"
CREATE TABLE providers (
    deployment_id    TEXT PRIMARY KEY,
    body             TEXT NOT NULL,
    registered_at_ms INTEGER NOT NULL
);
"#;

/// 10: the change count of every bucket of the group and claim tables, for the allocation's read cache
/// ([`crate::cache::read_cache`]): row triggers add one to a bucket's count with every row inserted, updated or
/// deleted there, in the writing transaction; the buckets already written start at 1. No statement of a trigger may
/// meet a conflict: the conflict clause of the statement that fires it (`INSERT OR REPLACE`) would override the
/// trigger's own (an `INSERT OR IGNORE` of the count would replace it).
const V10_CHANGE_COUNTS: &str = r#"
CREATE TABLE hour_changes (
    bucket_ms INTEGER PRIMARY KEY,
    n         INTEGER NOT NULL
);
CREATE TRIGGER deployment_rollups_inserted AFTER INSERT ON deployment_rollups BEGIN
    INSERT INTO hour_changes (bucket_ms, n) SELECT NEW.bucket_ms, 0
        WHERE NOT EXISTS (SELECT 1 FROM hour_changes WHERE bucket_ms = NEW.bucket_ms);
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms = NEW.bucket_ms;
END;
CREATE TRIGGER deployment_rollups_updated AFTER UPDATE ON deployment_rollups BEGIN
    INSERT INTO hour_changes (bucket_ms, n) SELECT NEW.bucket_ms, 0
        WHERE NOT EXISTS (SELECT 1 FROM hour_changes WHERE bucket_ms = NEW.bucket_ms);
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms IN (NEW.bucket_ms, OLD.bucket_ms);
END;
CREATE TRIGGER deployment_rollups_deleted AFTER DELETE ON deployment_rollups BEGIN
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms = OLD.bucket_ms;
END;
CREATE TRIGGER usage_claims_inserted AFTER INSERT ON usage_claims BEGIN
    INSERT INTO hour_changes (bucket_ms, n) SELECT NEW.bucket_ms, 0
        WHERE NOT EXISTS (SELECT 1 FROM hour_changes WHERE bucket_ms = NEW.bucket_ms);
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms = NEW.bucket_ms;
END;
CREATE TRIGGER usage_claims_updated AFTER UPDATE ON usage_claims BEGIN
    INSERT INTO hour_changes (bucket_ms, n) SELECT NEW.bucket_ms, 0
        WHERE NOT EXISTS (SELECT 1 FROM hour_changes WHERE bucket_ms = NEW.bucket_ms);
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms IN (NEW.bucket_ms, OLD.bucket_ms);
END;
CREATE TRIGGER usage_claims_deleted AFTER DELETE ON usage_claims BEGIN
    UPDATE hour_changes SET n = n + 1 WHERE bucket_ms = OLD.bucket_ms;
END;
INSERT INTO hour_changes (bucket_ms, n)
SELECT bucket_ms, 1 FROM (SELECT bucket_ms FROM deployment_rollups UNION SELECT bucket_ms FROM usage_claims);
"#;

/// Rollups keep where their time ran: the series (deployment, owner, model, namespace, pod, node) of the samples
/// summed, 0 for the rows written before (their pod is not known: the breakdown shows it as none).
const V11_PLACEMENT: &str = r#"
CREATE TABLE rollups_v11 (
    gpu_id                INTEGER NOT NULL REFERENCES gpus (id),
    bucket_ms             INTEGER NOT NULL,
    deployment_id         TEXT NOT NULL,
    owner                 TEXT NOT NULL,
    model                 TEXT NOT NULL,
    series_id             INTEGER NOT NULL,
    first_window_start_ms INTEGER NOT NULL,
    last_window_start_ms  INTEGER NOT NULL,
    samples               INTEGER NOT NULL,
    estimated_samples     INTEGER NOT NULL,
    gpu_seconds           TEXT NOT NULL,
    busy_gpu_seconds      TEXT NOT NULL,
    estimated_gpu_seconds TEXT NOT NULL,
    memory_gb_seconds     TEXT NOT NULL,
    energy_ws             TEXT NOT NULL,
    storage_gb_seconds    TEXT NOT NULL,
    PRIMARY KEY (gpu_id, bucket_ms, deployment_id, owner, model, series_id)
) WITHOUT ROWID;
INSERT INTO rollups_v11
SELECT gpu_id, bucket_ms, deployment_id, owner, model, 0, first_window_start_ms, last_window_start_ms, samples,
       estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, memory_gb_seconds, energy_ws,
       storage_gb_seconds
FROM rollups;
DROP TABLE rollups;
ALTER TABLE rollups_v11 RENAME TO rollups;
CREATE INDEX rollups_by_bucket ON rollups (bucket_ms);
"#;

/// Samples split equally between the pods of a shared GPU (`share_method: "equal"`), tallied at ingest per hour
/// (of the window's start) and deployment: the allocation reports them (`equal_gpu_shares`). GPU-seconds as
/// exact text.
const V12_EQUAL_SHARES: &str = r#"
CREATE TABLE equal_shares (
    bucket_ms     INTEGER NOT NULL,
    deployment_id TEXT NOT NULL,
    samples       INTEGER NOT NULL,
    gpu_seconds   TEXT NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id)
) WITHOUT ROWID;
"#;

/// A series keeps how its pod's share of the GPU was obtained (`exclusive`, `mig`, `measured`, `equal`: SPEC
/// §11), which the breakdown and the samples read back show; the series written before are `exclusive`. The
/// label set is the table's unique key, so the table is rebuilt (foreign keys off: `gpu_samples` names its ids,
/// which are kept).
const V13_SERIES_SHARE: &str = r#"
CREATE TABLE series_v13 (
    id            INTEGER PRIMARY KEY,
    node          TEXT NOT NULL,
    model         TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    pod           TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    share         TEXT NOT NULL DEFAULT 'exclusive',
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL,
    UNIQUE (deployment_id, owner, model, namespace, pod, node, share)
);
INSERT INTO series_v13 (id, node, model, namespace, pod, deployment_id, owner, first_seen_ms, last_seen_ms)
SELECT id, node, model, namespace, pod, deployment_id, owner, first_seen_ms, last_seen_ms FROM series;
DROP TABLE series;
ALTER TABLE series_v13 RENAME TO series;
"#;

/// 14: idempotency keys (`crate::idempotency`): one row per (caller, key), claimed before the request runs
/// (`claim`: the claim's token), completed with the answer of a success (`status`, `content_type`, `location`,
/// `body`) or deleted; pruned by `claimed_at_ms`. `tenant`: the caller's tenant uuid, or '' for a platform
/// identity.
const V14_IDEMPOTENCY: &str = r#"
CREATE TABLE idempotency_keys (
    caller          TEXT NOT NULL,
    key             TEXT NOT NULL,
    tenant          TEXT NOT NULL DEFAULT '',
    fingerprint     TEXT NOT NULL,
    claim           TEXT NOT NULL,
    claimed_at_ms   INTEGER NOT NULL,
    completed_at_ms INTEGER,
    status          INTEGER,
    content_type    TEXT,
    location        TEXT,
    body            BLOB,
    PRIMARY KEY (caller, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_claim ON idempotency_keys (claimed_at_ms);
"#;

/// 15: spend anomalies (`crate::anomalies`): one row per (deployment, hour, metric, currency) (`currency` ''
/// for GPU-seconds), written once; `owner` the tenant uuid of a dedicated deployment (NULL: shared). Decimals
/// as text. A row to be posted to the anomaly webhook has `next_attempt_ms` until it is delivered or given up.
const V15_ANOMALIES: &str = r#"
CREATE TABLE anomalies (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    deployment_id   TEXT NOT NULL,
    owner           TEXT,
    hour_ms         INTEGER NOT NULL,
    metric          TEXT NOT NULL,
    currency        TEXT NOT NULL,
    value           TEXT NOT NULL,
    median          TEXT NOT NULL,
    mad             TEXT NOT NULL,
    deviation       TEXT,
    direction       TEXT NOT NULL,
    baseline_hours  INTEGER NOT NULL,
    detected_at_ms  INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER,
    delivered_at_ms INTEGER,
    last_error      TEXT,
    UNIQUE (deployment_id, hour_ms, metric, currency)
);
CREATE INDEX anomalies_by_hour ON anomalies (hour_ms);
CREATE INDEX anomalies_due ON anomalies (next_attempt_ms) WHERE next_attempt_ms IS NOT NULL;
"#;

/// 16: a budget alert has a kind (SPEC §13): `threshold` (the rows before, threshold_pct
/// the threshold crossed) or `forecast` (threshold_pct 0, with the month's `expected` spend and the day the limit
/// is expected to be reached, `exhausted_on_ms`: its midnight). One alert per (budget, month, kind, threshold):
/// the unique key changes, so the table is rebuilt (no other table names it).
const V16_ALERT_KINDS: &str = r#"
CREATE TABLE budget_alerts_v16 (
    id              TEXT PRIMARY KEY,
    budget_seq      INTEGER NOT NULL,
    tenant_id       TEXT NOT NULL,
    month_ms        INTEGER NOT NULL,
    kind            TEXT NOT NULL DEFAULT 'threshold' CHECK (kind IN ('threshold', 'forecast')),
    threshold_pct   INTEGER NOT NULL,
    spent           TEXT NOT NULL,
    expected        TEXT,
    exhausted_on_ms INTEGER,
    crossed_at_ms   INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_ms INTEGER NOT NULL,
    delivered_at_ms INTEGER,
    last_error      TEXT,
    UNIQUE (budget_seq, month_ms, kind, threshold_pct)
);
INSERT INTO budget_alerts_v16 (id, budget_seq, tenant_id, month_ms, threshold_pct, spent, crossed_at_ms, attempts,
    next_attempt_ms, delivered_at_ms, last_error)
SELECT id, budget_seq, tenant_id, month_ms, threshold_pct, spent, crossed_at_ms, attempts, next_attempt_ms,
    delivered_at_ms, last_error FROM budget_alerts;
DROP TABLE budget_alerts;
ALTER TABLE budget_alerts_v16 RENAME TO budget_alerts;
CREATE INDEX budget_alerts_due ON budget_alerts (delivered_at_ms, next_attempt_ms);
"#;

/// 17: statements (`crate::statements`): one row per (tenant, month) (`tenant_id` the nil uuid for the platform's
/// statement of unallocated capacity), numbered `ST-YYYY-MM-NNNN` with `seq` its rank in the month; the lines
/// and totals as issued in `content` (JSON, decimals as text). Immutable: triggers refuse every update and delete.
const V17_STATEMENTS: &str = r#"
CREATE TABLE statements (
    number       TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    month_ms     INTEGER NOT NULL,
    to_ms        INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    issued_at_ms INTEGER NOT NULL,
    issued_by    TEXT NOT NULL,
    content      TEXT NOT NULL,
    UNIQUE (tenant_id, month_ms),
    UNIQUE (month_ms, seq)
);
CREATE TRIGGER statements_no_update BEFORE UPDATE ON statements
BEGIN SELECT RAISE(ABORT, 'statements are immutable'); END;
CREATE TRIGGER statements_no_delete BEFORE DELETE ON statements
BEGIN SELECT RAISE(ABORT, 'statements are immutable'); END;
"#;

/// Every migration, in order. `schema_version` = how many have been applied.
pub const MIGRATIONS: &[Migration] = &[
    sql(V1_SAMPLES),
    sql(V2_RECORDS),
    sql(V3_OUTBOX),
    Migration {
        sql: V4_GROUPS,
        backfill: Some(backfill_v4),
        foreign_keys_off: false,
    },
    Migration {
        sql: V5_PRUNED,
        backfill: Some(backfill_v5),
        foreign_keys_off: false,
    },
    Migration {
        sql: V6_TRUST,
        backfill: Some(backfill_v6),
        foreign_keys_off: false,
    },
    sql(V7_TENANTS),
    Migration {
        sql: V8_BUDGETS,
        backfill: Some(super::budgets::rebuild_all_spend),
        foreign_keys_off: false,
    },
    sql(V9_PROVIDERS),
    sql(V10_CHANGE_COUNTS),
    sql(V11_PLACEMENT),
    sql(V12_EQUAL_SHARES),
    Migration {
        foreign_keys_off: true,
        ..sql(V13_SERIES_SHARE)
    },
    sql(V14_IDEMPOTENCY),
    sql(V15_ANOMALIES),
    sql(V16_ALERT_KINDS),
    sql(V17_STATEMENTS),
];

/// Events already in the chain keep the hash form they were written with: the current one starts after them.
fn backfill_v6(conn: &Connection) -> Result<()> {
    let last: Option<i64> = conn
        .query_row("SELECT MAX(seq) FROM audit_events", [], |r| r.get(0))
        .ctx("read the chain's last event")?;
    if let Some(last) = last {
        super::samples::meta_set(conn, crate::audit::V2_FROM, last + 1)?;
    }
    Ok(())
}

/// A file pruned before version 5 has no index of its pruned windows: its horizon is where the index starts.
/// The boundaries of its policies become cuts where their hours are not frozen yet.
fn backfill_v5(conn: &Connection) -> Result<()> {
    use crate::rollups::{RollupConfig, PRUNED_BEFORE};
    let pruned = super::samples::meta_get(conn, PRUNED_BEFORE)?;
    if let Some(p) = pruned {
        super::samples::meta_set(conn, crate::rollups::pruned::INDEXED_FROM, p)?;
    }
    let d = RollupConfig::default();
    let cfg = RollupConfig {
        bucket_ms: super::samples::meta_get(conn, "bucket_ms")?.unwrap_or(d.bucket_ms),
        max_gap_ms: super::samples::meta_get(conn, "max_gap_ms")?.unwrap_or(d.max_gap_ms),
        ..d
    };
    let instants: Vec<eai_engine::time::Timestamp> = super::records::policies(conn)?
        .iter()
        .flat_map(|p| [Some(p.spec.effective_from), p.spec.effective_to])
        .flatten()
        .collect();
    super::samples::record_cuts(conn, &cfg, &instants)
}

/// Builds the group rollups from the per-GPU rollups and the claims from the usage events already stored.
fn backfill_v4(conn: &Connection) -> Result<()> {
    super::samples::rebuild_all_groups(conn)?;
    super::claims::rebuild_all_claims(conn)
}

/// The schema version this binary writes.
pub fn latest() -> u32 {
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// The version of the file, 0 for a new one.
pub fn version(conn: &Connection) -> Result<u32> {
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .ctx("create schema_version")?;
    recorded(conn)
}

/// The version recorded in `schema_version` (which must exist), 0 for none; writes nothing.
pub fn recorded(conn: &Connection) -> Result<u32> {
    let v: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .optional()
        .ctx("read schema_version")?
        .flatten();
    u32::try_from(v.unwrap_or(0))
        .map_err(|_| StoreError::Internal(format!("corrupt schema_version {v:?}")))
}

/// Applies the missing migrations up to `target`.
pub fn migrate_to(conn: &mut Connection, target: u32) -> Result<u32> {
    let current = version(conn)?;
    if current > latest() {
        return Err(StoreError::Internal(format!(
            "the database file has schema version {current}, newer than this binary's {}: upgrade eai-gpu",
            latest()
        )));
    }
    for (i, m) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current as usize)
    {
        let v = i + 1;
        if m.foreign_keys_off {
            conn.pragma_update(None, "foreign_keys", "OFF")
                .ctx("set foreign_keys")?;
        }
        let applied = apply(conn, v, m);
        if m.foreign_keys_off {
            conn.pragma_update(None, "foreign_keys", "ON")
                .ctx("set foreign_keys")?;
        }
        applied?;
    }
    version(conn)
}

/// Applies migration `m` (number `v`) in its own transaction, unless another process applied it first.
fn apply(conn: &mut Connection, v: usize, m: &Migration) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin migration")?;
    // Another process may have migrated while we waited for the lock.
    if version(&tx)? as usize >= v {
        return Ok(());
    }
    tx.execute_batch(m.sql).ctx(&format!("migration {v}"))?;
    if let Some(backfill) = m.backfill {
        backfill(&tx)?;
    }
    if m.foreign_keys_off {
        let broken: Option<String> = tx
            .query_row(
                "SELECT \"table\" FROM pragma_foreign_key_check LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .ctx("check foreign keys")?;
        if let Some(table) = broken {
            return Err(StoreError::Internal(format!(
                "migration {v} left rows of {table} naming a row that is gone"
            )));
        }
    }
    tx.execute("DELETE FROM schema_version", [])
        .ctx("update schema_version")?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [v as i64],
    )
    .ctx("update schema_version")?;
    tx.commit().ctx(&format!("commit migration {v}"))?;
    tracing::info!(version = v, "sqlite schema migrated");
    Ok(())
}

/// Applies every missing migration.
pub fn migrate(conn: &mut Connection) -> Result<u32> {
    migrate_to(conn, latest())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_file_migrates_forward_and_keeps_its_rows() {
        let mut c = Connection::open_in_memory().expect("sqlite");
        assert_eq!(migrate_to(&mut c, 1).expect("v1"), 1);
        c.execute("INSERT INTO gpus (uuid) VALUES ('GPU-1')", [])
            .expect("insert");
        assert!(c
            .execute(
                "INSERT INTO api_keys (hash, role, created_at_ms) VALUES ('h', 'viewer', 0)",
                []
            )
            .is_err());
        assert_eq!(migrate(&mut c).expect("latest"), latest());
        c.execute(
            "INSERT INTO api_keys (hash, role, created_at_ms) VALUES ('h', 'viewer', 0)",
            [],
        )
        .expect("v2 table");
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM gpus", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 1);
        assert_eq!(migrate(&mut c).expect("idempotent"), latest());
    }

    /// Schema 13 rebuilds `series` (its unique key gains the share method) under samples that name it: the ids
    /// are kept, so every sample still finds its series, the rows written before are `exclusive`, and foreign
    /// keys are on again afterwards.
    #[test]
    fn the_series_gain_their_share_method_and_keep_their_ids() {
        let mut c = Connection::open_in_memory().expect("sqlite");
        c.pragma_update(None, "foreign_keys", "ON").expect("fk");
        assert_eq!(migrate_to(&mut c, 12).expect("v12"), 12);
        c.execute_batch(
            "INSERT INTO gpus (id, uuid) VALUES (1, 'GPU-1'); \
             INSERT INTO series (id, node, model, namespace, pod, deployment_id, first_seen_ms, last_seen_ms) \
             VALUES (7, 'n', 'H100', 'ns', 'chat-0', 'chat', 15000, 15000); \
             INSERT INTO gpu_samples VALUES (1, 15000, 7, 15000, 0, 0, 0, 0, 1000000);",
        )
        .expect("v12 rows");
        assert_eq!(migrate(&mut c).expect("latest"), latest());
        let (id, share): (i64, String) = c
            .query_row(
                "SELECT se.id, se.share FROM gpu_samples s JOIN series se ON se.id = s.series_id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("the sample's series");
        assert_eq!((id, share.as_str()), (7, "exclusive"));
        let fk: i64 = c
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .expect("pragma");
        assert_eq!(fk, 1);
        // The same labels under another method are another series; a sample naming none is refused.
        c.execute(
            "INSERT INTO series (node, model, namespace, pod, deployment_id, share, first_seen_ms, last_seen_ms) \
             VALUES ('n', 'H100', 'ns', 'chat-0', 'chat', 'measured', 30000, 30000)",
            [],
        )
        .expect("a second series");
        assert!(c
            .execute(
                "INSERT INTO gpu_samples VALUES (1, 30000, 99, 15000, 0, 0, 0, 0, 1000000)",
                []
            )
            .is_err());
    }

    #[test]
    fn a_newer_file_is_refused() {
        let mut c = Connection::open_in_memory().expect("sqlite");
        migrate(&mut c).expect("latest");
        c.execute("UPDATE schema_version SET version = 99", [])
            .expect("bump");
        let e = migrate(&mut c).expect_err("refused");
        assert!(e.to_string().contains("newer"), "{e}");
    }
}
