//! Spend anomalies on SQLite (the rules: `crate::anomalies`): an `INSERT OR IGNORE` on the table's unique key
//! records each once, with its audit event in the same transaction; the one writer connection orders concurrent
//! rounds.

use async_trait::async_trait;
use eai_engine::domain::TenantId;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

use super::codec::Ctx;
use super::tx::append_in;
use super::SqliteDb;
use crate::anomalies::{
    currency_of, currency_text, direction_of, metric_of, recorded_audit, with_delivery, Anomaly,
    NewAnomaly,
};
use crate::roles::AnomalyStore;
use crate::{Result, Scope, StoreError};

const SELECT: &str = "SELECT seq, deployment_id, owner, hour_ms, metric, currency, value, median, mad, \
    deviation, direction, baseline_hours, detected_at_ms, attempts, next_attempt_ms, delivered_at_ms \
    FROM anomalies";
const INSERT: &str =
    "INSERT OR IGNORE INTO anomalies (deployment_id, owner, hour_ms, metric, currency, \
    value, median, mad, deviation, direction, baseline_hours, detected_at_ms, next_attempt_ms) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
const DELIVERED: &str = "UPDATE anomalies SET attempts = attempts + 1, delivered_at_ms = ?2, \
    next_attempt_ms = NULL, last_error = NULL WHERE seq = ?1 AND delivered_at_ms IS NULL";
const FAILED: &str =
    "UPDATE anomalies SET attempts = attempts + 1, next_attempt_ms = ?2, last_error = ?3 \
    WHERE seq = ?1 AND delivered_at_ms IS NULL";

type Raw = (
    i64,
    String,
    Option<String>,
    i64,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
);

fn raw(r: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
        r.get(13)?,
        r.get(14)?,
        r.get(15)?,
    ))
}

fn decimal(what: &str, v: &str) -> Result<rust_decimal::Decimal> {
    v.parse()
        .map_err(|_| StoreError::Internal(format!("corrupt anomaly {what}: {v:?}")))
}

fn decode(r: Raw) -> Result<Anomaly> {
    let (
        seq,
        dep,
        owner,
        hour,
        metric,
        currency,
        value,
        median,
        mad,
        deviation,
        direction,
        baseline,
        at,
    ) = (
        r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9, r.10, r.11, r.12,
    );
    let owner = owner
        .map(|o| {
            o.parse::<TenantId>()
                .map_err(|_| StoreError::Internal(format!("corrupt anomaly owner: {o:?}")))
        })
        .transpose()?;
    let finding = NewAnomaly {
        deployment_id: dep,
        owner,
        hour: Timestamp(hour),
        metric: metric_of(&metric)?,
        currency: currency_of(&currency)?,
        value: decimal("value", &value)?,
        median: decimal("median", &median)?,
        mad: decimal("mad", &mad)?,
        deviation: deviation.map(|d| decimal("deviation", &d)).transpose()?,
        direction: direction_of(&direction)?,
        baseline_hours: u32::try_from(baseline).unwrap_or(u32::MAX),
        detected_at: Timestamp(at),
        deliver: false,
    };
    Ok(with_delivery(seq, finding, r.13, r.14, r.15))
}

fn query(conn: &Connection, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<Anomaly>> {
    let rows: Vec<Raw> = conn
        .prepare_cached(sql)
        .and_then(|mut st| st.query_map(args, raw)?.collect())
        .ctx("read anomalies")?;
    rows.into_iter().map(decode).collect()
}

fn record(conn: &mut Connection, a: &NewAnomaly) -> Result<Option<Anomaly>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin an anomaly")?;
    let n = tx
        .prepare_cached(INSERT)
        .and_then(|mut st| {
            st.execute(params![
                a.deployment_id,
                a.owner.map(|o| o.to_string()),
                a.hour.0,
                a.metric.as_str(),
                currency_text(a.currency),
                a.value.to_string(),
                a.median.to_string(),
                a.mad.to_string(),
                a.deviation.map(|d| d.to_string()),
                a.direction.as_str(),
                i64::from(a.baseline_hours),
                a.detected_at.0,
                a.deliver.then_some(a.detected_at.0),
            ])
        })
        .ctx("record an anomaly")?;
    if n == 0 {
        return Ok(None);
    }
    let seq = tx.last_insert_rowid();
    let sql = format!("{SELECT} WHERE seq = ?1");
    let row: Option<Raw> = tx
        .prepare_cached(&sql)
        .and_then(|mut st| st.query_row(params![seq], raw).optional())
        .ctx("read a new anomaly")?;
    let Some(recorded) = row.map(decode).transpose()? else {
        return Err(StoreError::Internal(
            "a new anomaly was not read back".into(),
        ));
    };
    append_in(&tx, &recorded_audit(&recorded))?;
    tx.commit().ctx("commit an anomaly")?;
    Ok(Some(recorded))
}

#[async_trait]
impl AnomalyStore for SqliteDb {
    async fn record_anomaly(&self, finding: &NewAnomaly) -> Result<Option<Anomaly>> {
        let a = finding.clone();
        self.write(move |conn, _| record(conn, &a)).await
    }

    async fn anomalies(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Anomaly>> {
        self.read(move |conn, _| {
            let order = "ORDER BY hour_ms DESC, seq";
            match scope {
                Scope::Platform => query(
                    conn,
                    &format!("{SELECT} WHERE hour_ms >= ?1 AND hour_ms < ?2 {order}"),
                    &[&from.0, &to.0],
                ),
                Scope::Tenant(t) => query(
                    conn,
                    &format!(
                        "{SELECT} WHERE hour_ms >= ?1 AND hour_ms < ?2 AND owner = ?3 {order}"
                    ),
                    &[&from.0, &to.0, &t.to_string()],
                ),
            }
        })
        .await
    }

    async fn due_anomaly_webhooks(&self, at: Timestamp, limit: u64) -> Result<Vec<Anomaly>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |conn, _| {
            query(
                conn,
                &format!(
                    "{SELECT} WHERE next_attempt_ms IS NOT NULL AND next_attempt_ms <= ?1 \
                     AND delivered_at_ms IS NULL ORDER BY seq LIMIT ?2"
                ),
                &[&at.0, &limit],
            )
        })
        .await
    }

    async fn anomaly_webhook_attempted(
        &self,
        seq: i64,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()> {
        self.write(move |conn, _| {
            match outcome {
                Ok(()) => conn
                    .prepare_cached(DELIVERED)
                    .and_then(|mut st| st.execute(params![seq, at.0])),
                Err(e) => conn
                    .prepare_cached(FAILED)
                    .and_then(|mut st| st.execute(params![seq, next.map(|n| n.0), e])),
            }
            .ctx("record an anomaly webhook attempt")?;
            Ok(())
        })
        .await
    }
}
