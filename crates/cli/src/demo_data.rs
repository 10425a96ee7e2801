//! A realistic month for the demo: shared and dedicated deployments, three tenants, MIG slices, an idle GPU,
//! a short gap (interpolated) and a long one (reported), one deployment no policy prices, and one hour, six
//! hours before the end's hour, when `vllm-mixtral` borrowed the idle H100 (a spend anomaly). Deterministic:
//! the same `end` gives the same samples and events (event ids are uuid v5 of their keys).

use eai_client::GpuSample;
use eai_engine::time::Timestamp;
use serde_json::{json, Value};
use uuid::Uuid;

pub const ACME: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
pub const GLOBEX: &str = "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21";
pub const INITECH: &str = "6b9e1f0a-3c2d-4e5f-8a7b-9c0d1e2f3a4b";

const H: i64 = 3_600_000;
const DAY: i64 = 24 * H;

/// One GPU series of the demo fleet.
struct Gpu {
    node: &'static str,
    uuid: &'static str,
    model: &'static str,
    fraction: Option<&'static str>,
    /// Memory of the GPU or slice in GB, to shape memory use.
    memory_gb: f64,
}

const H100_A: Gpu = Gpu {
    node: "gpu-node-1",
    uuid: "GPU-5e1f0c2a-0001",
    model: "NVIDIA H100 80GB HBM3",
    fraction: None,
    memory_gb: 80.0,
};
const H100_B: Gpu = Gpu {
    node: "gpu-node-1",
    uuid: "GPU-5e1f0c2a-0002",
    model: "NVIDIA H100 80GB HBM3",
    fraction: None,
    memory_gb: 80.0,
};
const H100_C: Gpu = Gpu {
    node: "gpu-node-1",
    uuid: "GPU-5e1f0c2a-0003",
    model: "NVIDIA H100 80GB HBM3",
    fraction: None,
    memory_gb: 80.0,
};
const H100_D: Gpu = Gpu {
    node: "gpu-node-1",
    uuid: "GPU-5e1f0c2a-0004",
    model: "NVIDIA H100 80GB HBM3",
    fraction: None,
    memory_gb: 80.0,
};
const A100_A: Gpu = Gpu {
    node: "gpu-node-2",
    uuid: "GPU-a100e7b3-0001",
    model: "NVIDIA A100-SXM4-80GB",
    fraction: None,
    memory_gb: 80.0,
};
const A100_B: Gpu = Gpu {
    node: "gpu-node-2",
    uuid: "GPU-a100e7b3-0002",
    model: "NVIDIA A100-SXM4-80GB",
    fraction: None,
    memory_gb: 80.0,
};
const MIG_1: Gpu = Gpu {
    node: "gpu-node-2",
    uuid: "GPU-a100e7b3-0003/mig-1g.10gb-13",
    model: "NVIDIA A100-SXM4-80GB",
    fraction: Some("0.142857"),
    memory_gb: 9.5,
};
const MIG_2: Gpu = Gpu {
    node: "gpu-node-2",
    uuid: "GPU-a100e7b3-0003/mig-1g.10gb-14",
    model: "NVIDIA A100-SXM4-80GB",
    fraction: Some("0.142857"),
    memory_gb: 9.5,
};
const L40S: Gpu = Gpu {
    node: "gpu-node-3",
    uuid: "GPU-l40s9d21-0001",
    model: "NVIDIA L40S",
    fraction: None,
    memory_gb: 48.0,
};

/// A small deterministic pseudo-random number in [0, 1) from a seed.
fn noise(seed: u64) -> f64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Daytime load (UTC 07-22 busy, nights quiet), 0..1.
fn diurnal(t: i64) -> f64 {
    let hour = (t.rem_euclid(DAY)) / H;
    if (7..22).contains(&hour) {
        0.55 + 0.35 * (((hour - 7) as f64) / 15.0 * std::f64::consts::PI).sin()
    } else {
        0.04
    }
}

fn fmt(v: f64, dp: usize) -> String {
    format!("{v:.dp$}")
}

/// Which deployment a GPU serves at instant `t` of the fleet's `[start, end)` (`None`: not reporting, a gap).
fn placement(
    gpu: &Gpu,
    t: i64,
    start: i64,
    end: i64,
) -> Option<(&'static str, &'static str, Option<&'static str>)> {
    let day = (t - start) / DAY;
    let minute_of_day = (t - start).rem_euclid(DAY) / 60_000;
    match gpu.uuid {
        "GPU-5e1f0c2a-0001" | "GPU-5e1f0c2a-0002" => {
            Some(("vllm-llama-70b", "vllm-llama-70b-0", None))
        }
        "GPU-5e1f0c2a-0003" => {
            // A 40-minute outage on day 10 (reported as a gap) and 6 minutes on day 12 (interpolated).
            if (day == 10 && (600..640).contains(&minute_of_day))
                || (day == 12 && (300..306).contains(&minute_of_day))
            {
                None
            } else {
                Some(("vllm-mixtral", "vllm-mixtral-7d9f8b6c5d-x2kqp", None))
            }
        }
        // The spike: for the clock hour that ends six hours before the end's, mixtral runs on this GPU too.
        "GPU-5e1f0c2a-0004"
            if (end - end.rem_euclid(H) - 7 * H..end - end.rem_euclid(H) - 6 * H).contains(&t) =>
        {
            Some(("vllm-mixtral", "vllm-mixtral-7d9f8b6c5d-burst", None))
        }
        "GPU-5e1f0c2a-0004" => Some(("idle", "-", None)),
        "GPU-a100e7b3-0001" | "GPU-a100e7b3-0002" => {
            if (3..10).contains(&day) || (15..21).contains(&day) {
                Some(("acme-finetune", "acme-finetune-0", Some(ACME)))
            } else {
                Some(("idle", "-", None))
            }
        }
        "GPU-a100e7b3-0003/mig-1g.10gb-13" | "GPU-a100e7b3-0003/mig-1g.10gb-14" => {
            Some(("vllm-small", "vllm-small-0", None))
        }
        _ => Some(("experimental-sd", "sd-xl-0", None)),
    }
}

/// `days` days of samples every `window_s` seconds, ending at `end` (aligned to the window).
pub fn samples(end: Timestamp, days: i64, window_s: i64) -> Vec<GpuSample> {
    let w = window_s * 1000;
    let end = end.floor_to(w).0;
    let start = end - days * DAY;
    let fleet = [
        H100_A, H100_B, H100_C, H100_D, A100_A, A100_B, MIG_1, MIG_2, L40S,
    ];
    let mut out = Vec::new();
    for (gi, gpu) in fleet.iter().enumerate() {
        let mut t = start + w;
        while t <= end {
            if let Some((dep, pod, owner)) = placement(gpu, t - w, start, end) {
                let seed = (gi as u64) << 40 ^ (t as u64 / 1000);
                let util = match dep {
                    "idle" => 0.0,
                    "acme-finetune" => 0.92 + 0.06 * noise(seed),
                    "experimental-sd" => 0.3 * diurnal(t) + 0.1 * noise(seed),
                    _ => (diurnal(t) + 0.1 * (noise(seed) - 0.5)).clamp(0.0, 1.0),
                };
                let mem = if dep == "idle" {
                    0.0
                } else {
                    gpu.memory_gb * (0.82 + 0.08 * noise(seed + 1))
                };
                let (idle_w, max_w) = match gpu.model {
                    m if m.contains("H100") => (72.0, 700.0),
                    m if m.contains("L40S") => (35.0, 350.0),
                    _ => (55.0, 400.0),
                };
                let scale = gpu.fraction.map_or(1.0, |_| 1.0 / 7.0);
                let power = (idle_w + (max_w - idle_w) * util) * scale;
                out.push(GpuSample {
                    node: gpu.node.into(),
                    gpu_uuid: gpu.uuid.into(),
                    model: gpu.model.into(),
                    namespace: if dep == "acme-finetune" {
                        "acme-training".into()
                    } else {
                        "eai-inference".into()
                    },
                    pod: pod.into(),
                    tenant_id: owner.map(str::to_string),
                    deployment_id: dep.into(),
                    window_seconds: window_s.to_string(),
                    utilization: fmt(util, 4),
                    memory_used_gb: fmt(mem, 3),
                    power_w: fmt(power, 2),
                    timestamp: Some(Timestamp(t).to_string()),
                    storage_gb: (dep != "idle").then(|| "140".to_string()),
                    gpu_fraction: gpu.fraction.map(str::to_string),
                    // As the sampler sends a MIG instance: its share is its slices.
                    share_method: gpu.fraction.map(|_| "mig".to_string()),
                });
            }
            t += w;
        }
    }
    out
}

fn event(tenant: &str, dep: &str, hour: i64, units: Value) -> Value {
    let key = format!("demo/{tenant}/{dep}/{hour}");
    json!({
        "event_id": Uuid::new_v5(&Uuid::NAMESPACE_URL, key.as_bytes()).to_string(),
        "schema_version": "1.0",
        "tenant_id": tenant,
        "usage_type": "llm_tokens",
        "source": "gateway",
        "occurred_at": Timestamp(hour + 1_800_000).to_string(),
        "deployment_id": dep,
        "model": {"provider": "local", "name": dep},
        "units": units,
        "project": "demo",
    })
}

/// Tenants' usage of the shared deployments, one event per tenant, deployment and busy hour.
pub fn usage_events(end: Timestamp, days: i64) -> Vec<Value> {
    let end = end.floor_to(H).0;
    let start = end - days * DAY;
    let mut out = Vec::new();
    let mut hour = start;
    while hour < end {
        let load = diurnal(hour + 1_800_000);
        if load > 0.1 {
            let tokens = |share: f64, salt: u64| {
                let n = (400_000.0 * load * share * (0.8 + 0.4 * noise(hour as u64 ^ salt))) as u64;
                json!({"tokens_in": n * 3 / 4, "tokens_out": n / 4})
            };
            out.push(event(ACME, "vllm-llama-70b", hour, tokens(0.5, 1)));
            out.push(event(GLOBEX, "vllm-llama-70b", hour, tokens(0.3, 2)));
            out.push(event(INITECH, "vllm-llama-70b", hour, tokens(0.2, 3)));
            // Globex reports GPU time on mixtral directly; initech's tokens share what is left.
            out.push(event(
                GLOBEX,
                "vllm-mixtral",
                hour,
                json!({"gpu_seconds": (2000.0 * load).round() as u64}),
            ));
            out.push(event(INITECH, "vllm-mixtral", hour, tokens(0.1, 4)));
            out.push(event(INITECH, "vllm-small", hour, tokens(0.05, 5)));
        }
        hour += H;
    }
    out
}

/// What the vLLM server of `vllm-llama-70b` counts, as the sampler reports it (`source: vllm`, no tenant): one
/// event per busy hour with the hour's tokens (all of its tenants', a little more than the gateway reports:
/// health checks and direct calls), half of the prompt tokens served from the prefix cache, and the prefill and
/// decode time: its cost per token is split by measured compute time.
pub fn vllm_counters(end: Timestamp, days: i64) -> Vec<Value> {
    let end = end.floor_to(H).0;
    let start = end - days * DAY;
    let mut out = Vec::new();
    let mut hour = start;
    while hour < end {
        let load = diurnal(hour + 1_800_000);
        if load > 0.1 {
            let n = (420_000.0 * load * (0.9 + 0.2 * noise(hour as u64 ^ 11))) as u64;
            let (tokens_in, tokens_out) = (n * 3 / 4, n / 4);
            let key = format!("demo/vllm/vllm-llama-70b/{hour}");
            out.push(json!({
                "event_id": Uuid::new_v5(&Uuid::NAMESPACE_URL, key.as_bytes()).to_string(),
                "schema_version": "1.0",
                "usage_type": "llm_tokens",
                "source": "vllm",
                "occurred_at": Timestamp(hour + H - 1_000).to_string(),
                "deployment_id": "vllm-llama-70b",
                "model": {"provider": "vllm", "name": "meta-llama/Llama-3.1-70B-Instruct"},
                "units": {
                    "tokens_in": tokens_in.to_string(),
                    "tokens_out": tokens_out.to_string(),
                    "cached_tokens_in": (tokens_in / 2).to_string(),
                    "prefill_seconds": fmt(tokens_in as f64 / 2.0 / 9_000.0, 3),
                    "decode_seconds": fmt(tokens_out as f64 / 450.0, 3),
                    "requests": (n / 900).to_string(),
                },
            }));
        }
        hour += H;
    }
    out
}

/// The demo's allocation policies: H100 and A100 priced, L40S deliberately not.
pub fn policies(from: Timestamp) -> Vec<Value> {
    vec![
        json!({
            "name": "h100-inference", "deployment_pattern": "*", "gpu_model": "H100", "currency": "EUR",
            "gpu_hourly_cost": "2.10", "overhead_pct": "18", "energy_kwh_price": "0.21", "pue": "1.4",
            "storage_gb_month_price": "0.02", "idle_capacity": "unallocated", "effective_from": from.to_string()
        }),
        json!({
            "name": "a100-shared", "deployment_pattern": "*", "gpu_model": "A100", "currency": "EUR",
            "gpu_hourly_cost": "1.60", "overhead_pct": "15", "energy_kwh_price": "0.21", "pue": "1.4",
            "storage_gb_month_price": "0.02", "idle_capacity": "proportional", "effective_from": from.to_string()
        }),
    ]
}

/// A tenant's monthly budget of 2,000 EUR from `from`, alerts at 50/80/100 %, not enforced: about what acme's
/// month costs, so that the forecast has a day to say it runs out.
pub fn budget(tenant: &str, from: Timestamp) -> Value {
    json!({
        "tenant_id": tenant, "name": "monthly GPU budget", "period": "month",
        "limit": {"amount": "2000.00", "currency": "EUR"}, "thresholds_pct": [50, 80, 100],
        "enforce": false, "effective_from": from.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_month_has_every_case_the_demo_promises() {
        let end = Timestamp::parse_rfc3339("2026-11-30T00:00:00Z").unwrap();
        let s = samples(end, 30, 60);
        let deps: std::collections::BTreeSet<&str> =
            s.iter().map(|x| x.deployment_id.as_str()).collect();
        assert_eq!(
            deps.into_iter().collect::<Vec<_>>(),
            [
                "acme-finetune",
                "experimental-sd",
                "idle",
                "vllm-llama-70b",
                "vllm-mixtral",
                "vllm-small"
            ]
        );
        assert!(s.iter().any(|x| x.gpu_fraction.is_some()), "MIG slices");
        assert!(
            s.iter().any(|x| x.tenant_id.as_deref() == Some(ACME)),
            "a dedicated deployment"
        );
        // 9 series x 30 days x 1440 minutes, less 46 minutes of gaps.
        assert_eq!(s.len(), 9 * 30 * 1440 - 46);
        let e = usage_events(end, 30);
        let tenants: std::collections::BTreeSet<&str> =
            e.iter().filter_map(|x| x["tenant_id"].as_str()).collect();
        assert_eq!(tenants.len(), 3);
        assert_eq!(samples(end, 30, 60), s, "deterministic");
        // The spike: the idle H100 serves mixtral for the hour [end - 7 h, end - 6 h), its 60 windows only.
        let burst: Vec<&GpuSample> = s
            .iter()
            .filter(|x| x.pod == "vllm-mixtral-7d9f8b6c5d-burst")
            .collect();
        assert_eq!(burst.len(), 60);
        assert!(burst.iter().all(|x| x.gpu_uuid == "GPU-5e1f0c2a-0004"));
        let first = Timestamp::parse_rfc3339(burst[0].timestamp.as_deref().unwrap()).unwrap();
        assert_eq!(first.0, end.0 - 7 * H + 60_000);
        let v = vllm_counters(end, 30);
        assert!(!v.is_empty());
        assert!(v
            .iter()
            .all(|x| x["source"] == "vllm" && x.get("tenant_id").is_none()));
    }
}
