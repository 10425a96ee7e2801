//! What each change of the store writes, decided once for both backends without I/O (the ingest of samples is
//! [`crate::plan::ingest`], the upsert of usage events [`crate::plan::usage::UsagePlan`]). A backend runs every
//! change the same way, and only binds, sends and decodes:
//!
//! ```text
//!   begin ──> read what the plan needs ──> plan (here: refuse, or say which rows) ──> write the rows
//!                 (the row by id, locked)      (NotFound / Conflict / the writes)        │
//!   commit <── append the audit event <── draft of the event (here: resource + facts) <──┘
//! ```
//!
//! The refusals (an unknown id, another tenant's row, a closed policy, a revoked key...), the rows written, the
//! audit event and its facts, and the chain's next link are all decided here; each function's arguments are what
//! the backend read.

use crate::roles::NewSecret;
use eai_engine::budget::{crossed, Amounts, Standing};
use eai_engine::domain::{Policy, PolicySpec, Tenant, TenantId, UsageEvent};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::audit::{self, GENESIS_HASH};
use crate::budgets::{
    self as b, Alert, BudgetRecord, Delivery, NewBudget, NewReservation, Reservation,
    ReservationStatus,
};
use crate::codec::corrupt;
use crate::records as rec;
use crate::{
    ApiKeyRecord, AuditDraft, AuditEvent, AuditHead, KeyMatch, NewApiKey, Result, Scope, StoreError,
};

// --- audit ----------------------------------------------------------------------------------------------------

/// The event that links `draft` after the chain's last event (`None`: an empty chain), as it is stored. An
/// event of the reserved platform tenant is refused (platform events have no tenant).
pub fn audit_next(last: Option<(u64, String)>, draft: &AuditDraft) -> Result<AuditEvent> {
    rec::check_owner(draft.tenant_id)?;
    let (last_seq, prev_hash) = last.unwrap_or_else(|| (0, GENESIS_HASH.to_string()));
    let seq = last_seq + 1;
    let hash = audit::link(&prev_hash, seq, draft);
    Ok(AuditEvent {
        seq,
        draft: draft.clone(),
        prev_hash,
        hash,
    })
}

/// The chain's last event as stored (`seq`, `hash`), for [`audit_next`].
pub fn audit_last(row: Option<(i64, String)>) -> Result<Option<(u64, String)>> {
    row.map(|(seq, hash)| Ok((crate::codec::count(seq, "audit_events.seq")?, hash)))
        .transpose()
}

/// The chain's head as stored.
pub fn audit_head(row: Option<(i64, String)>) -> Result<Option<AuditHead>> {
    Ok(audit_last(row)?.map(|(seq, hash)| AuditHead { seq, hash }))
}

/// A stored audit row back as an event.
pub fn audit_event(seq: i64, prev_hash: String, hash: String, body: &str) -> Result<AuditEvent> {
    Ok(AuditEvent {
        seq: crate::codec::count(seq, "audit_events.seq")?,
        draft: rec::from_json(body, "audit event")?,
        prev_hash,
        hash,
    })
}

/// The audit event of a change of one resource, with no further facts.
pub fn changed(draft: &AuditDraft, resource: impl Into<String>) -> AuditDraft {
    audit::completed(draft, Some(resource.into()), Value::Null)
}

/// The audit event of an upsert of `n` usage events.
pub fn usage_upserted(draft: &AuditDraft, n: usize) -> AuditDraft {
    audit::completed(draft, None, json!({ "stored": n }))
}

/// The audit event of closing `closed` (a policy or a budget) and opening `opened` in its place.
fn superseded(draft: &AuditDraft, closed: &str, opened: Option<&str>) -> AuditDraft {
    audit::completed(draft, Some(closed.to_string()), json!({ "opened": opened }))
}

// --- scopes ---------------------------------------------------------------------------------------------------

/// A change of `what` `id` under `scope`: under the reserved platform tenant's scope, which no tenant acts as,
/// nothing is found to change (as a read finds nothing, [`Scope::reads_nothing`]), before anything is read.
pub fn check_scope(scope: Scope, what: &str, id: &str) -> Result<()> {
    if scope.reads_nothing() {
        return Err(StoreError::NotFound(format!("{what} {id}")));
    }
    Ok(())
}

// --- allocation policies --------------------------------------------------------------------------------------

/// A policy row to insert, and the rollup cuts its boundaries make ([`crate::rollups::Cuts`]).
#[derive(Debug, Clone)]
pub struct PolicyInsert {
    pub body: String,
    pub effective_from_ms: i64,
    pub effective_to_ms: Option<i64>,
    pub cuts: Vec<Timestamp>,
}

pub fn policy_insert(spec: &PolicySpec) -> Result<PolicyInsert> {
    Ok(PolicyInsert {
        body: rec::policy_json(spec)?,
        effective_from_ms: spec.effective_from.0,
        effective_to_ms: spec.effective_to.map(|t| t.0),
        cuts: [Some(spec.effective_from), spec.effective_to]
            .into_iter()
            .flatten()
            .collect(),
    })
}

/// Closing a policy: the row (`seq`) whose `effective_to` becomes `at`, the policy as it is then, the cut.
#[derive(Debug, Clone)]
pub struct PolicyClose {
    pub seq: i64,
    pub at: Timestamp,
    pub closed: Policy,
    pub cuts: Vec<Timestamp>,
}

/// Closing policy `id` (read as `stored`) at `at`: an unknown one is not found, one that may not be closed at
/// `at` a conflict ([`rec::check_supersede`]).
pub fn policy_close(id: &str, at: Timestamp, stored: Option<Policy>) -> Result<PolicyClose> {
    let mut old = stored.ok_or_else(|| StoreError::NotFound(format!("allocation policy {id}")))?;
    rec::check_supersede(&old, id, at)?;
    old.spec.effective_to = Some(at);
    Ok(PolicyClose {
        seq: rec::policy_seq(id)?,
        at,
        closed: old,
        cuts: vec![at],
    })
}

impl PolicyClose {
    /// The audit event of the supersede, once the replacement (if any) is stored.
    pub fn audited(&self, draft: &AuditDraft, opened: Option<&Policy>) -> AuditDraft {
        superseded(draft, &self.closed.id, opened.map(|p| p.id.as_str()))
    }
}

// --- API keys -------------------------------------------------------------------------------------------------

/// A key row to insert: the owner checked (the reserved platform tenant refused), the nodes as stored.
#[derive(Debug, Clone)]
pub struct KeyInsert {
    pub nodes: Option<String>,
}

/// Storing `key`, `taken` when a stored key already has its hash (read first: a refused insert would still use up
/// a PostgreSQL sequence number, and the next key's id would differ from SQLite's).
pub fn key_insert(key: &NewApiKey, taken: bool) -> Result<KeyInsert> {
    rec::check_owner(key.tenant_id)?;
    if taken {
        return Err(rec::duplicate_key());
    }
    Ok(KeyInsert {
        nodes: rec::nodes_json(&key.nodes)?,
    })
}

/// The key `id` (read as `stored`) as `scope` may change it: an unknown key, or another tenant's, is not found.
pub fn key_for_change(
    scope: Scope,
    id: &str,
    stored: Option<ApiKeyRecord>,
) -> Result<ApiKeyRecord> {
    let key = stored.ok_or_else(|| rec::key_not_found(id))?;
    rec::check_key_scope(&key, scope, id)?;
    Ok(key)
}

/// What a revocation writes: the key's row (`seq`) revoked at `at`; `None` when it is revoked already (its
/// first revocation stands).
pub fn key_revoke(key: &ApiKeyRecord, at: Timestamp) -> Result<Option<(i64, Timestamp)>> {
    if key.revoked() {
        return Ok(None);
    }
    Ok(Some((rec::key_seq(&key.id)?, at)))
}

/// What a rotation writes to the key's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRotation {
    pub seq: i64,
    pub hash: String,
    pub previous_hash: String,
    pub previous_valid_until: Timestamp,
    pub rotated_at: Timestamp,
}

/// Rotating `key` to the secret hashing to `new_hash`: a revoked key is a conflict ([`rec::check_rotate`]).
pub fn key_rotate(key: &ApiKeyRecord, secret: &NewSecret) -> Result<KeyRotation> {
    rec::check_rotate(key, &key.id, secret.at)?;
    Ok(KeyRotation {
        seq: rec::key_seq(&key.id)?,
        hash: secret.hash.clone(),
        previous_hash: key.hash.clone(),
        previous_valid_until: secret.grace_until,
        rotated_at: secret.at,
    })
}

/// The key found by a secret's hash, and which of its secrets it was.
pub fn key_match(found: Option<ApiKeyRecord>, hash: &str) -> Option<KeyMatch> {
    found.map(|key| KeyMatch {
        previous_secret: key.hash != hash,
        key,
    })
}

// --- tenants --------------------------------------------------------------------------------------------------

/// A tenant to register: the reserved platform tenant refused. A slug or id taken is [`rec::tenant_taken`].
pub fn tenant_insert(t: &Tenant) -> Result<()> {
    rec::check_tenant_id(t.id)
}

/// The audit event of a tenant registered.
pub fn tenant_created(draft: &AuditDraft, t: &Tenant) -> AuditDraft {
    changed(draft, t.id.to_string())
}

// --- budgets --------------------------------------------------------------------------------------------------

/// A budget row to insert (its webhook secret, a successor's carried over from the budget it replaces).
#[derive(Debug, Clone)]
pub struct BudgetInsert {
    pub tenant_id: TenantId,
    pub body: String,
    pub effective_from_ms: i64,
    pub effective_to_ms: Option<i64>,
    pub webhook_secret: Option<String>,
}

pub fn budget_insert(nb: &NewBudget) -> Result<BudgetInsert> {
    rec::check_tenant_id(nb.spec.tenant_id)?;
    Ok(BudgetInsert {
        tenant_id: nb.spec.tenant_id,
        body: b::budget_json(&nb.spec)?,
        effective_from_ms: nb.spec.effective_from.0,
        effective_to_ms: nb.spec.effective_to.map(|t| t.0),
        webhook_secret: nb.webhook_secret.clone(),
    })
}

impl BudgetInsert {
    /// The budget as stored under sequence number `seq`.
    pub fn stored(&self, nb: &NewBudget, seq: i64) -> Result<BudgetRecord> {
        Ok(BudgetRecord {
            budget: eai_engine::budget::Budget::new(
                u64::try_from(seq).map_err(|_| corrupt("budgets.seq", seq))?,
                nb.spec.clone(),
            ),
            webhook_secret: self.webhook_secret.clone(),
        })
    }
}

/// The audit event of a budget created.
pub fn budget_created(draft: &AuditDraft, r: &BudgetRecord) -> AuditDraft {
    audit::completed(draft, Some(r.budget.id.clone()), json!({}))
}

/// The budget `id` (read as `stored`) as `scope` may see it: another tenant's is not found.
pub fn budget_in_scope(
    scope: Scope,
    id: &str,
    stored: Option<BudgetRecord>,
) -> Result<BudgetRecord> {
    stored
        .filter(|r| match scope {
            Scope::Platform => true,
            Scope::Tenant(t) => r.budget.spec.tenant_id == t,
        })
        .ok_or_else(|| StoreError::NotFound(format!("budget {id}")))
}

/// Closing a budget: the row (`seq`) whose `effective_to` becomes `at`, the budget as it is then, and its
/// successor to insert (of the same tenant, with its webhook secret).
#[derive(Debug, Clone)]
pub struct BudgetClose {
    pub seq: i64,
    pub at: Timestamp,
    pub closed: BudgetRecord,
    pub successor: Option<NewBudget>,
}

/// Closing budget `id` (read as `stored`) at `at` under `scope`, `replacement` opened in its place: another
/// tenant's is not found, one that may not be closed at `at` or a successor of another tenant a conflict.
pub fn budget_close(
    scope: Scope,
    id: &str,
    at: Timestamp,
    stored: Option<BudgetRecord>,
    replacement: Option<&eai_engine::budget::BudgetSpec>,
) -> Result<BudgetClose> {
    let mut old = budget_in_scope(scope, id, stored)?;
    b::check_close(&old.budget, at)?;
    if let Some(spec) = replacement {
        b::check_replacement(&old.budget, spec)?;
    }
    old.budget.spec.effective_to = Some(at);
    Ok(BudgetClose {
        seq: b::budget_seq(id)?,
        at,
        successor: replacement.map(|spec| NewBudget {
            spec: spec.clone(),
            webhook_secret: old.webhook_secret.clone(),
        }),
        closed: old,
    })
}

impl BudgetClose {
    /// The tenant whose rows the supersede writes (the budget's own, whoever the caller is).
    pub fn tenant(&self) -> TenantId {
        self.closed.budget.spec.tenant_id
    }

    /// The audit event of the supersede, once the successor (if any) is stored.
    pub fn audited(&self, draft: &AuditDraft, opened: Option<&BudgetRecord>) -> AuditDraft {
        superseded(
            draft,
            &self.closed.budget.id,
            opened.map(|o| o.budget.id.as_str()),
        )
    }
}

/// The standings of the budgets (of a scope) in force at `at`, from the spend of `at`'s month and the open holds.
pub fn standings(
    budgets: Vec<BudgetRecord>,
    spent: &std::collections::BTreeMap<b::SpendKey, Amounts>,
    held: &std::collections::BTreeMap<(TenantId, eai_engine::money::Currency), Amounts>,
    at: Timestamp,
) -> Vec<Standing> {
    let active = budgets
        .into_iter()
        .map(|r| r.budget)
        .filter(|bud| bud.active_at(at))
        .collect();
    b::standings(active, spent, held, at)
}

// --- reservations ---------------------------------------------------------------------------------------------

/// A reservation request's tenant: the reserved platform tenant refused.
pub fn reserve_check(req: &NewReservation) -> Result<()> {
    rec::check_tenant_id(req.request.tenant_id)
}

/// The audit event of a hold granted.
pub fn reserved(draft: &AuditDraft, r: &Reservation) -> AuditDraft {
    audit::completed(
        draft,
        Some(r.id.clone()),
        json!({ "currency": r.currency.as_str(), "expires_at": r.expires_at.to_string() }),
    )
}

/// A reservation as `scope` may see it: another tenant's is none.
pub fn reservation_in_scope(scope: Scope, stored: Option<Reservation>) -> Option<Reservation> {
    stored.filter(|r| match scope {
        Scope::Platform => true,
        Scope::Tenant(t) => r.tenant_id == t,
    })
}

/// What a commit or a release does to a reservation: the reservation as it is afterwards, whether its row
/// changes (then it is written as it is now), and the commit's usage event (upserted first, in the same
/// transaction).
#[derive(Debug, Clone)]
pub struct Closing {
    pub reservation: Reservation,
    pub changed: bool,
    pub event: Option<UsageEvent>,
}

fn reservation_found(id: &str, stored: Option<Reservation>) -> Result<Reservation> {
    stored.ok_or_else(|| StoreError::NotFound(format!("reservation {id}")))
}

/// Committing reservation `id` (read as `stored`, in scope, under its tenant's lock) with the `actual` amounts:
/// a committed one is returned as it is, a released one is a conflict ([`b::check_commit`]).
pub fn commit(
    id: &str,
    stored: Option<Reservation>,
    actual: Amounts,
    at: Timestamp,
) -> Result<Closing> {
    let mut r = reservation_found(id, stored)?;
    if b::check_commit(&r)?.is_none() {
        return Ok(Closing {
            reservation: r,
            changed: false,
            event: None,
        });
    }
    let event = b::commit_event_of(&r, actual, at);
    r.status = ReservationStatus::Committed;
    r.actual = Some(actual);
    r.event_id = Some(event.event_id);
    r.closed_at = Some(at);
    Ok(Closing {
        reservation: r,
        changed: true,
        event: Some(event),
    })
}

/// Releasing reservation `id` (read as `stored`, in scope, under its tenant's lock): one that holds nothing any
/// more is returned as it is at `at`, a committed one is a conflict ([`b::check_release`]).
pub fn release(id: &str, stored: Option<Reservation>, at: Timestamp) -> Result<Closing> {
    let mut r = reservation_found(id, stored)?;
    let changed = b::check_release(&r, at)?.is_some();
    if changed {
        r.status = ReservationStatus::Released;
        r.closed_at = Some(at);
    } else {
        r.status = r.status_at(at);
    }
    Ok(Closing {
        reservation: r,
        changed,
        event: None,
    })
}

impl Closing {
    /// The audit event of the commit or release.
    pub fn audited(&self, draft: &AuditDraft) -> AuditDraft {
        audit::completed(
            draft,
            Some(self.reservation.id.clone()),
            json!({ "unchanged": !self.changed }),
        )
    }
}

/// The audit event of `n` holds marked expired at `at`: none when there were none.
pub fn expired(at: Timestamp, n: u64) -> Option<AuditDraft> {
    (n > 0).then(|| AuditDraft::system("system", "reservation.expire", at, json!({ "expired": n })))
}

// --- threshold alerts -----------------------------------------------------------------------------------------

/// A threshold a budget has reached this month: its alert row to insert unless one is recorded already (the
/// insert does nothing then), and the alert it is once inserted.
#[derive(Debug, Clone)]
pub struct Crossing {
    pub budget_seq: i64,
    pub month: Timestamp,
    pub alert: Alert,
}

/// The thresholds the budgets of `standings` (in force at `at`) have reached, in the order of the standings and
/// their thresholds: each with a fresh id. Their audit events ([`b::crossing_audit`]) follow the inserts, in
/// this order, for those inserted.
pub fn crossings(standings: &[Standing], at: Timestamp) -> Result<Vec<Crossing>> {
    let month = b::month_start(at);
    let mut out = Vec::new();
    for s in standings {
        let seq = b::budget_seq(&s.budget.id)?;
        for pct in crossed(&s.budget.spec, s.spent.cost) {
            out.push(Crossing {
                budget_seq: seq,
                month,
                alert: Alert::crossed(Uuid::new_v4(), s, pct, at),
            });
        }
    }
    Ok(out)
}

/// An alert row due for delivery, as read (joined with its budget's body and webhook secret).
#[derive(Debug, Clone)]
pub struct DueRow<'a> {
    pub id: Uuid,
    pub budget_seq: i64,
    pub tenant_id: TenantId,
    pub month_ms: i64,
    pub threshold_pct: i64,
    pub kind: &'a str,
    pub expected: Option<Decimal>,
    pub exhausted_on_ms: Option<i64>,
    pub spent: Decimal,
    pub crossed_at_ms: i64,
    pub attempts: i64,
    pub body: &'a str,
    pub webhook_secret: Option<String>,
}

/// A due row back as a delivery: none when its budget no longer has a webhook.
pub fn delivery(row: DueRow<'_>) -> Result<Option<Delivery>> {
    let rec = b::budget_parse(
        row.budget_seq,
        row.tenant_id,
        row.body,
        0,
        None,
        row.webhook_secret.clone(),
    )?;
    let spec = &rec.budget.spec;
    let (Some(url), Some(secret)) = (spec.webhook_url.clone(), row.webhook_secret) else {
        return Ok(None);
    };
    Ok(Some(Delivery {
        alert: Alert {
            id: row.id,
            budget_id: rec.budget.id.clone(),
            tenant_id: row.tenant_id,
            month: Timestamp(row.month_ms),
            kind: b::AlertKind::parse(row.kind, row.expected, row.exhausted_on_ms)?,
            threshold_pct: u32::try_from(row.threshold_pct)
                .map_err(|_| corrupt("budget_alerts.threshold_pct", row.threshold_pct))?,
            spent: row.spent,
            limit: spec.limit,
            currency: spec.currency,
            crossed_at: Timestamp(row.crossed_at_ms),
            attempts: u32::try_from(row.attempts)
                .map_err(|_| corrupt("budget_alerts.attempts", row.attempts))?,
            delivered_at: None,
        },
        url,
        secret,
    }))
}

/// What a delivery attempt writes to its alert row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryWrite {
    /// One attempt more, delivered at this instant.
    Delivered(Timestamp),
    /// One attempt more, the next one at this instant, and the error.
    Retry(Timestamp, String),
    /// Given up: the attempts set to [`b::MAX_ATTEMPTS`], and the last error.
    Abandoned(i64, String),
}

/// A delivery attempt of `alert` at `at` and what it writes, with the audit event of giving up (if it is).
pub fn delivery_attempt(
    alert: Uuid,
    at: Timestamp,
    outcome: std::result::Result<(), String>,
    next: Option<Timestamp>,
) -> (DeliveryWrite, Option<AuditDraft>) {
    match (outcome, next) {
        (Ok(()), _) => (DeliveryWrite::Delivered(at), None),
        (Err(e), Some(next)) => (DeliveryWrite::Retry(next, e), None),
        (Err(e), None) => {
            let audit = b::abandoned_audit(alert, at, &e);
            (
                DeliveryWrite::Abandoned(i64::from(b::MAX_ATTEMPTS), e),
                Some(audit),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> AuditDraft {
        AuditDraft::system("system", "test", Timestamp(0), Value::Null)
    }

    #[test]
    fn the_chain_starts_at_genesis_and_links_on() {
        let first = audit_next(None, &draft()).expect("first");
        assert_eq!((first.seq, first.prev_hash.as_str()), (1, GENESIS_HASH));
        let second = audit_next(Some((first.seq, first.hash.clone())), &draft()).expect("second");
        assert_eq!(second.seq, 2);
        assert_eq!(second.prev_hash, first.hash);
        assert_ne!(second.hash, first.hash);
    }

    #[test]
    fn an_event_of_the_reserved_tenant_is_refused() {
        let mut d = draft();
        d.tenant_id = Some(TenantId::PLATFORM);
        assert!(matches!(
            audit_next(None, &d),
            Err(StoreError::Conflict { field, .. }) if field == "tenant_id"
        ));
    }

    fn tenant(n: u8) -> TenantId {
        TenantId(Uuid::from_bytes([n; 16]))
    }

    fn eur() -> eai_engine::money::Currency {
        "EUR".parse().expect("eur")
    }

    fn held(t: TenantId) -> Reservation {
        let req = eai_engine::budget::ReservationRequest {
            tenant_id: t,
            action: "llm.invoke".into(),
            estimate: Amounts {
                cost: Decimal::new(50, 2),
                tokens: Decimal::from(10),
            },
            currency: None,
            deployment_id: None,
            ttl_ms: 60_000,
        };
        NewReservation::new(req, Timestamp(1_000)).granted(eur())
    }

    #[test]
    fn a_commit_writes_its_event_once_and_a_committed_reservation_is_left_as_it_is() {
        let r = held(tenant(1));
        let actual = Amounts {
            cost: Decimal::new(42, 2),
            tokens: Decimal::from(7),
        };
        let c = commit(&r.id, Some(r.clone()), actual, Timestamp(2_000)).expect("commit");
        assert!(c.changed);
        let event = c.event.clone().expect("the commit's usage event");
        assert_eq!(c.reservation.status, ReservationStatus::Committed);
        assert_eq!(c.reservation.event_id, Some(event.event_id));
        assert_eq!(c.reservation.closed_at, Some(Timestamp(2_000)));
        let again =
            commit(&r.id, Some(c.reservation.clone()), actual, Timestamp(3_000)).expect("again");
        assert!(!again.changed && again.event.is_none());
        assert_eq!(again.reservation, c.reservation);
        assert!(matches!(
            release(&r.id, Some(c.reservation), Timestamp(3_000)),
            Err(StoreError::Conflict { .. })
        ));
        assert!(matches!(
            commit("res_x", None, actual, Timestamp(3_000)),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn a_release_after_the_expiry_changes_nothing_and_says_expired() {
        let r = held(tenant(1));
        let late = release(&r.id, Some(r.clone()), Timestamp(61_000)).expect("release");
        assert!(!late.changed);
        assert_eq!(late.reservation.status, ReservationStatus::Expired);
        let id = r.id.clone();
        let early = release(&id, Some(r), Timestamp(2_000)).expect("release");
        assert!(early.changed);
        assert_eq!(early.reservation.status, ReservationStatus::Released);
    }

    #[test]
    fn another_tenants_rows_are_not_found_and_the_reserved_scope_finds_nothing() {
        let r = held(tenant(1));
        assert_eq!(
            reservation_in_scope(Scope::Tenant(tenant(2)), Some(r.clone())),
            None
        );
        assert_eq!(
            reservation_in_scope(Scope::Tenant(tenant(1)), Some(r.clone())),
            Some(r)
        );
        assert!(check_scope(Scope::Tenant(TenantId::PLATFORM), "budget", "bud_1").is_err());
        assert!(check_scope(Scope::Platform, "budget", "bud_1").is_ok());
    }

    #[test]
    fn giving_up_a_delivery_is_audited_and_a_retry_is_not() {
        let id = Uuid::nil();
        let (w, a) = delivery_attempt(id, Timestamp(5), Err("503".into()), None);
        assert_eq!(
            w,
            DeliveryWrite::Abandoned(i64::from(b::MAX_ATTEMPTS), "503".into())
        );
        assert!(a.is_some());
        let (w, a) = delivery_attempt(id, Timestamp(5), Err("503".into()), Some(Timestamp(9)));
        assert_eq!(w, DeliveryWrite::Retry(Timestamp(9), "503".into()));
        assert!(a.is_none());
        assert_eq!(
            delivery_attempt(id, Timestamp(5), Ok(()), None).0,
            DeliveryWrite::Delivered(Timestamp(5))
        );
    }
}
