//! The engine against the spec: the worked example, the seed's acceptance test, dedicated and shared
//! deployments, idle capacity, effective dates, gaps; then properties over random fleets.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::allocate::{
    allocate, allocate_cached, allocate_samples, sum_claims, AllocationConfig, AllocationInput,
    Period, Span, SplitCache,
};
use eai_engine::domain::{
    GpuFraction, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, Sample, TenantId,
    UnitInterval, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::report::{Allocation, Finding, GapReason};
use eai_engine::rollup::{aggregate, group};
use eai_engine::series::{add_sample_cells, cells, sample_cells, SeriesConfig};
use eai_engine::time::Timestamp;
use proptest::prelude::*;
use rust_decimal::Decimal;
use uuid::Uuid;

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

fn tenant(n: u8) -> TenantId {
    TenantId(Uuid::from_bytes([n; 16]))
}

fn sample(gpu: &str, dep: &str, end_ms: i64) -> Sample {
    Sample {
        node: "gpu-node-1".into(),
        gpu_uuid: gpu.into(),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("{dep}-0"),
        deployment_id: dep.into(),
        owner: None,
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(end_ms),
        utilization: UnitInterval::new(d("0.5")).unwrap(),
        memory_used_gb: NonNegative::new(d("40")).unwrap(),
        power_w: NonNegative::new(d("400")).unwrap(),
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    }
}

/// `gpus` GPUs sampled every 15 s over `[from, to)`.
fn fleet(dep: &str, gpus: usize, from: i64, to: i64) -> Vec<Sample> {
    let mut v = Vec::new();
    for g in 0..gpus {
        let mut end = from + 15_000;
        while end <= to {
            v.push(sample(&format!("GPU-{dep}-{g}"), dep, end));
            end += 15_000;
        }
    }
    v
}

fn spec(name: &str) -> PolicySpec {
    PolicySpec {
        name: name.into(),
        deployment_pattern: Glob::any(),
        gpu_model: None,
        currency: Currency::EUR,
        gpu_hourly_cost: NonNegative::new(d("2.10")).unwrap(),
        overhead_pct: NonNegative::new(d("18")).unwrap(),
        energy_kwh_price: NonNegative::new(d("0.21")).unwrap(),
        pue: Pue::new(d("1.4")).unwrap(),
        storage_gb_month_price: NonNegative::ZERO,
        idle_capacity: IdleCapacity::Unallocated,
        output_token_weight: Default::default(),
        enabled: true,
        effective_from: Timestamp(0),
        effective_to: None,
    }
}

fn worked_policy() -> Vec<Policy> {
    vec![Policy::new(1, spec("local-gpu-default"))]
}

fn tokens(t: TenantId, dep: &str, at_ms: i64, n: u64) -> UsageEvent {
    let mut units = BTreeMap::new();
    units.insert(
        "tokens_in".to_string(),
        NonNegative::new(Decimal::from(n)).unwrap(),
    );
    UsageEvent {
        event_id: Uuid::new_v4(),
        tenant_id: t,
        usage_type: "llm_tokens".into(),
        source: "gateway".into(),
        occurred_at: Timestamp(at_ms),
        deployment_id: Some(dep.into()),
        model: None,
        units,
        cost: None,
        allocation_policy_id: None,
        project: None,
        agent_id: None,
        run_id: None,
    }
}

fn gpu_seconds_event(t: TenantId, dep: &str, at_ms: i64, gs: &str) -> UsageEvent {
    let mut e = tokens(t, dep, at_ms, 0);
    e.units.clear();
    e.units
        .insert("gpu_seconds".into(), NonNegative::new(d(gs)).unwrap());
    e
}

fn period(from: i64, to: i64) -> Period {
    Period::new(Timestamp(from), Timestamp(to), H).unwrap()
}

fn run(
    samples: &[Sample],
    usage: &[UsageEvent],
    policies: &[Policy],
    from: i64,
    to: i64,
) -> Allocation {
    allocate_samples(
        samples,
        usage,
        policies,
        period(from, to),
        &SeriesConfig::default(),
        AllocationConfig::default(),
    )
}

fn amount(a: &Allocation, t: TenantId) -> Decimal {
    a.tenants
        .iter()
        .find(|r| r.tenant_id == t)
        .map(|r| r.cost)
        .unwrap_or_default()
}

/// Every rule of `Allocation::reconciliation_errors`: rows, items, tenants and days sum to the cent.
fn assert_reconciles(a: &Allocation) {
    let errors = a.reconciliation_errors();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The day items (`AllocationConfig::day_items`): the days of each item sum to its `allocated`, the idle days
/// of a (deployment, currency) row to its `unallocated`, all its days to its `cost`, to the cent; and asking
/// for them changes nothing else.
fn assert_days_reconcile(with_days: &Allocation, without: &Allocation) {
    let mut rest = with_days.clone();
    rest.day_items.clear();
    assert_eq!(&rest, without, "day items change nothing else");
    assert_reconciles(with_days);
    for x in &with_days.day_items {
        assert_eq!(x.start.0 % (24 * H), 0, "a day starts at midnight: {x:?}");
        assert_eq!(x.cost.amount, x.cost.currency.round(x.cost.amount));
    }
}

/// The explanation of the SPEC's worked example, line by line: one bucket of 7,200 measured GPU-seconds, the two
/// tenants' token claims giving 70 % and 30 %, the bucket priced 4.956 + 0.2352 = 5.1912 EUR and split 3.63384 /
/// 1.55736, rounded once to 5.19 and apportioned 3.63 / 1.56 (the second line's larger remainder takes the cent).
#[test]
fn the_worked_example_explained_line_by_line() {
    use eai_engine::allocate::{explain, Party};
    let samples = fleet("vllm-llama-70b", 2, T0, T0 + H);
    let usage = vec![
        tokens(tenant(1), "vllm-llama-70b", T0 + 60_000, 7000),
        tokens(tenant(2), "vllm-llama-70b", T0 + 1_800_000, 3000),
    ];
    let out = cells(&samples, &SeriesConfig::default());
    let policies = worked_policy();
    let input = AllocationInput {
        period: period(T0, T0 + H),
        rollups: &out.cells,
        usage: &usage,
        policies: &policies,
        claims: &[],
        gaps: &out.gaps,
        config: AllocationConfig::default(),
    };
    let e = explain(&input, "vllm-llama-70b").expect("the deployment has GPU time");
    assert!(explain(&input, "another").is_none());
    assert_eq!(e.policies.len(), 1);
    assert_eq!(e.policies[0].gpu_hourly_cost, d("2.10"));
    assert_eq!(e.policies[0].pue, d("1.4"));
    assert_eq!(e.buckets.len(), 1);
    let b = &e.buckets[0];
    assert_eq!((b.start, b.owner), (Timestamp(T0), None));
    assert_eq!(b.gpu_seconds, d("7200"));
    assert_eq!(b.estimated_gpu_seconds, d("0"));
    let claims: Vec<(Party, Decimal, Decimal)> = b
        .claims
        .iter()
        .map(|c| (c.party, c.tokens, c.share))
        .collect();
    assert_eq!(
        claims,
        vec![
            (Party::Tenant(tenant(1)), d("7000"), d("0.7")),
            (Party::Tenant(tenant(2)), d("3000"), d("0.3")),
        ]
    );
    assert!(!b.over_attribution);
    let p = &b.priced[0];
    assert_eq!(p.gpu_seconds, d("7200"));
    assert_eq!(p.energy_wh, d("800"));
    assert_eq!(p.gpu_time_cost, d("4.956"));
    assert_eq!(p.energy_cost, d("0.2352"));
    assert_eq!(p.cost, d("5.1912"));
    assert_eq!(
        p.parties,
        vec![
            (Party::Tenant(tenant(1)), d("3.63384")),
            (Party::Tenant(tenant(2)), d("1.55736")),
        ]
    );
    assert_eq!(p.idle, d("0"));
    assert_eq!(e.rounding.len(), 1);
    let r = &e.rounding[0];
    assert_eq!((r.exact, r.cost), (d("5.1912"), d("5.19")));
    let lines: Vec<(Option<Party>, Decimal, Decimal, Decimal, Decimal)> = r
        .lines
        .iter()
        .map(|l| (l.party, l.exact, l.floor, l.remainder_unit, l.amount))
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                Some(Party::Tenant(tenant(1))),
                d("3.63384"),
                d("3.63"),
                d("0.00"),
                d("3.63")
            ),
            (
                Some(Party::Tenant(tenant(2))),
                d("1.55736"),
                d("1.55"),
                d("0.01"),
                d("1.56")
            ),
            (None, d("0"), d("0.00"), d("0.00"), d("0.00")),
        ]
    );
    // Shown to tenant 2, tenant 1 is "other tenants"; every figure stays.
    let seen = e.for_tenant(tenant(2));
    assert_eq!(seen.buckets[0].claims[0].party, Party::Tenant(tenant(2)));
    assert_eq!(seen.buckets[0].claims[1].party, Party::Others);
    assert_eq!(seen.rounding[0].cost, d("5.19"));
    assert!(!format!("{seen:?}").contains(&format!("{:?}", tenant(1))));
}

/// The explanation of every deployment of random fleets agrees with the allocation: its rounded lines are the
/// allocation's items (and unallocated), its rows' costs the deployment's, each bucket's parties and idle sum to
/// the bucket's cost, and shown to one tenant the totals are the same.
fn assert_explained(f: &Fleet) {
    use eai_engine::allocate::{explain, Party};
    let out = cells(&f.samples, &SeriesConfig::default());
    let input = AllocationInput {
        period: period(T0, T0 + 6 * H),
        rollups: &out.cells,
        usage: &f.usage,
        policies: &f.policies,
        claims: &[],
        gaps: &out.gaps,
        config: AllocationConfig::default(),
    };
    let a = allocate(&input);
    for row in &a.deployments {
        let e = explain(&input, &row.deployment_id).expect("a deployment of the allocation");
        if let Some(cur) = row.currency {
            let r = e
                .rounding
                .iter()
                .find(|r| r.currency == cur)
                .expect("a rounding per currency row");
            assert_eq!(r.cost, row.cost, "{}", row.deployment_id);
            let idle: Decimal = r
                .lines
                .iter()
                .filter(|l| l.party.is_none())
                .map(|l| l.amount)
                .sum();
            assert_eq!(idle, row.unallocated, "{}", row.deployment_id);
            for item in a
                .items
                .iter()
                .filter(|i| i.deployment_id == row.deployment_id && i.allocated.currency == cur)
            {
                let line = r
                    .lines
                    .iter()
                    .find(|l| {
                        l.party == Some(Party::Tenant(item.tenant_id))
                            && l.policy_id == item.policy_id
                    })
                    .expect("a line per item");
                assert_eq!(line.amount, item.allocated.amount);
                assert_eq!(line.floor + line.remainder_unit, line.amount);
            }
        }
        for b in &e.buckets {
            for p in &b.priced {
                let split: Decimal = p.parties.iter().map(|x| x.1).sum::<Decimal>() + p.idle;
                assert!(
                    (split - p.cost).abs() < d("0.000000000001"),
                    "bucket {} of {}: {split} != {}",
                    b.start,
                    row.deployment_id,
                    p.cost
                );
            }
        }
        for t in a.tenants.iter().map(|t| t.tenant_id) {
            let seen = e.for_tenant(t);
            let total = |x: &eai_engine::allocate::Explanation| -> Decimal {
                x.rounding
                    .iter()
                    .flat_map(|r| &r.lines)
                    .map(|l| l.amount)
                    .sum()
            };
            assert_eq!(total(&seen), total(&e));
            let mine = |x: &eai_engine::allocate::Explanation| -> Decimal {
                x.rounding
                    .iter()
                    .flat_map(|r| &r.lines)
                    .filter(|l| l.party == Some(Party::Tenant(t)))
                    .map(|l| l.amount)
                    .sum()
            };
            assert_eq!(mine(&seen), mine(&e));
        }
    }
}

fn run_by_day(
    samples: &[Sample],
    usage: &[UsageEvent],
    policies: &[Policy],
    from: i64,
    to: i64,
) -> Allocation {
    let with_days = allocate_samples(
        samples,
        usage,
        policies,
        period(from, to),
        &SeriesConfig::default(),
        AllocationConfig {
            day_items: true,
            ..AllocationConfig::default()
        },
    );
    assert_days_reconcile(&with_days, &run(samples, usage, policies, from, to));
    with_days
}

/// Three tenants, a week: a shared deployment (tokens on some hours of some days, idle the rest), a dedicated
/// one, a proportional one, and a price change at noon on day 3 (policy 1 ends, policy 2 starts).
fn realistic_week() -> (Vec<Sample>, Vec<UsageEvent>, Vec<Policy>, i64) {
    let days = 7;
    let end = T0 + days * 24 * H;
    let mut samples = fleet("shared-llm", 2, T0, end);
    let mut dedicated = fleet("team-b-train", 1, T0 + 12 * H, end - 30 * H);
    for s in &mut dedicated {
        s.owner = Some(tenant(2));
    }
    samples.extend(dedicated);
    samples.extend(fleet("embed-prop", 1, T0, T0 + 3 * 24 * H));
    let mut usage = Vec::new();
    for day in 0..days {
        for hour in [2, 9, 13, 17] {
            let at = T0 + day * 24 * H + hour * H + 60_000;
            usage.push(tokens(tenant(1), "shared-llm", at, 7000 + day as u64));
            usage.push(tokens(tenant(3), "shared-llm", at, 3000 + 3 * hour as u64));
            if day < 3 && hour != 13 {
                usage.push(tokens(tenant(1), "embed-prop", at, 100));
                usage.push(tokens(tenant(3), "embed-prop", at, 250));
            }
        }
    }
    let change = Timestamp(T0 + 2 * 24 * H + 12 * H);
    let mut before = spec("h100-2026");
    before.effective_to = Some(change);
    let mut after = spec("h100-2026-revised");
    after.gpu_hourly_cost = NonNegative::new(d("2.35")).unwrap();
    after.effective_from = change;
    let mut prop = spec("embeddings");
    prop.deployment_pattern = Glob::new("embed-*").unwrap();
    prop.idle_capacity = IdleCapacity::Proportional;
    let policies = vec![
        Policy::new(1, before),
        Policy::new(2, after),
        Policy::new(3, prop),
    ];
    (samples, usage, policies, end)
}

#[test]
fn day_items_of_a_realistic_week_reconcile_to_the_cent() {
    let (samples, usage, policies, end) = realistic_week();
    let a = run_by_day(&samples, &usage, &policies, T0, end);
    assert_reconciles(&a);
    // Every (tenant, deployment, policy) of the shared deployment is there under both prices, per day.
    let policy_days = |t: Option<TenantId>, dep: &str, policy: &str| {
        a.day_items
            .iter()
            .filter(|x| x.tenant_id == t && x.deployment_id == dep && x.policy_id == policy)
            .count()
    };
    assert_eq!(policy_days(Some(tenant(1)), "shared-llm", "alp_1"), 3);
    assert_eq!(policy_days(Some(tenant(1)), "shared-llm", "alp_2"), 5);
    assert_eq!(policy_days(None, "shared-llm", "alp_2"), 5, "idle rows");
    // The dedicated deployment goes to its owner day by day; no idle rows.
    assert_eq!(policy_days(Some(tenant(2)), "team-b-train", "alp_1"), 3);
    assert_eq!(policy_days(Some(tenant(2)), "team-b-train", "alp_2"), 4);
    assert_eq!(policy_days(None, "team-b-train", "alp_1"), 0);
    // Proportional idle is spread day by day: nothing left unallocated on embed-prop.
    assert_eq!(policy_days(None, "embed-prop", "alp_3"), 0);
    assert_eq!(policy_days(Some(tenant(3)), "embed-prop", "alp_3"), 3);
    // The days' quantities add up to the item's (each is exact to 6 places).
    for i in &a.items {
        let gs: Decimal = a
            .day_items
            .iter()
            .filter(|x| {
                x.tenant_id == Some(i.tenant_id)
                    && x.deployment_id == i.deployment_id
                    && x.policy_id == i.policy_id
            })
            .map(|x| x.gpu_seconds)
            .sum();
        assert!((gs - i.gpu_seconds).abs() <= d("0.00001"), "{i:?}: {gs}");
    }
    // A tenant sees its own days only.
    let mine = eai_engine::scope::scoped_to(&a, tenant(3));
    assert!(!mine.day_items.is_empty());
    assert!(mine
        .day_items
        .iter()
        .all(|x| x.tenant_id == Some(tenant(3))));
}

/// Hour items (`item_span` hour) of the realistic week: each an hour long, reconciling to the cent like the
/// days, and the hours of each (tenant or idle, deployment, policy, day) summing exactly to that day's item of
/// the day split (the day's amount is apportioned over its hours). Their FOCUS rows split each origin charge
/// (deployment, policy, hour) with ratios summing to exactly 1.
#[test]
fn hour_items_sum_to_the_day_items() {
    use eai_engine::allocate::Span;
    use eai_engine::focus::{self, Invoices, Issuer, Value};
    let (samples, usage, policies, end) = realistic_week();
    let days = run_by_day(&samples, &usage, &policies, T0, end);
    let config = AllocationConfig {
        day_items: true,
        item_span: Span::Hour,
        ..AllocationConfig::default()
    };
    let hours = allocate_samples(
        &samples,
        &usage,
        &policies,
        period(T0, end),
        &SeriesConfig::default(),
        config,
    );
    assert_reconciles(&hours);
    let mut rest = hours.clone();
    rest.day_items.clear();
    assert_eq!(
        rest,
        run(&samples, &usage, &policies, T0, end),
        "nothing else changes"
    );
    assert!(hours.day_items.len() > 3 * days.day_items.len());
    type Key = (Option<TenantId>, String, String, i64);
    let mut by_day: BTreeMap<Key, Decimal> = BTreeMap::new();
    for x in &hours.day_items {
        assert_eq!(x.start.0 % H, 0, "{x:?}");
        assert_eq!(x.end.0 - x.start.0, H, "{x:?}");
        let day = x.start.0 / (24 * H) * (24 * H);
        *by_day
            .entry((
                x.tenant_id,
                x.deployment_id.clone(),
                x.policy_id.clone(),
                day,
            ))
            .or_default() += x.cost.amount;
    }
    let day_rows: BTreeMap<Key, Decimal> = days
        .day_items
        .iter()
        .map(|x| {
            (
                (
                    x.tenant_id,
                    x.deployment_id.clone(),
                    x.policy_id.clone(),
                    x.start.0,
                ),
                x.cost.amount,
            )
        })
        .collect();
    assert_eq!(by_day, day_rows);

    let rows = focus::rows(
        &hours,
        &BTreeMap::new(),
        &Issuer::default(),
        &Invoices::new(),
    );
    let mut origins: BTreeMap<(String, String, String), Vec<Decimal>> = BTreeMap::new();
    let (mut split, mut whole) = (0, 0);
    for r in &rows {
        let text = |i: usize| match &r[i] {
            Value::Text(s) => s.clone(),
            Value::DateTime(t) => t.to_string(),
            other => format!("{other:?}"),
        };
        let Value::Text(details) = &r[0] else {
            whole += 1;
            continue;
        };
        split += 1;
        // {"Elements":[{"AllocatedRatio":r,...
        let ratio = details
            .strip_prefix("{\"Elements\":[{\"AllocatedRatio\":")
            .and_then(|t| t.split(',').next())
            .expect(details);
        origins
            .entry((text(2), text(39), text(16)))
            .or_default()
            .push(ratio.parse().expect("a decimal"));
    }
    assert!(split > 0 && whole > 0, "{split} split, {whole} whole");
    for (origin, ratios) in &origins {
        assert!(ratios.len() > 1, "{origin:?}");
        assert_eq!(
            ratios.iter().copied().sum::<Decimal>(),
            Decimal::ONE,
            "{origin:?}"
        );
    }
}

#[test]
fn worked_example_of_the_spec() {
    // 2.10 EUR/GPU-hour, overhead 18 %, PUE 1.4, 0.21 EUR/kWh; 2 GPUs every 15 s for one hour at 400 W.
    let samples = fleet("vllm-llama-70b", 2, T0, T0 + H);
    let usage = vec![
        tokens(tenant(1), "vllm-llama-70b", T0 + 60_000, 7000),
        tokens(tenant(2), "vllm-llama-70b", T0 + 1_800_000, 3000),
    ];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + H);
    let row = &a.deployments[0];
    assert_eq!(row.gpu_seconds, d("7200"));
    assert_eq!(row.energy_wh, d("800"));
    assert_eq!(row.samples, 480);
    assert_eq!(row.gpus, 2);
    assert_eq!(row.cost, d("5.19"));
    assert_eq!(row.allocated, d("5.19"));
    assert_eq!(row.unallocated, d("0.00"));
    assert_eq!(amount(&a, tenant(1)), d("3.63"));
    assert_eq!(amount(&a, tenant(2)), d("1.56"));
    assert_eq!(a.items.len(), 2);
    assert_eq!(
        a.items
            .iter()
            .find(|i| i.tenant_id == tenant(1))
            .unwrap()
            .gpu_seconds,
        d("5040")
    );
    assert!(a.gaps.is_empty());
    assert_reconciles(&a);
}

#[test]
fn seed_acceptance_70_30_tokens_give_70_30_of_the_allocated_cost() {
    // Ten hours, 4 GPUs, both tenants active every hour 70/30.
    let samples = fleet("shared-llm", 4, T0, T0 + 10 * H);
    let mut usage = Vec::new();
    for h in 0..10 {
        usage.push(tokens(tenant(1), "shared-llm", T0 + h * H + 10_000, 70_000));
        usage.push(tokens(tenant(2), "shared-llm", T0 + h * H + 20_000, 30_000));
    }
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + 10 * H);
    let row = &a.deployments[0];
    let (a1, a2) = (amount(&a, tenant(1)), amount(&a, tenant(2)));
    assert_eq!(a1 + a2, row.allocated);
    // 70/30 of the allocated cost, to the cent (largest remainder may move one cent).
    assert!(
        (a1 - row.allocated * d("0.7")).abs() <= d("0.01"),
        "{a1} vs {}",
        row.allocated
    );
    assert!(
        (a2 - row.allocated * d("0.3")).abs() <= d("0.01"),
        "{a2} vs {}",
        row.allocated
    );
    assert_eq!(row.cost, d("103.82")); // 40 GPU-hours x 2.478 + 16 kWh x 1.4 x 0.21 = 103.824
    assert_reconciles(&a);
}

#[test]
fn dedicated_deployment_goes_wholly_to_its_owner_idle_included() {
    let mut samples = fleet("team-a-train", 2, T0, T0 + 2 * H);
    for s in &mut samples {
        s.owner = Some(tenant(1));
        s.utilization = UnitInterval::new(d("0.1")).unwrap();
    }
    // Another tenant's usage event on it changes nothing.
    let usage = vec![tokens(tenant(2), "team-a-train", T0 + 1000, 5000)];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + 2 * H);
    let row = &a.deployments[0];
    assert!(row.dedicated);
    assert_eq!(row.unallocated, d("0.00"));
    assert_eq!(amount(&a, tenant(1)), row.cost);
    assert_eq!(amount(&a, tenant(2)), d("0"));
    assert_eq!(row.cost, d("10.38")); // 4 GPU-hours x 2.478 + 1.6 kWh x 0.294
    assert_reconciles(&a);
}

#[test]
fn idle_buckets_stay_unallocated_or_are_spread_proportionally() {
    // Two hours measured; usage only in the first.
    let samples = fleet("shared-llm", 2, T0, T0 + 2 * H);
    let usage = vec![
        tokens(tenant(1), "shared-llm", T0 + 1000, 300),
        tokens(tenant(2), "shared-llm", T0 + 2000, 100),
    ];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + 2 * H);
    let row = &a.deployments[0];
    assert_eq!(row.cost, d("10.38"));
    assert_eq!(row.allocated, d("5.19"));
    assert_eq!(row.unallocated, d("5.19"));
    assert_eq!(amount(&a, tenant(1)), d("3.89")); // 3.8934
    assert_eq!(amount(&a, tenant(2)), d("1.30")); // 1.2978
    assert_reconciles(&a);

    let mut spec = spec("proportional");
    spec.idle_capacity = IdleCapacity::Proportional;
    let a = run(&samples, &usage, &[Policy::new(1, spec)], T0, T0 + 2 * H);
    let row = &a.deployments[0];
    assert_eq!(row.unallocated, d("0.00"));
    assert_eq!(row.allocated, d("10.38"));
    assert_eq!(amount(&a, tenant(1)), d("7.79")); // 7.7868 -> 3/4 of 10.3824
    assert_eq!(amount(&a, tenant(2)), d("2.59")); // 2.5956
    assert_reconciles(&a);
}

#[test]
fn proportional_idle_stays_unallocated_when_no_tenant_used_the_deployment() {
    let samples = fleet("nobody", 1, T0, T0 + H);
    let mut spec = spec("proportional");
    spec.idle_capacity = IdleCapacity::Proportional;
    let a = run(&samples, &[], &[Policy::new(1, spec)], T0, T0 + H);
    assert_eq!(a.deployments[0].unallocated, a.deployments[0].cost);
    assert!(a.items.is_empty());
    assert_reconciles(&a);
}

#[test]
fn gpu_seconds_claims_are_used_as_given_and_capped_at_what_was_measured() {
    let samples = fleet("shared-llm", 1, T0, T0 + H); // 3600 GPU-seconds
    let usage = vec![gpu_seconds_event(tenant(1), "shared-llm", T0 + 5, "900")];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + H);
    let item = &a.items[0];
    assert_eq!(item.gpu_seconds, d("900"));
    assert_eq!(a.deployments[0].cost, d("2.60")); // 2.478 + 0.1176 = 2.5956
    assert_eq!(item.allocated.amount, d("0.65")); // a quarter: 0.6489
    assert_reconciles(&a);

    // Claims of 5000 + 2200 GPU-seconds against 3600 measured: scaled to 2500 + 1100, reported.
    let usage = vec![
        gpu_seconds_event(tenant(1), "shared-llm", T0 + 5, "5000"),
        gpu_seconds_event(tenant(2), "shared-llm", T0 + 6, "2200"),
    ];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + H);
    let gs: Vec<Decimal> = a.tenants.iter().map(|t| t.gpu_seconds).collect();
    assert_eq!(gs, vec![d("2500"), d("1100")]);
    assert_eq!(a.deployments[0].unallocated, d("0.00"));
    assert!(a
        .findings
        .iter()
        .any(|f| matches!(f, Finding::OverAttribution { .. })));
    assert_reconciles(&a);
}

#[test]
fn a_policy_that_starts_mid_period_prices_only_the_samples_after_it() {
    let samples = fleet("vllm-a", 1, T0, T0 + 2 * H);
    let mut s = spec("from-hour-two");
    s.effective_from = Timestamp(T0 + H);
    let a = run(&samples, &[], &[Policy::new(1, s)], T0, T0 + 2 * H);
    let row = &a.deployments[0];
    assert_eq!(row.samples, 480);
    assert_eq!(row.unpriced_samples, 240);
    assert_eq!(row.cost, d("2.60")); // one GPU-hour priced
    assert!(a
        .findings
        .iter()
        .any(|f| matches!(f, Finding::Unpriced { samples: 240, .. })));
    assert_reconciles(&a);

    // A boundary inside an hour (10:20) prices from the first window that starts at or after it.
    let mut s = spec("from-20-past");
    s.effective_from = Timestamp(T0 + 20 * 60_000);
    let a = run(&samples, &[], &[Policy::new(1, s)], T0, T0 + H);
    assert_eq!(a.deployments[0].unpriced_samples, 80);
}

#[test]
fn no_policy_means_unpriced_never_zero() {
    let samples = fleet("mystery", 1, T0, T0 + H);
    let a = run(&samples, &[], &[], T0, T0 + H);
    let row = &a.deployments[0];
    assert_eq!(row.currency, None);
    assert_eq!(row.unpriced_samples, 240);
    assert_eq!(row.gpu_seconds, d("3600"));
    assert!(matches!(
        a.findings[0],
        Finding::Unpriced { samples: 240, .. }
    ));
}

#[test]
fn most_specific_policy_wins() {
    let samples = [fleet("vllm-llama-70b", 1, T0, T0 + H), {
        let mut v = fleet("tgi-mistral", 1, T0, T0 + H);
        for s in &mut v {
            s.model = "L40S-48GB".into();
        }
        v
    }]
    .concat();
    let mut general = spec("all");
    general.gpu_hourly_cost = NonNegative::new(d("1")).unwrap();
    let mut vllm = spec("vllm");
    vllm.deployment_pattern = Glob::new("vllm-*").unwrap();
    vllm.gpu_hourly_cost = NonNegative::new(d("2")).unwrap();
    let mut l40s = spec("l40s");
    l40s.gpu_model = Some("l40s".into());
    l40s.gpu_hourly_cost = NonNegative::new(d("3")).unwrap();
    let policies = vec![
        Policy::new(1, general),
        Policy::new(2, vllm),
        Policy::new(3, l40s),
    ];
    let a = run(&samples, &[], &policies, T0, T0 + H);
    let cost = |dep: &str| {
        a.deployments
            .iter()
            .find(|r| r.deployment_id == dep)
            .unwrap()
            .cost
    };
    // energy part: 0.4 kWh x 1.4 x 0.21 = 0.1176; GPU part: price x 1.18
    assert_eq!(cost("vllm-llama-70b"), d("2.48")); // 2.36 + 0.1176
    assert_eq!(cost("tgi-mistral"), d("3.66")); // 3.54 + 0.1176
}

#[test]
fn a_short_gap_is_interpolated_and_flagged_estimated() {
    let mut samples = fleet("vllm-a", 1, T0, T0 + H);
    // Drop 5 minutes (20 windows) in the middle; power ramps 300 W before, 500 W after.
    samples.retain(|s| !(s.end.0 > T0 + 20 * 60_000 && s.end.0 <= T0 + 25 * 60_000));
    for s in &mut samples {
        s.power_w = NonNegative::new(if s.end.0 <= T0 + 20 * 60_000 {
            d("300")
        } else {
            d("500")
        })
        .unwrap();
    }
    let a = run(&samples, &[], &worked_policy(), T0, T0 + H);
    let row = &a.deployments[0];
    assert_eq!(row.samples, 220);
    assert_eq!(row.estimated_samples, 20);
    assert_eq!(row.estimated_gpu_seconds, d("300"));
    assert_eq!(row.gpu_seconds, d("3600"), "the gap is filled, not zero");
    // 20 min at 300 W + 5 min at the 400 W interpolated average + 35 min at 500 W.
    assert_eq!(row.energy_wh, d("100") + d("33.333333") + d("291.666667"));
    assert!(a.gaps.is_empty());
}

#[test]
fn a_long_gap_is_reported_not_filled() {
    let mut samples = fleet("vllm-a", 1, T0, T0 + 2 * H);
    samples.retain(|s| !(s.end.0 > T0 + 30 * 60_000 && s.end.0 <= T0 + 60 * 60_000));
    let a = run(&samples, &[], &worked_policy(), T0, T0 + 2 * H);
    let row = &a.deployments[0];
    assert_eq!(row.gpu_seconds, d("5400"));
    assert_eq!(row.estimated_gpu_seconds, d("0"));
    assert_eq!(a.gaps.len(), 1);
    let g = &a.gaps[0];
    assert_eq!(
        (g.from.0, g.to.0, g.reason),
        (T0 + 30 * 60_000, T0 + 60 * 60_000, GapReason::TooLong)
    );
}

#[test]
fn a_gap_across_a_deployment_change_is_reported_not_filled() {
    let mut samples = fleet("vllm-a", 1, T0, T0 + 10 * 60_000);
    let mut b = fleet("vllm-a", 1, T0 + 12 * 60_000, T0 + 20 * 60_000);
    for s in &mut b {
        s.deployment_id = "vllm-b".into();
    }
    samples.extend(b);
    let a = run(&samples, &[], &worked_policy(), T0, T0 + H);
    assert_eq!(a.gaps.len(), 1);
    assert_eq!(a.gaps[0].reason, GapReason::SeriesChanged);
}

#[test]
fn resent_samples_are_counted_once() {
    let samples = fleet("vllm-a", 2, T0, T0 + H);
    let twice = [samples.clone(), samples.clone()].concat();
    let once = run(&samples, &[], &worked_policy(), T0, T0 + H);
    let again = run(&twice, &[], &worked_policy(), T0, T0 + H);
    assert_eq!(once, again);
    let out = cells(&twice, &SeriesConfig::default());
    assert_eq!(out.duplicates, 480);
}

#[test]
fn a_conflicting_resend_keeps_the_first_received_and_is_reported_once() {
    let first = sample("GPU-x", "vllm-a", T0 + 15_000);
    let mut second = first.clone();
    second.power_w = NonNegative::new(d("700")).unwrap();
    let a = run(
        &[first.clone(), second.clone(), second],
        &[],
        &worked_policy(),
        T0,
        T0 + H,
    );
    assert_eq!(a.deployments[0].energy_wh, d("1.666667"));
    let conflicts = a
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::ConflictingDuplicate { .. }))
        .count();
    assert_eq!(conflicts, 1);
}

#[test]
fn an_empty_period_on_many_threads_is_empty_not_a_panic() {
    let a = allocate(&AllocationInput {
        period: period(T0, T0 + H),
        rollups: &[],
        usage: &[],
        policies: &worked_policy(),
        claims: &[],
        gaps: &[],
        config: AllocationConfig {
            threads: 4,
            ..AllocationConfig::default()
        },
    });
    assert!(a.deployments.is_empty() && a.items.is_empty());
}

#[test]
fn a_window_that_straddles_an_hour_is_split_in_proportion() {
    // One 15 s window from 00:59:50 to 01:00:05, tenant 1 active in hour 0 only.
    let s = sample("GPU-x", "vllm-a", T0 + H + 5_000);
    let usage = vec![tokens(tenant(1), "vllm-a", T0 + 10, 10)];
    let a = run(&[s], &usage, &worked_policy(), T0, T0 + 2 * H);
    assert_eq!(a.items[0].gpu_seconds, d("10"));
    assert_eq!(a.deployments[0].gpu_seconds, d("15"));
}

#[test]
fn mig_slices_are_charged_by_their_fraction() {
    let mut samples = fleet("vllm-small", 1, T0, T0 + H);
    for s in &mut samples {
        s.gpu_uuid = "GPU-abc/mig-1g.10gb-13".into();
        s.gpu_fraction = GpuFraction::new(d("0.142857")).unwrap();
        s.power_w = NonNegative::ZERO;
    }
    let a = run(&samples, &[], &worked_policy(), T0, T0 + H);
    assert_eq!(a.deployments[0].gpu_seconds, d("514.2852"));
    assert_eq!(a.deployments[0].cost, d("0.35")); // 2.478 x 0.142857 = 0.354
}

#[test]
fn tenant_scope_shows_only_the_tenants_own_share() {
    let samples = fleet("vllm-llama-70b", 2, T0, T0 + H);
    let usage = vec![
        tokens(tenant(1), "vllm-llama-70b", T0 + 60_000, 7000),
        tokens(tenant(2), "vllm-llama-70b", T0 + 1_800_000, 3000),
    ];
    let a = run(&samples, &usage, &worked_policy(), T0, T0 + H);
    let s = eai_engine::scope::scoped_to(&a, tenant(2));
    assert!(s.items.iter().all(|i| i.tenant_id == tenant(2)));
    assert_eq!(s.tenants.len(), 1);
    assert_eq!(s.deployments[0].cost, d("1.56"));
    assert_eq!(s.deployments[0].unallocated, d("0"));
    assert!(
        s.daily.is_empty(),
        "a shared deployment's daily total would reveal others' cost"
    );
}

#[test]
fn policies_parse_with_the_portal_guides_validation_messages() {
    use eai_engine::wire::{parse_policy, Loose};
    let parse = |json: &str| {
        let v: Loose = serde_json::from_str(json).unwrap();
        parse_policy(&v, Timestamp(T0))
    };
    let p = parse(r#"{"name":"local-gpu-default","currency":"EUR","gpu_hourly_cost":"2.10","overhead_pct":"18","energy_kwh_price":0.21,"pue":"1.4"}"#).unwrap();
    assert_eq!(p.gpu_hourly_cost.get(), d("2.10"));
    assert_eq!(p.energy_kwh_price.get(), d("0.21"));
    assert_eq!(p.deployment_pattern.as_str(), "*");
    assert_eq!(p.effective_from, Timestamp(T0));
    let errs =
        parse(r#"{"name":"x","currency":"eur","gpu_hourly_cost":"-1","pue":0.9}"#).unwrap_err();
    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, vec!["currency", "gpu_hourly_cost", "pue"]);
    assert_eq!(errs[1].reason, "must not be negative");
    let errs = parse(r#"{"gpu_hourly_cost":"2","gpu_hourly_costs":"3"}"#).unwrap_err();
    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, vec!["gpu_hourly_costs", "name"]);
}

#[test]
fn samples_parse_with_every_bad_field_located() {
    use eai_engine::wire::{parse_samples, Loose};
    let v: Vec<Loose> = serde_json::from_str(
        r#"[{"node":"gpu-node-3","gpu_uuid":"GPU-5e1f","model":"H100-80GB","namespace":"eai-inference","pod":"vllm-llama-70b-0",
             "tenant_id":"8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10","deployment_id":"vllm-llama-70b","window_seconds":15,
             "utilization":0.82,"memory_used_gb":61.2,"power_w":512},
            {"node":"","gpu_uuid":"GPU-1","model":"H100","namespace":"n","pod":"p","deployment_id":"d","window_seconds":0,
             "utilization":1.5,"memory_used_gb":-1,"power_w":"abc","gpu_fraction":0}]"#,
    )
    .unwrap();
    let errs = parse_samples(&v, Timestamp(T0)).unwrap_err();
    let got: Vec<(usize, &str)> = errs
        .iter()
        .map(|e| (e.index.unwrap(), e.field.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "node"),
            (1, "window_seconds"),
            (1, "utilization"),
            (1, "memory_used_gb"),
            (1, "power_w"),
            (1, "gpu_fraction")
        ]
    );
    let ok = parse_samples(&v[..1], Timestamp(T0)).unwrap();
    assert_eq!(ok[0].utilization.get(), d("0.82"));
    assert_eq!(ok[0].memory_used_gb.get(), d("61.2"));
    assert_eq!(ok[0].end, Timestamp(T0), "no timestamp: time of receipt");
}

// ---------------------------------------------------------------------------------------------------------
// Properties over random fleets.

#[derive(Debug, Clone)]
struct Fleet {
    samples: Vec<Sample>,
    usage: Vec<UsageEvent>,
    policies: Vec<Policy>,
}

fn arb_fleet() -> impl Strategy<Value = Fleet> {
    let sample_s = (
        0u8..6,
        0u8..4,
        0i64..(6 * 240),
        0u32..=100,
        0u32..800,
        0u32..80,
        prop::option::of(0u8..3),
        1u32..=7,
        any::<bool>(),
    );
    let event = (
        0u8..4,
        0u8..4,
        0i64..(6 * H),
        0u32..100_000,
        prop::option::of(0u32..5000),
    );
    let policy = (
        0u8..4,
        1u32..500,
        0u32..50,
        100u32..200,
        0i64..6,
        prop::option::of(1i64..8),
        any::<bool>(),
        any::<bool>(),
    );
    (
        prop::collection::vec(sample_s, 0..300),
        prop::collection::vec(event, 0..40),
        prop::collection::vec(policy, 0..4),
    )
        .prop_map(|(ss, es, ps)| {
            let deps = ["vllm-a", "vllm-b", "tgi-c", "train-d"];
            // One sample per (GPU, window): conflicting re-sends are a case of their own (first received wins).
            let mut seen = std::collections::HashSet::new();
            let samples = ss
                .into_iter()
                .filter(|(g, _, slot, ..)| seen.insert((*g, *slot)))
                .map(|(g, dep, slot, util, power, mem, owner, frac, l40s)| {
                    let mut s = sample(
                        &format!("GPU-{g}"),
                        deps[dep as usize],
                        T0 + (slot + 1) * 15_000,
                    );
                    s.utilization = UnitInterval::new(Decimal::new(util.into(), 2)).unwrap();
                    s.power_w = NonNegative::new(Decimal::new(power.into(), 1)).unwrap();
                    s.memory_used_gb =
                        NonNegative::new(Decimal::new(mem.into(), 0) + d("0.0009765625")).unwrap();
                    s.owner = owner.map(|o| tenant(10 + o));
                    s.gpu_fraction = GpuFraction::new(Decimal::from(frac) / Decimal::from(7))
                        .map(|f| GpuFraction::new(f.get().round_dp(6)).unwrap())
                        .unwrap();
                    if l40s {
                        s.model = "L40S".into();
                    }
                    s
                })
                .collect();
            let usage = es
                .into_iter()
                .map(|(t, dep, at, tok, gs)| match gs {
                    Some(gs) => {
                        gpu_seconds_event(tenant(t), deps[dep as usize], T0 + at, &gs.to_string())
                    }
                    None => tokens(tenant(t), deps[dep as usize], T0 + at, tok.into()),
                })
                .collect();
            let policies = ps
                .into_iter()
                .enumerate()
                .map(|(i, (pat, hourly, ovh, pue, from_h, len_h, model, prop))| {
                    let mut s = spec(&format!("p{i}"));
                    s.deployment_pattern =
                        Glob::new(["*", "vllm-*", "tgi-c", "*-d"][pat as usize]).unwrap();
                    s.gpu_hourly_cost = NonNegative::new(Decimal::new(hourly.into(), 2)).unwrap();
                    s.overhead_pct = NonNegative::new(Decimal::from(ovh)).unwrap();
                    s.pue = Pue::new(Decimal::new(pue.into(), 2)).unwrap();
                    s.effective_from = Timestamp(T0 + from_h * H);
                    s.effective_to = len_h.map(|l| Timestamp(T0 + (from_h + l) * H));
                    s.gpu_model = model.then(|| "L40S".to_string());
                    s.idle_capacity = if prop {
                        IdleCapacity::Proportional
                    } else {
                        IdleCapacity::Unallocated
                    };
                    Policy::new(i as u64 + 1, s)
                })
                .collect();
            Fleet {
                samples,
                usage,
                policies,
            }
        })
}

fn whole(f: &Fleet) -> Allocation {
    run(&f.samples, &f.usage, &f.policies, T0, T0 + 6 * H)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn reconciliation_is_exact_to_the_cent(f in arb_fleet()) {
        assert_reconciles(&whole(&f));
    }

    #[test]
    fn the_explanation_of_every_deployment_is_its_allocation(f in arb_fleet()) {
        assert_explained(&f);
    }

    #[test]
    fn cells_summed_as_they_come_are_the_cells_summed_by_key(f in arb_fleet(), shift in 0i64..15_000) {
        // Shifted off the hour, some windows straddle two buckets; in (GPU, end) order, as ingest plans them,
        // and in the fleet's own order.
        let mut samples = f.samples.clone();
        for s in &mut samples {
            s.end = Timestamp(s.end.0 + shift);
        }
        let mut ordered = samples.clone();
        ordered.sort_by(|a, b| (&a.gpu_uuid, a.end).cmp(&(&b.gpu_uuid, b.end)));
        for batch in [&samples, &ordered] {
            let (mut one_by_one, mut as_they_come) = (Vec::new(), Vec::new());
            for s in batch.iter() {
                sample_cells(s, H, &mut one_by_one);
                add_sample_cells(s, H, &mut as_they_come);
            }
            prop_assert!(as_they_come.len() <= one_by_one.len());
            prop_assert_eq!(aggregate(as_they_come), aggregate(one_by_one));
        }
    }

    #[test]
    fn rollups_give_the_raw_answer(f in arb_fleet()) {
        let raw = whole(&f);
        let cfg = SeriesConfig::default();
        let out = cells(&f.samples, &cfg);
        let rollups = aggregate(out.cells.clone());
        prop_assert!(rollups.len() <= out.cells.len());
        let mut rolled = allocate(&AllocationInput {
            period: period(T0, T0 + 6 * H),
            rollups: &rollups,
            usage: &f.usage,
            policies: &f.policies,
            claims: &[],
            gaps: &out.gaps,
            config: AllocationConfig::default(),
        });
        rolled.findings.extend(out.findings);
        prop_assert_eq!(raw, rolled);
    }

    #[test]
    fn group_rollups_and_summed_claims_give_the_same_answer(f in arb_fleet()) {
        // What the store reads: one rollup per (deployment, owner, model, hour) naming its GPUs, and usage as
        // claims summed per (deployment, tenant, hour); the answer is the one of per-GPU rollups and events.
        let cfg = SeriesConfig::default();
        let out = cells(&f.samples, &cfg);
        let rollups = aggregate(out.cells);
        let per_gpu = allocate(&AllocationInput {
            period: period(T0, T0 + 6 * H),
            rollups: &rollups,
            usage: &f.usage,
            policies: &f.policies,
            claims: &[],
            gaps: &out.gaps,
            config: AllocationConfig::default(),
        });
        let groups = group(rollups.clone());
        prop_assert!(groups.len() <= rollups.len());
        prop_assert!(groups.iter().all(|g| g.key.gpu_uuid.is_empty() && g.gpus.is_some()));
        let claims = sum_claims(&f.usage);
        let grouped = allocate(&AllocationInput {
            period: period(T0, T0 + 6 * H),
            rollups: &groups,
            usage: &[],
            policies: &f.policies,
            claims: &claims,
            gaps: &out.gaps,
            config: AllocationConfig::default(),
        });
        prop_assert_eq!(&per_gpu, &grouped);
        // Half the claims as events, half summed: the same again.
        let (a, b) = f.usage.split_at(f.usage.len() / 2);
        let b_ids: std::collections::HashSet<_> = b.iter().map(|e| e.event_id).collect();
        let a: Vec<UsageEvent> = a.iter().filter(|e| !b_ids.contains(&e.event_id)).cloned().collect();
        let mixed = allocate(&AllocationInput {
            period: period(T0, T0 + 6 * H),
            rollups: &groups,
            usage: &a,
            policies: &f.policies,
            claims: &sum_claims(b),
            gaps: &out.gaps,
            config: AllocationConfig::default(),
        });
        prop_assert_eq!(&per_gpu, &mixed);
    }

    #[test]
    fn threads_do_not_change_the_answer(f in arb_fleet(), threads in 2usize..5) {
        let cfg = SeriesConfig::default();
        let out = cells(&f.samples, &cfg);
        let rollups = aggregate(out.cells);
        let run = |threads| allocate(&AllocationInput {
            period: period(T0, T0 + 6 * H),
            rollups: &rollups,
            usage: &f.usage,
            policies: &f.policies,
            claims: &[],
            gaps: &out.gaps,
            config: AllocationConfig { threads, ..AllocationConfig::default() },
        });
        prop_assert_eq!(run(1), run(threads));
    }

    #[test]
    fn day_items_reconcile_over_several_days(f in arb_fleet()) {
        // The fleet's six hours stretched over three days (every time x12): windows stay 15 s, so the series
        // has gaps and estimated spans; policies' boundaries land inside days.
        let stretch = |t: i64| T0 + (t - T0) * 12;
        let mut g = f.clone();
        for s in &mut g.samples { s.end = Timestamp(stretch(s.end.0)); }
        for e in &mut g.usage { e.occurred_at = Timestamp(stretch(e.occurred_at.0)); }
        for p in &mut g.policies {
            p.spec.effective_from = Timestamp(stretch(p.spec.effective_from.0));
            p.spec.effective_to = p.spec.effective_to.map(|t| Timestamp(stretch(t.0)));
        }
        run_by_day(&g.samples, &g.usage, &g.policies, T0, T0 + 72 * H);
    }

    #[test]
    fn input_order_does_not_matter(f in arb_fleet(), seed in any::<u64>()) {
        let mut g = f.clone();
        // A deterministic shuffle of samples and events.
        let mut x = seed | 1;
        let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
        for i in (1..g.samples.len()).rev() { let j = (next() % (i as u64 + 1)) as usize; g.samples.swap(i, j); }
        for i in (1..g.usage.len()).rev() { let j = (next() % (i as u64 + 1)) as usize; g.usage.swap(i, j); }
        prop_assert_eq!(whole(&f), whole(&g));
    }

    #[test]
    fn resent_samples_and_events_change_nothing(f in arb_fleet(), k in 0usize..50) {
        let mut g = f.clone();
        let extra: Vec<Sample> = f.samples.iter().take(k).cloned().collect();
        g.samples.extend(extra);
        let extra: Vec<UsageEvent> = f.usage.iter().take(k / 5).cloned().collect();
        g.usage.extend(extra);
        prop_assert_eq!(whole(&f), whole(&g));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Settled splits kept between allocations: the answer is the one computed from scratch, to the last digit.

/// What the store reads for `f`: group rollups, summed claims, gaps.
fn store_read(
    f: &Fleet,
) -> (
    Vec<eai_engine::rollup::Rollup>,
    Vec<eai_engine::allocate::UsageClaim>,
    Vec<eai_engine::report::Gap>,
) {
    let out = cells(&f.samples, &SeriesConfig::default());
    (group(aggregate(out.cells)), sum_claims(&f.usage), out.gaps)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn kept_splits_give_the_answer_computed_now(
        f in arb_fleet(),
        g in arb_fleet(),
        cut in (0i64..3, 0i64..3),
        day_items in any::<bool>(),
        hour_items in any::<bool>(),
        threads in 1usize..3,
    ) {
        let config = AllocationConfig {
            threads,
            day_items,
            item_span: if hour_items { Span::Hour } else { Span::Day },
            ..AllocationConfig::default()
        };
        let cache = SplitCache::new(10_000);
        // The fleet; then more samples and usage in the same (closed) hours, as late writes; then other
        // policies (other rates and idle rules) on the first fleet.
        let mut later = f.clone();
        later.samples.extend(g.samples.iter().cloned());
        later.usage.extend(g.usage.iter().cloned());
        let mut repriced = f.clone();
        repriced.policies = g.policies.clone();
        let periods = [period(T0, T0 + 6 * H), period(T0 + cut.0 * H, T0 + (6 - cut.1) * H)];
        for (step, fleet) in [&f, &f, &later, &later, &f, &repriced, &repriced].into_iter().enumerate() {
            let (rollups, claims, gaps) = store_read(fleet);
            for p in periods {
                let input = AllocationInput {
                    period: p,
                    rollups: &rollups,
                    usage: &[],
                    policies: &fleet.policies,
                    claims: &claims,
                    gaps: &gaps,
                    config,
                };
                let kept = allocate_cached(&input, &cache);
                prop_assert_eq!(&kept, &allocate(&input), "step {}, period {:?}", step, p);
            }
        }
        // Per-GPU rollups and raw events through the same cache: the same answer again.
        let out = cells(&f.samples, &SeriesConfig::default());
        let rollups = aggregate(out.cells);
        let input = AllocationInput {
            period: periods[1],
            rollups: &rollups,
            usage: &f.usage,
            policies: &f.policies,
            claims: &[],
            gaps: &out.gaps,
            config,
        };
        prop_assert_eq!(allocate_cached(&input, &cache), allocate(&input));
    }
}

#[test]
fn a_split_cache_over_its_bound_empties_and_still_answers() {
    let samples: Vec<Sample> = (0..24 * 240)
        .map(|i| sample("GPU-0", "vllm-a", T0 + (i + 1) * 15_000))
        .collect();
    let usage: Vec<UsageEvent> = (0..24)
        .flat_map(|h| {
            [
                tokens(tenant(1), "vllm-a", T0 + h * H + 10, 100 + h as u64),
                tokens(tenant(2), "vllm-a", T0 + h * H + 20, 300),
            ]
        })
        .collect();
    let policies = vec![Policy::new(1, spec("p"))];
    let f = Fleet {
        samples,
        usage,
        policies,
    };
    let (rollups, claims, gaps) = store_read(&f);
    let input = AllocationInput {
        period: period(T0, T0 + 24 * H),
        rollups: &rollups,
        usage: &[],
        policies: &f.policies,
        claims: &claims,
        gaps: &gaps,
        config: AllocationConfig::default(),
    };
    let fresh = allocate(&input);
    let roomy = SplitCache::new(24);
    assert_eq!(allocate_cached(&input, &roomy), fresh);
    assert_eq!(roomy.held(), 24, "one split per shared deployment-hour");
    assert_eq!(allocate_cached(&input, &roomy), fresh);
    assert_eq!(roomy.held(), 24);
    let small = SplitCache::new(23);
    assert_eq!(allocate_cached(&input, &small), fresh);
    assert_eq!(small.held(), 0, "over its bound: emptied");
    let off = SplitCache::new(0);
    assert_eq!(allocate_cached(&input, &off), fresh);
    assert_eq!(off.held(), 0);
}

// ---------------------------------------------------------------------------------------------------------
// Cost per token and cost over time: they reconcile to the allocation.

/// The fleet's events, plus vLLM counters on `vllm-a` (a deployment's own measures: they never weigh a split).
fn with_vllm_counters(f: &Fleet) -> Vec<UsageEvent> {
    let mut events = f.usage.clone();
    for h in 0..6 {
        let mut e = tokens(TenantId::PLATFORM, "vllm-a", T0 + h * H + 1_000, 9_000);
        e.source = eai_engine::domain::VLLM_SOURCE.into();
        for (unit, v) in [
            ("tokens_out", "1500"),
            ("cached_tokens_in", "3000"),
            ("prefill_seconds", "12.5"),
            ("decode_seconds", "40"),
        ] {
            e.units.insert(unit.into(), NonNegative::new(d(v)).unwrap());
        }
        events.push(e);
    }
    events
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn token_costs_reconcile_to_the_allocation(f in arb_fleet()) {
        use eai_engine::tokens::{token_costs, Aggregate, Basis, TokenCostInput};
        let events = with_vllm_counters(&f);
        let a = run(&f.samples, &events, &f.policies, T0, T0 + 6 * H);
        // vLLM counters weigh nothing: the same allocation as without them.
        prop_assert_eq!(&a, &whole(&f));
        let input = TokenCostInput { allocation: &a, events: &events, policies: &f.policies, basis: Basis::Allocation };
        let sum = |rows: &[eai_engine::tokens::TokenCost], c: Currency| -> Decimal {
            rows.iter().filter(|r| r.currency == c).map(|r| r.cost).sum()
        };
        let deployments = token_costs(&input, Aggregate::Deployment, None);
        let tenants = token_costs(&input, Aggregate::Tenant, None);
        let models = token_costs(&input, Aggregate::Model, None);
        // Every policy of the fleet prices in euros.
        let c = Currency::EUR;
        let cost: Decimal = a.deployments.iter().filter(|r| r.currency == Some(c)).map(|r| r.cost).sum();
        let allocated: Decimal = a.deployments.iter().filter(|r| r.currency == Some(c)).map(|r| r.allocated).sum();
        prop_assert_eq!(sum(&deployments, c), cost, "deployments sum to the cost column");
        prop_assert_eq!(sum(&models, c), cost, "models sum to the cost column");
        prop_assert_eq!(sum(&tenants, c), allocated, "tenants sum to the allocated column");
        for r in deployments.iter().chain(&tenants).chain(&models).chain(tenants.iter().flat_map(|t| &t.parts)) {
            if let (Some(i), Some(o)) = (r.input_cost, r.output_cost) {
                prop_assert_eq!(i + o, r.cost, "input and output split the cost: {:?}", r);
                prop_assert!(i >= Decimal::ZERO && o >= Decimal::ZERO, "{:?}", r);
            }
            prop_assert_eq!(r.per_mtok.is_some(), r.tokens.total() > Decimal::ZERO, "{:?}", r);
        }
        // A tenant's share: its allocated cost over its own tokens, on each deployment.
        for t in &tenants {
            for p in &t.parts {
                let mine: Decimal = a.items.iter()
                    .filter(|i| Some(i.tenant_id) == p.tenant_id && Some(&i.deployment_id) == p.deployment_id.as_ref())
                    .map(|i| i.allocated.amount)
                    .sum();
                prop_assert_eq!(p.cost, mine);
            }
        }
        // vllm-a's tokens are its server's counters, split by measured time with the cache left out.
        if let Some(r) = deployments.iter().find(|r| r.deployment_id.as_deref() == Some("vllm-a")) {
            prop_assert_eq!(r.tokens.input, d("54000"));
            prop_assert_eq!(r.tokens.effective_input, d("36000"));
            prop_assert_eq!(r.method.as_str(), "compute_time");
        }
        // The usage basis never costs more than the allocation basis.
        let usage = token_costs(&TokenCostInput { basis: Basis::Usage, ..input }, Aggregate::Deployment, None);
        for (u, full) in usage.iter().zip(&deployments) {
            prop_assert!(u.cost <= full.cost, "{:?} {:?}", u, full);
        }
    }

    #[test]
    fn the_steps_of_a_series_sum_to_the_period(f in arb_fleet(), step in 0usize..3) {
        use eai_engine::allocation_series::{apportion_steps, bounds, Step};
        let step = [Step::Hour, Step::Day, Step::Week][step];
        let cuts = bounds(Timestamp(T0 + H), Timestamp(T0 + 5 * H), step);
        let inner = run(&f.samples, &f.usage, &f.policies, T0 + H, T0 + 5 * H);
        let parts: Vec<Allocation> = cuts
            .iter()
            .map(|(from, to)| run(&f.samples, &f.usage, &f.policies, from.0, to.0))
            .collect();
        for tenant_view in [None, Some(tenant(1)), Some(tenant(10))] {
            let rows = apportion_steps(&inner, &parts, tenant_view);
            prop_assert_eq!(rows.len(), cuts.len());
            let flat: Vec<_> = rows.iter().flatten().collect();
            match tenant_view {
                None => for r in &inner.deployments {
                    let Some(c) = r.currency else { continue };
                    let mine = flat.iter().filter(|s| s.deployment_id == r.deployment_id && s.currency == c);
                    let (cost, al, un) = mine.fold((Decimal::ZERO, Decimal::ZERO, Decimal::ZERO), |acc, s| (acc.0 + s.cost, acc.1 + s.allocated, acc.2 + s.unallocated));
                    prop_assert_eq!((cost, al, un), (r.cost, r.allocated, r.unallocated), "{}", r.deployment_id);
                },
                Some(t) => {
                    let total: Decimal = flat.iter().map(|s| s.allocated).sum();
                    let expected: Decimal = inner.items.iter().filter(|i| i.tenant_id == t).map(|i| i.allocated.amount).sum();
                    prop_assert_eq!(total, expected);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The request parsers on arbitrary input: never a panic, every refusal located.

/// Field names the parsers know (samples, usage events, policies, their nested objects), and a few they do not.
fn wire_keys() -> Vec<&'static str> {
    use eai_engine::wire::{EVENT_FIELDS, POLICY_FIELDS, SAMPLE_FIELDS};
    let nested = [
        "provider",
        "name",
        "tokens_in",
        "tokens_out",
        "cached_tokens_in",
        "gpu_seconds",
        "amount",
        "currency",
    ];
    let mut keys: Vec<&'static str> = [
        SAMPLE_FIELDS,
        EVENT_FIELDS,
        POLICY_FIELDS,
        &nested,
        &["id", "unknown", ""],
    ]
    .concat();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Scalars chosen to reach the parsers' edges: numbers past a decimal's range and precision, exponents, signs,
/// impossible or extreme instants, uuids, empty and long strings.
fn wire_scalar() -> impl Strategy<Value = eai_engine::wire::Loose> {
    use eai_engine::wire::Loose;
    let numbers = prop::sample::select(vec![
        "0",
        "-0",
        "-1",
        "1",
        "15",
        "3600",
        "0.5",
        "1e3",
        "1E-3",
        "1e999999",
        "-1e999999",
        "1e-999999",
        "79228162514264337593543950336",
        "-79228162514264337593543950335",
        "0.00000000000000000000000000001",
        "1.0000000000000000000000000001",
        "12345678901234567890.123456789",
        "9223372036854775808",
        "NaN",
        "1e",
        "--1",
        ".5",
    ]);
    let strings = prop::sample::select(vec![
        "",
        "x",
        "EUR",
        "usd",
        "XXXXXX",
        "2026-10-01T00:00:00Z",
        "2026-10-01T00:00:15+02:00",
        "2026-02-30T25:61:61Z",
        "9999-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
        "2026-10-01",
        "-1",
        "1e3",
        "GPU-1",
        "GPU-1/mig-1g.10gb-3",
        "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10",
        "00000000-0000-0000-0000-000000000000",
        "llm_tokens",
        "gpu_local",
        "allocation",
        "gateway",
        "vllm",
        "1.0",
        "*",
        "vllm-*",
        "\u{0}",
        "🦀",
        "a/b",
        "local",
    ]);
    prop_oneof![
        Just(Loose::Null),
        any::<bool>().prop_map(Loose::Bool),
        numbers.prop_map(|s| Loose::Number(s.to_string())),
        strings.prop_map(|s| Loose::Str(s.to_string())),
        (1usize..300).prop_map(|n| Loose::Str("y".repeat(n))),
    ]
}

fn wire_value() -> impl Strategy<Value = eai_engine::wire::Loose> {
    use eai_engine::wire::Loose;
    wire_scalar().prop_recursive(3, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Loose::Array),
            prop::collection::btree_map(
                prop::sample::select(wire_keys()).prop_map(str::to_string),
                inner,
                0..10
            )
            .prop_map(Loose::Object),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Samples, usage events and policies built from known field names and edge values: each parser answers a
    /// value or located refusals, never a panic (a panic would be a 500 for a malformed request).
    #[test]
    fn the_request_parsers_never_panic_and_locate_every_refusal(v in wire_value(), items in prop::collection::vec(wire_value(), 0..4)) {
        use eai_engine::wire::{parse_policy, parse_sample, parse_samples, parse_stored_policy, parse_usage_event, parse_usage_events, TenantSource};
        let now = Timestamp(1_790_000_000_000);
        let located = |errs: &[eai_engine::error::FieldError]| !errs.is_empty();
        if let Err(e) = parse_sample(&v, now) { prop_assert!(located(&e)); }
        if let Err(e) = parse_policy(&v, now) { prop_assert!(located(&e)); }
        if let Err(e) = parse_stored_policy(&v, 0) { prop_assert!(located(&e)); }
        if let Err(e) = parse_usage_event(&v, TenantSource::Body) { prop_assert!(located(&e)); }
        let tenant = TenantSource::Credential(TenantId(Uuid::from_u128(7)));
        if let Err(e) = parse_usage_event(&v, tenant) { prop_assert!(located(&e)); }
        if let Err(e) = parse_samples(&items, now) { prop_assert!(located(&e)); }
        let _ = parse_usage_events(&items, TenantSource::Body);
    }
}

/// A JSON text of an object of `pairs` (a key may repeat, as JSON allows).
fn object_text(pairs: &[(String, eai_engine::wire::Loose)]) -> String {
    use eai_engine::wire::Loose;
    let value = |v: &Loose| match v {
        Loose::Null => "null".to_string(),
        Loose::Bool(b) => b.to_string(),
        Loose::Number(n) => n.clone(),
        Loose::Str(s) => serde_json::to_string(s).unwrap(),
        Loose::Array(_) => "[1]".to_string(),
        Loose::Object(_) => "{\"a\":1}".to_string(),
    };
    let fields: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), value(v)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The control plane reads a batch of flat samples without a tree of each (`FlatObject`): for the same text,
    /// the same samples or the same refusals as the `Loose` reading, repeated keys, unknown keys, escapes,
    /// exponents and wrong types included. A nested value makes the flat reading fail (the tree one is used).
    #[test]
    fn flat_samples_read_as_the_tree_reads_them(
        base in any::<bool>(),
        pairs in prop::collection::vec((prop::sample::select(wire_keys()), wire_scalar()), 0..8),
        nested in prop::option::of(prop::sample::select(wire_keys())),
    ) {
        use eai_engine::wire::{parse_flat_samples, parse_samples, FlatObject, Loose};
        let now = Timestamp(1_790_000_000_000);
        let good: Vec<(&str, Loose)> = vec![
            ("node", Loose::Str("gpu-node-3".into())),
            ("gpu_uuid", Loose::Str("GPU-5e1f".into())),
            ("model", Loose::Str("H100-80GB".into())),
            ("namespace", Loose::Str("eai-inference".into())),
            ("pod", Loose::Str("vllm-0".into())),
            ("tenant_id", Loose::Str("8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10".into())),
            ("deployment_id", Loose::Str("vllm".into())),
            ("window_seconds", Loose::Number("15".into())),
            ("utilization", Loose::Number("0.82".into())),
            ("memory_used_gb", Loose::Str("61.2".into())),
            ("power_w", Loose::Number("5.12e2".into())),
            ("timestamp", Loose::Str("2026-10-01T00:00:15Z".into())),
        ];
        let mut fields: Vec<(String, Loose)> = if base {
            good.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
        } else {
            Vec::new()
        };
        fields.extend(pairs.into_iter().map(|(k, v)| (k.to_string(), v)));
        if let Some(k) = nested {
            fields.push((k.to_string(), Loose::Array(Vec::new())));
        }
        let text = format!("[{}]", object_text(&fields));
        let Ok(tree) = serde_json::from_str::<Vec<Loose>>(&text) else {
            // Not JSON (a number such as `NaN` or `.5`): neither reading takes it.
            prop_assert!(serde_json::from_str::<Vec<FlatObject>>(&text).is_err());
            return Ok(());
        };
        match serde_json::from_str::<Vec<FlatObject>>(&text) {
            Ok(flat) => {
                prop_assert!(nested.is_none());
                prop_assert_eq!(parse_flat_samples(&flat, now), parse_samples(&tree, now));
            }
            Err(_) => prop_assert!(nested.is_some(), "a flat object was not read flat: {}", text),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Breakdown: per pod, node, GPU, namespace, deployment, tenant, model, share method.

/// Where the fleets' time runs: a pod per (deployment, GPU pair), a node per three GPUs, namespace per deployment.
fn placed(f: &Fleet) -> Vec<eai_engine::Rollup> {
    let samples: Vec<Sample> = f
        .samples
        .iter()
        .cloned()
        .map(|mut s| {
            let g: u32 = s.gpu_uuid.trim_start_matches("GPU-").parse().unwrap();
            s.namespace = format!("ns-{}", s.deployment_id);
            s.pod = format!("{}-{}", s.deployment_id, g / 2);
            s.node = format!("node-{}", g / 3);
            s
        })
        .collect();
    aggregate(cells(&samples, &SeriesConfig::default()).cells)
}

fn costs_by_currency<'a>(
    rows: impl IntoIterator<Item = &'a eai_engine::breakdown::BreakdownRow>,
) -> BTreeMap<Currency, Decimal> {
    let mut by = BTreeMap::new();
    for r in rows {
        for (c, a) in &r.cost {
            *by.entry(*c).or_default() += *a;
        }
    }
    by
}

#[test]
fn a_deployments_cost_is_shared_over_its_pods_by_gpu_seconds_to_the_cent() {
    use eai_engine::breakdown::{breakdown, Dimension};
    // The worked example's deployment (5.19 EUR over 2 GPUs for an hour), one GPU running half the hour only.
    let mut samples = fleet("vllm-llama-70b", 1, T0, T0 + H);
    samples.extend(
        fleet("vllm-llama-70b", 2, T0, T0 + H / 2)
            .into_iter()
            .skip(120),
    );
    for s in &mut samples {
        s.pod = format!("pod-of-{}", s.gpu_uuid);
    }
    let policies = worked_policy();
    let a = run(&samples, &[], &policies, T0, T0 + H);
    let rollups = aggregate(cells(&samples, &SeriesConfig::default()).cells);
    let rollups = eai_engine::gpu_usage::GpuUsage::from_rollups(&rollups).unwrap();
    let b = breakdown(
        period(T0, T0 + H),
        H,
        &policies,
        &a,
        &rollups,
        &[Dimension::Pod],
        &[],
    );
    let cost = a.deployments[0].cost;
    let rows: Vec<(String, Decimal, Decimal)> = b
        .rows
        .iter()
        .map(|r| (r.key[0].clone().unwrap(), r.q.gpu_seconds, r.cost[0].1))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].1, d("3600"), "{rows:?}");
    assert_eq!(rows[1].1, d("1800"), "{rows:?}");
    assert_eq!(rows[0].2 + rows[1].2, cost);
    // Two thirds and one third of the cost, to the cent (the larger remainder takes the odd cent).
    let third = (cost / Decimal::from(3)).round_dp(2);
    assert!((rows[1].2 - third).abs() <= d("0.01"), "{rows:?} of {cost}");
    // Filtered to one pod: the same row, the same cents.
    let one = breakdown(
        period(T0, T0 + H),
        H,
        &policies,
        &a,
        &rollups,
        &[Dimension::Pod],
        &[(Dimension::Pod, rows[1].0.clone())],
    );
    assert_eq!(one.rows, vec![b.rows[1].clone()]);
}

type Row<'a> = (Option<&'a str>, Option<&'a str>, Decimal, Option<Decimal>);

/// A two-dimension breakdown's rows: both values, GPU-seconds and share of the GPU.
fn table(b: &eai_engine::breakdown::Breakdown) -> Vec<Row<'_>> {
    b.rows
        .iter()
        .map(|r| {
            (
                r.key[0].as_deref(),
                r.key[1].as_deref(),
                r.q.gpu_seconds,
                r.gpu_share,
            )
        })
        .collect()
}

/// A GPU shared by two pods (SPEC §11): the breakdown by pod and GPU shows each pod on the one GPU with its
/// share of the GPU's time, and by share method how each share was obtained. The measured shares of the first
/// half hour (0.7 and 0.2, the rest idle) and the equal ones of the second (0.5 each) give chat-0
/// (0.7 + 0.5) / 2 = 0.6, embed-0 0.35 and the idle share 0.05 of the GPU's hour.
#[test]
fn a_shared_gpu_shows_each_pods_share_and_its_method() {
    use eai_engine::breakdown::{breakdown, Dimension};
    use eai_engine::domain::ShareMethod;
    let mut samples = Vec::new();
    for s in fleet("chat", 1, T0, T0 + H) {
        let measured = s.end.0 <= T0 + H / 2;
        let method = if measured {
            ShareMethod::Measured
        } else {
            ShareMethod::Equal
        };
        let part = |id: &str, dep: &str, pod: &str, f: &str| {
            let mut x = s.clone();
            x.gpu_uuid = id.into();
            x.deployment_id = dep.into();
            x.pod = pod.into();
            x.gpu_fraction = GpuFraction::new(d(f)).unwrap();
            x.share_method = method;
            x
        };
        let (chat, embed) = if measured {
            ("0.7", "0.2")
        } else {
            ("0.5", "0.5")
        };
        samples.push(part("GPU-chat-0", "chat", "chat-0", chat));
        samples.push(part(
            "GPU-chat-0/shared/ns/embed-0",
            "embed",
            "embed-0",
            embed,
        ));
        if measured {
            samples.push(part("GPU-chat-0/shared-idle", "idle", "", "0.1"));
        }
    }
    let policies = worked_policy();
    let a = run(&samples, &[], &policies, T0, T0 + H);
    let rollups = aggregate(cells(&samples, &SeriesConfig::default()).cells);
    let usage = eai_engine::gpu_usage::GpuUsage::from_rollups(&rollups).unwrap();
    let p = period(T0, T0 + H);
    let b = breakdown(
        p,
        H,
        &policies,
        &a,
        &usage,
        &[Dimension::Pod, Dimension::Gpu],
        &[],
    );
    let rows = table(&b);
    let gpu = Some("GPU-chat-0");
    assert_eq!(
        rows,
        vec![
            (Some(""), gpu, d("180"), Some(d("0.05"))),
            (Some("chat-0"), gpu, d("2160"), Some(d("0.6"))),
            (Some("embed-0"), gpu, d("1260"), Some(d("0.35"))),
        ]
    );
    // The pods' costs are the allocation's, to the cent.
    let total: Decimal = a.deployments.iter().map(|r| r.cost).sum();
    assert_eq!(costs_by_currency(&b.rows).values().sum::<Decimal>(), total);
    // By method: each pod's measured and equal time apart.
    let b = breakdown(
        p,
        H,
        &policies,
        &a,
        &usage,
        &[Dimension::Pod, Dimension::Share],
        &[],
    );
    let rows = table(&b);
    assert_eq!(
        rows,
        vec![
            (Some(""), Some("measured"), d("180"), None),
            (Some("chat-0"), Some("equal"), d("900"), None),
            (Some("chat-0"), Some("measured"), d("1260"), None),
            (Some("embed-0"), Some("equal"), d("900"), None),
            (Some("embed-0"), Some("measured"), d("360"), None),
        ]
    );
    // Filtered to the GPU: every share of it.
    let one = breakdown(
        p,
        H,
        &policies,
        &a,
        &usage,
        &[Dimension::Gpu],
        &[(Dimension::Gpu, "GPU-chat-0".into())],
    );
    assert_eq!(one.rows.len(), 1);
    assert_eq!(one.rows[0].q.gpu_seconds, d("3600"));
    assert_eq!(one.rows[0].gpu_share, Some(Decimal::ONE));
}

fn arb_grouping() -> impl Strategy<Value = Vec<eai_engine::breakdown::Dimension>> {
    prop::sample::subsequence(eai_engine::breakdown::Dimension::ALL.to_vec(), 0..=3).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn breakdown_rows_sum_to_the_allocation_to_the_cent(
        f in arb_fleet(),
        group_by in arb_grouping(),
        pick in any::<prop::sample::Index>(),
    ) {
        use eai_engine::breakdown::{breakdown, Dimension};
        let a = whole(&f);
        let placed = placed(&f);
        let rollups = eai_engine::gpu_usage::GpuUsage::from_rollups(&placed).unwrap();
        let p = period(T0, T0 + 6 * H);
        let b = breakdown(p, H, &f.policies, &a, &rollups, &group_by, &[]);
        // The same rows in another order and other chunks (each rollup its own chunk, the last first): the
        // same answer, to the last digit.
        let mut scattered = rollups.clone();
        scattered.chunks = placed
            .iter()
            .rev()
            .map(|r| {
                let one = eai_engine::gpu_usage::GpuUsage::from_rollups([r]).unwrap();
                let mut row = one.chunks[0][0];
                row.labels = rollups.labels.iter().position(|l| l.as_deref() == one.labels[0].as_deref()).unwrap() as u32;
                row.gpu = rollups.gpus.iter().position(|g| *g == one.gpus[0]).unwrap() as u32;
                vec![row].into()
            })
            .collect();
        prop_assert_eq!(&breakdown(p, H, &f.policies, &a, &scattered, &group_by, &[]), &b);
        // Every row's cost is in minor units; all rows sum to all deployments, per currency.
        for r in &b.rows {
            prop_assert_eq!(r.key.len(), b.group_by.len());
            for (c, amount) in &r.cost {
                prop_assert_eq!(c.round(*amount), *amount);
            }
        }
        let mut want: BTreeMap<Currency, Decimal> = BTreeMap::new();
        for row in &a.deployments {
            if let Some(c) = row.currency {
                *want.entry(c).or_default() += row.cost;
            }
        }
        want.retain(|_, v| !v.is_zero());
        let mut got = costs_by_currency(&b.rows);
        got.retain(|_, v| !v.is_zero());
        prop_assert_eq!(&got, &want);
        let gs: Decimal = b.rows.iter().map(|r| r.q.gpu_seconds).sum();
        let want_gs: Decimal = a.deployments.iter().map(|r| r.gpu_seconds).sum();
        prop_assert_eq!(gs, want_gs);
        let samples: u64 = b.rows.iter().map(|r| r.samples).sum();
        prop_assert_eq!(samples, a.deployments.iter().map(|r| r.samples).sum::<u64>());
        // Grouped by GPU: each row has its share of its GPU, and a GPU's rows' shares sum to one (each rounded
        // to 10^-6); otherwise none.
        match b.group_by.iter().position(|d| *d == Dimension::Gpu) {
            None => prop_assert!(b.rows.iter().all(|r| r.gpu_share.is_none())),
            Some(at) => {
                let mut per_gpu: BTreeMap<Option<String>, (Decimal, u32)> = BTreeMap::new();
                for r in &b.rows {
                    let e = per_gpu.entry(r.key[at].clone()).or_default();
                    e.0 += r.gpu_share.unwrap();
                    e.1 += 1;
                }
                for (g, (sum, n)) in per_gpu {
                    let slack = Decimal::new(i64::from(n), 6);
                    prop_assert!((sum - Decimal::ONE).abs() <= slack, "{:?}: {} over {} rows", g, sum, n);
                }
            }
        }
        // Grouped with the deployment: each deployment's rows sum to its cost.
        let mut with_dep = group_by.clone();
        with_dep.push(Dimension::Deployment);
        let bd = breakdown(p, H, &f.policies, &a, &rollups, &with_dep, &[]);
        let at = bd.group_by.iter().position(|d| *d == Dimension::Deployment).unwrap();
        for row in &a.deployments {
            let Some(c) = row.currency else { continue };
            let sum: Decimal = bd
                .rows
                .iter()
                .filter(|r| r.key[at].as_deref() == Some(row.deployment_id.as_str()))
                .flat_map(|r| &r.cost)
                .filter(|(rc, _)| *rc == c)
                .map(|(_, x)| *x)
                .sum();
            prop_assert_eq!(sum, row.cost, "{}", row.deployment_id);
        }
        // A filter on a dimension of the grouping keeps exactly the unfiltered rows of that value.
        if let (Some(first), false) = (b.group_by.first(), b.rows.is_empty()) {
            let row = &b.rows[pick.index(b.rows.len())];
            if let Some(v) = &row.key[0] {
                let filtered =
                    breakdown(p, H, &f.policies, &a, &rollups, &group_by, &[(*first, v.clone())]);
                let same: Vec<_> = b.rows.iter().filter(|r| r.key[0].as_ref() == Some(v)).cloned().collect();
                prop_assert_eq!(filtered.rows, same);
            }
        }
    }
}
