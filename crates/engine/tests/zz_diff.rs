//! TEMPORARY differential check: the allocation against the reference copy, Debug strings equal. DELETE.
#![allow(clippy::all, missing_debug_implementations)]

use std::collections::BTreeMap;
use std::sync::Arc;

use eai_engine::allocate::{allocate, AllocationConfig, AllocationInput, Period, UsageClaim};
use eai_engine::allocate_ref;
use eai_engine::domain::{
    IdleCapacity, NonNegative, Policy, PolicySpec, Pue, TenantId, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::rollup::{group, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use uuid::Uuid;

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    /// A non-negative decimal with up to `dp` places and about `digits` digits.
    fn dec(&mut self, digits: u32, dp: u32) -> Decimal {
        let digits = 1 + self.below(digits as u64) as u32;
        let m = (self.next() as u128 * self.next() as u128) % 10u128.pow(digits.min(27));
        let scale = self.below(dp as u64 + 1) as u32;
        Decimal::from_i128_with_scale(m as i128, scale)
    }
}

fn tenant(n: u64) -> TenantId {
    TenantId(Uuid::from_bytes([n as u8 + 1; 16]))
}

struct Case {
    period: Period,
    rollups: Vec<Rollup>,
    usage: Vec<UsageEvent>,
    claims: Vec<UsageClaim>,
    policies: Vec<Policy>,
    config: AllocationConfig,
}

fn policy(r: &mut Rng, i: usize, hours: i64) -> Policy {
    let curs = [
        Currency::EUR,
        Currency::USD,
        "JPY".parse().unwrap(),
        "KWD".parse().unwrap(),
    ];
    let pats = ["*", "d-*", "d-1", "d-?", "*2", "x"];
    let cur = if r.chance(70) {
        Currency::EUR
    } else {
        curs[r.below(4) as usize]
    };
    let from = if r.chance(60) {
        0
    } else {
        T0 + (r.below(hours as u64 + 4) as i64 - 2) * H / if r.chance(50) { 1 } else { 4 }
    };
    let spec = PolicySpec {
        name: format!("p{i}"),
        deployment_pattern: Glob::new(pats[r.below(6) as usize]).unwrap(),
        gpu_model: if r.chance(20) {
            Some("L40S".into())
        } else {
            None
        },
        currency: cur,
        gpu_hourly_cost: NonNegative::new(r.dec(5, 4)).unwrap(),
        overhead_pct: NonNegative::new(r.dec(3, 2)).unwrap(),
        energy_kwh_price: NonNegative::new(if r.chance(20) {
            Decimal::ZERO
        } else {
            r.dec(4, 4)
        })
        .unwrap(),
        pue: Pue::new(Decimal::ONE + r.dec(2, 2)).unwrap(),
        storage_gb_month_price: NonNegative::new(if r.chance(50) {
            Decimal::ZERO
        } else {
            r.dec(4, 3)
        })
        .unwrap(),
        idle_capacity: if r.chance(40) {
            IdleCapacity::Proportional
        } else {
            IdleCapacity::Unallocated
        },
        enabled: r.chance(90),
        effective_from: Timestamp(from),
        effective_to: if r.chance(30) {
            Some(Timestamp(
                from.max(T0) + (1 + r.below(hours as u64 + 2) as i64) * H,
            ))
        } else {
            None
        },
    };
    Policy::new(i as u64 + 1, spec)
}

fn quantities(r: &mut Rng, big: bool) -> Quantities {
    let (dg, dp) = if big { (27, 15) } else { (8, 15) };
    let mut q = Quantities {
        gpu_seconds: r.dec(dg.min(12), dp),
        busy_gpu_seconds: r.dec(dg.min(12), dp),
        estimated_gpu_seconds: if r.chance(30) {
            r.dec(6, dp)
        } else {
            Decimal::ZERO
        },
        memory_gb_seconds: r.dec(dg.min(12), dp),
        energy_ws: r.dec(dg.min(13), dp),
        storage_gb_seconds: if r.chance(50) {
            Decimal::ZERO
        } else {
            r.dec(dg.min(12), dp)
        },
    };
    if r.chance(5) {
        q.gpu_seconds = Decimal::ZERO;
    }
    q
}

fn case(seed: u64) -> Case {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    for _ in 0..4 {
        r.next();
    }
    let bucket_ms = [H, H, H, H, 2 * H, 3 * H, 24 * H][r.below(7) as usize];
    let hours = 1 + r.below(if r.chance(20) { 200 } else { 40 }) as i64;
    let start = T0 + r.below(30) as i64 * H;
    let period = Period::new(Timestamp(start), Timestamp(start + hours * H), bucket_ms).unwrap();
    let n_pol = r.below(6) as usize;
    let policies: Vec<Policy> = (0..n_pol).map(|i| policy(&mut r, i, hours)).collect();
    let n_dep = 1 + r.below(5);
    let n_ten = 1 + r.below(9);
    let big = r.chance(20);
    let mut rollups = Vec::new();
    let n_gpus = 1 + r.below(8);
    let span_from = period.from.0 - 2 * H;
    let span_h = (period.to.0 - period.from.0) / H + 4;
    for g in 0..n_gpus {
        let dep = r.below(n_dep);
        let owner = if r.chance(25) {
            Some(tenant(r.below(n_ten)))
        } else {
            None
        };
        let model = if r.chance(20) { "L40S" } else { "H100" };
        for h in 0..span_h {
            if r.chance(15) {
                continue;
            }
            let b = span_from + h * H;
            let (first, last) = if r.chance(10) {
                (b + 15_000 * r.below(100) as i64, b + H - 15_000)
            } else {
                (b, b + H - 15_000)
            };
            rollups.push(Rollup {
                key: RollupKey {
                    gpu_uuid: format!("GPU-{g}"),
                    deployment_id: format!("d-{dep}"),
                    owner: if r.chance(5) {
                        Some(tenant(r.below(n_ten)))
                    } else {
                        owner
                    },
                    model: model.into(),
                    bucket_start: Timestamp(b),
                },
                first_window_start: Timestamp(first),
                last_window_start: Timestamp(last),
                samples: r.below(300),
                estimated_samples: r.below(5),
                q: quantities(&mut r, big),
                gpus: None,
            });
        }
    }
    if r.chance(40) {
        rollups = group(rollups);
        if r.chance(30) {
            // A group sharing one set across hours, exercise both paths.
            let set: Arc<[Arc<str>]> = vec![Arc::from("GPU-x")].into();
            for ro in rollups.iter_mut().take(3) {
                ro.gpus = Some(set.clone());
            }
        }
    }
    // Shuffle.
    for i in (1..rollups.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        rollups.swap(i, j);
    }
    let mut usage = Vec::new();
    let n_ev = r.below(120);
    for _ in 0..n_ev {
        let mut units = BTreeMap::new();
        if r.chance(30) {
            let gs = if r.chance(30) {
                r.dec(7, 6)
            } else {
                r.dec(4, 2)
            };
            units.insert("gpu_seconds".to_string(), NonNegative::new(gs).unwrap());
        } else {
            units.insert(
                "tokens_in".to_string(),
                NonNegative::new(r.dec(if big { 15 } else { 6 }, 0)).unwrap(),
            );
            if r.chance(30) {
                units.insert(
                    "tokens_out".to_string(),
                    NonNegative::new(r.dec(5, 0)).unwrap(),
                );
            }
        }
        let id = if r.chance(5) && !usage.is_empty() {
            let k = r.below(usage.len() as u64) as usize;
            let e: &UsageEvent = &usage[k];
            e.event_id
        } else {
            Uuid::from_u128(r.next() as u128 * 7 + 1)
        };
        usage.push(UsageEvent {
            event_id: id,
            tenant_id: tenant(r.below(n_ten)),
            usage_type: "llm_tokens".into(),
            source: if r.chance(3) {
                "allocation".into()
            } else {
                "gateway".into()
            },
            occurred_at: Timestamp(span_from + r.below((span_h * H) as u64) as i64),
            deployment_id: if r.chance(5) {
                None
            } else {
                Some(format!("d-{}", r.below(n_dep + 1)))
            },
            model: None,
            units,
            cost: None,
            allocation_policy_id: None,
            project: None,
            agent_id: None,
            run_id: None,
        });
    }
    let mut claims = Vec::new();
    if r.chance(50) {
        let n = r.below(150);
        for _ in 0..n {
            let gs_claim = r.chance(25);
            claims.push(UsageClaim {
                deployment_id: format!("d-{}", r.below(n_dep + 1)),
                tenant_id: tenant(r.below(n_ten)),
                bucket_start: Timestamp(span_from + r.below(span_h as u64) as i64 * H),
                gpu_seconds: if gs_claim { r.dec(6, 6) } else { Decimal::ZERO },
                tokens: if gs_claim && r.chance(50) {
                    Decimal::ZERO
                } else {
                    r.dec(if big { 20 } else { 7 }, 0)
                },
            });
        }
    }
    let threads = [0, 1, 2, 3][r.below(4) as usize];
    Case {
        period,
        rollups,
        usage,
        claims,
        policies,
        config: AllocationConfig { bucket_ms, threads },
    }
}

fn check(c: &Case, label: &str) {
    let input = AllocationInput {
        period: c.period,
        rollups: &c.rollups,
        usage: &c.usage,
        policies: &c.policies,
        claims: &c.claims,
        gaps: &[],
        config: c.config,
    };
    let new = format!("{:#?}", allocate(&input));
    let old = format!("{:#?}", allocate_ref::allocate(&input));
    if new != old {
        let (a, b): (Vec<_>, Vec<_>) = (new.lines().collect(), old.lines().collect());
        let i = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "{label}: differs at line {i}:\n new: {:?}\n old: {:?}",
            &a[i.saturating_sub(5)..(i + 3).min(a.len())],
            &b[i.saturating_sub(5)..(i + 3).min(b.len())]
        );
    }
}

#[test]
fn random_cases_are_identical() {
    let n: u64 = std::env::var("DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let base: u64 = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    for s in base..base + n {
        let c = case(s);
        check(&c, &format!("seed {s}"));
    }
}
