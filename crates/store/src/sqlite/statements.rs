//! Statements on SQLite (the rules: `crate::statements`): the one writer connection orders concurrent issues, so
//! the statement of a (tenant, month) already there is read back and the next number of a month is taken in the
//! transaction that inserts it; triggers refuse every update and delete.

use async_trait::async_trait;
use eai_engine::domain::TenantId;
use eai_engine::statement::number;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

use super::codec::Ctx;
use super::tx::append_in;
use super::SqliteDb;
use crate::roles::StatementStore;
use crate::statements::{
    content, content_of, issued_audit, month_text, tenant_of, NewStatement, Statement,
    StatementNumber,
};
use crate::{AuditDraft, Result, Scope};

const SELECT: &str = "SELECT number, tenant_id, month_ms, to_ms, issued_at_ms, issued_by, content \
    FROM statements";
const INSERT: &str =
    "INSERT INTO statements (number, tenant_id, month_ms, to_ms, seq, issued_at_ms, \
    issued_by, content) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

type Raw = (String, String, i64, i64, i64, String, String);

fn raw(r: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

fn decode(r: Raw) -> Result<Statement> {
    let (number, tenant, from, to, at, by, body) = r;
    let (lines, totals) = content_of(&body)?;
    Ok(Statement {
        number,
        issued: NewStatement {
            tenant_id: tenant_of(&tenant)?,
            from: Timestamp(from),
            to: Timestamp(to),
            issued_at: Timestamp(at),
            issued_by: by,
            lines,
            totals,
        },
    })
}

fn query(conn: &Connection, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<Statement>> {
    let rows: Vec<Raw> = conn
        .prepare_cached(sql)
        .and_then(|mut st| st.query_map(args, raw)?.collect())
        .ctx("read statements")?;
    rows.into_iter().map(decode).collect()
}

fn issue(conn: &mut Connection, s: &NewStatement, audit: &AuditDraft) -> Result<(Statement, bool)> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin a statement")?;
    let tenant = s.tenant_id.to_string();
    let before = query(
        &tx,
        &format!("{SELECT} WHERE tenant_id = ?1 AND month_ms = ?2"),
        &[&tenant, &s.from.0],
    )?;
    if let Some(existing) = before.into_iter().next() {
        return Ok((existing, false));
    }
    let seq: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM statements WHERE month_ms = ?1",
            params![s.from.0],
            |r| r.get(0),
        )
        .ctx("number a statement")?;
    let issued = Statement {
        number: number(&month_text(s.from), u64::try_from(seq).unwrap_or(1)),
        issued: s.clone(),
    };
    tx.prepare_cached(INSERT)
        .and_then(|mut st| {
            st.execute(params![
                issued.number,
                tenant,
                s.from.0,
                s.to.0,
                seq,
                s.issued_at.0,
                s.issued_by,
                content(s),
            ])
        })
        .ctx("issue a statement")?;
    append_in(&tx, &issued_audit(audit, &issued))?;
    tx.commit().ctx("commit a statement")?;
    Ok((issued, true))
}

/// The tenant a read is limited to: the scope's, else the one asked for.
fn only(scope: Scope, tenant: Option<TenantId>) -> Option<String> {
    match scope {
        Scope::Tenant(t) => Some(t.to_string()),
        Scope::Platform => tenant.map(|t| t.to_string()),
    }
}

#[async_trait]
impl StatementStore for SqliteDb {
    async fn issue_statement(
        &self,
        statement: &NewStatement,
        audit: &AuditDraft,
    ) -> Result<(Statement, bool)> {
        let (s, a) = (statement.clone(), audit.clone());
        self.write(move |conn, _| issue(conn, &s, &a)).await
    }

    async fn statements(
        &self,
        scope: Scope,
        month: Option<Timestamp>,
        tenant: Option<TenantId>,
    ) -> Result<Vec<Statement>> {
        let tenant = match (scope, tenant) {
            (Scope::Tenant(t), Some(asked)) if asked != t => return Ok(Vec::new()),
            _ => only(scope, tenant),
        };
        self.read(move |conn, _| {
            query(
                conn,
                &format!(
                    "{SELECT} WHERE (?1 IS NULL OR month_ms = ?1) AND (?2 IS NULL OR tenant_id = ?2) \
                     ORDER BY month_ms DESC, seq"
                ),
                &[&month.map(|m| m.0), &tenant],
            )
        })
        .await
    }

    async fn statement(&self, scope: Scope, number: &str) -> Result<Option<Statement>> {
        let (number, tenant) = (number.to_string(), only(scope, None));
        self.read(move |conn, _| {
            let row: Option<Raw> = conn
                .prepare_cached(&format!(
                    "{SELECT} WHERE number = ?1 AND (?2 IS NULL OR tenant_id = ?2)"
                ))
                .and_then(|mut st| st.query_row(params![number, tenant], raw).optional())
                .ctx("read a statement")?;
            row.map(decode).transpose()
        })
        .await
    }

    async fn statement_numbers(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<StatementNumber>> {
        let tenant = only(scope, None);
        self.read(move |conn, _| {
            let rows: Vec<(String, String, i64)> = conn
                .prepare_cached(
                    "SELECT tenant_id, number, month_ms FROM statements \
                     WHERE month_ms < ?2 AND to_ms > ?1 AND (?3 IS NULL OR tenant_id = ?3) \
                     ORDER BY month_ms, seq",
                )
                .and_then(|mut st| {
                    st.query_map(params![from.0, to.0, tenant], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })?
                    .collect()
                })
                .ctx("read statement numbers")?;
            rows.into_iter()
                .map(|(t, number, month)| {
                    Ok(StatementNumber {
                        tenant_id: tenant_of(&t)?,
                        month: Timestamp(month),
                        number,
                    })
                })
                .collect()
        })
        .await
    }
}
