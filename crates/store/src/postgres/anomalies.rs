//! Spend anomalies on PostgreSQL (the rules: `crate::anomalies`): one `INSERT … ON CONFLICT DO NOTHING
//! RETURNING` records each once, whichever replica's round comes first, with its audit event in the same
//! transaction. Written and delivered on the platform
//! path; a tenant's reads see the rows of its dedicated deployments through row level security (a shared
//! deployment's rows carry the platform tenant).

use async_trait::async_trait;
use eai_engine::time::Timestamp;
use tokio_postgres::Row;

use super::tx::{append_in, begin, Mode};
use super::{owner_of, owner_uuid, Ctx, PgDb};
use crate::anomalies::{
    currency_of, currency_text, direction_of, metric_of, recorded_audit, with_delivery, Anomaly,
    NewAnomaly,
};
use crate::roles::AnomalyStore;
use crate::{Result, Scope};

const INSERT: &str = "INSERT INTO eai.anomalies (deployment_id, tenant_id, hour_ms, metric, currency, \
    value, median, mad, deviation, direction, baseline_hours, detected_at_ms, next_attempt_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
    ON CONFLICT (deployment_id, hour_ms, metric, currency) DO NOTHING \
    RETURNING seq, deployment_id, tenant_id, hour_ms, metric, currency, value, median, mad, \
    deviation, direction, baseline_hours, detected_at_ms, attempts, next_attempt_ms, delivered_at_ms";
const LIST: &str = "SELECT seq, deployment_id, tenant_id, hour_ms, metric, currency, value, median, mad, \
    deviation, direction, baseline_hours, detected_at_ms, attempts, next_attempt_ms, delivered_at_ms \
    FROM eai.anomalies WHERE hour_ms >= $1 AND hour_ms < $2 ORDER BY hour_ms DESC, seq";
const DUE: &str = "SELECT seq, deployment_id, tenant_id, hour_ms, metric, currency, value, median, mad, \
    deviation, direction, baseline_hours, detected_at_ms, attempts, next_attempt_ms, delivered_at_ms \
    FROM eai.anomalies WHERE next_attempt_ms <= $1 AND delivered_at_ms IS NULL ORDER BY seq LIMIT $2";
const DELIVERED: &str = "UPDATE eai.anomalies SET attempts = attempts + 1, delivered_at_ms = $2, \
    next_attempt_ms = NULL, last_error = NULL WHERE seq = $1 AND delivered_at_ms IS NULL";
const FAILED: &str = "UPDATE eai.anomalies SET attempts = attempts + 1, next_attempt_ms = $2, \
    last_error = $3 WHERE seq = $1 AND delivered_at_ms IS NULL";

fn decode(r: &Row) -> Result<Anomaly> {
    let finding = NewAnomaly {
        deployment_id: r.get(1),
        owner: owner_of(r.get(2)),
        hour: Timestamp(r.get(3)),
        metric: metric_of(r.get(4))?,
        currency: currency_of(r.get(5))?,
        value: r.get(6),
        median: r.get(7),
        mad: r.get(8),
        deviation: r.get(9),
        direction: direction_of(r.get(10))?,
        baseline_hours: u32::try_from(r.get::<_, i32>(11)).unwrap_or(0),
        detected_at: Timestamp(r.get(12)),
        deliver: false,
    };
    Ok(with_delivery(
        r.get(0),
        finding,
        i64::from(r.get::<_, i32>(13)),
        r.get(14),
        r.get(15),
    ))
}

#[async_trait]
impl AnomalyStore for PgDb {
    async fn record_anomaly(&self, a: &NewAnomaly) -> Result<Option<Anomaly>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, Scope::Platform, Mode::Write).await?;
        let s = st.get(&tx, INSERT).await?;
        let owner = owner_uuid(a.owner)?;
        let baseline = i32::try_from(a.baseline_hours).unwrap_or(i32::MAX);
        let next = a.deliver.then_some(a.detected_at.0);
        let row = tx
            .query_opt(
                &s,
                &[
                    &a.deployment_id,
                    &owner,
                    &a.hour.0,
                    &a.metric.as_str(),
                    &currency_text(a.currency),
                    &a.value,
                    &a.median,
                    &a.mad,
                    &a.deviation,
                    &a.direction.as_str(),
                    &baseline,
                    &a.detected_at.0,
                    &next,
                ],
            )
            .await
            .ctx("record an anomaly")?;
        let recorded = row.as_ref().map(decode).transpose()?;
        if let Some(a) = &recorded {
            append_in(&tx, st, &recorded_audit(a)).await?;
        }
        tx.commit().await.ctx("commit an anomaly")?;
        Ok(recorded)
    }

    async fn anomalies(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Anomaly>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, scope, Mode::Snapshot).await?;
        let s = st.get(&tx, LIST).await?;
        let rows = tx
            .query(&s, &[&from.0, &to.0])
            .await
            .ctx("read anomalies")?;
        tx.commit().await.ctx("end read")?;
        rows.iter().map(decode).collect()
    }

    async fn due_anomaly_webhooks(&self, at: Timestamp, limit: u64) -> Result<Vec<Anomaly>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, Scope::Platform, Mode::Snapshot).await?;
        let s = st.get(&tx, DUE).await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = tx
            .query(&s, &[&at.0, &limit])
            .await
            .ctx("read due anomaly webhooks")?;
        tx.commit().await.ctx("end read")?;
        rows.iter().map(decode).collect()
    }

    async fn anomaly_webhook_attempted(
        &self,
        seq: i64,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, Scope::Platform, Mode::Write).await?;
        match outcome {
            Ok(()) => {
                let s = st.get(&tx, DELIVERED).await?;
                tx.execute(&s, &[&seq, &at.0]).await
            }
            Err(e) => {
                let s = st.get(&tx, FAILED).await?;
                tx.execute(&s, &[&seq, &next.map(|n| n.0), &e]).await
            }
        }
        .ctx("record an anomaly webhook attempt")?;
        tx.commit().await.ctx("commit an anomaly webhook attempt")?;
        Ok(())
    }
}
