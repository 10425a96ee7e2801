//! Statements on PostgreSQL (the rules: `crate::statements`). Issued on the platform path under a transaction
//! advisory lock, so that concurrent issues (on any replica) are ordered: the statement of a (tenant, month)
//! already there is read back, and the next number of a month is taken in the transaction that inserts it. A
//! tenant's reads see its own statements through row level security; a trigger refuses every update, delete
//! and truncate.

use async_trait::async_trait;
use eai_engine::domain::TenantId;
use eai_engine::statement::number;
use eai_engine::time::Timestamp;
use tokio_postgres::Row;

use super::tx::{append_in, begin, Mode};
use super::{Ctx, PgDb};
use crate::roles::StatementStore;
use crate::statements::{
    content, content_of, issued_audit, month_text, NewStatement, Statement, StatementNumber,
};
use crate::{AuditDraft, Result, Scope};

/// Serializes the issue of statements (advisory locks are per database).
const ISSUE_LOCK: i64 = 0x6561_695f_7374_6d74; // "eai_stmt"

const BY_TENANT_MONTH: &str =
    "SELECT number, tenant_id, month_ms, to_ms, issued_at_ms, issued_by, \
    content FROM eai.statements WHERE tenant_id = $1 AND month_ms = $2";
const NEXT: &str = "SELECT COALESCE(MAX(seq), 0) + 1 FROM eai.statements WHERE month_ms = $1";
const INSERT: &str =
    "INSERT INTO eai.statements (number, tenant_id, month_ms, to_ms, seq, issued_at_ms, \
    issued_by, content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const LIST: &str = "SELECT number, tenant_id, month_ms, to_ms, issued_at_ms, issued_by, content \
    FROM eai.statements WHERE ($1::bigint IS NULL OR month_ms = $1) AND ($2::uuid IS NULL OR tenant_id = $2) \
    ORDER BY month_ms DESC, seq";
const ONE: &str = "SELECT number, tenant_id, month_ms, to_ms, issued_at_ms, issued_by, content \
    FROM eai.statements WHERE number = $1";
const NUMBERS: &str = "SELECT tenant_id, number, month_ms FROM eai.statements \
    WHERE month_ms < $2 AND to_ms > $1 ORDER BY month_ms, seq";

fn decode(r: &Row) -> Result<Statement> {
    let (lines, totals) = content_of(r.get(6))?;
    Ok(Statement {
        number: r.get(0),
        issued: NewStatement {
            tenant_id: TenantId(r.get(1)),
            from: Timestamp(r.get(2)),
            to: Timestamp(r.get(3)),
            issued_at: Timestamp(r.get(4)),
            issued_by: r.get(5),
            lines,
            totals,
        },
    })
}

#[async_trait]
impl StatementStore for PgDb {
    async fn issue_statement(
        &self,
        s: &NewStatement,
        audit: &AuditDraft,
    ) -> Result<(Statement, bool)> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, Scope::Platform, Mode::Write).await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ISSUE_LOCK])
            .await
            .ctx("take the statements lock")?;
        let q = st.get(&tx, BY_TENANT_MONTH).await?;
        let before = tx
            .query_opt(&q, &[&s.tenant_id.0, &s.from.0])
            .await
            .ctx("read an issued statement")?;
        if let Some(row) = before {
            let existing = decode(&row)?;
            tx.commit().await.ctx("end a statement")?;
            return Ok((existing, false));
        }
        let q = st.get(&tx, NEXT).await?;
        let seq: i32 = tx
            .query_one(&q, &[&s.from.0])
            .await
            .ctx("number a statement")?
            .get(0);
        let issued = Statement {
            number: number(&month_text(s.from), u64::try_from(seq).unwrap_or(1)),
            issued: s.clone(),
        };
        let q = st.get(&tx, INSERT).await?;
        tx.execute(
            &q,
            &[
                &issued.number,
                &s.tenant_id.0,
                &s.from.0,
                &s.to.0,
                &seq,
                &s.issued_at.0,
                &s.issued_by,
                &content(s),
            ],
        )
        .await
        .ctx("issue a statement")?;
        append_in(&tx, st, &issued_audit(audit, &issued)).await?;
        tx.commit().await.ctx("commit a statement")?;
        Ok((issued, true))
    }

    async fn statements(
        &self,
        scope: Scope,
        month: Option<Timestamp>,
        tenant: Option<TenantId>,
    ) -> Result<Vec<Statement>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, scope, Mode::Snapshot).await?;
        let q = st.get(&tx, LIST).await?;
        let rows = tx
            .query(&q, &[&month.map(|m| m.0), &tenant.map(|t| t.0)])
            .await
            .ctx("read statements")?;
        tx.commit().await.ctx("end read")?;
        rows.iter().map(decode).collect()
    }

    async fn statement(&self, scope: Scope, number: &str) -> Result<Option<Statement>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, scope, Mode::Snapshot).await?;
        let q = st.get(&tx, ONE).await?;
        let row = tx.query_opt(&q, &[&number]).await.ctx("read a statement")?;
        tx.commit().await.ctx("end read")?;
        row.as_ref().map(decode).transpose()
    }

    async fn statement_numbers(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<StatementNumber>> {
        let mut c = self.conn().await?;
        let (tx, st) = begin(c.conn()?, scope, Mode::Snapshot).await?;
        let q = st.get(&tx, NUMBERS).await?;
        let rows = tx
            .query(&q, &[&from.0, &to.0])
            .await
            .ctx("read statement numbers")?;
        tx.commit().await.ctx("end read")?;
        Ok(rows
            .iter()
            .map(|r| StatementNumber {
                tenant_id: TenantId(r.get(0)),
                number: r.get(1),
                month: Timestamp(r.get(2)),
            })
            .collect())
    }
}
