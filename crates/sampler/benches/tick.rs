#![allow(clippy::unwrap_used)]
//! What one tick costs on an 8-GPU node: parse the exporter's text, convert it to samples, serialize the batch
//! that is spooled. Against a reference measured in the same run (splitting the same text into lines), on the
//! H100x8 fixture and on a synthetic full exposition (8 GPUs x 20 families, HELP/TYPE, Kubernetes labels, an
//! energy counter that moves). Also the spool append with its fsync, and the resident memory after many ticks.
//!
//! Also a node of 8 A100s cut into 7 MIG slices each (56 slices), built from the NVIDIA documentation's MIG
//! exposition in the fixtures, and the spool's write rate.
//!
//! `cargo bench -p eai-sampler --bench tick` (argument: ticks, default 5760: a day at 15 s). Targets: < 1 ms per
//! tick, < 20 MiB resident.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use eai_engine::Timestamp;
use eai_sampler::dcgm;
use eai_sampler::spool::{Batch, Spool, DEFAULT_MAX_BYTES};
use eai_sampler::{Attribution, Converter, Window};

const W: i64 = 15_000;

fn synthetic(tick: u64) -> String {
    let families: [(&str, &str, &str); 20] = [
        (
            "DCGM_FI_DEV_SM_CLOCK",
            "gauge",
            "SM clock frequency (in MHz).",
        ),
        (
            "DCGM_FI_DEV_MEM_CLOCK",
            "gauge",
            "Memory clock frequency (in MHz).",
        ),
        (
            "DCGM_FI_DEV_MEMORY_TEMP",
            "gauge",
            "Memory temperature (in C).",
        ),
        ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
        ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "counter",
            "Total energy consumption since boot (in mJ).",
        ),
        (
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "counter",
            "Total number of PCIe retries.",
        ),
        ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
        (
            "DCGM_FI_DEV_MEM_COPY_UTIL",
            "gauge",
            "Memory utilization (in %).",
        ),
        (
            "DCGM_FI_DEV_ENC_UTIL",
            "gauge",
            "Encoder utilization (in %).",
        ),
        (
            "DCGM_FI_DEV_DEC_UTIL",
            "gauge",
            "Decoder utilization (in %).",
        ),
        (
            "DCGM_FI_DEV_XID_ERRORS",
            "gauge",
            "Value of the last XID error encountered.",
        ),
        (
            "DCGM_FI_DEV_FB_FREE",
            "gauge",
            "Framebuffer memory free (in MiB).",
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            "gauge",
            "Framebuffer memory used (in MiB).",
        ),
        (
            "DCGM_FI_DEV_FB_RESERVED",
            "gauge",
            "Framebuffer memory reserved (in MiB).",
        ),
        (
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
            "counter",
            "Total number of NVLink bandwidth counters for all lanes.",
        ),
        (
            "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
            "gauge",
            "vGPU License status",
        ),
        (
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "gauge",
            "Ratio of time the graphics engine is active.",
        ),
        (
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "gauge",
            "Ratio of cycles the tensor (HMMA) pipe is active.",
        ),
        (
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "gauge",
            "Ratio of cycles the device memory interface is active.",
        ),
    ];
    let mut out = String::with_capacity(64 * 1024);
    for (f, (name, kind, help)) in families.iter().enumerate() {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for g in 0..8u64 {
            let pod = if g < 6 {
                format!(",container=\"main\",namespace=\"eai-inference\",pod=\"vllm-llama-70b-7d9f8b6c5d-x2kq{g}\",pod_uid=\"\"")
            } else {
                String::new()
            };
            let value = match *name {
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" => {
                    format!("{}", 100_000_000 + tick * 6_000_000 + g)
                }
                "DCGM_FI_DEV_POWER_USAGE" => format!("{:.6}", 300.0 + g as f64 + (tick % 7) as f64),
                "DCGM_FI_DEV_GPU_UTIL" => format!("{}", (tick + g) % 101),
                "DCGM_FI_DEV_FB_USED" => format!("{}", 70_000 + g * 11),
                n if n.starts_with("DCGM_FI_PROF") => {
                    format!("{:.6}", ((tick + g + f as u64) % 1000) as f64 / 1000.0)
                }
                _ => format!("{}", 1000 + g),
            };
            out.push_str(&format!(
                "{name}{{gpu=\"{g}\",UUID=\"GPU-5e1f0c2a-8c62-ee71-64db-b748edd61e1{g}\",pci_bus_id=\"00000000:{:02X}:00.0\",\
                 device=\"nvidia{g}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\",\
                 DCGM_FI_DRIVER_VERSION=\"580.105.08\"{pod}}} {value}\n",
                0x53 + g * 0x11
            ));
        }
    }
    out
}

/// The MIG fixture (one A100 and one 1g.5gb instance) grown to 8 GPUs of 7 instances each: every line of the
/// fixture, in its order (a family's lines stay together), repeated per GPU, and per instance for the lines
/// that carry `GPU_I_ID`; the energy counter moves with `tick`.
fn mig56(fixture: &str, tick: u64) -> String {
    let mut out = String::with_capacity(64 * 1024);
    for line in fixture.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let instances: &[u64] = if line.contains("GPU_I_ID=") {
            &[7, 8, 9, 10, 11, 12, 13]
        } else {
            &[0]
        };
        for g in 0..8u64 {
            for &i in instances {
                let mut l = line
                    .replace("gpu=\"0\"", &format!("gpu=\"{g}\""))
                    .replace("device=\"nvidia0\"", &format!("device=\"nvidia{g}\""))
                    .replace("179bcfa61660", &format!("179bcfa6166{g}"))
                    .replace("GPU_I_ID=\"13\"", &format!("GPU_I_ID=\"{i}\""));
                if l.starts_with("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") {
                    if let Some((labels, _)) = l.rsplit_once(' ') {
                        l = format!("{labels} {}", 100_000_000 + tick * 6_000_000 + g);
                    }
                }
                out.push_str(&l);
                out.push('\n');
            }
        }
    }
    out
}

/// The batches a sampler spools for `n` consecutive ticks of the expositions `texts` (cycled), one converter
/// throughout (as a running sampler keeps its energy state).
fn spooled(texts: &[String], n: usize) -> Vec<Batch> {
    let mut conv = Converter::new(Attribution::default(), None);
    (0..n)
        .map(|i| {
            let end = Timestamp(1_800_000_000_000 + i as i64 * W);
            let r = dcgm::from_text(&texts[i % texts.len()], end);
            Batch::samples(
                end.to_string(),
                conv.convert(&r, Window { end, ms: W }).samples,
            )
        })
        .collect()
}

fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Stats {
    min: Duration,
    p50: Duration,
    p99: Duration,
}

fn measure(n: usize, mut f: impl FnMut(usize)) -> Stats {
    for i in 0..n.min(200) {
        f(i);
    }
    let mut t: Vec<Duration> = (0..n)
        .map(|i| {
            let s = Instant::now();
            f(i);
            s.elapsed()
        })
        .collect();
    t.sort();
    Stats {
        min: t[0],
        p50: t[n / 2],
        p99: t[n * 99 / 100],
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5_760);
    let fixtures = std::env::var("EAI_FIXTURES_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    let h100 = std::fs::read_to_string(fixtures.join("dcgm_h100x8_k8s_gpu_operator_sampled.prom"))
        .expect("the H100x8 fixture (the repository's fixtures/, or EAI_FIXTURES_DIR)");
    let mig = std::fs::read_to_string(fixtures.join("dcgm_a100_mig_nvidia_docs.prom"))
        .expect("the A100 MIG fixture");
    let texts: Vec<String> = (0..64).map(synthetic).collect();
    let migs: Vec<String> = (0..64).map(|t| mig56(&mig, t)).collect();
    {
        let end = Timestamp(1_800_000_000_000);
        let r = dcgm::from_text(&migs[0], end);
        let out = Converter::new(Attribution::default(), None).convert(&r, Window { end, ms: W });
        assert_eq!(r.stats.malformed, 0);
        assert_eq!(out.samples.len(), 56, "8 GPUs x 7 MIG slices");
    }
    let (rss0, _) = rss_kib();

    println!("eai-sampler tick benchmark: {n} ticks per case");
    println!();
    println!("| case | bytes | lines | min | p50 | p99 | p50 / reference |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut samples_out = 0usize;
    for (label, text, many) in [
        ("H100x8 fixture (4 families)", &h100, None),
        ("synthetic 8 GPUs x 20 families", &texts[0], Some(&texts)),
        ("A100 MIG fixture, 8 GPUs x 7 slices", &migs[0], Some(&migs)),
    ] {
        let lines = text.lines().count();
        let reference = measure(n, |_| {
            black_box(
                black_box(text.as_str())
                    .split('\n')
                    .filter(|l| !l.is_empty())
                    .count(),
            );
        });
        let mut conv = Converter::new(Attribution::default(), None);
        let tick = measure(n, |i| {
            let t = many.map_or(text, |m| &m[i % m.len()]);
            let end = Timestamp(1_800_000_000_000 + i as i64 * W);
            let r = dcgm::from_text(black_box(t), end);
            let out = conv.convert(&r, Window { end, ms: W });
            let line =
                serde_json::to_string(&Batch::samples(end.to_string(), out.samples)).unwrap();
            samples_out += line.len();
            black_box(line);
        });
        println!(
            "| reference: split into lines, {label} | {} | {lines} | {} | {} | {} | 1.0x |",
            text.len(),
            us(reference.min),
            us(reference.p50),
            us(reference.p99)
        );
        println!(
            "| tick: parse + convert + serialize, {label} | {} | {lines} | {} | {} | {} | {:.1}x |",
            text.len(),
            us(tick.min),
            us(tick.p50),
            us(tick.p99),
            tick.p50.as_secs_f64() / reference.p50.as_secs_f64().max(1e-12)
        );
        let target = if tick.p50 < Duration::from_millis(1) {
            "under"
        } else {
            "ABOVE"
        };
        println!("|   -> {target} the 1 ms target | | | | | | |");
    }

    // The spool append (one JSON line + fsync): disk-bound, so a separate figure.
    let dir = std::env::temp_dir().join(format!("eai-sampler-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut spool = Spool::open(&dir, DEFAULT_MAX_BYTES).unwrap();
    let batches = spooled(&texts, 200);
    let append = measure(200, |i| {
        spool.append(&batches[i % batches.len()]).unwrap();
        if let Some(p) = spool.peek().unwrap() {
            spool.ack(p.pos).unwrap();
        }
    });
    println!(
        "| spool append (fsync) + peek + ack, 8 samples | | | {} | {} | {} | |",
        us(append.min),
        us(append.p50),
        us(append.p99)
    );
    let _ = std::fs::remove_dir_all(&dir);

    // The spool's write rate: durable appends of the 56-slice node's batches, nothing acknowledged (the link
    // to the control plane is down and the spool fills).
    let mut spool = Spool::open(&dir, DEFAULT_MAX_BYTES).unwrap();
    let batches = spooled(&migs, 64);
    let bytes: usize = batches
        .iter()
        .map(|b| serde_json::to_string(b).unwrap().len() + 1)
        .sum::<usize>()
        / batches.len();
    let appends = 500;
    let started = Instant::now();
    for i in 0..appends {
        spool.append(&batches[i % batches.len()]).unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "| spool write rate (append + fsync), 56-sample batches of {bytes} bytes | | | | | | {:.0} batches/s = {:.0} samples/s, {:.1} MB/s |",
        appends as f64 / secs,
        (appends * 56) as f64 / secs,
        (appends * bytes) as f64 / secs / 1e6
    );
    let _ = std::fs::remove_dir_all(&dir);

    // Resident memory after many ticks of the synthetic node (energy state, buffers, allocator).
    let mut conv = Converter::new(Attribution::default(), None);
    for i in 0..n {
        let end = Timestamp(1_800_000_000_000 + i as i64 * W);
        let r = dcgm::from_text(&texts[i % texts.len()], end);
        let out = conv.convert(&r, Window { end, ms: W });
        black_box(serde_json::to_string(&out.samples).unwrap());
    }
    let (rss, hwm) = rss_kib();
    println!();
    println!(
        "resident memory: {:.1} MiB after {} more ticks of the synthetic 8-GPU node (peak {:.1} MiB; {:.1} MiB at start, the 64 synthetic expositions included) -> {} the 20 MiB target",
        rss as f64 / 1024.0,
        n,
        hwm as f64 / 1024.0,
        rss0 as f64 / 1024.0,
        if hwm < 20 * 1024 { "under" } else { "ABOVE" }
    );
    black_box(samples_out);
}
