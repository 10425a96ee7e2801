use super::contract::{budget_spec, new_budget};
use super::plans::{arb_raw, make_plan, parts, to_sample};
use super::*;
use eai_store::{AuditStore, NewSecret};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Ingest(Vec<Sample>),
    Usage(Vec<UsageEvent>),
    CreatePolicy(PolicySpec),
    Supersede {
        policy: u8,
        at: i64,
        replacement: Option<PolicySpec>,
    },
    Prune(i64),
    Read {
        from: i64,
        to: i64,
    },
    CreateTenant(u8),
    CreateKey {
        hash: u8,
        tenant: Option<u8>,
    },
    RevokeKey {
        scope: Option<u8>,
        key: u8,
        at: i64,
    },
    RotateKey {
        scope: Option<u8>,
        key: u8,
        hash: u8,
        at: i64,
    },
    CreateBudget {
        tenant: u8,
        limit: u64,
        enforce: bool,
    },
    SupersedeBudget {
        scope: Option<u8>,
        budget: u8,
        at: i64,
        replacement: Option<(u8, u64)>,
    },
    /// A reservation request: its id is drawn once, so both stores get the same one.
    Reserve(eai_store::budgets::NewReservation),
    Commit {
        scope: Option<u8>,
        nth: u8,
        cost: u64,
        at: i64,
    },
    Release {
        scope: Option<u8>,
        nth: u8,
        at: i64,
    },
    Expire(i64),
}

/// A tenant of the sequences (1 to 3), or the reserved platform tenant (0).
fn who(n: u8) -> TenantId {
    match n % 4 {
        0 => TenantId(eai_store::PLATFORM_TENANT_ID),
        n => tenant(n),
    }
}

fn scope_of(s: Option<u8>) -> Scope {
    s.map_or(Scope::Platform, |n| Scope::Tenant(who(n)))
}

fn cents(n: u64) -> Decimal {
    Decimal::new((n % 20_000) as i64, 2)
}

/// (kind, index, quarter hours after `T0`, flag, amount)
type RawOp = (u8, u8, i64, bool, u64);

fn policy_spec(name: String, quarter: i64, flag: bool, n: u64) -> PolicySpec {
    let mut p = spec(&name);
    p.effective_from = ts(T0 + quarter * H / 4);
    p.gpu_hourly_cost = NonNegative::new(Decimal::new(100 + (n % 400) as i64, 2)).unwrap();
    if flag {
        p.deployment_pattern = Glob::new("tgi-*").unwrap();
        p.idle_capacity = IdleCapacity::Proportional;
    }
    p
}

/// Turns raw parts into a sequence: ingest ops take the plan's batches in turn (those left go last), usage
/// ops its events (and re-send earlier ones, changed: replacements, some by another source).
fn ops(plan: super::contract::Plan, raw: Vec<RawOp>) -> Vec<Op> {
    let mut batches = plan.batches.into_iter();
    let mut usage = plan.usage.into_iter();
    let mut sent: Vec<UsageEvent> = Vec::new();
    let mut out = Vec::new();
    for (i, (kind, ix, quarter, flag, n)) in raw.into_iter().enumerate() {
        match kind {
            0..=3 => out.extend(batches.next().map(Op::Ingest)),
            4 | 5 => {
                let mut v: Vec<UsageEvent> = usage.by_ref().take(1 + ix as usize % 3).collect();
                if !sent.is_empty() && (flag || v.is_empty()) {
                    let mut again = sent[ix as usize % sent.len()].clone();
                    again.units.insert(
                        "tokens_in".into(),
                        NonNegative::new(Decimal::from(n % 5_000)).unwrap(),
                    );
                    again.occurred_at = ts(T0 + quarter.rem_euclid(20) * H / 4);
                    // Now and then the platform's record, or a gateway's event replacing one (refused).
                    again.source = if n % 5 == 0 { "allocation" } else { "gateway" }.into();
                    v.push(again);
                }
                sent.extend(v.iter().cloned());
                if !v.is_empty() {
                    out.push(Op::Usage(v));
                }
            }
            6 => out.push(Op::CreatePolicy(policy_spec(
                format!("p{i}"),
                quarter,
                flag,
                n,
            ))),
            7 => out.push(Op::Supersede {
                policy: ix % 6,
                at: quarter,
                replacement: flag.then(|| policy_spec(format!("r{i}"), quarter, n % 2 == 0, n)),
            }),
            8 => out.push(Op::Prune(quarter)),
            9 => out.push(Op::Read {
                from: quarter.min(quarter + i64::from(ix % 12)),
                to: quarter + i64::from(ix % 12) + 1,
            }),
            10 => out.push(Op::CreateTenant(ix)),
            11 => out.push(Op::CreateKey {
                hash: ix % 8,
                tenant: flag.then_some((n % 4) as u8),
            }),
            12 => out.push(Op::RevokeKey {
                scope: flag.then_some((n % 4) as u8),
                key: ix % 6,
                at: quarter,
            }),
            13 => out.push(Op::RotateKey {
                scope: flag.then_some((n % 4) as u8),
                key: ix % 6,
                hash: (n % 8) as u8,
                at: quarter,
            }),
            14 => out.push(Op::CreateBudget {
                tenant: ix,
                limit: n,
                enforce: flag,
            }),
            15 => out.push(Op::SupersedeBudget {
                scope: (n % 3 == 0).then_some(ix),
                budget: ix % 5,
                at: quarter,
                replacement: flag.then_some(((n % 4) as u8, n / 7)),
            }),
            16 | 17 => out.push(Op::Reserve(reservation_request(ix, n, quarter))),
            18 => {
                let scope = (n % 3 == 0).then_some(ix);
                out.push(if flag {
                    Op::Commit {
                        scope,
                        nth: ix,
                        cost: n / 3,
                        at: quarter,
                    }
                } else {
                    Op::Release {
                        scope,
                        nth: ix,
                        at: quarter,
                    }
                })
            }
            _ => out.push(Op::Expire(quarter)),
        }
    }
    out.extend(batches.map(Op::Ingest));
    out
}

fn reservation_request(t: u8, n: u64, quarter: i64) -> eai_store::budgets::NewReservation {
    eai_store::budgets::NewReservation::new(
        eai_engine::budget::ReservationRequest {
            tenant_id: who(t),
            action: "llm.invoke".into(),
            estimate: eai_engine::budget::Amounts {
                cost: cents(n),
                tokens: Decimal::from(n % 1_000),
            },
            currency: n
                .is_multiple_of(5)
                .then(|| Currency::from_str("EUR").unwrap()),
            deployment_id: Some("vllm-a".into()),
            ttl_ms: 60_000 * (1 + (n % 90) as i64),
        },
        ts(T0 + quarter * H / 4),
    )
}

fn arb_ops() -> impl Strategy<Value = Vec<Op>> {
    let raw_op = (0u8..20, any::<u8>(), -8i64..24, any::<bool>(), any::<u64>());
    (
        prop::collection::vec(arb_raw(), 0..120),
        parts(),
        prop::collection::vec(raw_op, 4..40),
    )
        .prop_map(|(raws, parts, raw_ops)| {
            let plan = make_plan(raws.into_iter().map(to_sample).collect(), parts);
            ops(plan, raw_ops)
        })
}

/// An answer as compared: the value, or the error's text (an internal error is a failure). Values are
/// compared as values: decimals by number (SQLite reads sums at 15 places, PostgreSQL's `numeric` at the
/// scale written).
fn answer<T>(r: eai_store::Result<T>) -> Result<T, String> {
    match r {
        Ok(v) => Ok(v),
        Err(StoreError::Internal(e) | StoreError::Unavailable(e) | StoreError::Full(e)) => {
            panic!("a store failed: {e}")
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The hours a policy starts or ends inside, from the policies stored.
fn exact_of(policies: &[Policy]) -> Vec<Timestamp> {
    policies
        .iter()
        .flat_map(|p| std::iter::once(p.spec.effective_from).chain(p.spec.effective_to))
        .filter(|t| t.floor_to(H) != *t)
        .collect()
}

/// A usage read as compared: rollups, gaps and claims, in the order read.
type Read = (
    Vec<Rollup>,
    Vec<eai_engine::report::Gap>,
    Vec<eai_engine::allocate::UsageClaim>,
);

/// Two reads compared part by part, the first difference named.
fn same_read(x: Result<Read, String>, y: Result<Read, String>, what: &str) {
    let (Ok(x), Ok(y)) = (&x, &y) else {
        assert_eq!(x, y, "{what}");
        return;
    };
    fn first<T: PartialEq + std::fmt::Debug>(a: &[T], b: &[T], part: &str, what: &str) {
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            panic!(
                "{what}: {part} differ at {i} (of {} / {}):\n  sqlite:   {:?}\n  postgres: {:?}",
                a.len(),
                b.len(),
                a.get(i),
                b.get(i)
            );
        }
    }
    first(&x.0, &y.0, "rollups", what);
    first(&x.1, &y.1, "gaps", what);
    first(&x.2, &y.2, "claims", what);
}

async fn read(s: &dyn Store, from: i64, to: i64) -> Result<Read, String> {
    let exact = exact_of(&s.policies().await.unwrap());
    answer(s.allocation_usage(ts(from), ts(to), &exact).await)
        .map(|r| (r.rollups, r.gaps, r.claims))
}

/// Applies `op` to both stores and compares the answers; `held` gathers the reservations granted.
async fn apply(a: &dyn Store, b: &dyn Store, op: &Op, i: usize, held: &mut Vec<String>) {
    macro_rules! same {
        ($s:ident => $call:expr) => {{
            let x = {
                let $s = a;
                answer($call.await)
            };
            let y = {
                let $s = b;
                answer($call.await)
            };
            assert_eq!(x, y, "operation {i} answered differently: {op:?}");
        }};
    }
    match op {
        Op::Ingest(batch) => same!(s => s.insert_samples(batch.to_vec(), &audit())),
        Op::Usage(v) => same!(s => s.upsert_usage_events(v, &audit())),
        Op::CreatePolicy(p) => same!(s => s.create_policy(p, &audit())),
        Op::Supersede {
            policy,
            at,
            replacement,
        } => {
            let id = format!("alp_{policy}");
            same!(s => s.supersede_policy(
                &id,
                ts(T0 + at * H / 4),
                replacement.as_ref(),
                &audit()
            ))
        }
        Op::Prune(q) => same!(s => s.prune_raw_samples(ts(T0 + q * H / 4))),
        Op::CreateTenant(n) => {
            let t = eai_engine::domain::Tenant {
                id: who(*n),
                slug: format!("team-{}", n % 4).parse().unwrap(),
                name: format!("Team {n}"),
            };
            same!(s => s.create_tenant(&t, &audit()))
        }
        Op::CreateKey { hash, tenant } => {
            let key = new_key(
                &format!("hash-{hash}"),
                if tenant.is_some() {
                    Role::TenantAdmin
                } else {
                    Role::PlatformAdmin
                },
                tenant.map(who),
                Some("k"),
                ts(T0),
            );
            same!(s => s.create_api_key(&key, &audit()))
        }
        Op::RevokeKey { scope, key, at } => {
            let id = format!("key_{key}");
            same!(s => s.revoke_api_key(scope_of(*scope), &id, ts(T0 + at * H / 4), &audit()))
        }
        Op::RotateKey {
            scope,
            key,
            hash,
            at,
        } => {
            let (id, hash, at) = (
                format!("key_{key}"),
                format!("hash-{hash}"),
                ts(T0 + at * H / 4),
            );
            let secret = NewSecret {
                hash,
                at,
                grace_until: ts(at.0 + H),
            };
            same!(s => s.rotate_api_key(scope_of(*scope), &id, &secret, &audit()))
        }
        Op::CreateBudget {
            tenant,
            limit,
            enforce,
        } => {
            let nb = new_budget(budget_spec(
                who(*tenant),
                &cents(*limit).to_string(),
                *enforce,
            ));
            same!(s => s.create_budget(&nb, &audit()))
        }
        Op::SupersedeBudget {
            scope,
            budget,
            at,
            replacement,
        } => {
            let (id, at) = (format!("bud_{budget}"), ts(T0 + at * H / 4));
            let replacement = replacement.map(|(t, limit)| {
                let mut spec = budget_spec(who(t), &cents(limit).to_string(), limit % 2 == 0);
                spec.effective_from = at;
                spec
            });
            same!(s => s.supersede_budget(scope_of(*scope), &id, at, replacement.as_ref(), &audit()))
        }
        Op::Reserve(req) => {
            let x = answer(a.reserve(req, &audit()).await);
            let y = answer(b.reserve(req, &audit()).await);
            assert_eq!(x, y, "operation {i} answered differently: {op:?}");
            if let Ok(eai_store::budgets::ReserveOutcome::Granted(r)) = x {
                held.push(r.id);
            }
        }
        Op::Commit {
            scope,
            nth,
            cost,
            at,
        } => {
            let id = held
                .get(*nth as usize % held.len().max(1))
                .cloned()
                .unwrap_or_default();
            let actual = eai_engine::budget::Amounts {
                cost: cents(*cost),
                tokens: Decimal::from(cost % 700),
            };
            let at = ts(T0 + at * H / 4);
            same!(s => s.commit_reservation(scope_of(*scope), &id, actual, at, &audit()))
        }
        Op::Release { scope, nth, at } => {
            let id = held
                .get(*nth as usize % held.len().max(1))
                .cloned()
                .unwrap_or_default();
            let at = ts(T0 + at * H / 4);
            same!(s => s.release_reservation(scope_of(*scope), &id, at, &audit()))
        }
        Op::Expire(q) => same!(s => s.expire_reservations(ts(T0 + q * H / 4))),
        Op::Read { from, to } => {
            let (from, to) = (T0 + from * H / 4, T0 + to * H / 4);
            same_read(
                read(a, from, to).await,
                read(b, from, to).await,
                &format!("operation {i} answered differently: {op:?}"),
            );
        }
    }
}

/// What both stores hold, read back in the order each answers, compared after operation `i`.
async fn same_state(a: &dyn Store, b: &dyn Store, i: usize, held: &[String]) {
    macro_rules! same {
        ($what:literal, $s:ident => $call:expr) => {{
            let x = {
                let $s = a;
                answer($call.await)
            };
            let y = {
                let $s = b;
                answer($call.await)
            };
            assert_eq!(x, y, "{} after operation {i}", $what);
        }};
    }
    let end = ts(T0 + 48 * H);
    same_read(
        read(a, T0 - 4 * H, T0 + 8 * H).await,
        read(b, T0 - 4 * H, T0 + 8 * H).await,
        &format!("usage after operation {i}"),
    );
    same!("usage events", s => s.usage_events(Scope::Platform, ts(0), end));
    same!("a tenant's events", s => s
        .usage_events(Scope::Tenant(tenant(2)), ts(0), end));
    same!("policies", s => s.policies());
    same!("deployments", s => s.deployments_seen());
    same!("latest samples", s => s.latest_samples(ts(0), 100));
    same!("nodes", s => s.nodes_last_seen(ts(0)));
    same!("audit head", s => s.audit_head());
    // Every scope: the platform, each tenant, and the reserved platform tenant (which finds nothing).
    for scope in [None, Some(0), Some(1), Some(2), Some(3)].map(scope_of) {
        same!("keys", s => s.api_keys(scope));
        same!("tenants", s => s.tenants(scope));
        same!("budgets", s => s.budgets(scope));
        same!("standings", s => s.budget_standings(scope, ts(T0 + 2 * H)));
        same!("audit events", s => s.audit_events(scope, 0, 10_000));
        for id in held {
            same!("a reservation", s => s.reservation(scope, id));
        }
    }
    same!("key count", s => s.api_key_count());
    for h in 0..8 {
        let hash = format!("hash-{h}");
        same!("a key by hash", s => s.api_key_by_hash(&hash));
    }
}

/// Stores on the same database as the one written: one reading through its own read cache (it never
/// writes: every change reaches it from another store) and one without a cache.
struct Readers {
    cached: Box<dyn Store>,
    cold: Box<dyn Store>,
}

impl Readers {
    /// The cached reads (of the store written and of the other one) equal the uncached read, after
    /// operation `i`: a cached bucket that a change touched is never served.
    async fn agree(&self, written: &dyn Store, i: usize) {
        let (from, to) = (T0 - 4 * H, T0 + 8 * H);
        let cold = read(self.cold.as_ref(), from, to).await;
        let what = format!("a cached read after operation {i}");
        same_read(read(written, from, to).await, cold.clone(), &what);
        same_read(read(self.cached.as_ref(), from, to).await, cold, &what);
    }
}

async fn run(ops: &[Op]) {
    let (dir, lite) = super::sqlite_harness::fresh();
    let (db, pg) = super::postgres_harness::fresh().await;
    let path = dir.path().join("data").join("eai.db");
    let cold = eai_store::rollups::RollupConfig {
        read_cache_rows: 0,
        ..Default::default()
    };
    let lite_readers = Readers {
        cached: Box::new(SqliteStore::open(&path).unwrap()),
        cold: Box::new(SqliteStore::open_with(&path, cold).unwrap()),
    };
    let pg_readers = Readers {
        cached: Box::new(eai_store::postgres::PgStore::open(db.url()).await.unwrap()),
        cold: Box::new(
            eai_store::postgres::PgStore::open_with(db.url(), cold)
                .await
                .unwrap(),
        ),
    };
    let mut held = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        apply(&lite, &pg, op, i, &mut held).await;
        same_state(&lite, &pg, i, &held).await;
        lite_readers.agree(&lite, i).await;
        pg_readers.agree(&pg, i).await;
    }
    assert_eq!(chain(&lite).await, chain(&pg).await, "the audit chains");
    assert_eq!(answer(lite.verify_audit_chain(None).await), Ok(None));
    assert_eq!(answer(pg.verify_audit_chain(None).await), Ok(None));
    assert_eq!(
        final_allocation(&lite).await,
        final_allocation(&pg).await,
        "the allocations"
    );
}

async fn chain(s: &dyn Store) -> Result<Vec<eai_store::AuditEvent>, String> {
    answer(s.audit_events(Scope::Platform, 0, 10_000).await)
}

/// The allocation of the whole span, from a store's reads.
async fn final_allocation(s: &dyn Store) -> Allocation {
    let p = period(T0 - 4 * H, T0 + 8 * H);
    let policies = s.policies().await.unwrap();
    let read = s
        .allocation_usage(p.from, p.to, &exact_of(&policies))
        .await
        .unwrap();
    let usage = s.usage_events(Scope::Platform, p.from, p.to).await.unwrap();
    allocation_of(&read, p, &policies, &usage)
}

proptest! {
    // Each case creates and drops a PostgreSQL database and reads both stores after every operation.
    #![proptest_config(ProptestConfig { cases: 12, max_shrink_iters: 64, ..ProptestConfig::default() })]

    #[test]
    fn both_backends_answer_alike(ops in arb_ops()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(&ops));
    }
}
