//! The HTTP client of a ClickHouse server: its URL (credentials and database), statements, `JSONEachRow`
//! inserts and selects, and outbox entries applied table by table.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use std::str::FromStr;

use rust_decimal::Decimal;

use super::{decimal_columns, physical, ClickHouseError, OutboxEntry, Result, TABLES};

/// A ClickHouse server reached over HTTP.
#[derive(Clone)]
pub struct ClickHouse {
    http: reqwest::Client,
    base: String,
    pub(super) database: String,
    user: Option<String>,
    password: Option<String>,
    /// `EAI_CLICKHOUSE_CLUSTER`: the cluster (in the servers' `remote_servers`) the tables are created on, as
    /// replicated local tables behind `Distributed` tables; `None`: plain tables on one server.
    pub(super) cluster: Option<String>,
}

impl std::fmt::Debug for ClickHouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouse")
            .field("base", &self.base)
            .field("database", &self.database)
            .field("cluster", &self.cluster)
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
            cluster: None,
        })
    }

    /// The same server, its tables created `ON CLUSTER cluster` (`EAI_CLICKHOUSE_CLUSTER`; empty: none).
    pub fn with_cluster(mut self, cluster: Option<&str>) -> Result<Self> {
        self.cluster = match cluster.map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) if is_identifier(c) => Some(c.to_string()),
            Some(c) => return Err(ClickHouseError::BadCluster(c.to_string())),
            None => None,
        };
        Ok(self)
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    /// The cluster the tables live on (`EAI_CLICKHOUSE_CLUSTER`), if any.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    #[tracing::instrument(name = "clickhouse.query", skip_all, fields(otel.kind = "client", db.system = "clickhouse", db.namespace = %self.database))]
    async fn post(&self, query: Option<&str>, body: String, close: bool) -> Result<String> {
        let mut req = self.http.post(format!("{}/", self.base));
        if close {
            req = req.header(reqwest::header::CONNECTION, "close");
        }
        if let Some(tp) = eai_telemetry::traceparent() {
            req = req.header("traceparent", tp);
        }
        if let Some(q) = query {
            req = req.query(&[("query", q)]);
        }
        // On a cluster an insert into a `Distributed` table answers only once the rows are on their shard
        // (not queued on this server): an acknowledged outbox entry is then replicated data.
        // (`insert_distributed_sync`: 18.16's name, an alias of `distributed_foreground_insert` today.)
        // Replicas in order (the first replica of each shard while it answers) for inserts and reads alike:
        // a read then sees the rows acknowledged before it, not a replica still fetching them.
        if self.cluster.is_some() {
            req = req.query(&[
                ("insert_distributed_sync", "1"),
                ("load_balancing", "in_order"),
            ]);
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
            .map_err(|e| ClickHouseError::Unreachable(with_causes(&e)))?;
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

    /// Runs one statement, on a connection of its own: a statement `ON CLUSTER` answers once every server
    /// ran it, and a server may close the connection after such an answer (a kept-alive connection reused
    /// then fails with "connection closed before message completed").
    pub async fn exec(&self, sql: &str) -> Result<()> {
        self.post(None, sql.to_string(), true).await.map(|_| ())
    }

    /// Runs a query and returns its rows (the query must not carry a FORMAT clause).
    pub async fn select(&self, sql: &str) -> Result<Vec<Value>> {
        let text = self
            .post(None, format!("{sql} FORMAT JSONEachRow"), false)
            .await?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(|e| ClickHouseError::Decode(e.to_string())))
            .collect()
    }

    /// Runs a query and returns its rows as `TabSeparated` fields, unescaped (the query must not carry a
    /// FORMAT clause): compact, and decimals come back as their exact text.
    pub async fn select_tsv(&self, sql: &str) -> Result<Vec<Vec<String>>> {
        self.select_tsv_map(sql, |r| Ok(r.iter().map(|f| f.to_string()).collect()))
            .await
    }

    /// Runs a query and maps each row's `TabSeparated` fields with `f`, as they are read: fields borrowed from
    /// the answer (unescaped into their own text only when they hold an escape), no `String` per field.
    pub async fn select_tsv_map<T>(
        &self,
        sql: &str,
        mut f: impl FnMut(&[Cow<'_, str>]) -> Result<T>,
    ) -> Result<Vec<T>> {
        let text = self
            .post(None, format!("{sql} FORMAT TabSeparated"), false)
            .await?;
        let mut fields: Vec<Cow<'_, str>> = Vec::new();
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            fields.clear();
            fields.extend(line.split('\t').map(|x| {
                if x.contains('\\') {
                    Cow::Owned(unescape_tsv(x))
                } else {
                    Cow::Borrowed(x)
                }
            }));
            out.push(f(&fields)?);
        }
        Ok(out)
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
        let decimals = decimal_columns(table);
        let mut body = String::new();
        for r in rows {
            json_row(&mut body, r, decimals)?;
            body.push('\n');
        }
        let q = format!(
            "INSERT INTO {}.{} FORMAT JSONEachRow",
            self.database,
            physical(table)
        );
        self.post(Some(&q), body, false).await.map(|_| ())
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

/// An error with its causes (`error sending request: connection closed before message completed`).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// One `JSONEachRow` line of `row`: its `decimals` columns as JSON numbers of their exact text (what a
/// `Decimal128` column reads on ClickHouse 18.16 and later; rows in the outbox carry them as strings, '' for
/// none, written as 0), every other value as JSON.
fn json_row(out: &mut String, row: &Value, decimals: &[&str]) -> Result<()> {
    let Value::Object(fields) = row else {
        return Err(ClickHouseError::Decode(format!(
            "a replica row is not an object: {row}"
        )));
    };
    out.push('{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        if decimals.contains(&k.as_str()) {
            let d = match v {
                Value::String(s) if s.is_empty() => Decimal::ZERO,
                Value::String(s) => Decimal::from_str(s).map_err(|_| {
                    ClickHouseError::Decode(format!("column {k}: {s} is not a decimal"))
                })?,
                Value::Number(n) => Decimal::from_str(&n.to_string())
                    .or_else(|_| Decimal::from_scientific(&n.to_string()))
                    .map_err(|_| {
                        ClickHouseError::Decode(format!("column {k}: {n} is not a decimal"))
                    })?,
                other => {
                    return Err(ClickHouseError::Decode(format!(
                        "column {k}: {other} is not a decimal"
                    )))
                }
            };
            // Plain digits, never an exponent.
            out.push_str(&d.to_string());
        } else {
            out.push_str(&v.to_string());
        }
    }
    out.push('}');
    Ok(())
}

/// A `TabSeparated` field's text (`\t`, `\n`, `\\`… escaped by ClickHouse).
fn unescape_tsv(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_string();
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
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
        let c = ClickHouse::from_url("http://h:8123").unwrap();
        assert_eq!(
            c.clone()
                .with_cluster(Some("eai_cluster"))
                .unwrap()
                .cluster(),
            Some("eai_cluster")
        );
        assert_eq!(c.clone().with_cluster(Some(" ")).unwrap().cluster(), None);
        assert!(c.with_cluster(Some("a b")).is_err());
    }

    #[test]
    fn decimals_go_out_as_exact_numbers_and_tsv_fields_come_back_unescaped() {
        let mut line = String::new();
        json_row(
            &mut line,
            &json!({"gpu_seconds": "0.000000000000001", "cost_amount": "", "model": "H100", "samples": 3}),
            &["gpu_seconds", "cost_amount"],
        )
        .unwrap();
        assert_eq!(
            line,
            r#"{"cost_amount":0,"gpu_seconds":0.000000000000001,"model":"H100","samples":3}"#
        );
        assert!(json_row(&mut line, &json!({"gpu_seconds": "1,5"}), &["gpu_seconds"]).is_err());
        assert_eq!(unescape_tsv(r"a\tb\\c\n"), "a\tb\\c\n");
        assert_eq!(unescape_tsv("plain"), "plain");
    }
}
