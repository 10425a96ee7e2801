//! Budgets, reservations, spend and threshold alerts in SQLite (the rules are [`crate::budgets`]). Every
//! decision runs in one `IMMEDIATE` transaction of the one writer: concurrent reservations are decided one
//! after the other, so they never over-grant. The spend a usage upsert adds is written with it, in `tx`.

use crate::roles::BudgetStore;
use crate::sqlite::SqliteDb;
use async_trait::async_trait;

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::budget::{Amounts, BudgetSpec, Standing};
use eai_engine::domain::TenantId;
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use uuid::Uuid;

use super::codec::{corrupt, dec_parse, dec_text, now_ms, Ctx};
use super::tx::{append_in, apply_spend, upsert_in};
use crate::budgets::{
    self as b, Alert, BudgetRecord, Delivery, NewBudget, NewReservation, Reservation,
    ReservationStatus, ReserveOutcome, SpendDeltas, SpendKey,
};
use crate::plan::changes::{self, DeliveryWrite};
use crate::records as rec;
use crate::{AuditDraft, Result, Scope};

fn tenant_parse(s: &str, what: &str) -> Result<TenantId> {
    TenantId::from_stored(s).ok_or_else(|| corrupt(what, s))
}

fn currency_parse(s: &str, what: &str) -> Result<Currency> {
    Currency::from_str(s).map_err(|_| corrupt(what, s))
}

// --- spend -----------------------------------------------------------------------------------------------------

/// Builds the spend rows from the usage events already stored (a file from before budgets).
pub fn rebuild_all_spend(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM spend", []).ctx("clear spend")?;
    let bodies: Vec<String> = conn
        .prepare("SELECT body FROM usage_events")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .ctx("read usage events")?;
    let mut spend = SpendDeltas::default();
    for body in &bodies {
        spend.add(&rec::event_parse(body)?);
    }
    apply_spend(conn, &spend)
}

/// The spend rows of `month` (of one tenant or all).
fn spent(conn: &Connection, scope: Scope, month: Timestamp) -> Result<BTreeMap<SpendKey, Amounts>> {
    type Row = (String, String, String, String);
    let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    };
    let rows: Vec<Row> = match scope {
        Scope::Platform => conn
            .prepare_cached("SELECT tenant_id, currency, cost, tokens FROM spend WHERE month_ms = ?1")
            .and_then(|mut st| st.query_map([month.0], map)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(
                "SELECT tenant_id, currency, cost, tokens FROM spend WHERE month_ms = ?1 AND tenant_id = ?2",
            )
            .and_then(|mut st| st.query_map(params![month.0, t.to_string()], map)?.collect()),
    }
    .ctx("read spend")?;
    rows.into_iter()
        .map(|(t, c, cost, tokens)| {
            Ok((
                SpendKey {
                    tenant_id: tenant_parse(&t, "spend.tenant_id")?,
                    month,
                    currency: currency_parse(&c, "spend.currency")?,
                },
                b::amounts_parse(&cost, &tokens, "spend")?,
            ))
        })
        .collect()
}

/// The open holds at `at` per (tenant, currency).
fn held(
    conn: &Connection,
    scope: Scope,
    at: Timestamp,
) -> Result<BTreeMap<(TenantId, Currency), Amounts>> {
    type Row = (String, String, String, String);
    let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    };
    let rows: Vec<Row> = match scope {
        Scope::Platform => conn
            .prepare_cached(
                "SELECT tenant_id, currency, estimate_cost, estimate_tokens FROM reservations \
                 WHERE status = 'held' AND expires_at_ms > ?1",
            )
            .and_then(|mut st| st.query_map([at.0], map)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(
                "SELECT tenant_id, currency, estimate_cost, estimate_tokens FROM reservations \
                 WHERE tenant_id = ?2 AND status = 'held' AND expires_at_ms > ?1",
            )
            .and_then(|mut st| st.query_map(params![at.0, t.to_string()], map)?.collect()),
    }
    .ctx("read holds")?;
    let mut out: BTreeMap<(TenantId, Currency), Amounts> = BTreeMap::new();
    for (t, c, cost, tokens) in rows {
        let key = (
            tenant_parse(&t, "reservations.tenant_id")?,
            currency_parse(&c, "reservations.currency")?,
        );
        let a = b::amounts_parse(&cost, &tokens, "reservations.estimate")?;
        let e = out.entry(key).or_default();
        *e = e.plus(a);
    }
    Ok(out)
}

// --- budgets ---------------------------------------------------------------------------------------------------

const BUDGET_COLS: &str =
    "seq, tenant_id, body, effective_from_ms, effective_to_ms, webhook_secret";

type BudgetRow = (i64, String, String, i64, Option<i64>, Option<String>);

fn budget_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BudgetRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn decode_budget((seq, tenant, body, from, to, secret): BudgetRow) -> Result<BudgetRecord> {
    let tenant = tenant_parse(&tenant, "budgets.tenant_id")?;
    b::budget_parse(seq, tenant, &body, from, to, secret)
}

fn insert_budget(tx: &Connection, nb: &NewBudget) -> Result<BudgetRecord> {
    let row = changes::budget_insert(nb)?;
    tx.prepare_cached(
        "INSERT INTO budgets (tenant_id, body, effective_from_ms, effective_to_ms, webhook_secret, created_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut st| {
        st.execute(params![
            row.tenant_id.to_string(),
            row.body,
            row.effective_from_ms,
            row.effective_to_ms,
            row.webhook_secret,
            now_ms()
        ])
    })
    .ctx("insert a budget")?;
    row.stored(nb, tx.last_insert_rowid())
}

pub fn create_budget(
    conn: &mut Connection,
    nb: &NewBudget,
    draft: &AuditDraft,
) -> Result<BudgetRecord> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin budget create")?;
    let r = insert_budget(&tx, nb)?;
    append_in(&tx, &changes::budget_created(draft, &r))?;
    tx.commit().ctx("commit budget create")?;
    Ok(r)
}

pub fn budgets(conn: &Connection, scope: Scope) -> Result<Vec<BudgetRecord>> {
    let rows: Vec<BudgetRow> = match scope {
        Scope::Platform => conn
            .prepare_cached(&format!("SELECT {BUDGET_COLS} FROM budgets ORDER BY seq"))
            .and_then(|mut st| st.query_map([], budget_row)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(&format!(
                "SELECT {BUDGET_COLS} FROM budgets WHERE tenant_id = ?1 ORDER BY seq"
            ))
            .and_then(|mut st| st.query_map([t.to_string()], budget_row)?.collect()),
    }
    .ctx("read budgets")?;
    rows.into_iter().map(decode_budget).collect()
}

/// A budget by id (any tenant's: [`changes::budget_close`] keeps to the scope).
fn budget_by_id(tx: &Connection, id: &str) -> Result<Option<BudgetRecord>> {
    let seq = b::budget_seq(id)?;
    let row: Option<BudgetRow> = tx
        .prepare_cached(&format!("SELECT {BUDGET_COLS} FROM budgets WHERE seq = ?1"))
        .and_then(|mut st| st.query_row([seq], budget_row).optional())
        .ctx("read a budget")?;
    row.map(decode_budget).transpose()
}

pub fn supersede_budget(
    conn: &mut Connection,
    scope: Scope,
    id: &str,
    at: Timestamp,
    replacement: Option<&BudgetSpec>,
    draft: &AuditDraft,
) -> Result<(BudgetRecord, Option<BudgetRecord>)> {
    changes::check_scope(scope, "budget", id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin budget supersede")?;
    let close = changes::budget_close(scope, id, at, budget_by_id(&tx, id)?, replacement)?;
    tx.prepare_cached("UPDATE budgets SET effective_to_ms = ?2 WHERE seq = ?1")
        .and_then(|mut st| st.execute(params![close.seq, close.at.0]))
        .ctx("close a budget")?;
    let opened = close
        .successor
        .as_ref()
        .map(|nb| insert_budget(&tx, nb))
        .transpose()?;
    append_in(&tx, &close.audited(draft, opened.as_ref()))?;
    tx.commit().ctx("commit budget supersede")?;
    Ok((close.closed, opened))
}

pub fn standings(conn: &Connection, scope: Scope, at: Timestamp) -> Result<Vec<Standing>> {
    let spent = spent(conn, scope, b::month_start(at))?;
    let held = held(conn, scope, at)?;
    Ok(changes::standings(budgets(conn, scope)?, &spent, &held, at))
}

// --- reservations ----------------------------------------------------------------------------------------------

const RES_COLS: &str =
    "id, tenant_id, action, deployment_id, currency, estimate_cost, estimate_tokens, status, \
     created_at_ms, expires_at_ms, closed_at_ms, actual_cost, actual_tokens, event_id";

fn reservation_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Reservation>> {
    let id: String = r.get(0)?;
    let tenant: String = r.get(1)?;
    let currency: String = r.get(4)?;
    let (cost, tokens): (String, String) = (r.get(5)?, r.get(6)?);
    let status: String = r.get(7)?;
    let actual: (Option<String>, Option<String>) = (r.get(11)?, r.get(12)?);
    let event: Option<String> = r.get(13)?;
    let (action, deployment_id, created, expires, closed): (
        String,
        Option<String>,
        i64,
        i64,
        Option<i64>,
    ) = (r.get(2)?, r.get(3)?, r.get(8)?, r.get(9)?, r.get(10)?);
    Ok((|| {
        Ok(Reservation {
            tenant_id: tenant_parse(&tenant, "reservations.tenant_id")?,
            action,
            deployment_id,
            currency: currency_parse(&currency, "reservations.currency")?,
            estimate: b::amounts_parse(&cost, &tokens, "reservations.estimate")?,
            status: ReservationStatus::from_str(&status)?,
            created_at: Timestamp(created),
            expires_at: Timestamp(expires),
            closed_at: closed.map(Timestamp),
            actual: match actual {
                (Some(c), Some(t)) => Some(b::amounts_parse(&c, &t, "reservations.actual")?),
                _ => None,
            },
            event_id: event
                .map(|e| Uuid::parse_str(&e).map_err(|_| corrupt("reservations.event_id", e)))
                .transpose()?,
            id,
        })
    })())
}

fn reservation_in(conn: &Connection, scope: Scope, id: &str) -> Result<Option<Reservation>> {
    let r = conn
        .prepare_cached(&format!(
            "SELECT {RES_COLS} FROM reservations WHERE id = ?1"
        ))
        .and_then(|mut st| st.query_row([id], reservation_row).optional())
        .ctx("read a reservation")?
        .transpose()?;
    Ok(changes::reservation_in_scope(scope, r))
}

pub fn reservation(conn: &Connection, scope: Scope, id: &str) -> Result<Option<Reservation>> {
    reservation_in(conn, scope, id)
}

pub fn reserve(
    conn: &mut Connection,
    req: &NewReservation,
    draft: &AuditDraft,
) -> Result<ReserveOutcome> {
    changes::reserve_check(req)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin reserve")?;
    let at = req.created_at;
    let scope = Scope::Tenant(req.request.tenant_id);
    let outcome = b::decide(req, &standings(&tx, scope, at)?)?;
    if let ReserveOutcome::Granted(r) = &outcome {
        tx.prepare_cached(
            "INSERT INTO reservations (id, tenant_id, action, deployment_id, currency, estimate_cost, estimate_tokens, \
             status, created_at_ms, expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'held', ?8, ?9)",
        )
        .and_then(|mut st| {
            st.execute(params![
                r.id,
                r.tenant_id.to_string(),
                r.action,
                r.deployment_id,
                r.currency.as_str(),
                dec_text(r.estimate.cost),
                dec_text(r.estimate.tokens),
                r.created_at.0,
                r.expires_at.0
            ])
        })
        .ctx("hold a reservation")?;
        append_in(&tx, &changes::reserved(draft, r))?;
        tx.commit().ctx("commit reserve")?;
    }
    Ok(outcome)
}

/// Writes a commit's or a release's reservation as [`changes::Closing`] says (its usage event first).
fn close_reservation(tx: &Connection, c: &changes::Closing, with_outbox: bool) -> Result<()> {
    if let Some(event) = &c.event {
        upsert_in(tx, std::slice::from_ref(event), with_outbox)?;
    }
    let r = &c.reservation;
    let (cost, tokens) = match r.actual {
        Some(a) => (Some(dec_text(a.cost)), Some(dec_text(a.tokens))),
        None => (None, None),
    };
    tx.prepare_cached(
        "UPDATE reservations SET status = ?2, closed_at_ms = ?3, actual_cost = ?4, actual_tokens = ?5, event_id = ?6 \
         WHERE id = ?1",
    )
    .and_then(|mut st| {
        st.execute(params![
            r.id,
            r.status.as_str(),
            r.closed_at.map(|t| t.0),
            cost,
            tokens,
            r.event_id.map(|e| e.hyphenated().to_string())
        ])
    })
    .ctx("close a reservation")?;
    Ok(())
}

pub fn commit(
    conn: &mut Connection,
    scope: Scope,
    id: &str,
    actual: Amounts,
    at: Timestamp,
    with_outbox: bool,
    draft: &AuditDraft,
) -> Result<Reservation> {
    changes::check_scope(scope, "reservation", id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin commit")?;
    let c = changes::commit(id, reservation_in(&tx, scope, id)?, actual, at)?;
    if c.changed {
        close_reservation(&tx, &c, with_outbox)?;
    }
    append_in(&tx, &c.audited(draft))?;
    tx.commit().ctx("commit a reservation")?;
    Ok(c.reservation)
}

pub fn release(
    conn: &mut Connection,
    scope: Scope,
    id: &str,
    at: Timestamp,
    draft: &AuditDraft,
) -> Result<Reservation> {
    changes::check_scope(scope, "reservation", id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin release")?;
    let c = changes::release(id, reservation_in(&tx, scope, id)?, at)?;
    if c.changed {
        close_reservation(&tx, &c, false)?;
    }
    append_in(&tx, &c.audited(draft))?;
    tx.commit().ctx("commit release")?;
    Ok(c.reservation)
}

pub fn expire(conn: &mut Connection, at: Timestamp) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin expire")?;
    let n = tx
        .execute(
            "UPDATE reservations SET status = 'expired', closed_at_ms = expires_at_ms \
             WHERE status = 'held' AND expires_at_ms <= ?1",
            [at.0],
        )
        .ctx("expire holds")?;
    if let Some(event) = changes::expired(at, n as u64) {
        append_in(&tx, &event)?;
    }
    tx.commit().ctx("commit expire")?;
    Ok(n as u64)
}

// --- threshold alerts ------------------------------------------------------------------------------------------

pub fn record_crossings(conn: &mut Connection, at: Timestamp) -> Result<Vec<Alert>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin crossings")?;
    let mut out = Vec::new();
    for c in changes::crossings(&standings(&tx, Scope::Platform, at)?, at)? {
        let a = &c.alert;
        let n = tx
                .prepare_cached(
                    "INSERT INTO budget_alerts (id, budget_seq, tenant_id, month_ms, threshold_pct, spent, crossed_at_ms, \
                     attempts, next_attempt_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?7) \
                     ON CONFLICT (budget_seq, month_ms, kind, threshold_pct) DO NOTHING",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        a.id.hyphenated().to_string(),
                        c.budget_seq,
                        a.tenant_id.to_string(),
                        c.month.0,
                        a.threshold_pct,
                        dec_text(a.spent),
                        a.crossed_at.0
                    ])
                })
                .ctx("record a crossing")?;
        if n > 0 {
            out.push(c.alert);
        }
    }
    for a in &out {
        append_in(&tx, &b::crossing_audit(a))?;
    }
    tx.commit().ctx("commit crossings")?;
    Ok(out)
}

/// Records a forecast alert unless its budget has one this month, with its audit event.
pub fn record_forecast_alert(conn: &mut Connection, a: &Alert) -> Result<bool> {
    let seq = b::budget_seq(&a.budget_id)?;
    let (expected, day) = a.kind.columns();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin a forecast alert")?;
    let n = tx
        .prepare_cached(
            "INSERT INTO budget_alerts (id, budget_seq, tenant_id, month_ms, kind, threshold_pct, spent, expected, \
             exhausted_on_ms, crossed_at_ms, attempts, next_attempt_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?9, 0, ?9) \
             ON CONFLICT (budget_seq, month_ms, kind, threshold_pct) DO NOTHING",
        )
        .and_then(|mut st| {
            st.execute(params![
                a.id.hyphenated().to_string(),
                seq,
                a.tenant_id.to_string(),
                a.month.0,
                a.kind.as_str(),
                dec_text(a.spent),
                expected.map(dec_text),
                day,
                a.crossed_at.0
            ])
        })
        .ctx("record a forecast alert")?;
    if n > 0 {
        append_in(&tx, &b::forecast_audit(a))?;
    }
    tx.commit().ctx("commit a forecast alert")?;
    Ok(n > 0)
}

pub fn due_deliveries(conn: &Connection, at: Timestamp, limit: u64) -> Result<Vec<Delivery>> {
    type Row = (
        (String, i64, String, i64, i64, String, i64, i64),
        (String, Option<String>, String, Option<String>, Option<i64>),
    );
    let rows: Vec<Row> = conn
        .prepare_cached(
            "SELECT a.id, a.budget_seq, a.tenant_id, a.month_ms, a.threshold_pct, a.spent, a.crossed_at_ms, a.attempts, \
             b.body, b.webhook_secret, a.kind, a.expected, a.exhausted_on_ms \
             FROM budget_alerts a JOIN budgets b ON b.seq = a.budget_seq \
             WHERE a.delivered_at_ms IS NULL AND a.next_attempt_ms <= ?1 AND a.attempts < ?2 \
             AND b.webhook_secret IS NOT NULL ORDER BY a.crossed_at_ms, a.id LIMIT ?3",
        )
        .and_then(|mut st| {
            st.query_map(params![at.0, b::MAX_ATTEMPTS, limit], |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                    ),
                    (r.get(8)?, r.get(9)?, r.get(10)?, r.get(11)?, r.get(12)?),
                ))
            })?
            .collect()
        })
        .ctx("read due deliveries")?;
    let mut out = Vec::new();
    for (
        (id, seq, tenant, month, pct, spent, crossed_at, attempts),
        (body, secret, kind, expected, exhausted_on_ms),
    ) in rows
    {
        let row = changes::DueRow {
            id: Uuid::parse_str(&id).map_err(|_| corrupt("budget_alerts.id", &id))?,
            budget_seq: seq,
            tenant_id: tenant_parse(&tenant, "budget_alerts.tenant_id")?,
            month_ms: month,
            threshold_pct: pct,
            kind: &kind,
            expected: expected
                .map(|e| dec_parse(&e, "budget_alerts.expected"))
                .transpose()?,
            exhausted_on_ms,
            spent: dec_parse(&spent, "budget_alerts.spent")?,
            crossed_at_ms: crossed_at,
            attempts,
            body: &body,
            webhook_secret: secret,
        };
        out.extend(changes::delivery(row)?);
    }
    Ok(out)
}

pub fn delivery_attempted(
    conn: &mut Connection,
    alert: Uuid,
    at: Timestamp,
    outcome: std::result::Result<(), String>,
    next: Option<Timestamp>,
) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin delivery")?;
    let id = alert.hyphenated().to_string();
    let (write, audit) = changes::delivery_attempt(alert, at, outcome, next);
    match write {
        DeliveryWrite::Delivered(at) => tx.execute(
            "UPDATE budget_alerts SET attempts = attempts + 1, delivered_at_ms = ?2, last_error = NULL WHERE id = ?1",
            params![id, at.0],
        ),
        DeliveryWrite::Retry(next, e) => tx.execute(
            "UPDATE budget_alerts SET attempts = attempts + 1, next_attempt_ms = ?2, last_error = ?3 WHERE id = ?1",
            params![id, next.0, e],
        ),
        DeliveryWrite::Abandoned(attempts, e) => tx.execute(
            "UPDATE budget_alerts SET attempts = ?2, last_error = ?3 WHERE id = ?1",
            params![id, attempts, e],
        ),
    }
    .ctx("record a delivery")?;
    if let Some(event) = audit {
        append_in(&tx, &event)?;
    }
    tx.commit().ctx("commit delivery")?;
    Ok(())
}

#[async_trait]
impl BudgetStore for SqliteDb {
    async fn create_budget(&self, budget: &NewBudget, audit: &AuditDraft) -> Result<BudgetRecord> {
        let (budget, audit) = (budget.clone(), audit.clone());
        self.write(move |c, _| create_budget(c, &budget, &audit))
            .await
    }

    async fn budgets(&self, scope: Scope) -> Result<Vec<BudgetRecord>> {
        self.read(move |c, _| budgets(c, scope)).await
    }

    async fn supersede_budget(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        replacement: Option<&BudgetSpec>,
        audit: &AuditDraft,
    ) -> Result<(BudgetRecord, Option<BudgetRecord>)> {
        let (id, replacement, audit) = (id.to_string(), replacement.cloned(), audit.clone());
        self.write(move |c, _| supersede_budget(c, scope, &id, at, replacement.as_ref(), &audit))
            .await
    }

    async fn budget_standings(&self, scope: Scope, at: Timestamp) -> Result<Vec<Standing>> {
        self.read(move |c, _| standings(c, scope, at)).await
    }

    async fn reserve(
        &self,
        request: &NewReservation,
        audit: &AuditDraft,
    ) -> Result<ReserveOutcome> {
        let (request, audit) = (request.clone(), audit.clone());
        self.write(move |c, _| reserve(c, &request, &audit)).await
    }

    async fn reservation(&self, scope: Scope, id: &str) -> Result<Option<Reservation>> {
        let id = id.to_string();
        self.read(move |c, _| reservation(c, scope, &id)).await
    }

    async fn commit_reservation(
        &self,
        scope: Scope,
        id: &str,
        actual: Amounts,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, cfg| commit(c, scope, &id, actual, at, cfg.outbox, &audit))
            .await
    }

    async fn release_reservation(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, _| release(c, scope, &id, at, &audit))
            .await
    }

    async fn expire_reservations(&self, at: Timestamp) -> Result<u64> {
        self.write(move |c, _| expire(c, at)).await
    }

    async fn record_crossings(&self, at: Timestamp) -> Result<Vec<Alert>> {
        self.write(move |c, _| record_crossings(c, at)).await
    }

    async fn record_forecast_alert(&self, alert: &Alert) -> Result<bool> {
        let alert = alert.clone();
        self.write(move |c, _| record_forecast_alert(c, &alert))
            .await
    }

    async fn due_deliveries(&self, at: Timestamp, limit: u64) -> Result<Vec<Delivery>> {
        self.read(move |c, _| due_deliveries(c, at, limit)).await
    }

    async fn delivery_attempted(
        &self,
        alert: uuid::Uuid,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()> {
        self.write(move |c, _| delivery_attempted(c, alert, at, outcome, next))
            .await
    }
}
