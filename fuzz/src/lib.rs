//! The fuzz targets' bodies. Each takes the fuzzer's bytes and panics only on a defect: a parser that panics, a
//! refusal that names no field, a sample the sampler makes that the control plane refuses, an allocation that
//! does not reconcile to the cent or whose rollups disagree with its raw samples.
//!
//! `fuzz_targets/*.rs` hand each body to libFuzzer (`scripts/fuzz.sh`, nightly); the `replay` tests below run
//! every committed input (`corpus/<target>/`, `regressions/<target>/`) through the same bodies on stable.

use std::collections::BTreeMap;
use std::str::FromStr;

use arbitrary::{Arbitrary, Unstructured};
use eai_engine::allocate::{allocate, AllocationConfig, AllocationInput, Period, Span};
use eai_engine::domain::{
    GpuFraction, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, Sample, TenantId, TokenWeight,
    UnitInterval, UsageEvent, WindowMs,
};
use eai_engine::error::FieldError;
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::rollup::aggregate;
use eai_engine::series::{cells, SeriesConfig};
use eai_engine::time::Timestamp;
use eai_engine::wire::{self, Loose, TenantSource};
use rust_decimal::Decimal;
use serde::Deserialize;

/// "Now" for the parsers: 2026-09-21T22:13:20Z.
const NOW: Timestamp = Timestamp(1_790_000_000_000);
const H: i64 = 3_600_000;

/// A target's body: the fuzzer's bytes in, a panic on a defect.
pub type Body = fn(&[u8]);

/// Every target, by the name of its folder under `corpus/` and its binary.
pub const TARGETS: [(&str, Body); 6] = [
    ("samples", samples),
    ("usage_events", usage_events),
    ("policies", policies),
    ("exposition", exposition),
    ("dcgm", dcgm),
    ("engine", engine),
];

fn located<T>(r: Result<T, Vec<FieldError>>, what: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(errors) => {
            assert!(!errors.is_empty(), "{what}: refused without a reason");
            for e in &errors {
                assert!(
                    !e.field.is_empty() && !e.reason.is_empty(),
                    "{what}: a refusal names no field or reason: {e:?}"
                );
            }
            None
        }
    }
}

/// A body of `POST /v1/finops/gpu/samples`, parsed as the API does (a single sample object too).
pub fn samples(data: &[u8]) {
    #[derive(Deserialize)]
    struct Batch {
        samples: Vec<Loose>,
    }
    #[derive(Deserialize)]
    struct FlatBatch<'a> {
        #[serde(borrow)]
        samples: Vec<wire::FlatObject<'a>>,
    }
    if let Ok(b) = serde_json::from_slice::<Batch>(data) {
        let tree = wire::parse_samples(&b.samples, NOW);
        // The control plane reads flat samples without a tree: the same answer, to the error.
        if let Ok(flat) = serde_json::from_slice::<FlatBatch>(data) {
            assert_eq!(
                wire::parse_flat_samples(&flat.samples, NOW),
                tree,
                "flat and tree readings differ"
            );
        }
        if let Some(ok) = located(tree, "samples") {
            assert_eq!(ok.len(), b.samples.len(), "a sample was dropped silently");
        }
    } else if let Ok(v) = serde_json::from_slice::<Loose>(data) {
        let tree = wire::parse_sample(&v, NOW);
        if let Ok(flat) = serde_json::from_slice::<wire::FlatObject>(data) {
            assert_eq!(
                wire::parse_flat_sample(&flat, NOW),
                tree,
                "flat and tree readings differ"
            );
        }
        located(tree, "sample");
    }
}

/// A body of `POST /v1/usage/events`, with the tenant in each event (a platform key) and from the credential.
pub fn usage_events(data: &[u8]) {
    #[derive(Deserialize)]
    struct Batch {
        events: Vec<Loose>,
    }
    let tenant = TenantSource::Credential(TenantId(uuid::Uuid::from_u128(7)));
    if let Ok(b) = serde_json::from_slice::<Batch>(data) {
        for source in [TenantSource::Body, tenant] {
            if let Some(ok) = located(wire::parse_usage_events(&b.events, source), "events") {
                assert_eq!(ok.len(), b.events.len(), "an event was dropped silently");
            }
        }
    } else if let Ok(v) = serde_json::from_slice::<Loose>(data) {
        located(wire::parse_usage_event(&v, TenantSource::Body), "event");
        located(wire::parse_usage_event(&v, tenant), "event");
    }
}

/// A policy as posted (`POST /v1/finops/gpu/policies`) and as read back from the store.
pub fn policies(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Loose>(data) {
        located(wire::parse_policy(&v, NOW), "policy");
        located(wire::parse_stored_policy(&v, 0), "stored policy");
    }
}

/// Prometheus text exposition, as the sampler reads it from DCGM exporter and vLLM: no panic, and every usage
/// event made from vLLM's counters passes the control plane's parser.
pub fn exposition(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = 0usize;
    let stats = eai_sampler::exposition::parse(&text, |_| lines += 1);
    let _ = (stats, lines);
    // Every event made from vLLM's counters is one the control plane takes (a sampler's key: the platform).
    let parsed = eai_sampler::vllm::from_text(&text);
    for (model, counters) in &parsed.models {
        let key = eai_sampler::vllm::SeriesKey {
            deployment_id: "vllm-x".to_string(),
            instance: "ns/pod".to_string(),
            model: model.clone(),
        };
        let e = eai_sampler::vllm::event(&key, Timestamp(NOW.0 - 30_000), NOW, counters);
        let json = serde_json::to_value(&e).expect("an event serializes");
        let loose: Loose = serde_json::from_value(json).expect("an event is JSON");
        if let Err(errors) = wire::parse_usage_event(&loose, TenantSource::Body) {
            panic!("the sampler made a vLLM event the control plane refuses: {e:?}: {errors:?}");
        }
    }
}

/// A DCGM exporter scrape turned into samples: every sample the sampler makes must pass the control plane's
/// parser.
pub fn dcgm(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let end = Timestamp(1_773_114_090_000); // a 15 s boundary
    let readings = eai_sampler::dcgm::from_text(&text, end);
    let mut c = eai_sampler::Converter::new(
        eai_sampler::Attribution::default(),
        Some("node-x".to_string()),
    );
    let out = c.convert(&readings, eai_sampler::Window { end, ms: 15_000 });
    let now = Timestamp(end.0 + 60_000);
    for s in &out.samples {
        let json = serde_json::to_value(s).expect("a sample serializes");
        let loose: Loose = serde_json::from_value(json).expect("a sample is JSON");
        if let Err(e) = wire::parse_sample(&loose, now) {
            panic!("the sampler made a sample the control plane refuses: {s:?}: {e:?}");
        }
    }
}

/// A fleet described compactly; [`Fleet::build`] keeps only what the wire's parsers would admit.
#[derive(Debug, Arbitrary)]
struct Fleet {
    samples: Vec<FuzzSample>,
    events: Vec<FuzzEvent>,
    policies: Vec<FuzzPolicy>,
    hours: u8,
    bucket: u8,
    day_items: bool,
}

#[derive(Debug, Arbitrary)]
struct FuzzSample {
    gpu: u8,
    dep: u8,
    /// The window's end, in 15 s steps from the period's start (sub-steps below).
    slot: u16,
    offset_ms: u16,
    window: u8,
    util: u16,
    power: u32,
    mem: u32,
    mem_scale: u8,
    owner: Option<u8>,
    fraction: u8,
    l40s: bool,
}

#[derive(Debug, Arbitrary)]
struct FuzzEvent {
    tenant: u8,
    dep: u8,
    at_s: u32,
    tokens_in: u32,
    tokens_out: Option<u32>,
    gpu_seconds: Option<(u32, u8)>,
    cost: Option<u32>,
}

#[derive(Debug, Arbitrary)]
struct FuzzPolicy {
    pattern: u8,
    hourly: u32,
    hourly_scale: u8,
    overhead: u16,
    energy: u16,
    pue: u16,
    from_h: u8,
    len_h: Option<u8>,
    l40s_only: bool,
    proportional: bool,
    currency: u8,
    output_weight: Option<u8>,
    enabled: bool,
}

const DEPS: [&str; 5] = ["vllm-a", "vllm-b", "tgi-c", "train-d", "idle"];
const PATTERNS: [&str; 5] = ["*", "vllm-*", "tgi-c", "*-d", "idle"];
const CURRENCIES: [&str; 3] = ["EUR", "USD", "JPY"];

fn tenant(n: u8) -> TenantId {
    TenantId(uuid::Uuid::from_bytes([n % 6 + 1; 16]))
}

fn nn(d: Decimal) -> Option<NonNegative> {
    NonNegative::new(d)
}

impl Fleet {
    fn build(&self, t0: i64) -> (Vec<Sample>, Vec<UsageEvent>, Vec<Policy>) {
        let samples = self
            .samples
            .iter()
            .take(2_000)
            .filter_map(|s| {
                let window = WindowMs::new(i64::from(s.window % 4 + 1) * 15_000)?;
                Some(Sample {
                    node: format!("node-{}", s.gpu % 3),
                    gpu_uuid: format!("GPU-{}", s.gpu % 12),
                    model: if s.l40s { "L40S" } else { "H100-80GB" }.into(),
                    namespace: "ns".into(),
                    pod: format!("{}-{}", DEPS[usize::from(s.dep) % 5], s.gpu % 2),
                    deployment_id: DEPS[usize::from(s.dep) % 5].into(),
                    owner: s.owner.map(tenant),
                    window_ms: window,
                    end: Timestamp(
                        t0 + i64::from(s.slot % 2_000) * 15_000 + i64::from(s.offset_ms % 15_000),
                    ),
                    utilization: UnitInterval::new(Decimal::new(i64::from(s.util % 10_001), 4))?,
                    memory_used_gb: nn(Decimal::new(
                        i64::from(s.mem),
                        u32::from(s.mem_scale % 10),
                    ))?,
                    power_w: nn(Decimal::new(i64::from(s.power % 2_000_000), 3))?,
                    storage_gb: NonNegative::ZERO,
                    gpu_fraction: GpuFraction::new(
                        (Decimal::from(s.fraction % 7 + 1) / Decimal::from(7)).round_dp(6),
                    )?,
                    share_method: Default::default(),
                })
            })
            .collect();
        let usage = self
            .events
            .iter()
            .take(300)
            .enumerate()
            .filter_map(|(i, e)| {
                let mut units = BTreeMap::new();
                units.insert("tokens_in".to_string(), nn(e.tokens_in.into())?);
                if let Some(out) = e.tokens_out {
                    units.insert("tokens_out".to_string(), nn(out.into())?);
                }
                if let Some((gs, scale)) = e.gpu_seconds {
                    units.insert(
                        "gpu_seconds".to_string(),
                        nn(Decimal::new(i64::from(gs), u32::from(scale % 7)))?,
                    );
                }
                Some(UsageEvent {
                    event_id: uuid::Uuid::from_u128(i as u128 + 1),
                    tenant_id: tenant(e.tenant),
                    usage_type: "llm_tokens".into(),
                    source: "gateway".into(),
                    occurred_at: Timestamp(t0 + i64::from(e.at_s % 40_000) * 1000),
                    deployment_id: Some(DEPS[usize::from(e.dep) % 5].into()),
                    model: None,
                    units,
                    cost: e
                        .cost
                        .and_then(|c| Some((nn(Decimal::new(c.into(), 2))?, Currency::EUR))),
                    allocation_policy_id: None,
                    project: None,
                    agent_id: None,
                    run_id: None,
                })
            })
            .collect();
        let policies = self
            .policies
            .iter()
            .take(6)
            .enumerate()
            .filter_map(|(i, p)| {
                let from = t0 + i64::from(p.from_h % 12) * H;
                let spec = PolicySpec {
                    name: format!("p{i}"),
                    deployment_pattern: Glob::new(PATTERNS[usize::from(p.pattern) % 5])?,
                    gpu_model: p.l40s_only.then(|| "L40S".to_string()),
                    currency: Currency::from_str(CURRENCIES[usize::from(p.currency) % 3]).ok()?,
                    gpu_hourly_cost: nn(Decimal::new(
                        i64::from(p.hourly),
                        u32::from(p.hourly_scale % 8),
                    ))?,
                    overhead_pct: nn(Decimal::new(i64::from(p.overhead), 1))?,
                    energy_kwh_price: nn(Decimal::new(i64::from(p.energy), 4))?,
                    pue: Pue::new(Decimal::new(100 + i64::from(p.pue % 200), 2))?,
                    storage_gb_month_price: NonNegative::ZERO,
                    idle_capacity: if p.proportional {
                        IdleCapacity::Proportional
                    } else {
                        IdleCapacity::Unallocated
                    },
                    output_token_weight: match p.output_weight {
                        Some(w) => TokenWeight::new(Decimal::new(i64::from(w), 1))?,
                        None => TokenWeight::DEFAULT,
                    },
                    enabled: p.enabled,
                    effective_from: Timestamp(from),
                    effective_to: p.len_h.map(|l| Timestamp(from + i64::from(l % 12 + 1) * H)),
                };
                Some(Policy::new(i as u64 + 1, spec))
            })
            .collect();
        (samples, usage, policies)
    }
}

/// The engine on arbitrary valid input: the allocation reconciles to the cent (with and without day items, which
/// change nothing else), and allocating from the rollups gives the raw samples' answer.
pub fn engine(data: &[u8]) {
    let Ok(fleet) = Fleet::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let t0 = 1_790_812_800_000; // 2026-10-01T00:00:00Z
    let (samples, usage, policies) = fleet.build(t0);
    let bucket_ms = [H, 15 * 60_000, 86_400_000][usize::from(fleet.bucket) % 3];
    let hours = i64::from(fleet.hours % 12 + 1);
    let Ok(period) = Period::new(Timestamp(t0), Timestamp(t0 + hours * H), bucket_ms) else {
        return;
    };
    let config = AllocationConfig {
        bucket_ms,
        threads: 1,
        day_items: false,
        item_span: Span::Day,
    };
    let out = cells(&samples, &SeriesConfig::default());
    let input = |rollups| AllocationInput {
        period,
        rollups,
        usage: &usage,
        policies: &policies,
        claims: &[],
        gaps: &out.gaps,
        config,
    };
    let raw = allocate(&input(&out.cells));
    let errors = raw.reconciliation_errors();
    assert!(errors.is_empty(), "{errors:#?}");
    let rollups = aggregate(out.cells.clone());
    assert_eq!(raw, allocate(&input(&rollups)), "rollups disagree with raw");
    if fleet.day_items {
        let mut by_day = allocate(&AllocationInput {
            config: AllocationConfig {
                day_items: true,
                ..config
            },
            ..input(&out.cells)
        });
        let errors = by_day.reconciliation_errors();
        assert!(errors.is_empty(), "with day items: {errors:#?}");
        by_day.day_items.clear();
        assert_eq!(by_day, raw, "day items changed something else");
    }
}

#[cfg(test)]
mod replay {
    use std::path::Path;

    /// Every committed input of every target: the corpus the fuzzer grew and the inputs of fixed crashes.
    #[test]
    fn every_committed_input_passes_its_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for (name, body) in super::TARGETS {
            let mut n = 0;
            for dir in ["corpus", "regressions"] {
                let Ok(entries) = std::fs::read_dir(root.join(dir).join(name)) else {
                    continue;
                };
                for e in entries {
                    let path = e.expect("a corpus entry").path();
                    // A running fuzzer replaces corpus files as it shrinks them: one gone meanwhile is skipped.
                    let data = match std::fs::read(&path) {
                        Ok(d) => d,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => panic!("{}: {e}", path.display()),
                    };
                    if let Err(panic) = std::panic::catch_unwind(|| body(&data)) {
                        std::panic::resume_unwind(Box::new(format!(
                            "{}: {:?}",
                            path.display(),
                            panic.downcast_ref::<String>()
                        )));
                    }
                    n += 1;
                }
            }
            assert!(
                n > 0,
                "no committed input for {name}: the replay proves nothing"
            );
        }
    }
}
