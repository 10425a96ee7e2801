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
//!
//! Layout: this module is the HTTP client ([`ClickHouse`]: the URL, statements, inserts, outbox entries applied);
//! `schema` the DDL and the migrations of replicas older binaries created; `replicate` the replica rows of each
//! primary row, [`replicate_once`] and [`backfill`]; `reads` what the allocation reads back (rollups, group
//! rollups, claims, gaps, events); `scratch` (feature `test-support`) a throwaway server for tests.

// A ClickHouse server for tests: not in the shipped binary (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod scratch;

mod reads;
mod replicate;
mod schema;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

pub use replicate::{
    backfill, event_row, gap_row, replicate_once, rollup_row, sample_row, Backfilled, Delivered,
    ReplicateError, BACKFILL_VERSION,
};

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
}
