//! Idempotency keys on PostgreSQL: bind, send, decode (the rules: `crate::idempotency`). A claim is one
//! `INSERT … ON CONFLICT DO UPDATE … WHERE` (insert if absent, or take an abandoned claim of the same request
//! over): the row is locked by the statement, so two replicas never both run one key. Rows are written under the
//! caller's own scope (its tenant, or the platform path) and pruned on the platform path.

use async_trait::async_trait;
use eai_engine::time::Timestamp;
use uuid::Uuid;

use super::pool::PgConn;
use super::tx::{begin, Mode};
use super::{owner_uuid, Ctx, PgDb};
use crate::idempotency::{decide, status_of, Claim, Claimed, Stored, StoredAnswer};
use crate::roles::IdempotencyStore;
use crate::{Result, Scope};

const CLAIM: &str = "INSERT INTO eai.idempotency_keys AS k \
    (caller, key, tenant_id, fingerprint, claim, claimed_at_ms) VALUES ($1, $2, $3, $4, $5, $6) \
    ON CONFLICT (caller, key) DO UPDATE SET claim = EXCLUDED.claim, claimed_at_ms = EXCLUDED.claimed_at_ms \
    WHERE k.status IS NULL AND k.fingerprint = EXCLUDED.fingerprint AND k.claimed_at_ms < $7 \
    RETURNING k.claim";
const GET: &str = "SELECT fingerprint, claimed_at_ms, status, content_type, location, body \
    FROM eai.idempotency_keys WHERE caller = $1 AND key = $2";
const COMPLETE: &str = "UPDATE eai.idempotency_keys SET completed_at_ms = $4, status = $5, \
    content_type = $6, location = $7, body = $8 \
    WHERE caller = $1 AND key = $2 AND claim = $3 AND status IS NULL";
const RELEASE: &str = "DELETE FROM eai.idempotency_keys \
    WHERE caller = $1 AND key = $2 AND claim = $3 AND status IS NULL";
const PRUNE: &str = "DELETE FROM eai.idempotency_keys WHERE claimed_at_ms < $1";

/// How often a claim looks again when the row it conflicted with was released before it could read it.
const CLAIM_TRIES: usize = 3;

/// The scope a caller's rows are written under.
fn scope_of(c: &Claim) -> Scope {
    c.tenant.map_or(Scope::Platform, Scope::Tenant)
}

async fn claim(conn: &mut PgConn, c: &Claim) -> Result<Claimed> {
    let owner = owner_uuid(c.tenant)?;
    for _ in 0..CLAIM_TRIES {
        let (tx, st) = begin(conn, scope_of(c), Mode::Write).await?;
        let s = st.get(&tx, CLAIM).await?;
        let won = tx
            .query_opt(
                &s,
                &[
                    &c.caller,
                    &c.key,
                    &owner,
                    &c.fingerprint,
                    &c.token,
                    &c.at.0,
                    &c.stale_before.0,
                ],
            )
            .await
            .ctx("claim an idempotency key")?
            .map(|r| r.get::<_, Uuid>(0));
        if won == Some(c.token) {
            tx.commit().await.ctx("commit an idempotency claim")?;
            return Ok(Claimed::Run);
        }
        let s = st.get(&tx, GET).await?;
        let row = tx
            .query_opt(&s, &[&c.caller, &c.key])
            .await
            .ctx("read an idempotency key")?;
        tx.commit().await.ctx("end an idempotency claim")?;
        let Some(r) = row else {
            // Released between the two statements: claim again.
            continue;
        };
        let answer = match r.get::<_, Option<i32>>(2) {
            Some(status) => Some(StoredAnswer {
                status: status_of(i64::from(status))?,
                content_type: r.get(3),
                location: r.get(4),
                body: r.get::<_, Option<Vec<u8>>>(5).unwrap_or_default(),
            }),
            None => None,
        };
        let stored = Stored {
            fingerprint: r.get(0),
            claimed_at: Timestamp(r.get(1)),
            answer,
        };
        // The statement would have taken an abandoned claim over: one seen as abandoned now was taken over by
        // another request since, and is in flight.
        return Ok(decide(c, stored).unwrap_or(Claimed::InFlight));
    }
    Ok(Claimed::InFlight)
}

async fn complete(conn: &mut PgConn, c: &Claim, a: &StoredAnswer, at: Timestamp) -> Result<bool> {
    let (tx, st) = begin(conn, scope_of(c), Mode::Write).await?;
    let s = st.get(&tx, COMPLETE).await?;
    let n = tx
        .execute(
            &s,
            &[
                &c.caller,
                &c.key,
                &c.token,
                &at.0,
                &i32::from(a.status),
                &a.content_type,
                &a.location,
                &a.body,
            ],
        )
        .await
        .ctx("store an idempotent answer")?;
    tx.commit().await.ctx("commit an idempotent answer")?;
    Ok(n == 1)
}

async fn release(conn: &mut PgConn, c: &Claim) -> Result<bool> {
    let (tx, st) = begin(conn, scope_of(c), Mode::Write).await?;
    let s = st.get(&tx, RELEASE).await?;
    let n = tx
        .execute(&s, &[&c.caller, &c.key, &c.token])
        .await
        .ctx("release an idempotency key")?;
    tx.commit().await.ctx("commit an idempotency release")?;
    Ok(n == 1)
}

async fn prune(conn: &mut PgConn, before: Timestamp) -> Result<u64> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, PRUNE).await?;
    let n = tx
        .execute(&s, &[&before.0])
        .await
        .ctx("prune idempotency keys")?;
    tx.commit().await.ctx("commit an idempotency prune")?;
    Ok(n)
}

#[async_trait]
impl IdempotencyStore for PgDb {
    async fn claim_idempotency_key(&self, c: &Claim) -> Result<Claimed> {
        let mut conn = self.conn().await?;
        claim(conn.conn()?, c).await
    }

    async fn complete_idempotency_key(&self, c: &Claim, answer: &StoredAnswer) -> Result<bool> {
        let mut conn = self.conn().await?;
        let at = Timestamp(crate::codec::now_ms());
        complete(conn.conn()?, c, answer, at).await
    }

    async fn release_idempotency_key(&self, c: &Claim) -> Result<bool> {
        let mut conn = self.conn().await?;
        release(conn.conn()?, c).await
    }

    async fn prune_idempotency_keys(&self, before: Timestamp) -> Result<u64> {
        let mut conn = self.conn().await?;
        prune(conn.conn()?, before).await
    }
}
