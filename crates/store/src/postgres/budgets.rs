//! Budgets, reservations, spend and threshold alerts in PostgreSQL (the rules are [`crate::budgets`]). A
//! tenant's reservation decisions, commits and releases take the tenant's transaction advisory lock first, so
//! concurrent requests are decided one after the other and never over-grant; every table is a tenant table under
//! row level security, read and written under the caller's scope. The spend a usage upsert adds is written with
//! it, in `tx`.

use crate::postgres::PgDb;
use crate::roles::BudgetStore;
use async_trait::async_trait;

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::budget::{Amounts, BudgetSpec, Standing};
use eai_engine::domain::TenantId;
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Transaction};
use uuid::Uuid;

use super::pool::{PgConn, Stmts};
use super::tx::{append_in, begin, scope_args, set_scope, upsert_in, Mode, SET_SCOPE};
use super::{tenant_uuid, Ctx};
use crate::budgets::{
    self as b, Alert, BudgetRecord, Delivery, NewBudget, NewReservation, Reservation,
    ReservationStatus, ReserveOutcome, SpendKey,
};
use crate::codec::{corrupt, now_ms};
use crate::plan::changes::{self, DeliveryWrite};
use crate::{AuditDraft, Result, Scope};

/// The class of the budget locks ("eaib"), with the tenant folded to 32 bits as the second key.
const BUDGET_LOCK_CLASS: i32 = 0x6561_6962;
const BUDGET_LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, $2::int4)";

fn tenant_lock_key(t: TenantId) -> i32 {
    let mut k = [0u8; 4];
    for (i, x) in t.0.as_bytes().iter().enumerate() {
        k[i % 4] ^= x;
    }
    i32::from_le_bytes(k)
}

fn currency_parse(s: &str, what: &str) -> Result<Currency> {
    Currency::from_str(s).map_err(|_| corrupt(what, s))
}

// --- spend -----------------------------------------------------------------------------------------------------

const SPENT: &str = "SELECT tenant_id, currency, cost, tokens FROM eai.spend WHERE month_ms = $1";

async fn spent(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    month: Timestamp,
) -> Result<BTreeMap<SpendKey, Amounts>> {
    let s = st.get(tx, SPENT).await?;
    let rows = tx.query(&s, &[&month.0]).await.ctx("read spend")?;
    spent_of(&rows, month)
}

/// [`SPENT`]'s rows of `month`.
fn spent_of(rows: &[Row], month: Timestamp) -> Result<BTreeMap<SpendKey, Amounts>> {
    rows.iter()
        .map(|r| {
            Ok((
                SpendKey {
                    tenant_id: TenantId(r.get(0)),
                    month,
                    currency: currency_parse(r.get(1), "spend.currency")?,
                },
                Amounts {
                    cost: r.get(2),
                    tokens: r.get(3),
                },
            ))
        })
        .collect()
}

const HELD: &str = "SELECT tenant_id, currency, sum(estimate_cost), sum(estimate_tokens) \
     FROM eai.reservations WHERE status = 'held' AND expires_at_ms > $1 GROUP BY tenant_id, currency";

async fn held(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    at: Timestamp,
) -> Result<BTreeMap<(TenantId, Currency), Amounts>> {
    let s = st.get(tx, HELD).await?;
    let rows = tx.query(&s, &[&at.0]).await.ctx("read holds")?;
    held_of(&rows)
}

/// [`HELD`]'s rows.
fn held_of(rows: &[Row]) -> Result<BTreeMap<(TenantId, Currency), Amounts>> {
    rows.iter()
        .map(|r| {
            Ok((
                (
                    TenantId(r.get(0)),
                    currency_parse(r.get(1), "reservations.currency")?,
                ),
                Amounts {
                    cost: r.get(2),
                    tokens: r.get(3),
                },
            ))
        })
        .collect()
}

// --- budgets ---------------------------------------------------------------------------------------------------

const BUDGET_COLS: &str =
    "seq, tenant_id, body::text, effective_from_ms, effective_to_ms, webhook_secret";
const BUDGETS: &str =
    "SELECT seq, tenant_id, body::text, effective_from_ms, effective_to_ms, webhook_secret \
     FROM eai.budgets ORDER BY seq";
const BUDGET_BY_SEQ: &str =
    "SELECT seq, tenant_id, body::text, effective_from_ms, effective_to_ms, webhook_secret \
     FROM eai.budgets WHERE seq = $1";
const BUDGET_INSERT: &str = "INSERT INTO eai.budgets \
     (tenant_id, body, effective_from_ms, effective_to_ms, webhook_secret, created_at_ms) \
     VALUES ($1, $2::text::jsonb, $3, $4, $5, $6) RETURNING seq";
const BUDGET_CLOSE: &str = "UPDATE eai.budgets SET effective_to_ms = $2 WHERE seq = $1";

fn budget_of(r: &Row) -> Result<BudgetRecord> {
    debug_assert!(BUDGET_COLS.starts_with("seq"));
    b::budget_parse(
        r.get(0),
        TenantId(r.get(1)),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
    )
}

async fn insert_budget(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    nb: &NewBudget,
) -> Result<BudgetRecord> {
    let row = changes::budget_insert(nb)?;
    let s = st.get(tx, BUDGET_INSERT).await?;
    let seq: i64 = tx
        .query_one(
            &s,
            &[
                &row.tenant_id.0,
                &row.body,
                &row.effective_from_ms,
                &row.effective_to_ms,
                &row.webhook_secret,
                &now_ms(),
            ],
        )
        .await
        .ctx("insert a budget")?
        .get(0);
    row.stored(nb, seq)
}

pub async fn create_budget(
    conn: &mut PgConn,
    nb: &NewBudget,
    draft: &AuditDraft,
) -> Result<BudgetRecord> {
    changes::budget_insert(nb)?;
    let (tx, st) = begin(conn, Scope::Tenant(nb.spec.tenant_id), Mode::Write).await?;
    let r = insert_budget(&tx, st, nb).await?;
    append_in(&tx, st, &changes::budget_created(draft, &r)).await?;
    tx.commit().await.ctx("commit budget create")?;
    Ok(r)
}

/// Under [`Scope::Tenant`] the database returns that tenant's budgets only.
pub async fn budgets(conn: &mut PgConn, scope: Scope) -> Result<Vec<BudgetRecord>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let out = budgets_in(&tx, st).await?;
    tx.commit().await.ctx("end read")?;
    Ok(out)
}

async fn budgets_in(tx: &Transaction<'_>, st: &mut Stmts) -> Result<Vec<BudgetRecord>> {
    let s = st.get(tx, BUDGETS).await?;
    let rows = tx.query(&s, &[]).await.ctx("read budgets")?;
    rows.iter().map(budget_of).collect()
}

pub async fn supersede_budget(
    conn: &mut PgConn,
    scope: Scope,
    id: &str,
    at: Timestamp,
    replacement: Option<&BudgetSpec>,
    draft: &AuditDraft,
) -> Result<(BudgetRecord, Option<BudgetRecord>)> {
    changes::check_scope(scope, "budget", id)?;
    let seq = b::budget_seq(id)?;
    let (tx, st) = begin(conn, scope, Mode::Write).await?;
    let s = st.get(&tx, BUDGET_BY_SEQ).await?;
    let row = tx.query_opt(&s, &[&seq]).await.ctx("read a budget")?;
    let stored = row.as_ref().map(budget_of).transpose()?;
    let close = changes::budget_close(scope, id, at, stored, replacement)?;
    set_scope(&tx, st, Scope::Tenant(close.tenant())).await?;
    let s = st.get(&tx, BUDGET_CLOSE).await?;
    tx.execute(&s, &[&close.seq, &close.at.0])
        .await
        .ctx("close a budget")?;
    let opened = match &close.successor {
        Some(nb) => Some(insert_budget(&tx, st, nb).await?),
        None => None,
    };
    append_in(&tx, st, &close.audited(draft, opened.as_ref())).await?;
    tx.commit().await.ctx("commit budget supersede")?;
    Ok((close.closed, opened))
}

async fn standings_in(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    at: Timestamp,
) -> Result<Vec<Standing>> {
    let budgets = budgets_in(tx, st).await?;
    let spent = spent(tx, st, b::month_start(at)).await?;
    let held = held(tx, st, at).await?;
    Ok(changes::standings(budgets, &spent, &held, at))
}

/// Takes the tenant's budget lock, then reads its standings: one round trip (the statements pipelined in this
/// order, so that the reads run once the lock is held and see every decision committed before it, as if each
/// waited for the one before).
async fn locked_standings_in(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    tenant: TenantId,
    at: Timestamp,
) -> Result<Vec<Standing>> {
    let (lock, budgets, spent, held) = (
        st.get(tx, BUDGET_LOCK).await?,
        st.get(tx, BUDGETS).await?,
        st.get(tx, SPENT).await?,
        st.get(tx, HELD).await?,
    );
    let month = b::month_start(at);
    let key = tenant_lock_key(tenant);
    let lock_args: [&(dyn ToSql + Sync); 2] = [&BUDGET_LOCK_CLASS, &key];
    let (month_arg, at_arg): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 1]) =
        ([&month.0], [&at.0]);
    let (_, budgets, spent, held) = tokio::try_join!(
        tx.execute(&lock, &lock_args),
        tx.query(&budgets, &[]),
        tx.query(&spent, &month_arg),
        tx.query(&held, &at_arg),
    )
    .ctx("lock the tenant's budgets and read its standings")?;
    let budgets = budgets.iter().map(budget_of).collect::<Result<_>>()?;
    Ok(changes::standings(
        budgets,
        &spent_of(&spent, month)?,
        &held_of(&held)?,
        at,
    ))
}

/// The database scopes every read: a tenant's standings are computed from its rows only.
pub async fn standings(conn: &mut PgConn, scope: Scope, at: Timestamp) -> Result<Vec<Standing>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let out = standings_in(&tx, st, at).await?;
    tx.commit().await.ctx("end read")?;
    Ok(out)
}

// --- reservations ----------------------------------------------------------------------------------------------

const RES_SELECT: &str =
    "SELECT id, tenant_id, action, deployment_id, currency, estimate_cost, estimate_tokens, \
     status, created_at_ms, expires_at_ms, closed_at_ms, actual_cost, actual_tokens, event_id \
     FROM eai.reservations WHERE id = $1";
const RES_INSERT: &str =
    "INSERT INTO eai.reservations (id, tenant_id, action, deployment_id, currency, \
     estimate_cost, estimate_tokens, status, created_at_ms, expires_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'held', $8, $9)";
const RES_CLOSE: &str =
    "UPDATE eai.reservations SET status = $2, closed_at_ms = $3, actual_cost = $4, \
     actual_tokens = $5, event_id = $6 WHERE id = $1";
const RES_EXPIRE: &str =
    "UPDATE eai.reservations SET status = 'expired', closed_at_ms = expires_at_ms \
     WHERE status = 'held' AND expires_at_ms <= $1";

fn reservation_of(r: &Row) -> Result<Reservation> {
    let actual: (Option<Decimal>, Option<Decimal>) = (r.get(11), r.get(12));
    Ok(Reservation {
        id: r.get(0),
        tenant_id: TenantId(r.get(1)),
        action: r.get(2),
        deployment_id: r.get(3),
        currency: currency_parse(r.get(4), "reservations.currency")?,
        estimate: Amounts {
            cost: r.get(5),
            tokens: r.get(6),
        },
        status: ReservationStatus::from_str(r.get(7))?,
        created_at: Timestamp(r.get(8)),
        expires_at: Timestamp(r.get(9)),
        closed_at: r.get::<_, Option<i64>>(10).map(Timestamp),
        actual: match actual {
            (Some(cost), Some(tokens)) => Some(Amounts { cost, tokens }),
            _ => None,
        },
        event_id: r.get(13),
    })
}

async fn reservation_in(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    id: &str,
) -> Result<Option<Reservation>> {
    let s = st.get(tx, RES_SELECT).await?;
    tx.query_opt(&s, &[&id])
        .await
        .ctx("read a reservation")?
        .map(|r| reservation_of(&r))
        .transpose()
}

pub async fn reservation(conn: &mut PgConn, scope: Scope, id: &str) -> Result<Option<Reservation>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let r = reservation_in(&tx, st, id).await?;
    tx.commit().await.ctx("end read")?;
    Ok(r)
}

pub async fn reserve(
    conn: &mut PgConn,
    req: &NewReservation,
    draft: &AuditDraft,
) -> Result<ReserveOutcome> {
    changes::reserve_check(req)?;
    let tenant = req.request.tenant_id;
    let (tx, st) = begin(conn, Scope::Tenant(tenant), Mode::Write).await?;
    let outcome = b::decide(
        req,
        &locked_standings_in(&tx, st, tenant, req.created_at).await?,
    )?;
    if let ReserveOutcome::Granted(r) = &outcome {
        let s = st.get(&tx, RES_INSERT).await?;
        tx.execute(
            &s,
            &[
                &r.id,
                &tenant_uuid(r.tenant_id)?,
                &r.action,
                &r.deployment_id,
                &r.currency.as_str(),
                &r.estimate.cost,
                &r.estimate.tokens,
                &r.created_at.0,
                &r.expires_at.0,
            ],
        )
        .await
        .ctx("hold a reservation")?;
        append_in(&tx, st, &changes::reserved(draft, r)).await?;
        tx.commit().await.ctx("commit reserve")?;
    }
    Ok(outcome)
}

/// Writes a commit's or a release's reservation as [`changes::Closing`] says (its usage event first).
async fn close_reservation(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    c: &changes::Closing,
    with_outbox: bool,
) -> Result<()> {
    if let Some(event) = &c.event {
        upsert_in(tx, st, std::slice::from_ref(event), with_outbox).await?;
    }
    let r = &c.reservation;
    let s = st.get(tx, RES_CLOSE).await?;
    tx.execute(
        &s,
        &[
            &r.id,
            &r.status.as_str(),
            &r.closed_at.map(|t| t.0),
            &r.actual.map(|a| a.cost),
            &r.actual.map(|a| a.tokens),
            &r.event_id,
        ],
    )
    .await
    .ctx("close a reservation")?;
    Ok(())
}

/// Reads a reservation under `scope`, then acts for its tenant under the tenant's budget lock and reads it again
/// (a concurrent commit or release has finished by then). None: not found in the scope.
async fn locked_reservation(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    scope: Scope,
    id: &str,
) -> Result<Option<Reservation>> {
    let Some(r) = changes::reservation_in_scope(scope, reservation_in(tx, st, id).await?) else {
        return Ok(None);
    };
    // One round trip, pipelined in this order: act for the tenant, take its lock, read the reservation again.
    let (tenant_arg, platform_arg) = scope_args(Scope::Tenant(r.tenant_id))?;
    let (scope_sql, lock, select) = (
        st.get(tx, SET_SCOPE).await?,
        st.get(tx, BUDGET_LOCK).await?,
        st.get(tx, RES_SELECT).await?,
    );
    let key = tenant_lock_key(r.tenant_id);
    let scope_params: [&(dyn ToSql + Sync); 2] = [&tenant_arg, &platform_arg];
    let lock_args: [&(dyn ToSql + Sync); 2] = [&BUDGET_LOCK_CLASS, &key];
    let id_arg: [&(dyn ToSql + Sync); 1] = [&id];
    let (_, _, row) = tokio::try_join!(
        tx.execute(&scope_sql, &scope_params),
        tx.execute(&lock, &lock_args),
        tx.query_opt(&select, &id_arg),
    )
    .ctx("lock the tenant's budgets and read a reservation")?;
    row.map(|r| reservation_of(&r)).transpose()
}

#[allow(clippy::too_many_arguments)]
pub async fn commit(
    conn: &mut PgConn,
    scope: Scope,
    id: &str,
    actual: Amounts,
    at: Timestamp,
    with_outbox: bool,
    draft: &AuditDraft,
) -> Result<Reservation> {
    changes::check_scope(scope, "reservation", id)?;
    let (tx, st) = begin(conn, scope, Mode::Write).await?;
    let stored = locked_reservation(&tx, st, scope, id).await?;
    let c = changes::commit(id, stored, actual, at)?;
    if c.changed {
        close_reservation(&tx, st, &c, with_outbox).await?;
    }
    append_in(&tx, st, &c.audited(draft)).await?;
    tx.commit().await.ctx("commit a reservation")?;
    Ok(c.reservation)
}

pub async fn release(
    conn: &mut PgConn,
    scope: Scope,
    id: &str,
    at: Timestamp,
    draft: &AuditDraft,
) -> Result<Reservation> {
    changes::check_scope(scope, "reservation", id)?;
    let (tx, st) = begin(conn, scope, Mode::Write).await?;
    let stored = locked_reservation(&tx, st, scope, id).await?;
    let c = changes::release(id, stored, at)?;
    if c.changed {
        close_reservation(&tx, st, &c, false).await?;
    }
    append_in(&tx, st, &c.audited(draft)).await?;
    tx.commit().await.ctx("commit release")?;
    Ok(c.reservation)
}

pub async fn expire(conn: &mut PgConn, at: Timestamp) -> Result<u64> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, RES_EXPIRE).await?;
    let n = tx.execute(&s, &[&at.0]).await.ctx("expire holds")?;
    if let Some(event) = changes::expired(at, n) {
        append_in(&tx, st, &event).await?;
    }
    tx.commit().await.ctx("commit expire")?;
    Ok(n)
}

// --- threshold alerts ------------------------------------------------------------------------------------------

const ALERT_INSERT: &str =
    "INSERT INTO eai.budget_alerts (id, budget_seq, tenant_id, month_ms, threshold_pct, \
     spent, crossed_at_ms, attempts, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $7) \
     ON CONFLICT (budget_seq, month_ms, kind, threshold_pct) DO NOTHING";
const FORECAST_ALERT_INSERT: &str =
    "INSERT INTO eai.budget_alerts (id, budget_seq, tenant_id, month_ms, kind, threshold_pct, spent, expected, \
     exhausted_on_ms, crossed_at_ms, attempts, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9, 0, $9) \
     ON CONFLICT (budget_seq, month_ms, kind, threshold_pct) DO NOTHING";
/// One transaction at a time records crossings (two servers on one database would otherwise race).
const CROSSINGS_LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, 0)";
const DUE: &str = "SELECT a.id, a.budget_seq, a.tenant_id, a.month_ms, a.threshold_pct, a.spent, a.crossed_at_ms, \
     a.attempts, b.body::text, b.webhook_secret, a.kind, a.expected, a.exhausted_on_ms FROM eai.budget_alerts a JOIN eai.budgets b ON b.seq = a.budget_seq \
     WHERE a.delivered_at_ms IS NULL AND a.next_attempt_ms <= $1 AND a.attempts < $2 \
     AND b.webhook_secret IS NOT NULL ORDER BY a.crossed_at_ms, a.id LIMIT $3";
const DELIVERED: &str =
    "UPDATE eai.budget_alerts SET attempts = attempts + 1, delivered_at_ms = $2, \
     last_error = NULL WHERE id = $1";
const FAILED: &str = "UPDATE eai.budget_alerts SET attempts = attempts + 1, next_attempt_ms = $2, \
     last_error = $3 WHERE id = $1";
const ABANDONED: &str = "UPDATE eai.budget_alerts SET attempts = $2, last_error = $3 WHERE id = $1";

pub async fn record_crossings(conn: &mut PgConn, at: Timestamp) -> Result<Vec<Alert>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, CROSSINGS_LOCK).await?;
    tx.execute(&s, &[&BUDGET_LOCK_CLASS])
        .await
        .ctx("lock the crossings")?;
    let mut out = Vec::new();
    for c in changes::crossings(&standings_in(&tx, st, at).await?, at)? {
        let a = &c.alert;
        let pct =
            i32::try_from(a.threshold_pct).map_err(|_| corrupt("threshold", a.threshold_pct))?;
        let ins = st.get(&tx, ALERT_INSERT).await?;
        let n = tx
            .execute(
                &ins,
                &[
                    &a.id,
                    &c.budget_seq,
                    &tenant_uuid(a.tenant_id)?,
                    &c.month.0,
                    &pct,
                    &a.spent,
                    &a.crossed_at.0,
                ],
            )
            .await
            .ctx("record a crossing")?;
        if n > 0 {
            out.push(c.alert);
        }
    }
    for a in &out {
        append_in(&tx, st, &b::crossing_audit(a)).await?;
    }
    tx.commit().await.ctx("commit crossings")?;
    Ok(out)
}

/// Records a forecast alert unless its budget has one this month, with its audit event.
pub async fn record_forecast_alert(conn: &mut PgConn, a: &Alert) -> Result<bool> {
    let seq = b::budget_seq(&a.budget_id)?;
    let (expected, day) = a.kind.columns();
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, FORECAST_ALERT_INSERT).await?;
    let n = tx
        .execute(
            &s,
            &[
                &a.id,
                &seq,
                &tenant_uuid(a.tenant_id)?,
                &a.month.0,
                &a.kind.as_str(),
                &a.spent,
                &expected,
                &day,
                &a.crossed_at.0,
            ],
        )
        .await
        .ctx("record a forecast alert")?;
    if n > 0 {
        append_in(&tx, st, &b::forecast_audit(a)).await?;
    }
    tx.commit().await.ctx("commit a forecast alert")?;
    Ok(n > 0)
}

pub async fn due_deliveries(conn: &mut PgConn, at: Timestamp, limit: u64) -> Result<Vec<Delivery>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, DUE).await?;
    let max = i32::try_from(b::MAX_ATTEMPTS).unwrap_or(i32::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx
        .query(&s, &[&at.0, &max, &limit])
        .await
        .ctx("read due deliveries")?;
    tx.commit().await.ctx("end read")?;
    let mut out = Vec::new();
    for r in &rows {
        let row = changes::DueRow {
            id: r.get(0),
            budget_seq: r.get(1),
            tenant_id: TenantId(r.get(2)),
            month_ms: r.get(3),
            threshold_pct: i64::from(r.get::<_, i32>(4)),
            kind: r.get(10),
            expected: r.get(11),
            exhausted_on_ms: r.get(12),
            spent: r.get(5),
            crossed_at_ms: r.get(6),
            attempts: i64::from(r.get::<_, i32>(7)),
            body: r.get(8),
            webhook_secret: r.get(9),
        };
        out.extend(changes::delivery(row)?);
    }
    Ok(out)
}

pub async fn delivery_attempted(
    conn: &mut PgConn,
    alert: Uuid,
    at: Timestamp,
    outcome: std::result::Result<(), String>,
    next: Option<Timestamp>,
) -> Result<()> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let (write, audit) = changes::delivery_attempt(alert, at, outcome, next);
    match write {
        DeliveryWrite::Delivered(at) => {
            let s = st.get(&tx, DELIVERED).await?;
            tx.execute(&s, &[&alert, &at.0]).await
        }
        DeliveryWrite::Retry(next, e) => {
            let s = st.get(&tx, FAILED).await?;
            tx.execute(&s, &[&alert, &next.0, &e]).await
        }
        DeliveryWrite::Abandoned(attempts, e) => {
            let s = st.get(&tx, ABANDONED).await?;
            let attempts = i32::try_from(attempts).unwrap_or(i32::MAX);
            tx.execute(&s, &[&alert, &attempts, &e]).await
        }
    }
    .ctx("record a delivery")?;
    if let Some(event) = audit {
        append_in(&tx, st, &event).await?;
    }
    tx.commit().await.ctx("commit delivery")?;
    Ok(())
}

#[async_trait]
impl BudgetStore for PgDb {
    async fn create_budget(&self, budget: &NewBudget, audit: &AuditDraft) -> Result<BudgetRecord> {
        let mut c = self.conn().await?;
        create_budget(c.conn()?, budget, audit).await
    }

    async fn budgets(&self, scope: Scope) -> Result<Vec<BudgetRecord>> {
        let mut c = self.conn().await?;
        budgets(c.conn()?, scope).await
    }

    async fn supersede_budget(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        replacement: Option<&BudgetSpec>,
        audit: &AuditDraft,
    ) -> Result<(BudgetRecord, Option<BudgetRecord>)> {
        let mut c = self.conn().await?;
        supersede_budget(c.conn()?, scope, id, at, replacement, audit).await
    }

    async fn budget_standings(&self, scope: Scope, at: Timestamp) -> Result<Vec<Standing>> {
        let mut c = self.conn().await?;
        standings(c.conn()?, scope, at).await
    }

    async fn reserve(
        &self,
        request: &NewReservation,
        audit: &AuditDraft,
    ) -> Result<ReserveOutcome> {
        let mut c = self.conn().await?;
        reserve(c.conn()?, request, audit).await
    }

    async fn reservation(&self, scope: Scope, id: &str) -> Result<Option<Reservation>> {
        let mut c = self.conn().await?;
        reservation(c.conn()?, scope, id).await
    }

    async fn commit_reservation(
        &self,
        scope: Scope,
        id: &str,
        actual: Amounts,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let mut c = self.conn().await?;
        commit(
            c.conn()?,
            scope,
            id,
            actual,
            at,
            self.inner.cfg.outbox,
            audit,
        )
        .await
    }

    async fn release_reservation(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let mut c = self.conn().await?;
        release(c.conn()?, scope, id, at, audit).await
    }

    async fn expire_reservations(&self, at: Timestamp) -> Result<u64> {
        let mut c = self.conn().await?;
        expire(c.conn()?, at).await
    }

    async fn record_crossings(&self, at: Timestamp) -> Result<Vec<Alert>> {
        let mut c = self.conn().await?;
        record_crossings(c.conn()?, at).await
    }

    async fn record_forecast_alert(&self, alert: &Alert) -> Result<bool> {
        let mut c = self.conn().await?;
        record_forecast_alert(c.conn()?, alert).await
    }

    async fn due_deliveries(&self, at: Timestamp, limit: u64) -> Result<Vec<Delivery>> {
        let mut c = self.conn().await?;
        due_deliveries(c.conn()?, at, limit).await
    }

    async fn delivery_attempted(
        &self,
        alert: Uuid,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()> {
        let mut c = self.conn().await?;
        delivery_attempted(c.conn()?, alert, at, outcome, next).await
    }
}
