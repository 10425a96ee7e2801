//! Statements: issued once per (tenant, month) with the next number of the month and its audit event, read back
//! exactly, listed newest month first in scope (a tenant sees its own only), and numbered for the FOCUS export.

use super::*;
use eai_engine::money::Money;
use eai_engine::statement::{Kind, Line};
use eai_store::statements::{NewStatement, StatementNumber};

const DAY: i64 = 86_400_000;

/// October 2026 and November 2026 as `[from, to)`.
fn month(m: &str) -> (Timestamp, Timestamp) {
    eai_engine::batch::month(m).expect("a month")
}

pub fn new_statement(tenant: TenantId, m: &str, amount: &str) -> NewStatement {
    let (from, to) = month(m);
    let eur = Money {
        amount: d(amount),
        currency: Currency::from_str("EUR").unwrap(),
    };
    NewStatement {
        tenant_id: tenant,
        from,
        to,
        issued_at: ts(to.0 + DAY),
        issued_by: "key_1".into(),
        lines: vec![Line {
            kind: Kind::Charge,
            deployment_id: "vllm-shared".into(),
            policy_id: "alp_1".into(),
            gpu_hours: d("1.500000"),
            energy_kwh: d("0.000001"),
            amount: eur,
        }],
        totals: vec![eur],
    }
}

fn draft() -> AuditDraft {
    AuditDraft::system("key_1", "gpu_statement.issue", ts(0), serde_json::json!({}))
}

pub async fn statements_are_numbered_per_month_issued_once_and_read_in_scope(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    let issue = |n: NewStatement| async move { s.issue_statement(&n, &draft()).await.unwrap() };
    let (oct_a, new) = issue(new_statement(a, "2026-10", "3.10")).await;
    assert!(new);
    assert_eq!(oct_a.number, "ST-2026-10-0001");
    assert_eq!(
        oct_a.issued,
        new_statement(a, "2026-10", "3.10"),
        "as given"
    );
    let (oct_p, _) = issue(new_statement(TenantId::PLATFORM, "2026-10", "2.00")).await;
    assert_eq!(oct_p.number, "ST-2026-10-0002");
    let (nov_b, _) = issue(new_statement(b, "2026-11", "7")).await;
    assert_eq!(nov_b.number, "ST-2026-11-0001", "each month counts from 1");
    let (oct_b, _) = issue(new_statement(b, "2026-10", "0.01")).await;
    assert_eq!(oct_b.number, "ST-2026-10-0003");

    // Again, whatever its figures: the one issued before, unchanged, nothing audited.
    let (again, new) = issue(new_statement(a, "2026-10", "99")).await;
    assert!(!new);
    assert_eq!(again, oct_a);
    let events: Vec<_> = s
        .audit_events(Scope::Platform, 0, 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.draft.action == "gpu_statement.issue")
        .collect();
    assert_eq!(events.len(), 4, "one per statement issued");
    assert_eq!(events[0].draft.resource.as_deref(), Some("ST-2026-10-0001"));
    assert_eq!(events[0].draft.tenant_id, Some(a));
    assert_eq!(events[0].draft.details["totals"][0]["amount"], "3.10");
    assert_eq!(events[1].draft.tenant_id, None, "the platform's own");

    // Read back: one by number, lists newest month first then in the order issued.
    let got = s
        .statement(Scope::Platform, "ST-2026-10-0001")
        .await
        .unwrap();
    assert_eq!(got.as_ref(), Some(&oct_a));
    assert_eq!(
        got.unwrap().issued.lines[0].gpu_hours.to_string(),
        "1.500000",
        "decimals kept as issued"
    );
    let numbers = |v: Vec<eai_store::statements::Statement>| {
        v.into_iter().map(|s| s.number).collect::<Vec<_>>()
    };
    assert_eq!(
        numbers(s.statements(Scope::Platform, None, None).await.unwrap()),
        [
            "ST-2026-11-0001",
            "ST-2026-10-0001",
            "ST-2026-10-0002",
            "ST-2026-10-0003"
        ]
    );
    let oct = month("2026-10").0;
    assert_eq!(
        numbers(
            s.statements(Scope::Platform, Some(oct), Some(b))
                .await
                .unwrap()
        ),
        ["ST-2026-10-0003"]
    );

    // A tenant: its own only; another's number is none; the platform tenant's scope reads nothing.
    assert_eq!(
        numbers(s.statements(Scope::Tenant(b), None, None).await.unwrap()),
        ["ST-2026-11-0001", "ST-2026-10-0003"]
    );
    assert!(s
        .statements(Scope::Tenant(b), None, Some(a))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.statement(Scope::Tenant(b), "ST-2026-10-0001")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        s.statement(Scope::Tenant(a), "ST-2026-10-0001")
            .await
            .unwrap(),
        Some(oct_a.clone())
    );
    assert!(s
        .statements(Scope::Tenant(TenantId::PLATFORM), None, None)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.statement(Scope::Platform, "ST-2099-01-0001")
            .await
            .unwrap(),
        None
    );

    // The FOCUS export's InvoiceId: the numbers of the months overlapping a period, in scope.
    let (oct_from, oct_to) = month("2026-10");
    let nov_to = month("2026-11").1;
    let n = |t: TenantId, m: Timestamp, number: &str| StatementNumber {
        tenant_id: t,
        month: m,
        number: number.into(),
    };
    let nov = month("2026-11").0;
    assert_eq!(
        s.statement_numbers(Scope::Platform, ts(oct_to.0 - DAY), nov_to)
            .await
            .unwrap(),
        [
            n(a, oct_from, "ST-2026-10-0001"),
            n(TenantId::PLATFORM, oct_from, "ST-2026-10-0002"),
            n(b, oct_from, "ST-2026-10-0003"),
            n(b, nov, "ST-2026-11-0001"),
        ]
    );
    assert_eq!(
        s.statement_numbers(Scope::Tenant(b), oct_to, nov_to)
            .await
            .unwrap(),
        [n(b, nov, "ST-2026-11-0001")],
        "November only, B's"
    );
    assert!(s
        .statement_numbers(Scope::Platform, ts(0), oct_from)
        .await
        .unwrap()
        .is_empty());
}

/// Concurrent issues of one statement (and of others of the month) store each once, numbers unique.
pub async fn concurrent_issues_store_each_statement_once(s: &dyn Store) {
    let tenants: Vec<TenantId> = (1..=6).map(tenant).collect();
    let runs = tenants.iter().chain(tenants.iter()).map(|t| async move {
        let (st, new) = s
            .issue_statement(&new_statement(*t, "2026-10", "1"), &draft())
            .await
            .unwrap();
        (st.number, new)
    });
    let mut got = Vec::new();
    for f in runs {
        got.push(f);
    }
    let results = join_all(got).await;
    assert_eq!(results.iter().filter(|(_, new)| *new).count(), 6);
    let mut numbers: Vec<String> = results.into_iter().map(|(n, _)| n).collect();
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len(), 6, "{numbers:?}");
    assert_eq!(numbers[5], "ST-2026-10-0006");
}

/// Joins futures on the one task (no extra dependency).
async fn join_all<T, F: std::future::Future<Output = T>>(futs: Vec<F>) -> Vec<T> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<T>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                if let std::task::Poll::Ready(v) = f.as_mut().poll(cx) {
                    out[i] = Some(v);
                }
            }
        }
        if out.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
