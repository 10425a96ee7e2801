//! Registered providers on PostgreSQL: bind, send, decode (the rules: `crate::providers`). Platform rows:
//! written and read on the platform path.

use super::pool::PgConn;
use super::tx::{append_in, begin, Mode};
use super::Ctx;
use crate::providers::{audit_details, provider_json, provider_parse, ProviderRecord};
use crate::{audit, AuditDraft, Result, Scope};

const UPSERT: &str = "INSERT INTO eai.providers (deployment_id, body, registered_at_ms) VALUES ($1, $2, $3) \
    ON CONFLICT (deployment_id) DO UPDATE SET body = excluded.body, registered_at_ms = excluded.registered_at_ms";
const ALL: &str =
    "SELECT deployment_id, body, registered_at_ms FROM eai.providers ORDER BY deployment_id";

/// Stores (or replaces) the deployment's registration and its audit event, in one transaction.
pub async fn register(
    conn: &mut PgConn,
    p: &ProviderRecord,
    draft: &AuditDraft,
) -> Result<ProviderRecord> {
    let body = provider_json(p)?;
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, UPSERT).await?;
    tx.execute(&s, &[&p.deployment_id, &body, &p.registered_at.0])
        .await
        .ctx("store a provider")?;
    append_in(
        &tx,
        st,
        &audit::completed(draft, Some(p.deployment_id.clone()), audit_details(p)),
    )
    .await?;
    tx.commit().await.ctx("commit provider registration")?;
    Ok(p.clone())
}

/// Every registration, by deployment id.
pub async fn providers(conn: &mut PgConn) -> Result<Vec<ProviderRecord>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, ALL).await?;
    let rows = tx.query(&s, &[]).await.ctx("read providers")?;
    tx.commit().await.ctx("end read")?;
    rows.iter()
        .map(|r| provider_parse(r.get(0), r.get::<_, &str>(1), r.get(2)))
        .collect()
}
