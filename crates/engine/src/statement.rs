//! Statements: a tenant's closed month as issued (SPEC §8; `POST /v1/finops/gpu/statements`). Pure: the lines of
//! a tenant (or of the unallocated capacity) from an allocation, their totals, the adjustments that data arriving
//! after issue makes (the allocation now minus the issued lines, never a rewrite of them), the number and the CSV.
//!
//! A line is one deployment under one policy: GPU-hours (GPU-seconds / 3600) and energy in kWh (Wh / 1000), each
//! rounded once to 6 places, and the amount as the allocation rounded it (the item's `allocated`, or the sum of
//! the deployment's unallocated day items). Totals are per currency, the sum of the lines: equal to the tenant's
//! allocated cost to the cent.

use std::collections::BTreeMap;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::domain::TenantId;
use crate::money::{add_to, Currency, Money};
use crate::report::Allocation;

/// Places of `gpu_hours` and `energy_kwh`.
pub const QUANTITY_DP: u32 = 6;

/// A charge (as issued) or an adjustment (the change since).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Charge,
    Adjustment,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Charge => "charge",
            Kind::Adjustment => "adjustment",
        }
    }
}

/// One deployment under one policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: Kind,
    pub deployment_id: String,
    pub policy_id: String,
    pub gpu_hours: Decimal,
    pub energy_kwh: Decimal,
    pub amount: Money,
}

/// `d` rounded once to [`QUANTITY_DP`] places (half away from zero), written with all of them.
pub fn quantity(d: Decimal) -> Decimal {
    let mut q = d.round_dp_with_strategy(QUANTITY_DP, RoundingStrategy::MidpointAwayFromZero);
    q.rescale(QUANTITY_DP);
    q
}

type Key = (String, String, Currency);

/// Exact sums per (deployment, policy, currency): GPU-seconds, Wh, amount.
type Sums = BTreeMap<Key, (Decimal, Decimal, Decimal)>;

fn lines_of(sums: Sums) -> Vec<Line> {
    sums.into_iter()
        .map(
            |((deployment_id, policy_id, currency), (s, wh, amount))| Line {
                kind: Kind::Charge,
                deployment_id,
                policy_id,
                gpu_hours: quantity(s / Decimal::from(3600)),
                energy_kwh: quantity(wh / Decimal::from(1000)),
                amount: Money { amount, currency },
            },
        )
        .collect()
}

/// The lines of `tenant` in an allocation, by deployment then policy: one per item. The platform tenant (the nil
/// uuid) stands for the unallocated (idle) capacity: the day items of no tenant summed per deployment and policy
/// (the allocation must have been computed with `day_items`), lines of no time and no cost left out.
pub fn lines(a: &Allocation, tenant: TenantId) -> Vec<Line> {
    let mut sums = Sums::new();
    if tenant.is_platform() {
        for d in a.day_items.iter().filter(|d| d.tenant_id.is_none()) {
            let key = (
                d.deployment_id.clone(),
                d.policy_id.clone(),
                d.cost.currency,
            );
            let e = sums.entry(key).or_default();
            e.0 += d.gpu_seconds;
            e.1 += d.energy_wh;
            e.2 += d.cost.amount;
        }
        sums.retain(|_, (s, _, amount)| !s.is_zero() || !amount.is_zero());
    } else {
        for i in a.items.iter().filter(|i| i.tenant_id == tenant) {
            let key = (
                i.deployment_id.clone(),
                i.policy_id.clone(),
                i.allocated.currency,
            );
            let e = sums.entry(key).or_default();
            e.0 += i.gpu_seconds;
            e.1 += i.energy_wh;
            e.2 += i.allocated.amount;
        }
    }
    lines_of(sums)
}

/// The tenants with a cost in the allocation (an item of a non-zero amount), in id order.
pub fn tenants_with_cost(a: &Allocation) -> Vec<TenantId> {
    let mut t: Vec<TenantId> = a
        .items
        .iter()
        .filter(|i| !i.allocated.amount.is_zero())
        .map(|i| i.tenant_id)
        .collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// Whether a statement of these lines is worth issuing: some amount is not zero.
pub fn has_cost(lines: &[Line]) -> bool {
    lines.iter().any(|l| !l.amount.amount.is_zero())
}

/// The sum of the lines' amounts per currency, by currency code.
pub fn totals(lines: &[Line]) -> Vec<Money> {
    adjusted_totals(&[], lines)
}

/// `totals` plus the adjustments' amounts, per currency (a currency only adjusted included), by currency code.
pub fn adjusted_totals(totals: &[Money], adjustments: &[Line]) -> Vec<Money> {
    let mut sums: Vec<(Currency, Decimal)> =
        totals.iter().map(|m| (m.currency, m.amount)).collect();
    for l in adjustments {
        add_to(&mut sums, l.amount.currency, l.amount.amount);
    }
    let mut out: Vec<Money> = sums
        .into_iter()
        .map(|(currency, amount)| Money {
            amount: currency.round(amount),
            currency,
        })
        .collect();
    out.sort_by(|a, b| a.currency.as_str().cmp(b.currency.as_str()));
    out
}

fn keyed(lines: &[Line]) -> BTreeMap<Key, &Line> {
    lines
        .iter()
        .map(|l| {
            (
                (
                    l.deployment_id.clone(),
                    l.policy_id.clone(),
                    l.amount.currency,
                ),
                l,
            )
        })
        .collect()
}

/// The adjustments of issued lines given the lines of the allocation now: per (deployment, policy, currency)
/// of either, now minus issued (a missing line counts as zero), one `adjustment` line where any figure
/// differs, by deployment then policy.
pub fn adjustments(issued: &[Line], now: &[Line]) -> Vec<Line> {
    let (was, is) = (keyed(issued), keyed(now));
    let mut keys: Vec<&Key> = was.keys().chain(is.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    let figures = |l: Option<&&Line>| {
        l.map_or((Decimal::ZERO, Decimal::ZERO, Decimal::ZERO), |l| {
            (l.gpu_hours, l.energy_kwh, l.amount.amount)
        })
    };
    keys.into_iter()
        .filter_map(|k| {
            let (h0, e0, a0) = figures(was.get(k));
            let (h1, e1, a1) = figures(is.get(k));
            if (h0, e0, a0) == (h1, e1, a1) {
                return None;
            }
            let (deployment_id, policy_id, currency) = k.clone();
            Some(Line {
                kind: Kind::Adjustment,
                deployment_id,
                policy_id,
                gpu_hours: quantity(h1 - h0),
                energy_kwh: quantity(e1 - e0),
                amount: Money {
                    amount: currency.round(a1 - a0),
                    currency,
                },
            })
        })
        .collect()
}

/// The statement number: `ST-YYYY-MM-NNNN`, `n` (from 1) the statement's rank in its month, 4 digits or more.
pub fn number(month: &str, n: u64) -> String {
    format!("ST-{month}-{n:04}")
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV header of a statement.
pub const CSV_HEADER: &str = "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency";

/// A statement as CSV: the header, the charge lines, a `total` line per currency, the adjustment lines and an
/// `adjusted_total` line per currency (totals carry no deployment, policy or quantities). Amounts carry at
/// least their currency's minor digits; lines end with CRLF (RFC 4180).
pub fn csv(lines: &[Line], totals: &[Money], adjustments: &[Line], adjusted: &[Money]) -> String {
    let mut out = String::with_capacity(128 * (lines.len() + adjustments.len() + 4));
    out.push_str(CSV_HEADER);
    out.push_str("\r\n");
    let line = |out: &mut String, l: &Line| {
        let c = l.amount.currency;
        out.push_str(&format!(
            "{},{},{},{},{},{},{}\r\n",
            l.kind.as_str(),
            field(&l.deployment_id),
            field(&l.policy_id),
            l.gpu_hours,
            l.energy_kwh,
            c.amount_text(l.amount.amount),
            c.as_str()
        ));
    };
    let total = |out: &mut String, kind: &str, m: &Money| {
        out.push_str(&format!(
            "{kind},,,,,{},{}\r\n",
            m.currency.amount_text(m.amount),
            m.currency.as_str()
        ));
    };
    for l in lines {
        line(&mut out, l);
    }
    for m in totals {
        total(&mut out, "total", m);
    }
    for l in adjustments {
        line(&mut out, l);
    }
    for m in adjusted {
        total(&mut out, "adjusted_total", m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DayItem, Item, SplitBasis};
    use crate::time::Timestamp;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn eur(s: &str) -> Money {
        Money {
            amount: d(s),
            currency: Currency::EUR,
        }
    }

    fn tenant(n: u128) -> TenantId {
        TenantId(uuid::Uuid::from_u128(n))
    }

    fn item(t: u128, dep: &str, s: &str, wh: &str, amount: &str) -> Item {
        Item {
            tenant_id: tenant(t),
            deployment_id: dep.into(),
            policy_id: "alp_1".into(),
            gpu_seconds: d(s),
            gpu_memory_gb_seconds: Decimal::ZERO,
            energy_wh: d(wh),
            allocated: eur(amount),
        }
    }

    fn idle(dep: &str, day: i64, s: &str, amount: &str) -> DayItem {
        DayItem {
            tenant_id: None,
            deployment_id: dep.into(),
            policy_id: "alp_1".into(),
            start: Timestamp(day * 86_400_000),
            end: Timestamp((day + 1) * 86_400_000),
            basis: SplitBasis::UsageWeightedGpuSeconds,
            gpu_seconds: d(s),
            estimated_gpu_seconds: Decimal::ZERO,
            gpu_memory_gb_seconds: Decimal::ZERO,
            energy_wh: Decimal::ZERO,
            cost: eur(amount),
        }
    }

    fn allocation(items: Vec<Item>, day_items: Vec<DayItem>) -> Allocation {
        Allocation {
            from: Timestamp(0),
            to: Timestamp(31 * 86_400_000),
            items,
            deployments: vec![],
            tenants: vec![],
            daily: vec![],
            gaps: vec![],
            findings: vec![],
            day_items,
        }
    }

    #[test]
    fn a_tenants_lines_are_its_items_and_total_to_its_cost() {
        let a = allocation(
            vec![
                item(1, "shared", "5400", "1500", "3.75"),
                item(2, "shared", "1800", "500", "1.25"),
                item(1, "dedicated", "1", "0.0005", "0.01"),
            ],
            vec![],
        );
        let l = lines(&a, tenant(1));
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].deployment_id, "dedicated");
        // 1 s / 3600 = 0.000277…, rounded to 0.000278; 0.0005 Wh = 0.0000005 kWh, rounded to 0.000001.
        assert_eq!(l[0].gpu_hours.to_string(), "0.000278");
        assert_eq!(l[0].energy_kwh.to_string(), "0.000001");
        // 5400 s = 1.5 h; 1500 Wh = 1.5 kWh.
        assert_eq!(l[1].gpu_hours.to_string(), "1.500000");
        assert_eq!(l[1].energy_kwh.to_string(), "1.500000");
        // 3.75 + 0.01 = 3.76.
        assert_eq!(totals(&l), vec![eur("3.76")]);
        assert_eq!(tenants_with_cost(&a), vec![tenant(1), tenant(2)]);
    }

    #[test]
    fn the_unallocated_lines_sum_the_idle_days_per_deployment() {
        let a = allocation(
            vec![item(1, "shared", "5400", "0", "3.75")],
            vec![
                idle("shared", 0, "1800", "1.25"),
                idle("shared", 1, "3600", "2.50"),
                idle("busy", 0, "0", "0.00"),
            ],
        );
        let l = lines(&a, TenantId::PLATFORM);
        assert_eq!(l.len(), 1, "no line of no time and no cost: {l:?}");
        // 1800 + 3600 = 5400 s = 1.5 h; 1.25 + 2.50 = 3.75.
        assert_eq!(l[0].gpu_hours.to_string(), "1.500000");
        assert_eq!(l[0].amount, eur("3.75"));
        assert!(has_cost(&l));
    }

    #[test]
    fn adjustments_are_the_change_and_leave_the_issued_lines() {
        let issued = lines(
            &allocation(vec![item(1, "a", "3600", "1000", "2.00")], vec![]),
            tenant(1),
        );
        let now = lines(
            &allocation(
                vec![
                    item(1, "a", "5400", "1000", "3.00"),
                    item(1, "b", "360", "0", "0.10"),
                ],
                vec![],
            ),
            tenant(1),
        );
        let adj = adjustments(&issued, &now);
        assert_eq!(adj.len(), 2);
        // a: 1.5 h - 1 h = 0.5 h, 3.00 - 2.00 = 1.00; b: new, all of it.
        assert_eq!(adj[0].kind, Kind::Adjustment);
        assert_eq!(adj[0].gpu_hours.to_string(), "0.500000");
        assert_eq!(adj[0].energy_kwh.to_string(), "0.000000");
        assert_eq!(adj[0].amount, eur("1.00"));
        assert_eq!(adj[1].deployment_id, "b");
        assert_eq!(adj[1].gpu_hours.to_string(), "0.100000");
        let t = totals(&issued);
        assert_eq!(t, vec![eur("2.00")]);
        // 2.00 + 1.00 + 0.10 = 3.10, the cost now.
        assert_eq!(adjusted_totals(&t, &adj), vec![eur("3.10")]);
        assert_eq!(adjusted_totals(&t, &adj), totals(&now));
        assert!(adjustments(&now, &now).is_empty());
        // A line gone since: all of it taken back.
        let gone = adjustments(&now, &issued);
        assert_eq!(gone[1].amount, eur("-0.10"));
    }

    #[test]
    fn numbers_have_four_digits_or_more() {
        assert_eq!(number("2026-10", 1), "ST-2026-10-0001");
        assert_eq!(number("2026-10", 12345), "ST-2026-10-12345");
    }

    #[test]
    fn the_csv_has_lines_totals_adjustments_and_adjusted_totals() {
        let l = vec![Line {
            kind: Kind::Charge,
            deployment_id: "chat, eu".into(),
            policy_id: "alp_1".into(),
            gpu_hours: quantity(d("1.5")),
            energy_kwh: quantity(d("0.25")),
            amount: eur("3.5"),
        }];
        let mut adj = l.clone();
        adj[0].kind = Kind::Adjustment;
        adj[0].amount = eur("-0.01");
        let t = totals(&l);
        let csv = csv(&l, &t, &adj, &adjusted_totals(&t, &adj));
        assert_eq!(
            csv,
            "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency\r\n\
             charge,\"chat, eu\",alp_1,1.500000,0.250000,3.50,EUR\r\n\
             total,,,,,3.50,EUR\r\n\
             adjustment,\"chat, eu\",alp_1,1.500000,0.250000,-0.01,EUR\r\n\
             adjusted_total,,,,,3.49,EUR\r\n"
        );
    }
}
