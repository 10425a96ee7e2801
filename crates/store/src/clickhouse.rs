//! ClickHouse: the analytics replica of the primary store and the scale-out path for a fleet's months.
//!
//! The primary store (SQLite or PostgreSQL) writes every change the replica needs into a transactional outbox
//! in the same transaction as the change; [`replicate_once`] delivers outbox entries over ClickHouse's HTTP
//! interface at least once, and acknowledges them only after ClickHouse answered. Redelivery is harmless:
//! every table is a `ReplacingMergeTree` keyed by the row's identity with the outbox sequence as version, and
//! readers use `FINAL`.
//!
//! Tables (database from the URL, default `eai`):
//! - `usage_events` (physically `usage_events_by_tenant`): the replica of `eai.usage_events`, keyed by
//!   `(tenant_id, event_id)` like the primary (SPEC §8). A replica created by an older binary, keyed by
//!   `event_id` alone, is copied into it and dropped by [`ClickHouse::migrate`].
//! - `gpu_samples`: raw samples, keyed by `(gpu_uuid, end_ms)`.
//! - `gpu_rollups`, `gpu_gaps`: the primary's exact hourly rollups and reported gaps (rows replaced by a
//!   recomputation carry `deleted = 1`). The allocation read from ClickHouse uses these, so it gives the same
//!   figures as the primary on the same data.
//! - `gpu_samples_hourly`: a view (not a materialized view: an MV would count a redelivered block twice)
//!   with measured-only hourly sums, for dashboards.
//!
//! Only SQL that ClickHouse 18.16 (Debian 12) and current releases both accept: `ReplacingMergeTree(version)`,
//! `FINAL`, `JSONEachRow`, decimals carried as exact strings and read with `toDecimal128(x, 15)`, no column
//! defaults on insert (18.16 does not apply them to `JSONEachRow`), 64-bit integers read back as strings.

// A ClickHouse server for tests: not in the shipped binary (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod scratch;

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use eai_engine::allocate::{UsageClaim, CLAIM_BUCKET_MS};
use eai_engine::domain::{ModelRef, NonNegative, ShareMethod, TenantId, UsageEvent};
use eai_engine::money::Currency;
use eai_engine::report::{Gap, GapReason};
use eai_engine::rollup::{GpuSet, GpuSets, Placement, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// A failure talking to ClickHouse.
#[derive(Debug, thiserror::Error)]
pub enum ClickHouseError {
    #[error("EAI_CLICKHOUSE_URL is not a usable http(s) URL: {0}")]
    BadUrl(String),
    /// No answer (down, refused, timed out): the outbox keeps the rows until it is back.
    #[error("ClickHouse is unreachable: {0}")]
    Unreachable(String),
    #[error("ClickHouse answered {status}: {message}")]
    Server { status: u16, message: String },
    #[error("unexpected ClickHouse data: {0}")]
    Decode(String),
}

pub type Result<T> = std::result::Result<T, ClickHouseError>;

/// Rows of one replica table, as `JSONEachRow` objects, with the outbox sequence that wrote them.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub seq: u64,
    /// `usage_events`, `gpu_samples`, `gpu_rollups` or `gpu_gaps`.
    pub table: String,
    pub rows: Vec<Value>,
}

/// The names of the replica tables an outbox entry may target.
pub const TABLES: [&str; 4] = ["usage_events", "gpu_samples", "gpu_rollups", "gpu_gaps"];

/// The ClickHouse table that holds a replica table's rows.
pub fn physical(table: &str) -> &str {
    match table {
        "usage_events" => EVENTS_TABLE,
        other => other,
    }
}

/// Usage events keyed by `(tenant_id, event_id)`.
pub const EVENTS_TABLE: &str = "usage_events_by_tenant";

/// A ClickHouse server reached over HTTP.
#[derive(Clone)]
pub struct ClickHouse {
    http: reqwest::Client,
    base: String,
    database: String,
    user: Option<String>,
    password: Option<String>,
}

impl std::fmt::Debug for ClickHouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouse")
            .field("base", &self.base)
            .field("database", &self.database)
            .finish()
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl ClickHouse {
    /// `http://[user[:password]@]host:port[/database]` (default database `eai`).
    pub fn from_url(url: &str) -> Result<Self> {
        let bad = || ClickHouseError::BadUrl(redact(url));
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        if scheme != "http" && scheme != "https" {
            return Err(bad());
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if host.is_empty() {
            return Err(bad());
        }
        let (user, password) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((a, b)) => (Some(a.to_string()), Some(b.to_string())),
                None => (Some(u.to_string()), None),
            },
            None => (None, None),
        };
        let database = path.trim_end_matches('/');
        let database = if database.is_empty() { "eai" } else { database };
        if !is_identifier(database) {
            return Err(bad());
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(120));
        // `https://`: the system's roots, and a private CA's when EAI_CA_FILE names one.
        if let Some(path) = std::env::var_os("EAI_CA_FILE").filter(|v| !v.is_empty()) {
            let pem = std::fs::read(&path).map_err(|e| {
                ClickHouseError::Unreachable(format!("cannot read EAI_CA_FILE: {e}"))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                ClickHouseError::Unreachable(format!("EAI_CA_FILE is not PEM: {e}"))
            })?;
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        let http = builder
            .build()
            .map_err(|e| ClickHouseError::Unreachable(e.to_string()))?;
        Ok(ClickHouse {
            http,
            base: format!("{scheme}://{host}"),
            database: database.to_string(),
            user,
            password,
        })
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    #[tracing::instrument(name = "clickhouse.query", skip_all, fields(otel.kind = "client", db.system = "clickhouse", db.namespace = %self.database))]
    async fn post(&self, query: Option<&str>, body: String) -> Result<String> {
        let mut req = self.http.post(format!("{}/", self.base));
        if let Some(tp) = eai_telemetry::traceparent() {
            req = req.header("traceparent", tp);
        }
        if let Some(q) = query {
            req = req.query(&[("query", q)]);
        }
        if let Some(u) = &self.user {
            req = req.header("X-ClickHouse-User", u);
        }
        if let Some(p) = &self.password {
            req = req.header("X-ClickHouse-Key", p);
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| ClickHouseError::Unreachable(e.to_string()))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| ClickHouseError::Unreachable(e.to_string()))?;
        if (200..300).contains(&status) {
            Ok(text)
        } else {
            Err(ClickHouseError::Server {
                status,
                message: text.trim().chars().take(500).collect(),
            })
        }
    }

    /// Runs one statement.
    pub async fn exec(&self, sql: &str) -> Result<()> {
        self.post(None, sql.to_string()).await.map(|_| ())
    }

    /// Runs a query and returns its rows (the query must not carry a FORMAT clause).
    pub async fn select(&self, sql: &str) -> Result<Vec<Value>> {
        let text = self.post(None, format!("{sql} FORMAT JSONEachRow")).await?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(|e| ClickHouseError::Decode(e.to_string())))
            .collect()
    }

    /// Inserts rows into one of the replica tables.
    pub async fn insert(&self, table: &str, rows: &[Value]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        if !TABLES.contains(&table) {
            return Err(ClickHouseError::Decode(format!(
                "unknown replica table {table}"
            )));
        }
        let mut body = String::new();
        for r in rows {
            body.push_str(&r.to_string());
            body.push('\n');
        }
        let q = format!(
            "INSERT INTO {}.{} FORMAT JSONEachRow",
            self.database,
            physical(table)
        );
        self.post(Some(&q), body).await.map(|_| ())
    }

    pub async fn ping(&self) -> Result<()> {
        self.select("SELECT 1 AS ok").await.map(|_| ())
    }

    /// Creates the database and tables if missing (idempotent).
    pub async fn migrate(&self) -> Result<()> {
        let db = &self.database;
        self.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
            .await?;
        for ddl in [
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.{EVENTS_TABLE} (event_id String, tenant_id String, usage_type String, \
                 source String, occurred_at DateTime('UTC'), occurred_at_ms Int64, deployment_id String, \
                 model_provider String, model_name String, units String, tokens_in String, tokens_out String, \
                 gpu_seconds String, gpu_memory_gb_seconds String, energy_wh String, cost_amount String, \
                 cost_currency String, allocation_policy_id String, project String, agent_id String, run_id String, \
                 version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (tenant_id, event_id)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.gpu_samples (gpu_uuid String, end_ms Int64, end_at DateTime('UTC'), \
                 node String, model String, namespace String, pod String, deployment_id String, owner String, \
                 window_ms Int64, utilization String, memory_used_gb String, power_w String, storage_gb String, \
                 gpu_fraction String, share String DEFAULT 'exclusive', version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (gpu_uuid, end_ms)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.gpu_rollups ({ROLLUP_COLUMNS}) \
                 ENGINE = ReplacingMergeTree(version) ORDER BY ({ROLLUP_ORDER})"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {db}.gpu_gaps (gpu_uuid String, from_ms Int64, to_ms Int64, reason String, \
                 deployment_id String, node String, deleted UInt8, version UInt64) \
                 ENGINE = ReplacingMergeTree(version) ORDER BY (gpu_uuid, from_ms)"
            ),
            format!(
                "CREATE VIEW IF NOT EXISTS {db}.gpu_samples_hourly AS SELECT deployment_id, owner, model, \
                 intDiv(end_ms, 3600000) * 3600000 AS hour_ms, count() AS samples, uniqExact(gpu_uuid) AS gpus, \
                 sum(toDecimal128(window_ms, 0) * toDecimal128(gpu_fraction, 6)) / 1000 AS gpu_seconds, \
                 sum(toDecimal128(window_ms, 0) * toDecimal128(power_w, 6)) / 1000 AS energy_ws \
                 FROM {db}.gpu_samples FINAL GROUP BY deployment_id, owner, model, hour_ms"
            ),
        ] {
            self.exec(&ddl).await?;
        }
        // Rollups without their placement (older binaries): the rows move to the table keyed by it too, as rows
        // of no placement.
        let placed = self
            .select(&format!(
                "SELECT count() AS n FROM system.columns WHERE database = '{db}' AND table = 'gpu_rollups' \
                 AND name = 'placed'"
            ))
            .await?;
        if placed
            .first()
            .is_some_and(|r| int(r, "n").unwrap_or(0) == 0)
        {
            self.exec(&format!(
                "CREATE TABLE IF NOT EXISTS {db}.gpu_rollups_v2 ({ROLLUP_COLUMNS}) \
                 ENGINE = ReplacingMergeTree(version) ORDER BY ({ROLLUP_ORDER})"
            ))
            .await?;
            self.exec(&format!(
                "INSERT INTO {db}.gpu_rollups_v2 SELECT bucket_ms, gpu_uuid, deployment_id, owner, model, \
                 0 AS placed, '' AS namespace, '' AS pod, '' AS node, '' AS share, first_window_start_ms, \
                 last_window_start_ms, \
                 samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
                 memory_gb_seconds, energy_ws, storage_gb_seconds, deleted, version FROM {db}.gpu_rollups"
            ))
            .await?;
            self.exec(&format!("DROP TABLE {db}.gpu_rollups")).await?;
            self.exec(&format!(
                "RENAME TABLE {db}.gpu_rollups_v2 TO {db}.gpu_rollups"
            ))
            .await?;
        }
        // Rollups and samples without their share method (older binaries): the rows written before are
        // `exclusive`, and the method joins the rollups' identity (a column added with the sorting key, which
        // may have no default expression: the rows before read '', taken as `exclusive`).
        for (table, alter) in [
            (
                "gpu_rollups",
                format!(
                    "ALTER TABLE {db}.gpu_rollups ADD COLUMN share String AFTER node, \
                     MODIFY ORDER BY ({ROLLUP_ORDER})"
                ),
            ),
            (
                "gpu_samples",
                format!(
                    "ALTER TABLE {db}.gpu_samples ADD COLUMN share String DEFAULT 'exclusive' AFTER gpu_fraction"
                ),
            ),
        ] {
            let has = self
                .select(&format!(
                    "SELECT count() AS n FROM system.columns WHERE database = '{db}' AND table = '{table}' \
                     AND name = 'share'"
                ))
                .await?;
            if has.first().is_some_and(|r| int(r, "n").unwrap_or(0) == 0) {
                self.exec(&alter).await?;
            }
        }
        // A replica keyed by event_id alone (older binaries): its rows move to the table keyed by tenant too.
        let old = self
            .select(&format!(
                "SELECT count() AS n FROM system.tables WHERE database = '{db}' AND name = 'usage_events'"
            ))
            .await?;
        if old.first().is_some_and(|r| int(r, "n").unwrap_or(0) > 0) {
            self.exec(&format!(
                "INSERT INTO {db}.{EVENTS_TABLE} SELECT * FROM {db}.usage_events"
            ))
            .await?;
            self.exec(&format!("DROP TABLE {db}.usage_events")).await?;
        }
        Ok(())
    }

    /// Applies outbox entries (in order; the caller acknowledges them after this returns Ok).
    pub async fn apply(&self, entries: &[OutboxEntry]) -> Result<()> {
        // One insert per table per call: fewer, larger blocks are what ClickHouse likes.
        let mut by_table: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for e in entries {
            let rows = by_table.entry(e.table.as_str()).or_default();
            for r in &e.rows {
                let mut r = r.clone();
                r["version"] = json!(e.seq);
                rows.push(r);
            }
        }
        for (table, rows) in by_table {
            self.insert(table, &rows).await?;
        }
        Ok(())
    }

    /// Rollups of buckets in `[from, to)` (replaced rows resolved with FINAL, deleted ones dropped).
    pub async fn rollups(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Rollup>> {
        let rows = self
            .select(&format!(
                "SELECT * FROM {}.gpu_rollups FINAL WHERE bucket_ms >= {} AND bucket_ms < {} AND deleted = 0 \
                 ORDER BY gpu_uuid, bucket_ms",
                self.database, from.0, to.0
            ))
            .await?;
        rows.iter().map(rollup_from_row).collect()
    }

    /// The group rollups of buckets in `[from, to)`: the `GROUP BY` of the per-GPU rollups by (bucket,
    /// deployment, owner, model), summed by ClickHouse exactly (`Decimal128` at the rollups' 15 places), each
    /// with its set of GPUs, as the primary's group rollups are (`crate::groups`): what an allocation reads
    /// costs deployments x hours rows, not GPU-hours. The sets come in a second query, once per distinct set
    /// (a deployment's GPUs are the same hour after hour), named in the first by a hash of the sorted set.
    pub async fn group_rollups(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Rollup>> {
        let db = &self.database;
        let (from, to) = (from.0, to.0);
        // Both queries group the same rows the same way.
        let grouped = format!(
            "FROM {db}.gpu_rollups FINAL WHERE bucket_ms >= {from} AND bucket_ms < {to} AND deleted = 0 \
             GROUP BY bucket_ms, deployment_id, owner, model"
        );
        let sum = |c: &str| format!("toString(sum(toDecimal128({c}, 15))) AS {c}");
        let sums = [
            "gpu_seconds",
            "busy_gpu_seconds",
            "estimated_gpu_seconds",
            "memory_gb_seconds",
            "energy_ws",
            "storage_gb_seconds",
        ]
        .map(sum)
        .join(", ");
        let sets_sql = format!(
            "SELECT toString(cityHash64(gpus)) AS gpu_set, gpus FROM \
             (SELECT arraySort(groupArray(gpu_uuid)) AS gpus {grouped}) GROUP BY gpus"
        );
        let rows_sql = format!(
            "SELECT bucket_ms, deployment_id, owner, model, min(first_window_start_ms) AS first_window_start_ms, \
             max(last_window_start_ms) AS last_window_start_ms, sum(samples) AS samples, \
             sum(estimated_samples) AS estimated_samples, {sums}, \
             toString(cityHash64(arraySort(groupArray(gpu_uuid)))) AS gpu_set {grouped} \
             ORDER BY bucket_ms, deployment_id, owner, model"
        );
        let (rows, sets) = tokio::try_join!(self.select(&rows_sql), self.select(&sets_sql))?;
        let mut interned = GpuSets::default();
        let mut by_hash: HashMap<String, GpuSet> = HashMap::with_capacity(sets.len());
        let mut sets = sets;
        // The two queries ran side by side: rows replicated in between may name a set the second did not
        // see; it is read again then (twice at most).
        for attempt in 0..3 {
            for r in &sets {
                let gpus: Vec<Arc<str>> = r["gpus"]
                    .as_array()
                    .ok_or_else(|| ClickHouseError::Decode("column gpus missing".into()))?
                    .iter()
                    .map(|g| g.as_str().map(Arc::from))
                    .collect::<Option<_>>()
                    .ok_or_else(|| ClickHouseError::Decode("column gpus: not strings".into()))?;
                let set = interned.intern(gpus);
                match by_hash.insert(text(r, "gpu_set")?.to_string(), set.clone()) {
                    // Two distinct sets with one 64-bit hash: refuse rather than mix them up.
                    Some(other) if other != set => {
                        return Err(ClickHouseError::Decode(
                            "two GPU sets share a hash; read the per-GPU rollups".into(),
                        ))
                    }
                    _ => {}
                }
            }
            let complete = rows
                .iter()
                .all(|r| text(r, "gpu_set").is_ok_and(|h| by_hash.contains_key(h)));
            if complete || attempt == 2 {
                break;
            }
            sets = self.select(&sets_sql).await?;
        }
        rows.iter()
            .map(|r| {
                let hash = text(r, "gpu_set")?;
                let set = by_hash.get(hash).ok_or_else(|| {
                    ClickHouseError::Decode(format!("a group names GPU set {hash}, never read"))
                })?;
                let mut g = rollup_fields(r, String::new())?;
                g.gpus = Some(set.clone());
                Ok(g)
            })
            .collect()
    }

    /// The usage claims of the hours in `[from, to)`: per (hour, deployment, tenant), the sum of
    /// `eai_engine::allocate::claim_of` over the events of that key, summed by ClickHouse (`Decimal128` at the
    /// units' 6 places, as the primary's claim table): an event with a `gpu_seconds` unit claims those, another
    /// its tokens in and out; events of no deployment, of the platform (allocation, reservation) or of a vLLM
    /// server's own counters claim nothing. In the claims' read order.
    pub async fn claims(&self, from: Timestamp, to: Timestamp) -> Result<Vec<UsageClaim>> {
        let dec = |c: &str| format!("toDecimal128(if({c} = '', '0', {c}), 6)");
        let rows = self
            .select(&format!(
                "SELECT intDiv(occurred_at_ms, {h}) * {h} AS bucket_ms, deployment_id, tenant_id, \
                 toString(sum(if(gpu_seconds = '', toDecimal128(0, 6), {gs}))) AS claimed_gpu_seconds, \
                 toString(sum(if(gpu_seconds = '', {tin} + {tout}, toDecimal128(0, 6)))) AS claimed_tokens \
                 FROM {db}.{EVENTS_TABLE} FINAL \
                 WHERE occurred_at_ms >= {from} AND occurred_at_ms < {to} AND deployment_id != '' \
                 AND source NOT IN ('{alloc}', '{reservation}', '{vllm}') \
                 GROUP BY bucket_ms, deployment_id, tenant_id",
                h = CLAIM_BUCKET_MS,
                gs = dec("gpu_seconds"),
                tin = dec("tokens_in"),
                tout = dec("tokens_out"),
                db = self.database,
                from = from.0,
                to = to.0,
                alloc = eai_engine::domain::ALLOCATION_SOURCE,
                reservation = eai_engine::domain::RESERVATION_SOURCE,
                vllm = eai_engine::domain::VLLM_SOURCE,
            ))
            .await?;
        let mut claims = rows
            .iter()
            .map(|r| {
                Ok(UsageClaim {
                    deployment_id: text(r, "deployment_id")?.to_string(),
                    tenant_id: TenantId::from_str(text(r, "tenant_id")?)
                        .map_err(|e| ClickHouseError::Decode(format!("column tenant_id: {e}")))?,
                    bucket_start: Timestamp(int(r, "bucket_ms")?),
                    gpu_seconds: decimal(r, "claimed_gpu_seconds")?,
                    tokens: decimal(r, "claimed_tokens")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
        Ok(claims)
    }

    /// Gaps touching `[from, to)`.
    pub async fn gaps(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Gap>> {
        let rows = self
            .select(&format!(
                "SELECT * FROM {}.gpu_gaps FINAL WHERE from_ms < {} AND to_ms > {} AND deleted = 0",
                self.database, to.0, from.0
            ))
            .await?;
        rows.iter().map(gap_from_row).collect()
    }

    /// Usage events with `occurred_at` in `[from, to)`.
    pub async fn usage_events(&self, from: Timestamp, to: Timestamp) -> Result<Vec<UsageEvent>> {
        let rows = self
            .select(&format!(
                "SELECT * FROM {}.{EVENTS_TABLE} FINAL WHERE occurred_at_ms >= {} AND occurred_at_ms < {}",
                self.database, from.0, to.0
            ))
            .await?;
        rows.iter().map(event_from_row).collect()
    }
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
}

impl Backfilled {
    pub fn rows(&self) -> u64 {
        self.samples + self.rollups + self.gaps + self.events
    }
}

/// Copies what the primary holds of `[from, to)` into the replica (a replica added to an existing database:
/// the outbox only carries changes made while it was on), `step_ms` at a time: each step is one snapshot of
/// the primary ([`crate::Store::replica_rows`], [`crate::Store::usage_events`]) and one insert per table.
/// `progress` is called after each step.
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
        ])
        .await?;
        progress(&done);
        at = end;
    }
    Ok(done)
}

fn redact(url: &str) -> String {
    match url
        .split_once("://")
        .and_then(|(s, r)| r.rsplit_once('@').map(|(u, h)| (s, u, h)))
    {
        Some((s, u, h)) => format!("{s}://{}:***@{h}", u.split(':').next().unwrap_or_default()),
        None => url.to_string(),
    }
}

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

/// The columns of `gpu_rollups` (`placed` 0: a rollup of no placement, written before they were kept).
const ROLLUP_COLUMNS: &str = "bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, model String, \
     placed UInt8, namespace String, pod String, node String, share String, \
     first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, gpu_seconds String, \
     busy_gpu_seconds String, estimated_gpu_seconds String, memory_gb_seconds String, energy_ws String, \
     storage_gb_seconds String, deleted UInt8, version UInt64";
/// The replica identity of a rollup row: its key, placement included.
const ROLLUP_ORDER: &str =
    "bucket_ms, gpu_uuid, deployment_id, owner, model, placed, namespace, pod, node, share";

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

/// The `gpu_gaps` row of a gap.
pub fn gap_row(g: &Gap, deleted: bool) -> Value {
    json!({
        "gpu_uuid": g.gpu_uuid, "from_ms": g.from.0, "to_ms": g.to.0, "reason": g.reason.as_str(),
        "deployment_id": g.deployment_id, "node": g.node, "deleted": u8::from(deleted),
    })
}

/// The `gpu_samples` row of a sample.
pub fn sample_row(s: &eai_engine::domain::Sample) -> Value {
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

fn text<'a>(r: &'a Value, k: &str) -> Result<&'a str> {
    r[k].as_str()
        .ok_or_else(|| ClickHouseError::Decode(format!("column {k} missing")))
}

/// 64-bit integers come back quoted (output_format_json_quote_64bit_integers), smaller ones as numbers.
fn int(r: &Value, k: &str) -> Result<i64> {
    match &r[k] {
        Value::String(s) => s
            .parse()
            .map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}"))),
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| ClickHouseError::Decode(format!("column {k}: {n}"))),
        _ => Err(ClickHouseError::Decode(format!("column {k} missing"))),
    }
}

fn decimal(r: &Value, k: &str) -> Result<Decimal> {
    let s = text(r, k)?;
    Decimal::from_str(s).map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}")))
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn owner(r: &Value, k: &str) -> Result<Option<TenantId>> {
    let s = text(r, k)?;
    if s.is_empty() {
        return Ok(None);
    }
    s.parse()
        .map(Some)
        .map_err(|_| ClickHouseError::Decode(format!("column {k}: {s}")))
}

fn rollup_from_row(r: &Value) -> Result<Rollup> {
    let mut rollup = rollup_fields(r, text(r, "gpu_uuid")?.to_string())?;
    if int(r, "placed")? != 0 {
        // '': written before share methods were kept (exclusive).
        let share = match text(r, "share")? {
            "" => ShareMethod::Exclusive,
            s => s
                .parse()
                .map_err(|()| ClickHouseError::Decode(format!("column share: {s}")))?,
        };
        rollup.key.placement = Placement::new(
            text(r, "namespace")?,
            text(r, "pod")?,
            text(r, "node")?,
            share,
        );
    }
    Ok(rollup)
}

/// A rollup of a row's columns, for the GPU named (empty for a group).
fn rollup_fields(r: &Value, gpu_uuid: String) -> Result<Rollup> {
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid,
            deployment_id: text(r, "deployment_id")?.to_string(),
            owner: owner(r, "owner")?,
            model: text(r, "model")?.to_string(),
            bucket_start: Timestamp(int(r, "bucket_ms")?),
            placement: Placement::default(),
        },
        first_window_start: Timestamp(int(r, "first_window_start_ms")?),
        last_window_start: Timestamp(int(r, "last_window_start_ms")?),
        samples: u64::try_from(int(r, "samples")?).unwrap_or(0),
        estimated_samples: u64::try_from(int(r, "estimated_samples")?).unwrap_or(0),
        q: Quantities {
            gpu_seconds: decimal(r, "gpu_seconds")?,
            busy_gpu_seconds: decimal(r, "busy_gpu_seconds")?,
            estimated_gpu_seconds: decimal(r, "estimated_gpu_seconds")?,
            memory_gb_seconds: decimal(r, "memory_gb_seconds")?,
            energy_ws: decimal(r, "energy_ws")?,
            storage_gb_seconds: decimal(r, "storage_gb_seconds")?,
        },
        gpus: None,
    })
}

fn gap_from_row(r: &Value) -> Result<Gap> {
    let reason = match text(r, "reason")? {
        "too_long" => GapReason::TooLong,
        "series_changed" => GapReason::SeriesChanged,
        other => return Err(ClickHouseError::Decode(format!("gap reason {other}"))),
    };
    Ok(Gap {
        gpu_uuid: text(r, "gpu_uuid")?.to_string(),
        node: text(r, "node")?.to_string(),
        deployment_id: text(r, "deployment_id")?.to_string(),
        from: Timestamp(int(r, "from_ms")?),
        to: Timestamp(int(r, "to_ms")?),
        reason,
    })
}

fn event_from_row(r: &Value) -> Result<UsageEvent> {
    let units_text = text(r, "units")?;
    let units_raw: BTreeMap<String, String> = serde_json::from_str(units_text)
        .map_err(|e| ClickHouseError::Decode(format!("units: {e}")))?;
    let mut units = BTreeMap::new();
    for (k, v) in units_raw {
        let d =
            Decimal::from_str(&v).map_err(|_| ClickHouseError::Decode(format!("unit {k}: {v}")))?;
        units.insert(k, NonNegative::new(d).unwrap_or(NonNegative::ZERO));
    }
    let cost = match (text(r, "cost_amount")?, text(r, "cost_currency")?) {
        ("", _) | (_, "") => None,
        (a, c) => Some((
            NonNegative::new(
                Decimal::from_str(a).map_err(|_| ClickHouseError::Decode(format!("cost {a}")))?,
            )
            .unwrap_or(NonNegative::ZERO),
            Currency::from_str(c).map_err(|_| ClickHouseError::Decode(format!("currency {c}")))?,
        )),
    };
    let provider = text(r, "model_provider")?;
    let name = text(r, "model_name")?;
    Ok(UsageEvent {
        event_id: text(r, "event_id")?
            .parse()
            .map_err(|_| ClickHouseError::Decode("event_id".into()))?,
        tenant_id: text(r, "tenant_id")?
            .parse()
            .map_err(|_| ClickHouseError::Decode("tenant_id".into()))?,
        usage_type: text(r, "usage_type")?.to_string(),
        source: text(r, "source")?.to_string(),
        occurred_at: Timestamp(int(r, "occurred_at_ms")?),
        deployment_id: opt(text(r, "deployment_id")?),
        model: (!provider.is_empty()).then(|| ModelRef {
            provider: provider.to_string(),
            name: name.to_string(),
        }),
        units,
        cost,
        allocation_policy_id: opt(text(r, "allocation_policy_id")?),
        project: opt(text(r, "project")?),
        agent_id: opt(text(r, "agent_id")?),
        run_id: opt(text(r, "run_id")?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_host_database_and_credentials() {
        let c = ClickHouse::from_url("http://user:secret@127.0.0.1:8123/analytics").unwrap();
        assert_eq!(
            (c.base.as_str(), c.database()),
            ("http://127.0.0.1:8123", "analytics")
        );
        assert_eq!(c.password.as_deref(), Some("secret"));
        assert!(!format!("{c:?}").contains("secret"));
        assert_eq!(
            ClickHouse::from_url("http://h:8123").unwrap().database(),
            "eai"
        );
        assert!(ClickHouse::from_url("tcp://h:9000").is_err());
        assert!(ClickHouse::from_url("http://h:8123/db;drop").is_err());
    }

    #[test]
    fn datetimes_are_what_clickhouse_reads() {
        assert_eq!(
            datetime(Timestamp(1_790_812_800_123)),
            "2026-10-01 00:00:00"
        );
    }
}
