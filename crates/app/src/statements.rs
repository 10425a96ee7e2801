//! Statements (`/v1/finops/gpu/statements`, `eai-gpu statement`): a tenant's closed month issued from the
//! allocation of the month as `GET /v1/finops/gpu/allocation` computes it (the figures: `eai_engine::statement`),
//! stored once and never changed (`eai_store::StatementStore`), then read with the adjustments that data arriving
//! since makes, computed at read time from the allocation now.

use std::collections::BTreeMap;

use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::batch::month;
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::money::Money;
use eai_engine::report::Allocation;
use eai_engine::statement::{self, Line};
use eai_engine::time::Timestamp;
use eai_store::statements::{NewStatement, Statement};
use eai_store::{AuditDraft, Scope, StatementStore, StoreError, TenantStore};

use crate::allocation::{compute_from, AllocationStore, Source};
use crate::forecast::days_fit;

/// What issuing a month answers: the statements issued by this call, and those issued before.
#[derive(Debug, Clone, Default)]
pub struct Issued {
    pub issued: Vec<Statement>,
    pub already_issued: Vec<Statement>,
}

/// An issued statement as read now: as issued, with its adjustments as of `as_of` and its tenant's name.
#[derive(Debug, Clone)]
pub struct Shown {
    pub statement: Statement,
    pub tenant_name: Option<String>,
    pub adjustments: Vec<Line>,
    pub adjusted_totals: Vec<Money>,
    pub as_of: Timestamp,
}

impl Shown {
    /// The statement as CSV (`eai_engine::statement::csv`).
    pub fn csv(&self) -> String {
        let i = &self.statement.issued;
        statement::csv(
            &i.lines,
            &i.totals,
            &self.adjustments,
            &self.adjusted_totals,
        )
    }
}

fn refused(reason: &str) -> StoreError {
    StoreError::Refused(vec![FieldError::new("period", reason)])
}

/// The month `YYYY-MM` as `[from, to)`; a month not over at `now` is refused (field `period`).
pub fn closed_month(period: &str, now: Timestamp) -> Result<(Timestamp, Timestamp), StoreError> {
    let (from, to) =
        month(period).ok_or_else(|| refused("must be a month, YYYY-MM, e.g. 2026-10"))?;
    if to > now {
        return Err(refused(
            "is not over yet: a month's statements are issued once it has ended",
        ));
    }
    Ok((from, to))
}

/// The month `YYYY-MM` as its start (a filter of the list).
pub fn month_start(period: &str) -> Result<Timestamp, StoreError> {
    month(period)
        .map(|(from, _)| from)
        .ok_or_else(|| refused("must be a month, YYYY-MM, e.g. 2026-10"))
}

/// The allocation of `[from, to)` with its day items (the unallocated capacity is read from them).
async fn allocation_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    (from, to): (Timestamp, Timestamp),
    config: AllocationConfig,
) -> Result<Allocation, StoreError> {
    days_fit(config).map_err(|e| StoreError::Refused(vec![e]))?;
    let period =
        Period::new(from, to, config.bucket_ms).map_err(|e| StoreError::Refused(vec![e]))?;
    let config = AllocationConfig {
        day_items: true,
        ..config
    };
    compute_from(source, store, period, config).await
}

/// Issues the statements of `period` (`YYYY-MM`, over at `now`): `tenant`'s, or, with none, every tenant's with
/// a cost in the month and the statement of unallocated capacity (the platform tenant, the nil uuid). Each is
/// stored with its audit event (`audit` completed by the store; its actor, a key id or `cli`, is who issued it);
/// one already issued is answered as it was.
pub async fn issue(
    store: &(impl AllocationStore + StatementStore + ?Sized),
    source: &Source,
    config: AllocationConfig,
    now: Timestamp,
    period: &str,
    tenant: Option<TenantId>,
    audit: &AuditDraft,
) -> Result<Issued, StoreError> {
    let (from, to) = closed_month(period, now)?;
    let allocation = allocation_of(source, store, (from, to), config).await?;
    let tenants = match tenant {
        Some(t) => vec![t],
        None => {
            let mut all = statement::tenants_with_cost(&allocation);
            all.push(TenantId::PLATFORM);
            all
        }
    };
    let mut out = Issued::default();
    for t in tenants {
        let lines = statement::lines(&allocation, t);
        if !statement::has_cost(&lines) {
            continue;
        }
        let new = NewStatement {
            tenant_id: t,
            from,
            to,
            issued_at: now,
            issued_by: audit.actor.clone(),
            totals: statement::totals(&lines),
            lines,
        };
        let (s, now_issued) = store.issue_statement(&new, audit).await?;
        if now_issued {
            out.issued.push(s);
        } else {
            out.already_issued.push(s);
        }
    }
    Ok(out)
}

/// The names of the tenants `scope` may see, by id.
pub async fn tenant_names(
    store: &(impl TenantStore + ?Sized),
    scope: Scope,
) -> Result<BTreeMap<TenantId, String>, StoreError> {
    Ok(store
        .tenants(scope)
        .await?
        .into_iter()
        .map(|t| (t.id, t.name))
        .collect())
}

/// The statement numbered `number` as `scope` may see it (another tenant's: `None`), with its adjustments
/// computed at `now` from the allocation of its month now: per deployment and policy, now minus as issued.
pub async fn read(
    store: &(impl AllocationStore + StatementStore + TenantStore + ?Sized),
    source: &Source,
    config: AllocationConfig,
    now: Timestamp,
    number: &str,
    scope: Scope,
) -> Result<Option<Shown>, StoreError> {
    let Some(s) = store.statement(scope, number).await? else {
        return Ok(None);
    };
    let i = &s.issued;
    let allocation = allocation_of(source, store, (i.from, i.to), config).await?;
    let adjustments = statement::adjustments(&i.lines, &statement::lines(&allocation, i.tenant_id));
    let adjusted_totals = statement::adjusted_totals(&i.totals, &adjustments);
    let tenant_name = tenant_names(store, scope).await?.remove(&i.tenant_id);
    Ok(Some(Shown {
        statement: s,
        tenant_name,
        adjustments,
        adjusted_totals,
        as_of: now,
    }))
}
