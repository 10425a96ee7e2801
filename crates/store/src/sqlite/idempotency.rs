//! Idempotency keys on SQLite: bind, send, decode (the rules: `crate::idempotency`). The one writer connection
//! and an `IMMEDIATE` transaction make a claim's read and write one atomic step.

use async_trait::async_trait;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::codec::Ctx;
use super::SqliteDb;
use crate::idempotency::{decide, status_of, Claim, Claimed, Stored, StoredAnswer};
use crate::roles::IdempotencyStore;
use crate::Result;

const GET: &str = "SELECT fingerprint, claimed_at_ms, status, content_type, location, body \
    FROM idempotency_keys WHERE caller = ?1 AND key = ?2";
const INSERT: &str = "INSERT INTO idempotency_keys \
    (caller, key, tenant, fingerprint, claim, claimed_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const TAKE_OVER: &str = "UPDATE idempotency_keys SET claim = ?3, claimed_at_ms = ?4 \
    WHERE caller = ?1 AND key = ?2 AND status IS NULL";
const COMPLETE: &str =
    "UPDATE idempotency_keys SET completed_at_ms = ?4, status = ?5, content_type = ?6, \
    location = ?7, body = ?8 WHERE caller = ?1 AND key = ?2 AND claim = ?3 AND status IS NULL";
const RELEASE: &str =
    "DELETE FROM idempotency_keys WHERE caller = ?1 AND key = ?2 AND claim = ?3 AND status IS NULL";
const PRUNE: &str = "DELETE FROM idempotency_keys WHERE claimed_at_ms < ?1";

type Row = (
    String,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<Vec<u8>>,
);

fn stored(row: Row) -> Result<Stored> {
    let (fingerprint, claimed_at, status, content_type, location, body) = row;
    let answer = match status {
        Some(s) => Some(StoredAnswer {
            status: status_of(s)?,
            content_type,
            location,
            body: body.unwrap_or_default(),
        }),
        None => None,
    };
    Ok(Stored {
        fingerprint,
        claimed_at: Timestamp(claimed_at),
        answer,
    })
}

fn claim(conn: &mut Connection, c: &Claim) -> Result<Claimed> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin an idempotency claim")?;
    let row: Option<Row> = tx
        .prepare_cached(GET)
        .and_then(|mut st| {
            st.query_row(params![c.caller, c.key], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .optional()
        })
        .ctx("read an idempotency key")?;
    let token = c.token.hyphenated().to_string();
    let answer = match row {
        None => {
            let tenant = c.tenant.map(|t| t.to_string()).unwrap_or_default();
            tx.prepare_cached(INSERT)
                .and_then(|mut st| {
                    st.execute(params![
                        c.caller,
                        c.key,
                        tenant,
                        c.fingerprint,
                        token,
                        c.at.0
                    ])
                })
                .ctx("claim an idempotency key")?;
            Claimed::Run
        }
        Some(row) => match decide(c, stored(row)?) {
            Some(found) => found,
            None => {
                tx.prepare_cached(TAKE_OVER)
                    .and_then(|mut st| st.execute(params![c.caller, c.key, token, c.at.0]))
                    .ctx("take an abandoned idempotency key over")?;
                Claimed::Run
            }
        },
    };
    tx.commit().ctx("commit an idempotency claim")?;
    Ok(answer)
}

fn complete(conn: &Connection, c: &Claim, a: &StoredAnswer, at: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(COMPLETE)
        .and_then(|mut st| {
            st.execute(params![
                c.caller,
                c.key,
                c.token.hyphenated().to_string(),
                at.0,
                i64::from(a.status),
                a.content_type,
                a.location,
                a.body
            ])
        })
        .ctx("store an idempotent answer")?;
    Ok(n == 1)
}

fn release(conn: &Connection, c: &Claim) -> Result<bool> {
    let n = conn
        .prepare_cached(RELEASE)
        .and_then(|mut st| st.execute(params![c.caller, c.key, c.token.hyphenated().to_string()]))
        .ctx("release an idempotency key")?;
    Ok(n == 1)
}

#[async_trait]
impl IdempotencyStore for SqliteDb {
    async fn claim_idempotency_key(&self, c: &Claim) -> Result<Claimed> {
        let c = c.clone();
        self.write(move |conn, _| claim(conn, &c)).await
    }

    async fn complete_idempotency_key(&self, c: &Claim, answer: &StoredAnswer) -> Result<bool> {
        let (c, answer) = (c.clone(), answer.clone());
        let at = Timestamp(crate::codec::now_ms());
        self.write(move |conn, _| complete(conn, &c, &answer, at))
            .await
    }

    async fn release_idempotency_key(&self, c: &Claim) -> Result<bool> {
        let c = c.clone();
        self.write(move |conn, _| release(conn, &c)).await
    }

    async fn prune_idempotency_keys(&self, before: Timestamp) -> Result<u64> {
        self.write(move |conn, _| {
            let n = conn
                .prepare_cached(PRUNE)
                .and_then(|mut st| st.execute(params![before.0]))
                .ctx("prune idempotency keys")?;
            Ok(n as u64)
        })
        .await
    }
}
