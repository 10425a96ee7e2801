//! Usage claims in SQLite (the sums are [`crate::rollups::groups`]'): one row per (hour, deployment, tenant),
//! the claims of the stored usage events of that key as exact integers, changed in the transaction of each usage
//! upsert ([`apply_claims`], from [`super::tx::upsert_in`]) and read for a period by the allocation
//! ([`claims_in`]).

use eai_engine::allocate::{claim_of, UsageClaim};
use eai_engine::domain::TenantId;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

use super::codec::{corrupt, Ctx};
use crate::outbox::OutboxRows;
use crate::records as rec;
use crate::rollups::groups::{fixed_bytes, fixed_from_bytes, ClaimDeltas, ClaimKey, ClaimSums};
use crate::Result;

fn claim_key_params(k: &ClaimKey) -> (i64, &str, String) {
    (
        k.bucket_ms,
        k.deployment_id.as_str(),
        k.tenant_id.to_string(),
    )
}

/// Adds a transaction's claim changes into the stored rows (deleting those no event adds up to any more), each
/// row written or deleted into `outbox` too when there is one.
pub fn apply_claims(
    tx: &Connection,
    claims: ClaimDeltas,
    mut outbox: Option<&mut OutboxRows>,
) -> Result<()> {
    for (key, delta) in claims.rows {
        let (bucket, dep, tenant) = claim_key_params(&key);
        let stored: Option<(Vec<u8>, Vec<u8>, i64)> = tx
            .prepare_cached(
                "SELECT gpu_seconds, tokens, events FROM usage_claims WHERE bucket_ms = ?1 AND deployment_id = ?2 AND tenant_id = ?3",
            )
            .and_then(|mut st| {
                st.query_row(params![bucket, dep, tenant], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .ctx("read a usage claim")?;
        let mut sums = match stored {
            Some((gs, tokens, events)) => ClaimSums {
                gpu_seconds: fixed_from_bytes::<1>(&gs, "usage_claims.gpu_seconds")?[0],
                tokens: fixed_from_bytes::<1>(&tokens, "usage_claims.tokens")?[0],
                events,
            },
            None => ClaimSums::default(),
        };
        sums.add(&delta);
        // A delta that changes nothing (an event re-sent as it was) goes out not at all.
        if let Some(o) = outbox
            .as_deref_mut()
            .filter(|_| delta != ClaimSums::default())
        {
            o.claim(&key, (sums.events > 0).then_some(&sums))?;
        }
        if sums.events <= 0 {
            tx.prepare_cached(
                "DELETE FROM usage_claims WHERE bucket_ms = ?1 AND deployment_id = ?2 AND tenant_id = ?3",
            )
            .and_then(|mut st| st.execute(params![bucket, dep, tenant]))
            .ctx("delete a usage claim")?;
            continue;
        }
        tx.prepare_cached(
            "INSERT OR REPLACE INTO usage_claims (bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut st| {
            st.execute(params![
                bucket,
                dep,
                tenant,
                fixed_bytes(&[sums.gpu_seconds]),
                fixed_bytes(&[sums.tokens]),
                sums.events
            ])
        })
        .ctx("write a usage claim")?;
    }
    Ok(())
}

/// The claims of the buckets in `[from, to)`.
pub fn claims_in(conn: &Connection, from: Timestamp, to: Timestamp) -> Result<Vec<UsageClaim>> {
    Ok(claim_rows_in(conn, from, to)?
        .into_iter()
        .map(|(c, _)| c)
        .collect())
}

/// The claims of the buckets in `[from, to)`, each with the count of events it sums.
pub fn claim_rows_in(
    conn: &Connection,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<(UsageClaim, i64)>> {
    let mut st = conn
        .prepare_cached(
            "SELECT bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events FROM usage_claims \
             WHERE bucket_ms >= ?1 AND bucket_ms < ?2 ORDER BY bucket_ms, deployment_id, tenant_id",
        )
        .ctx("prepare claims read")?;
    let mut rows = st.query(params![from.0, to.0]).ctx("read claims")?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().ctx("read claims")? {
        let tenant = r.get_ref(2).ctx("read claims")?;
        let tenant = tenant.as_str().ctx("read claims")?;
        let gs = r.get_ref(3).ctx("read claims")?;
        let tokens = r.get_ref(4).ctx("read claims")?;
        let key = ClaimKey {
            bucket_ms: r.get(0).ctx("read claims")?,
            deployment_id: r.get(1).ctx("read claims")?,
            tenant_id: TenantId::from_stored(tenant)
                .ok_or_else(|| corrupt("usage_claims.tenant_id", tenant))?,
        };
        let sums = ClaimSums {
            gpu_seconds: fixed_from_bytes::<1>(
                gs.as_blob().ctx("read claims")?,
                "usage_claims.gpu_seconds",
            )?[0],
            tokens: fixed_from_bytes::<1>(
                tokens.as_blob().ctx("read claims")?,
                "usage_claims.tokens",
            )?[0],
            events: r.get(5).ctx("read claims")?,
        };
        out.push((sums.to_claim(&key)?, sums.events));
    }
    Ok(out)
}

/// Rebuilds every claim from the stored usage events (the migration that introduced them).
pub fn rebuild_all_claims(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM usage_claims", [])
        .ctx("clear usage claims")?;
    let bodies: Vec<String> = conn
        .prepare("SELECT body FROM usage_events")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .ctx("read usage events")?;
    let mut claims = ClaimDeltas::default();
    for b in &bodies {
        claims.add(claim_of(&rec::event_parse(b)?).as_ref())?;
    }
    apply_claims(conn, claims, None)
}
