use super::contract::Plan;
use super::*;
use proptest::prelude::*;

/// (gpu, slot, jitter, window, util, padded util, power, memory, other deployment, fraction)
pub type Raw = (u8, i64, bool, u8, u32, bool, u32, u32, bool, u8);

pub fn to_sample((g, slot, jitter, window, util, pad, power, mem, other, frac): Raw) -> Sample {
    let deps = ["vllm-a", "tgi-b"];
    // Mostly one deployment per GPU and half hour, sometimes another: series changes.
    let dep = deps[((slot / 120 + i64::from(g)) % 2) as usize ^ usize::from(other)];
    let end = T0 + (slot + 1) * 15_000 + if jitter { 3_000 } else { 0 };
    let mut s = sample(&format!("GPU-{g}"), dep, end);
    s.window_ms =
        eai_engine::domain::WindowMs::new([15_000, 15_000, 15_000, 40_000, 5_000][window as usize])
            .expect("a window");
    // The same value written with trailing zeros must be stored and read back as the same number.
    s.utilization = UnitInterval::new(if pad {
        Decimal::new(i64::from(util) * 10_000, 6)
    } else {
        Decimal::new(util.into(), 2)
    })
    .unwrap();
    s.power_w = NonNegative::new(Decimal::new(power.into(), 1)).unwrap();
    s.memory_used_gb = NonNegative::new(Decimal::from(mem) + d("0.0009765625")).unwrap();
    s.gpu_fraction = GpuFraction::new([d("1"), d("0.5"), d("0.142857")][frac as usize]).unwrap();
    if g == 2 && slot < 480 {
        s.owner = Some(tenant(10));
    }
    s.pod = format!("{dep}-{}", slot / 300);
    s
}

fn policies() -> Vec<Policy> {
    // One closes and the next opens in the middle of an hour; one more specific for tgi-*.
    let mut a = spec("a");
    a.effective_from = ts(T0 - 24 * H);
    a.effective_to = Some(ts(T0 + H + H / 2));
    let mut b = spec("b");
    b.gpu_hourly_cost = NonNegative::new(d("3.30")).unwrap();
    b.effective_from = ts(T0 + H + H / 2);
    let mut c = spec("c");
    c.deployment_pattern = Glob::new("tgi-*").unwrap();
    c.gpu_hourly_cost = NonNegative::new(d("0.99")).unwrap();
    c.effective_from = ts(T0 + 2 * H);
    c.idle_capacity = IdleCapacity::Proportional;
    vec![Policy::new(1, a), Policy::new(2, b), Policy::new(3, c)]
}

/// Pruning horizons (quarter hours after `T0`, none: no pruning) before each batch and once at the end:
/// never, everything from the start, or a horizon creeping forward as a retention would.
pub fn arb_prunes() -> impl Strategy<Value = Vec<Option<i64>>> {
    prop_oneof![
        1 => Just(Vec::new()),
        1 => Just(vec![Some(40)]),
        3 => prop::collection::vec(prop::option::weighted(0.3, -4i64..16), 120),
    ]
}

/// Pruning horizons (quarter hours after `T0`) before each of the plan's policies is made: often past the
/// hour of the boundary between policies a and b (`T0 + 1.5 h`), so that the policy finds it frozen.
pub fn arb_prunes_before_policies() -> impl Strategy<Value = Vec<Option<i64>>> {
    prop::collection::vec(prop::option::weighted(0.6, -4i64..24), 3)
}

/// Raw parts of a plan: (samples, order, seed, batch sizes, re-sends, events).
pub type Parts = (
    u8,
    u64,
    Vec<usize>,
    Vec<prop::sample::Index>,
    Vec<(u8, bool, i64, u64)>,
);

pub fn parts() -> impl Strategy<Value = Parts> {
    let event = (1u8..4, any::<bool>(), 0i64..(5 * H), 1u64..10_000);
    (
        0u8..5,
        any::<u64>(),
        prop::collection::vec(1usize..40, 1..20),
        prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        prop::collection::vec(event, 0..12),
    )
}

/// Orders, re-sends and batches samples as a plan says.
pub fn make_plan(mut v: Vec<Sample>, (order, seed, sizes, resends, events): Parts) -> Plan {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    match order {
        // In order: the sampler appending.
        0 => v.sort_by_key(|x| x.end),
        // Reversed: every batch lands before everything stored.
        1 => v.sort_by_key(|x| std::cmp::Reverse(x.end)),
        // Shuffled.
        2 => {
            for i in (1..v.len()).rev() {
                v.swap(i, (next() % (i as u64 + 1)) as usize);
            }
        }
        // In order with stragglers: about one sample in six arrives later than it should.
        _ => {
            v.sort_by_key(|x| x.end);
            for i in 0..v.len() {
                if next() % 6 == 0 {
                    let s = v.remove(i);
                    let to = (i + 1 + (next() % 40) as usize).min(v.len());
                    v.insert(to, s);
                }
            }
        }
    }
    // Re-sends of earlier samples, later in the stream.
    if !v.is_empty() {
        for (k, ix) in resends.iter().enumerate() {
            let again = v[ix.index(v.len())].clone();
            let at = (ix.index(v.len()) + k * 7 + 1).min(v.len());
            v.insert(at, again);
        }
    }
    let mut batches = Vec::new();
    let mut rest = v.as_slice();
    for n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (b, r) = rest.split_at((*n).min(rest.len()));
        batches.push(b.to_vec());
        rest = r;
    }
    let usage = events
        .into_iter()
        .map(|(t, dep, at, n)| tokens(tenant(t), if dep { "vllm-a" } else { "tgi-b" }, T0 + at, n))
        .collect();
    Plan {
        batches,
        usage,
        policies: policies(),
    }
}

pub fn arb_raw() -> impl Strategy<Value = Raw> {
    (
        0u8..3,
        0i64..(4 * 240),
        prop::bool::weighted(0.2),
        0u8..5,
        0u32..=100,
        any::<bool>(),
        0u32..8000,
        0u32..80,
        prop::bool::weighted(0.1),
        0u8..3,
    )
}

pub fn arb_plan() -> impl Strategy<Value = Plan> {
    (prop::collection::vec(arb_raw(), 0..160), parts())
        .prop_map(|(raws, parts)| make_plan(raws.into_iter().map(to_sample).collect(), parts))
}

/// Dense series, as samplers send them: two GPUs with contiguous 15 s windows over two hours and a half,
/// a few windows missing (one at a time or in runs), and a few odd windows (5 s or 40 s long, off the grid)
/// that overlap their neighbours: pruning leaves most of them as ends only, so that late samples meet
/// pruned neighbours, and some cannot be merged.
pub fn arb_dense_plan() -> impl Strategy<Value = Plan> {
    let odd = (0u8..2, 0i64..600, 1i64..14, any::<bool>());
    (any::<u64>(), prop::collection::vec(odd, 0..6), parts()).prop_map(|(seed, odd, parts)| {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut v = Vec::new();
        for g in 0..2u8 {
            let mut slot = 0;
            while slot < 600 {
                match next() % 100 {
                    0..=1 => slot += 1,
                    2 => slot += 2 + (next() % 80) as i64,
                    _ => {
                        let mut s = to_sample((
                            g,
                            slot,
                            false,
                            0,
                            (next() % 101) as u32,
                            false,
                            4000,
                            40,
                            false,
                            0,
                        ));
                        s.pod = "p".into();
                        v.push(s);
                        slot += 1;
                    }
                }
            }
        }
        let mut plan = make_plan(v, parts);
        // Odd windows last, one batch each: by then pruning may have left their neighbours as ends.
        for (g, slot, off, long) in odd {
            let mut s = to_sample((g, slot, false, 0, 50, false, 4000, 40, false, 0));
            s.pod = "p".into();
            s.end = Timestamp(s.end.0 + off * 1_000);
            s.window_ms = eai_engine::domain::WindowMs::new(if long { 40_000 } else { 5_000 })
                .expect("a window");
            plan.batches.push(vec![s]);
        }
        plan
    })
}

/// Holes filled between stored neighbours (issue 42, part 2): three GPUs with contiguous 15 s windows over three
/// hours, sent in order first but for up to three holes (one window up to two hours: shorter and longer than
/// the largest interpolated span), then each hole's windows sent newest first in batches of five (a spool
/// replayed), in shuffled windows, or in order, with re-sends of stored and hole windows among them, and live
/// windows appended in between. Odd windows (5 s or 40 s, off the grid) overlap their neighbours, so that a
/// term taken out may hold a rollup's earliest or latest window start.
pub fn arb_hole_plan() -> impl Strategy<Value = Plan> {
    let hole = (0u8..3, 0i64..700, 1i64..480, 0u8..3);
    let odd = (0u8..3, 0i64..720, 1i64..14, any::<bool>());
    (
        any::<u64>(),
        prop::collection::vec(hole, 1..4),
        prop::collection::vec(odd, 0..5),
        prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        1usize..4,
    )
        .prop_map(|(seed, holes, odd, resends, live_every)| {
            let mut x = seed | 1;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let make = |g: u8, slot: i64, util: u32| {
                let mut s = to_sample((g, slot, false, 0, util, false, 4000, 40, false, 0));
                s.pod = "p".into();
                s
            };
            let in_hole = |g: u8, slot: i64| {
                holes
                    .iter()
                    .position(|&(hg, from, len, _)| hg == g && from <= slot && slot < from + len)
            };
            // 600 slots of history, then 120 live ones appended while the holes are filled.
            let (mut stored, mut filled, mut live) =
                (Vec::new(), vec![Vec::new(); holes.len()], Vec::new());
            for g in 0..3u8 {
                for slot in 0..720 {
                    let s = make(g, slot, (next() % 101) as u32);
                    match (slot >= 600, in_hole(g, slot)) {
                        (true, _) => live.push(s),
                        (false, Some(h)) => filled[h].push(s),
                        (false, None) => stored.push(s),
                    }
                }
            }
            let mut batches: Vec<Vec<Sample>> = stored.chunks(97).map(<[Sample]>::to_vec).collect();
            let mut hole_batches: Vec<Vec<Sample>> = Vec::new();
            for (mut v, &(_, _, _, order)) in filled.into_iter().zip(&holes) {
                match order {
                    0 => v.sort_by_key(|s| std::cmp::Reverse(s.end)),
                    1 => {
                        for i in (1..v.len()).rev() {
                            v.swap(i, (next() % (i as u64 + 1)) as usize);
                        }
                    }
                    _ => {}
                }
                hole_batches.extend(v.chunks(5).map(<[Sample]>::to_vec));
            }
            // Re-sends: of stored windows and of hole windows, inside later batches.
            let all: Vec<Sample> = batches
                .iter()
                .chain(&hole_batches)
                .flatten()
                .cloned()
                .collect();
            for (k, ix) in resends.iter().enumerate() {
                if hole_batches.is_empty() {
                    break;
                }
                let again = all[ix.index(all.len())].clone();
                let n = hole_batches.len();
                hole_batches[(ix.index(n) + k) % n].push(again);
            }
            let mut live = live.chunks(15).map(<[Sample]>::to_vec);
            for (i, b) in hole_batches.into_iter().enumerate() {
                batches.push(b);
                if i % live_every == 0 {
                    batches.extend(live.next());
                }
            }
            batches.extend(live);
            for (g, slot, off, long) in odd {
                let mut s = make(g, slot, 50);
                s.end = Timestamp(s.end.0 + off * 1_000);
                s.window_ms = eai_engine::domain::WindowMs::new(if long { 40_000 } else { 5_000 })
                    .expect("a window");
                let at = (next() as usize) % (batches.len() + 1);
                batches.insert(at, vec![s]);
            }
            Plan {
                batches,
                usage: Vec::new(),
                policies: policies(),
            }
        })
}
