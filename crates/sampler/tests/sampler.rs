#![allow(clippy::unwrap_used)]
//! The sampler against the real formats and real servers: every DCGM and Prometheus fixture of the repository's
//! `fixtures/` (real exporter output) to exact samples; a real Prometheus (Debian's `prometheus`) scraping a local
//! exporter that serves the H100 fixture, read back by the `prometheus` source (instant and range queries); and the sampler
//! end to end into an in-process control plane, through an outage and a restart, every window arriving once;
//! the vLLM fixtures to exact counters, and vLLM's counters as usage events (served by a local stand-in pod, read
//! directly and through a real Prometheus) into a recording stand-in control plane.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eai_api::{Application, Config};
use eai_client::{EnterpriseAi, GpuSample};
use eai_engine::Timestamp;
use eai_sampler::dcgm::{self, Readings};
use eai_sampler::metrics::Metrics;
use eai_sampler::sampler::{wall_clock, Output, SinkBox};
use eai_sampler::source::dcgm::DcgmSource;
use eai_sampler::source::prometheus::{readings_from_query, readings_from_range, PrometheusSource};
use eai_sampler::source::vllm::VllmReader;
use eai_sampler::source::Source;
use eai_sampler::spool::{Batch, Spool, DEFAULT_MAX_BYTES};
use eai_sampler::vllm;
use eai_sampler::{Attribution, Converter, Sampler, SamplerOptions, Window};
use serde_json::{json, Value};
use tokio::sync::oneshot;

const ADMIN_KEY: &str = "eai_live_test0000000000000000000000000000000000000000000000000000admin";
const H100: &str = "dcgm_h100x8_k8s_gpu_operator_sampled.prom";
const W: i64 = 15_000;

// ---------------------------------------------------------------------------------------------------------
// Helpers

/// The repository's `fixtures/` (or `EAI_FIXTURES_DIR`).
fn fixtures_dir() -> PathBuf {
    if let Ok(d) = std::env::var("EAI_FIXTURES_DIR") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn fixture(name: &str) -> String {
    let path = fixtures_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the fixture {} ({e}): the tests read the repository's fixtures/ \
             (or EAI_FIXTURES_DIR)",
            path.display()
        )
    })
}

fn convert_text(text: &str, end: Timestamp, node: Option<&str>) -> (Readings, Vec<GpuSample>) {
    let r = dcgm::from_text(text, end);
    let mut c = Converter::new(Attribution::default(), node.map(str::to_string));
    let out = c.convert(&r, Window { end, ms: W });
    (r, out.samples)
}

fn as_json(samples: &[GpuSample]) -> Value {
    serde_json::to_value(samples).unwrap()
}

const T_FIX: Timestamp = Timestamp(1_773_114_090_000); // 2026-03-10T03:41:30Z, a 15 s boundary

/// A whole-GPU sample as the fixtures give them (no FB_USED in the H100 capture: memory 0, counted).
fn idle(node: &str, uuid: &str, model: &str, memory: &str, power: &str) -> Value {
    json!({
        "node": node, "gpu_uuid": uuid, "model": model, "namespace": "-", "pod": "-",
        "deployment_id": "idle", "window_seconds": "15", "utilization": "0",
        "memory_used_gb": memory, "power_w": power, "timestamp": "2026-03-10T03:41:30Z"
    })
}

fn h100_expected() -> Value {
    let mut v = vec![json!({
        "node": "gpu-node-1", "gpu_uuid": "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",
        "model": "NVIDIA H100 80GB HBM3", "namespace": "dynamo-workload",
        "pod": "vllm-agg-0-vllmdecodeworker-s65j5", "deployment_id": "vllm-agg-0-vllmdecodeworker",
        "window_seconds": "15", "utilization": "0", "memory_used_gb": "0", "power_w": "113.611",
        "timestamp": "2026-03-10T03:41:30Z"
    })];
    for (uuid, power) in [
        ("GPU-bc5610b9-79c8-fedd-8899-07539c7f868a", "68.347"),
        ("GPU-fbc2c554-4d37-8938-0032-f923bad0f716", "65.709"),
        ("GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d", "67.316"),
        ("GPU-82e45d1b-1618-559f-144c-eab51545030b", "68.717"),
        ("GPU-39e28159-8c62-ee71-64db-b748edd61e15", "65.742"),
        ("GPU-e64d69ca-b4b3-59b2-e78c-94f26c4db365", "67.328"),
        ("GPU-04d228d3-3b5a-3534-f5cf-969706647d56", "66.997"),
    ] {
        v.push(idle(
            "gpu-node-1",
            uuid,
            "NVIDIA H100 80GB HBM3",
            "0",
            power,
        ));
    }
    Value::Array(v)
}

/// A local "exporter": serves whatever text it is given on /metrics (503 when given none).
struct Exporter {
    addr: SocketAddr,
    text: Arc<Mutex<Option<String>>>,
    _task: tokio::task::JoinHandle<()>,
}

async fn exporter(text: &str) -> Exporter {
    exporter_failing(text, |_| false).await
}

/// [`exporter`], answering 500 to the reads (counted from 0) that `fails` picks.
async fn exporter_failing(text: &str, fails: fn(usize) -> bool) -> Exporter {
    use axum::routing::get;
    let shared = Arc::new(Mutex::new(Some(text.to_string())));
    let s = shared.clone();
    let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let (s, reads) = (s.clone(), reads.clone());
            async move {
                if fails(reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                    return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, String::new());
                }
                match s.lock().unwrap().clone() {
                    Some(t) => (axum::http::StatusCode::OK, t),
                    None => (axum::http::StatusCode::SERVICE_UNAVAILABLE, String::new()),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Exporter {
        addr,
        text: shared,
        _task: task,
    }
}

/// The control plane, in process, on a SQLite file that outlives restarts.
struct ControlPlane {
    base: String,
    port: u16,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

async fn control_plane(dir: &Path, port: u16) -> ControlPlane {
    control_plane_with(dir, port, None).await
}

/// [`control_plane`], speaking HTTPS with `tls` when given (its base URL then names `localhost`).
async fn control_plane_with(
    dir: &Path,
    port: u16,
    tls: Option<eai_api::config::Tls>,
) -> ControlPlane {
    let db = dir.join("eai-gpu.db");
    let https = tls.is_some();
    let config = Config {
        listen: SocketAddr::from(([127, 0, 0, 1], port)),
        data_dir: dir.to_path_buf(),
        database_url: Some(format!("sqlite://{}", db.display()).into()),
        bootstrap_admin_key: Some(ADMIN_KEY.into()),
        tls,
        ..Config::default()
    };
    let app = Application::build(config)
        .await
        .expect("the control plane builds");
    let port = app.port();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = rx.await;
    }));
    ControlPlane {
        base: if https {
            format!("https://localhost:{port}")
        } else {
            format!("http://127.0.0.1:{port}")
        },
        port,
        stop: Some(tx),
        server: Some(server),
    }
}

impl ControlPlane {
    async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            s.await.unwrap().unwrap();
        }
    }

    fn admin(&self) -> EnterpriseAi {
        EnterpriseAi::new(&self.base, ADMIN_KEY).unwrap()
    }

    async fn sampler_key(&self) -> String {
        self.admin()
            .auth()
            .create_api_key("sampler", None, Some("gpu-node-1"))
            .await
            .unwrap()
            .key
    }

    /// The allocation's deployments by id: (samples, gpus), and its gaps.
    async fn deployments(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> (Vec<(String, u64, u64)>, Value) {
        let v = self
            .admin()
            .finops()
            .gpu_allocation(&from.to_string(), &to.to_string())
            .await
            .unwrap();
        let mut rows: Vec<(String, u64, u64)> = v["deployments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["deployment_id"].as_str().unwrap().to_string(),
                    d["samples"].as_u64().unwrap(),
                    d["gpus"].as_u64().unwrap(),
                )
            })
            .collect();
        rows.sort();
        (rows, v["gaps"].clone())
    }
}

fn opts() -> SamplerOptions {
    let mut o = SamplerOptions::new(W);
    o.scrape_attempts = 1;
    o.retry_base_ms = 1_000;
    o.retry_max_ms = 4_000;
    o.drain_budget = Duration::from_secs(10);
    o
}

fn dcgm_sampler(exporter: SocketAddr, spool_dir: &Path, base: &str, key: &str) -> Sampler {
    let source = DcgmSource::new(
        &format!("http://{exporter}/metrics"),
        Duration::from_secs(2),
    )
    .unwrap();
    let spool = Spool::open(spool_dir, DEFAULT_MAX_BYTES).unwrap();
    let sink = SinkBox(std::sync::Arc::new(EnterpriseAi::new(base, key).unwrap()));
    Sampler::new(
        Box::new(source),
        Converter::new(Attribution::default(), None),
        Output::Deliver { spool, sink },
        opts(),
        Arc::new(Metrics::default()),
    )
    .unwrap()
}

/// A 15 s boundary an hour ago: windows of the tests are in the past, inside the raw retention.
fn base_time() -> Timestamp {
    Timestamp(wall_clock().floor_to(3_600_000).0 - 3_600_000)
}

// ---------------------------------------------------------------------------------------------------------
// Fixtures -> exact samples

#[test]
fn t4_docker_exporter_without_pod_labels() {
    let (r, samples) = convert_text(&fixture("dcgm_t4_docker_datadog.prom"), T_FIX, None);
    assert_eq!(r.stats.malformed, 0);
    // The second capture's GPU has none of the five families (only FB_TOTAL, PSTATE, ...): no sample.
    assert_eq!(
        as_json(&samples),
        json!([idle(
            "424773df46e0",
            "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",
            "Tesla T4",
            "0",
            "8.969"
        )])
    );
    // --node names the node instead of the container's hostname.
    let (_, samples) = convert_text(
        &fixture("dcgm_t4_docker_datadog.prom"),
        T_FIX,
        Some("gpu-box-1"),
    );
    assert_eq!(samples[0].node, "gpu-box-1");
}

#[test]
fn a100_mig_docs_example_splits_the_device_power_by_fraction() {
    let (r, samples) = convert_text(&fixture("dcgm_a100_mig_nvidia_docs.prom"), T_FIX, None);
    assert_eq!(r.stats.malformed, 0);
    assert_eq!(r.devices.len(), 2, "the whole GPU and its 1g.5gb instance");
    let uuid = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660";
    assert_eq!(
        as_json(&samples),
        json!([
            {
                "node": "ub20-a100-k8s", "gpu_uuid": format!("{uuid}/mig-1g.5gb-13"), "model": "unknown",
                "namespace": "-", "pod": "-", "deployment_id": "idle", "window_seconds": "15",
                // its own GR_ENGINE_ACTIVE; 1/7 of the GPU's FB_USED (4845 MiB) and POWER_USAGE (409.692 W)
                "utilization": "0.995687", "memory_used_gb": "0.6759207589", "power_w": "58.527429",
                "timestamp": "2026-03-10T03:41:30Z", "gpu_fraction": "0.142857", "share_method": "mig"
            },
            {
                "node": "ub20-a100-k8s", "gpu_uuid": format!("{uuid}/mig-free"), "model": "unknown",
                "namespace": "-", "pod": "-", "deployment_id": "idle", "window_seconds": "15",
                "utilization": "0", "memory_used_gb": "4.0555245536", "power_w": "351.164571",
                "timestamp": "2026-03-10T03:41:30Z", "gpu_fraction": "0.857143", "share_method": "mig"
            }
        ])
    );
    // Never double counted: the instances add up to the GPU, to the milliwatt and the byte.
    let sum = |f: fn(&GpuSample) -> &str| -> rust_decimal::Decimal {
        samples
            .iter()
            .map(|s| f(s).parse::<rust_decimal::Decimal>().unwrap())
            .sum()
    };
    assert_eq!(sum(|s| &s.power_w).to_string(), "409.692000");
    assert_eq!(sum(|s| &s.memory_used_gb), "4.7314453125".parse().unwrap());
    assert_eq!(
        sum(|s| s.gpu_fraction.as_deref().unwrap()),
        rust_decimal::Decimal::ONE
    );
}

#[test]
fn mig_rows_that_repeat_device_power_are_not_double_counted() {
    // The A800 pattern: three 2g.20gb instances on GPU 0, POWER_USAGE repeated on each MIG row, no whole-GPU row.
    let mut text = String::new();
    for (id, pod) in [("1", "vllm-a-0"), ("2", "vllm-b-0"), ("3", "")] {
        let l = format!(
            "UUID=\"GPU-a800\",gpu=\"0\",modelName=\"NVIDIA A800-SXM4-80GB\",Hostname=\"n8\",GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"{id}\",pod=\"{pod}\",namespace=\"ai\""
        );
        text += &format!("DCGM_FI_DEV_POWER_USAGE{{{l}}} 300.000000\n");
        text += &format!("DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{l}}} 0.5\n");
        text += &format!("DCGM_FI_DEV_FB_USED{{{l}}} 1024\n");
    }
    let (_, samples) = convert_text(&text, T_FIX, None);
    let rows: Vec<(&str, &str, &str, Option<&str>, &str)> = samples
        .iter()
        .map(|s| {
            (
                s.gpu_uuid.as_str(),
                s.deployment_id.as_str(),
                s.power_w.as_str(),
                s.gpu_fraction.as_deref(),
                s.memory_used_gb.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "GPU-a800/mig-2g.20gb-1",
                "vllm-a",
                "85.714286",
                Some("0.285714"),
                "1"
            ),
            (
                "GPU-a800/mig-2g.20gb-2",
                "vllm-b",
                "85.714286",
                Some("0.285714"),
                "1"
            ),
            (
                "GPU-a800/mig-2g.20gb-3",
                "idle",
                "85.714286",
                Some("0.285714"),
                "1"
            ),
            (
                "GPU-a800/mig-free",
                "idle",
                "42.857143",
                Some("0.142857"),
                "0"
            ),
        ]
    );
}

#[test]
fn h100x8_kubernetes_capture_with_one_pod() {
    let (r, samples) = convert_text(&fixture(H100), T_FIX, None);
    assert_eq!(r.stats.malformed, 0);
    assert_eq!(as_json(&samples), h100_expected());
}

#[test]
fn every_prom_fixture_parses_without_a_malformed_line() {
    let mut seen = 0;
    for e in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "prom") {
            let text = std::fs::read_to_string(&path).unwrap();
            let stats = eai_sampler::exposition::parse(&text, |_| {});
            assert_eq!(stats.malformed, 0, "{}", path.display());
            assert!(stats.samples > 0, "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 5, "only {seen} .prom fixtures found");
}

#[test]
fn pitfalls_sentinels_spaces_escapes_malformed_lines() {
    let text = "# a comment without HELP/TYPE\n\
        DCGM_FI_DEV_GPU_UTIL{gpu=\"0\", UUID=\"GPU-1\", modelName=\"H100 \\\"SXM\\\"\", hostname=\"n1\"} 57\n\
        DCGM_FI_DEV_POWER_USAGE{gpu=\"0\", UUID=\"GPU-1\"} 300.500000\n\
        DCGM_FI_DEV_FB_USED{gpu=\"0\", UUID=\"GPU-1\"} 9223372036854775794\n\
        DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\", UUID=\"GPU-1\"} 9223372036854775794\n\
        DCGM_FI_DEV_GPU_UTIL{gpu=\"1\", UUID=\"GPU-2\"} garbage\n\
        DCGM_FI_DEV_POWER_USAGE{gpu=\"1\", UUID=\"GPU-2\" 100\n\
        DCGM_FI_DEV_POWER_USAGE{gpu=\"1\", UUID=\"GPU-2\"} 100\n";
    let (r, samples) = convert_text(text, T_FIX, None);
    assert_eq!(r.stats.malformed, 2, "{:?}", r.stats);
    assert_eq!(
        r.stats.sentinels, 1,
        "MEMORY_TEMP is not read, so not counted: {:?}",
        r.stats
    );
    // GPU-1: memory was a sentinel -> 0 and counted, never the sentinel; GPU-2: no utilization -> no sample.
    assert_eq!(samples.len(), 1);
    let s = &samples[0];
    assert_eq!((s.model.as_str(), s.node.as_str()), ("H100 \"SXM\"", "n1"));
    assert_eq!(
        (
            s.utilization.as_str(),
            s.power_w.as_str(),
            s.memory_used_gb.as_str()
        ),
        ("0.57", "300.5", "0")
    );
}

/// The two instant-query fixtures, as one query of both families would return them.
fn prometheus_fixture_merged(extra: &[Value]) -> String {
    let mut a: Value =
        serde_json::from_str(&fixture("prometheus_query_dcgm_fb_used_h100_k8s.json")).unwrap();
    let b: Value =
        serde_json::from_str(&fixture("prometheus_query_dcgm_power_usage_h100_k8s.json")).unwrap();
    let result = a["data"]["result"].as_array_mut().unwrap();
    result.extend(b["data"]["result"].as_array().unwrap().iter().cloned());
    result.extend(extra.iter().cloned());
    a.to_string()
}

#[test]
fn prometheus_instant_query_fixtures() {
    let body = prometheus_fixture_merged(&[]);
    let r = readings_from_query(&body, T_FIX, None).unwrap();
    assert_eq!(r.devices.len(), 16, "2 nodes x 8 H100");
    assert_eq!(r.stats.malformed, 0);
    let g0 = r
        .devices
        .iter()
        .find(|d| d.host.as_deref() == Some("gpu-node-1") && d.gpu.as_deref() == Some("0"))
        .unwrap();
    assert_eq!(g0.fb_used_mib, Some(74_166.into()));
    assert_eq!(g0.power_w, Some("113.611".parse().unwrap()));
    assert_eq!(
        g0.workload.as_ref().unwrap().pod,
        "vllm-agg-0-vllmdecodeworker-s65j5"
    );
    // Only FB_USED and POWER_USAGE: no utilization, so no sample at all (never a zero).
    let mut c = Converter::new(Attribution::default(), None);
    let out = c.convert(&r, Window { end: T_FIX, ms: W });
    assert!(out.samples.is_empty());
    assert_eq!(out.counts.incomplete, 16);

    // With GPU_UTIL too (one series per GPU, labels copied from the power series), and --node gpu-node-1.
    let power: Value =
        serde_json::from_str(&fixture("prometheus_query_dcgm_power_usage_h100_k8s.json")).unwrap();
    let util: Vec<Value> = power["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s["metric"]["__name__"] = json!("DCGM_FI_DEV_GPU_UTIL");
            s["value"][1] = json!("42");
            s
        })
        .collect();
    let body = prometheus_fixture_merged(&util);
    let r = readings_from_query(&body, T_FIX, Some("gpu-node-1")).unwrap();
    assert_eq!(r.devices.len(), 8);
    let mut c = Converter::new(Attribution::default(), None);
    let out = c.convert(&r, Window { end: T_FIX, ms: W });
    assert_eq!(out.samples.len(), 8);
    let s0 = out
        .samples
        .iter()
        .find(|s| s.gpu_uuid == "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005")
        .unwrap();
    assert_eq!(
        serde_json::to_value(s0).unwrap(),
        json!({
            "node": "gpu-node-1", "gpu_uuid": "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",
            "model": "NVIDIA H100 80GB HBM3", "namespace": "dynamo-workload",
            "pod": "vllm-agg-0-vllmdecodeworker-s65j5", "deployment_id": "vllm-agg-0-vllmdecodeworker",
            "window_seconds": "15", "utilization": "0.42", "memory_used_gb": "72.427734375",
            "power_w": "113.611", "timestamp": "2026-03-10T03:41:30Z"
        })
    );
    // The other GPUs carry the exporter's own pod (a scrape target label): idle, not "nvidia-dcgm-exporter".
    let s1 = out
        .samples
        .iter()
        .find(|s| s.gpu_uuid == "GPU-bc5610b9-79c8-fedd-8899-07539c7f868a")
        .unwrap();
    assert_eq!(
        (
            s1.deployment_id.as_str(),
            s1.pod.as_str(),
            s1.power_w.as_str()
        ),
        ("idle", "-", "68.347")
    );
    assert_eq!(out.counts.unmapped_pods, 1);
}

#[test]
fn prometheus_range_query_docs_example() {
    // The API docs' matrix, its first series renamed to a DCGM family of one GPU.
    let body = fixture("prometheus_query_range_docs_example.json").replacen(
        "\"__name__\" : \"up\"",
        "\"__name__\" : \"DCGM_FI_DEV_GPU_UTIL\", \"UUID\" : \"GPU-x\"",
        1,
    );
    let ends: Vec<Timestamp> = [
        1_435_781_430_781,
        1_435_781_445_781,
        1_435_781_460_781,
        1_435_781_475_781,
    ]
    .into_iter()
    .map(Timestamp)
    .collect();
    let rs = readings_from_range(&body, &ends, None).unwrap();
    assert_eq!(rs.len(), 3, "the fourth end has no point");
    for (r, end) in rs.iter().zip(&ends) {
        assert_eq!(r.at, *end);
        assert_eq!(r.devices[0].gpu_util_pct, Some(1.into()));
    }
}

// ---------------------------------------------------------------------------------------------------------
// A real Prometheus

struct Prometheus {
    child: std::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts Debian's `prometheus` on a free port, scraping `target` every second as a Kubernetes
/// ServiceMonitor would label it (pod/namespace/container of the exporter: the workload's become exported_*).
fn start_prometheus(target: SocketAddr) -> Prometheus {
    start_prometheus_job(
        target,
        "dcgm",
        "nvidia-dcgm-exporter-abcde",
        "gpu-operator",
        "nvidia-dcgm-exporter",
    )
}

/// [`start_prometheus`] with the job name and the target's pod, namespace and container labels.
fn start_prometheus_job(
    target: SocketAddr,
    job: &str,
    pod: &str,
    namespace: &str,
    container: &str,
) -> Prometheus {
    let bin = ["prometheus", "/usr/bin/prometheus"]
        .into_iter()
        .find(|b| std::process::Command::new(b).arg("--version").output().is_ok())
        .unwrap_or_else(|| {
            panic!("Prometheus is not installed: run scripts/test.sh (it runs `apt-get install -y prometheus`)")
        });
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: {job}\n    scrape_interval: 1s\n    static_configs:\n\
             \x20     - targets: ['{target}']\n        labels:\n          pod: {pod}\n\
             \x20         namespace: {namespace}\n          container: {container}\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let child = std::process::Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    Prometheus {
        child,
        base: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    }
}

impl Prometheus {
    /// Waits until the query returns `n` series (Prometheus started and scraped); fails loudly after 30 s.
    async fn wait_for_series(&mut self, query: &str, n: usize) {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self._dir.path().join("prometheus.log"))
                    .unwrap_or_default();
                panic!("Prometheus exited ({status}):\n{log}");
            }
            let got = async {
                let v: Value = http
                    .get(format!("{}/api/v1/query", self.base))
                    .query(&[("query", query)])
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                Some(v["data"]["result"].as_array()?.len())
            }
            .await;
            if got == Some(n) {
                return;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self._dir.path().join("prometheus.log"))
                    .unwrap_or_default();
                panic!(
                    "Prometheus at {} never returned {n} series for {query} (got {got:?}):\n{log}",
                    self.base
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scraping_the_h100_fixture_is_read_back_by_the_prometheus_source() {
    let exp = exporter(&fixture(H100)).await;
    let mut prom = start_prometheus(exp.addr);
    prom.wait_for_series("DCGM_FI_DEV_GPU_UTIL", 8).await;
    let ready = wall_clock();

    // Instant query: the same samples as reading the exporter directly (honor_labels false: exported_pod).
    let mut source = PrometheusSource::new(
        &prom.base,
        Some("job=\"dcgm\""),
        Some("gpu-node-1".into()),
        Duration::from_secs(5),
    )
    .unwrap();
    let r = source.scrape(ready).await.unwrap();
    assert_eq!(r.devices.len(), 8);
    let g0 = r
        .devices
        .iter()
        .find(|d| d.gpu.as_deref() == Some("0"))
        .unwrap();
    assert!(
        g0.labels
            .iter()
            .any(|(k, v)| k == "exported_pod" && v == "vllm-agg-0-vllmdecodeworker-s65j5"),
        "{:?}",
        g0.labels
    );
    let mut c = Converter::new(Attribution::default(), None);
    let via_prometheus = c.convert(&r, Window { end: T_FIX, ms: W }).samples;
    let (_, direct) = convert_text(&fixture(H100), T_FIX, None);
    let sorted = |mut v: Vec<GpuSample>| {
        v.sort_by(|a, b| a.gpu_uuid.cmp(&b.gpu_uuid));
        v
    };
    assert_eq!(sorted(via_prometheus), sorted(direct));

    // The sampler on it: a tick, then a tick 3 windows later backfills the 2 windows in between (query_range).
    let mut o = SamplerOptions::new(1000);
    o.scrape_attempts = 1;
    let mut sampler = Sampler::new(
        Box::new(source),
        Converter::new(Attribution::default(), None),
        Output::DryRun,
        o,
        Arc::new(Metrics::default()),
    )
    .unwrap();
    let t0 = Timestamp(ready.floor_to(1000).0 + 1000);
    while wall_clock().0 < t0.0 + 3000 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = sampler.tick(t0).await;
    assert_eq!(first.scrape_error, None);
    assert_eq!(first.produced.len(), 1);
    let later = sampler.tick(Timestamp(t0.0 + 3000)).await;
    assert_eq!(later.scrape_error, None);
    assert_eq!(later.backfilled_windows, 2);
    let ends: Vec<&str> = later
        .produced
        .iter()
        .map(|b| b.window_end.as_str())
        .collect();
    let want: Vec<String> = (1..=3)
        .map(|k| Timestamp(t0.0 + k * 1000).to_string())
        .collect();
    assert_eq!(ends, want);
    for b in &later.produced {
        assert_eq!(b.samples.len(), 8, "{}", b.window_end);
        assert!(b.samples.iter().all(|s| s.window_seconds == "1"));
    }
    assert_eq!(Metrics::get(&sampler.metrics().backfilled_windows), 2);
}

// ---------------------------------------------------------------------------------------------------------
// Shared GPUs (SPEC §11): the device's series repeated once per pod

fn shared_fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/shared")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each shape of a GPU shared by several pods (time-slicing in two namespaces; three pods with `vgpu`; three pods
/// in `exported_pod` behind a Prometheus scrape) charges every pod a share: one sample per pod, 1/n each
/// (`share_method: "equal"`: DCGM exporter copies the device's values to every pod), the shares adding up to
/// exactly one GPU and the power to exactly what the device drew. The pod first in (namespace, pod) order keeps
/// the GPU's own id, the others are `<uuid>/shared/<namespace>/<pod>/<container>`.
#[test]
fn shared_gpu_every_pod_is_charged_a_share_adding_up_to_one_gpu() {
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 3] = [
        (
            "dcgm_a100_timeslicing_two_namespaces.prom",
            "286.214",
            &[
                ("team-a", "embed-a-5c7d8f9b6-7hj2m"),
                ("team-b", "chat-b-6d9f7c5b8-x2k4q"),
            ],
        ),
        (
            "dcgm_t4_virtual_gpus_three_pods.prom",
            "52.917",
            &[
                ("default", "gpu-workload-1"),
                ("default", "gpu-workload-2"),
                ("default", "gpu-workload-3"),
            ],
        ),
        (
            "prometheus_federate_exported_pod_three_pods.prom",
            "401.5",
            &[
                ("default", "pod1"),
                ("default", "pod2"),
                ("somenamespace", "pod3"),
            ],
        ),
    ];
    for (file, power, pods) in cases {
        let (readings, samples) = convert_text(&shared_fixture(file), base_time(), None);
        assert_eq!(readings.devices.len(), 1, "{file}: one device");
        assert_eq!(readings.devices[0].sharers.len(), pods.len(), "{file}");
        let got: Vec<(&str, &str)> = samples
            .iter()
            .map(|s| (s.namespace.as_str(), s.pod.as_str()))
            .collect();
        assert_eq!(
            got,
            pods.to_vec(),
            "{file}: one sample per pod, none forgotten"
        );
        let uuid = readings.devices[0].uuid.clone();
        assert_eq!(
            samples[0].gpu_uuid, uuid,
            "{file}: the first pod keeps the GPU's id"
        );
        for s in &samples[1..] {
            assert!(
                s.gpu_uuid
                    .starts_with(&format!("{uuid}/shared/{}/{}", s.namespace, s.pod)),
                "{file}: {}",
                s.gpu_uuid
            );
        }
        let fractions: Vec<rust_decimal::Decimal> = samples
            .iter()
            .map(|s| s.gpu_fraction.as_deref().unwrap().parse().unwrap())
            .collect();
        assert_eq!(
            fractions.iter().sum::<rust_decimal::Decimal>(),
            rust_decimal::Decimal::ONE,
            "{file}: {fractions:?}"
        );
        let hi = fractions.iter().max().unwrap();
        let lo = fractions.iter().min().unwrap();
        assert!(
            hi - lo <= "0.000001".parse().unwrap(),
            "{file}: equal shares {fractions:?}"
        );
        let drawn: rust_decimal::Decimal = samples
            .iter()
            .map(|s| s.power_w.parse::<rust_decimal::Decimal>().unwrap())
            .sum();
        assert_eq!(drawn, power.parse().unwrap(), "{file}: power conserved");
        assert!(
            samples
                .iter()
                .all(|s| s.share_method.as_deref() == Some("equal")),
            "{file}"
        );
        // The workloads, never the exporter's own pod.
        assert!(
            samples.iter().all(|s| !s.pod.contains("dcgm-exporter")),
            "{file}"
        );
    }
}

/// With per-pod GPU time (a per-process reader, or HAMi), the shares follow it and the time no pod used goes to
/// the idle deployment; a pod that used nothing has no sample. Memory is each pod's own.
#[test]
fn shared_gpu_measured_shares_follow_each_pods_gpu_time() {
    use eai_sampler::dcgm::Workload;
    use eai_sampler::shares::{merge, Measured};
    let mut r = dcgm::from_text(
        &shared_fixture("dcgm_t4_virtual_gpus_three_pods.prom"),
        base_time(),
    );
    let uuid = r.devices[0].uuid.clone();
    let m = |pod: &str, t: &str, mib: i64| Measured {
        uuid: uuid.clone(),
        workload: Workload {
            pod: pod.into(),
            namespace: Some("default".into()),
            container: Some("main".into()),
        },
        gpu_time: t.parse().unwrap(),
        memory_mib: Some(rust_decimal::Decimal::from(mib)),
    };
    // Two processes of workload-1, one of workload-2; workload-3 ran nothing this window. The idle share holds
    // the memory no process did: 9830 - 6048 MiB.
    merge(
        &mut r,
        &[
            m("gpu-workload-1", "0.4", 3000),
            m("gpu-workload-1", "0.15", 1000),
            m("gpu-workload-2", "0.25", 2048),
        ],
    );
    let mut c = Converter::new(Attribution::default(), None);
    let out = c.convert(
        &r,
        Window {
            end: base_time(),
            ms: W,
        },
    );
    let got: Vec<(&str, &str, &str, &str)> = out
        .samples
        .iter()
        .map(|s| {
            (
                s.pod.as_str(),
                s.gpu_fraction.as_deref().unwrap(),
                s.memory_used_gb.as_str(),
                s.share_method.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("gpu-workload-1", "0.55", "3.90625", "measured"),
            ("gpu-workload-2", "0.25", "2", "measured"),
            ("-", "0.2", "3.693359375", "measured"),
        ]
    );
    assert_eq!(out.samples[0].gpu_uuid, uuid);
    assert_eq!(out.samples[2].gpu_uuid, format!("{uuid}/shared-idle"));
    assert_eq!(out.samples[2].deployment_id, "idle");
    assert_eq!(out.counts.sharers_without_time, 1);
    let power: rust_decimal::Decimal = out
        .samples
        .iter()
        .map(|s| s.power_w.parse::<rust_decimal::Decimal>().unwrap())
        .sum();
    assert_eq!(power, "52.917".parse().unwrap());
}

/// A shared GPU end to end: the sampler reads the time-slicing exposition four windows running, the control
/// plane takes every pod's samples, and the allocation charges each pod's deployment half the GPU and says its
/// time rests on equal shares (`equal_gpu_shares`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_gpu_end_to_end_each_pod_pays_its_share_and_the_estimate_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut cp = control_plane(dir.path(), 0).await;
    let key = cp.sampler_key().await;
    let exp = exporter(&shared_fixture("dcgm_a100_timeslicing_two_namespaces.prom")).await;
    let mut sampler = dcgm_sampler(exp.addr, &dir.path().join("spool"), &cp.base, &key);
    let t0 = base_time();
    for k in 1..=4 {
        let r = sampler.tick(Timestamp(t0.0 + k * W + 1234)).await;
        assert_eq!(r.scrape_error, None);
        assert_eq!((r.delivered.batches, r.delivered.samples), (1, 2), "{r:?}");
    }
    let (from, to) = (Timestamp(t0.0 - 3_600_000), Timestamp(t0.0 + 3_600_000));
    let v = cp
        .admin()
        .finops()
        .gpu_allocation(&from.to_string(), &to.to_string())
        .await
        .unwrap();
    let mut rows: Vec<(String, u64, String)> = v["deployments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["deployment_id"].as_str().unwrap().to_string(),
                d["samples"].as_u64().unwrap(),
                d["gpu_hours"].to_string(),
            )
        })
        .collect();
    rows.sort();
    // Four windows of 15 s, half a GPU each: 30 GPU-seconds (1/120 h) per pod, 60 for the GPU.
    let half_minute = "0.0083";
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (dep, (got, want)) in rows.iter().zip(["chat-b", "embed-a"]).enumerate() {
        assert_eq!((got.0.as_str(), got.1), (want, 4), "{dep}: {rows:?}");
        assert!(got.2.starts_with(half_minute), "{rows:?}");
    }
    let findings: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "equal_gpu_shares")
        .collect();
    assert_eq!(findings.len(), 2, "{v}");
    assert!(
        findings[0]["message"].as_str().unwrap().starts_with(
            "4 samples (30 GPU-seconds) of chat-b are shares of GPUs used by several pods"
        ),
        "{}",
        findings[0]
    );
    cp.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Slurm (SPEC §12): which job holds each GPU, from Slurm's own output as Debian's Slurm 22.05 prints it
// (tests/fixtures/slurm: captured from a real slurmctld/slurmd, job 1 of account physics on GPUs 0-1, job 2 of
// account bio on GPU 2, of node gpu-node-1).

fn slurm_fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/slurm")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const PHYSICS: &str = "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21";
const BIO: &str = "6b9e1f0a-3c2d-4e5f-8a7b-9c0d1e2f3a4b";

fn slurm_rules() -> Attribution {
    Attribution::from_toml(&format!(
        "[[slurm_account]]\naccount = \"phys*\"\ntenant_id = \"{PHYSICS}\"\n\n\
         [[slurm_account]]\naccount = \"bio\"\ntenant_id = \"{BIO}\"\ndeployment_id = \"hpc-bio\"\n"
    ))
    .unwrap()
}

/// A DCGM exposition of a four-GPU Slurm node (no pods); `jobs[i]`: the `hpc_job` labels of GPU i.
fn slurm_node_exposition(jobs: &[&[&str]; 4]) -> String {
    let mut text = String::new();
    for (i, labelled) in jobs.iter().enumerate() {
        let series: Vec<Option<&str>> = if labelled.is_empty() {
            vec![None]
        } else {
            labelled.iter().map(|j| Some(*j)).collect()
        };
        for job in series {
            let job = job.map(|j| format!(",hpc_job=\"{j}\"")).unwrap_or_default();
            for (family, v) in [
                ("DCGM_FI_DEV_GPU_UTIL", if i < 3 { "90" } else { "0" }),
                ("DCGM_FI_DEV_FB_USED", "20480"),
                ("DCGM_FI_DEV_POWER_USAGE", "350"),
            ] {
                text.push_str(&format!(
                    "{family}{{gpu=\"{i}\",UUID=\"GPU-5e1f0c2a-000{i}\",modelName=\"NVIDIA H100 80GB HBM3\",\
                     Hostname=\"gpu-node-1\"{job}}} {v}\n"
                ));
            }
        }
    }
    text
}

/// A sample's GPU, namespace, pod and deployment, and its tenant or share (of a test).
type Row5 = (String, String, String, String, Option<String>);

fn placements(samples: &[GpuSample]) -> Vec<Row5> {
    samples
        .iter()
        .map(|s| {
            (
                s.gpu_uuid.clone(),
                s.namespace.clone(),
                s.pod.clone(),
                s.deployment_id.clone(),
                s.tenant_id.clone(),
            )
        })
        .collect()
}

#[test]
fn slurm_jobs_are_read_from_squeue_and_scontrol_as_slurm_prints_them() {
    use eai_sampler::slurm::{parse_scontrol, parse_squeue_json, Job};
    let want = vec![
        Job {
            id: "1".into(),
            account: "physics".into(),
            user: "root".into(),
            partition: "gpu".into(),
            qos: "normal".into(),
            gpus: [("gpu-node-1".to_string(), vec![0, 1])].into(),
        },
        Job {
            id: "2".into(),
            account: "bio".into(),
            user: "root".into(),
            partition: "gpu".into(),
            qos: "normal".into(),
            gpus: [("gpu-node-1".to_string(), vec![2])].into(),
        },
    ];
    assert_eq!(
        parse_squeue_json(&slurm_fixture("squeue.json")).unwrap(),
        want
    );
    assert_eq!(
        parse_scontrol(&slurm_fixture("scontrol-show-job.txt")),
        want
    );
    assert_eq!(
        parse_squeue_json(&slurm_fixture("squeue-empty.json")).unwrap(),
        vec![]
    );
    // Jobs that ended hold nothing.
    assert_eq!(
        parse_squeue_json(&slurm_fixture("squeue-completed.json")).unwrap(),
        vec![]
    );
    assert!(parse_squeue_json("Slurm accounting storage is disabled").is_err());
}

/// Without labels from the exporter, each GPU goes to the job Slurm says holds its index on this node: GPUs 0-1 to
/// job 1 (physics: its tenant, `slurm/gpu`), GPU 2 to job 2 (bio: its tenant, the rule's deployment), GPU 3 idle.
#[test]
fn slurm_each_gpu_goes_to_the_job_holding_it_and_its_accounts_tenant() {
    use eai_sampler::slurm::{assign, parse_squeue_json, Jobs};
    let jobs = Jobs::new(
        parse_squeue_json(&slurm_fixture("squeue.json")).unwrap(),
        "gpu-node-1",
    );
    let end = base_time();
    let mut readings = dcgm::from_text(&slurm_node_exposition(&[&[], &[], &[], &[]]), end);
    let done = assign(&mut readings, &jobs);
    assert_eq!(done.by_index, 3);
    let mut c = Converter::new(slurm_rules(), None);
    let out = c.convert(&readings, Window { end, ms: W });
    let s = |g: &str, ns: &str, pod: &str, dep: &str, t: Option<&str>| {
        (
            g.to_string(),
            ns.to_string(),
            pod.to_string(),
            dep.to_string(),
            t.map(str::to_string),
        )
    };
    assert_eq!(
        placements(&out.samples),
        vec![
            s(
                "GPU-5e1f0c2a-0000",
                "physics",
                "job-1",
                "slurm/gpu",
                Some(PHYSICS)
            ),
            s(
                "GPU-5e1f0c2a-0001",
                "physics",
                "job-1",
                "slurm/gpu",
                Some(PHYSICS)
            ),
            s("GPU-5e1f0c2a-0002", "bio", "job-2", "hpc-bio", Some(BIO)),
            s("GPU-5e1f0c2a-0003", "-", "-", "idle", None),
        ]
    );
    // Seen from another node, none of these GPUs is held.
    let elsewhere = Jobs::new(
        parse_squeue_json(&slurm_fixture("squeue.json")).unwrap(),
        "gpu-node-2",
    );
    let mut readings = dcgm::from_text(&slurm_node_exposition(&[&[], &[], &[], &[]]), end);
    assert_eq!(assign(&mut readings, &elsewhere).by_index, 0);
}

/// DCGM exporter's `hpc_job` labels (its job-mapping folder, written by a prolog) name the job: its account and
/// partition come from Slurm. A GPU two jobs share (shards, oversubscription) is split between them like pods; a
/// job Slurm does not list is kept as `job-<id>`, unmapped, under `slurm/unknown`, never dropped.
#[test]
fn slurm_hpc_job_labels_name_the_job_and_jobs_sharing_a_gpu_are_split() {
    use eai_sampler::slurm::{assign, parse_squeue_json, Jobs};
    let jobs = Jobs::new(
        parse_squeue_json(&slurm_fixture("squeue.json")).unwrap(),
        "gpu-node-1",
    );
    let end = base_time();
    let mut readings = dcgm::from_text(
        &slurm_node_exposition(&[&["1"], &["1"], &["2", "1"], &["77"]]),
        end,
    );
    let done = assign(&mut readings, &jobs);
    assert_eq!((done.by_label, done.unknown_jobs, done.by_index), (4, 1, 0));
    let mut c = Converter::new(slurm_rules(), None);
    let out = c.convert(&readings, Window { end, ms: W });
    type ShareRow = (String, String, String, Option<String>, Option<String>);
    let got: Vec<ShareRow> = out
        .samples
        .iter()
        .map(|s| {
            (
                s.gpu_uuid.clone(),
                s.pod.clone(),
                s.deployment_id.clone(),
                s.gpu_fraction.clone(),
                s.share_method.clone(),
            )
        })
        .collect();
    let row = |g: &str, pod: &str, dep: &str, f: Option<&str>, m: Option<&str>| {
        (
            g.to_string(),
            pod.to_string(),
            dep.to_string(),
            f.map(str::to_string),
            m.map(str::to_string),
        )
    };
    assert_eq!(
        got,
        vec![
            // A GPU of its own: no share method on the wire (exclusive).
            row("GPU-5e1f0c2a-0000", "job-1", "slurm/gpu", None, None),
            row("GPU-5e1f0c2a-0001", "job-1", "slurm/gpu", None, None),
            // Shared by two jobs, split equally (no per-job GPU time): bio's job 2 and physics' job 1.
            row(
                "GPU-5e1f0c2a-0002",
                "job-2",
                "hpc-bio",
                Some("0.5"),
                Some("equal")
            ),
            row(
                "GPU-5e1f0c2a-0002/shared/physics/job-1",
                "job-1",
                "slurm/gpu",
                Some("0.5"),
                Some("equal")
            ),
            row("GPU-5e1f0c2a-0003", "job-77", "slurm/unknown", None, None),
        ]
    );
    assert_eq!(out.samples[4].namespace, "-");
    assert_eq!(out.samples[4].tenant_id, None);
}

/// The source beside a device source: captures of both (`file://`), the jobs read once and kept between windows.
#[tokio::test]
async fn slurm_the_source_gives_the_devices_to_the_jobs_of_a_capture() {
    use eai_sampler::source::slurm::{JobsFrom, WithSlurm};
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("dcgm.prom");
    std::fs::write(&capture, slurm_node_exposition(&[&[], &[], &[], &[]])).unwrap();
    let device = DcgmSource::new(
        &format!("file://{}", capture.display()),
        Duration::from_secs(1),
    )
    .unwrap();
    let jobs =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm/scontrol-show-job.txt");
    let from = JobsFrom::parse(&format!("file://{}", jobs.display())).unwrap();
    let metrics = Arc::new(Metrics::default());
    let mut source = WithSlurm::new(
        Box::new(device),
        from,
        "gpu-node-1",
        Duration::from_secs(60),
        Duration::from_secs(300),
        Duration::from_secs(5),
    )
    .unwrap()
    .with_metrics(metrics.clone());
    for _ in 0..2 {
        let r = source.scrape(base_time()).await.unwrap();
        let pods: Vec<Option<&str>> = r
            .devices
            .iter()
            .map(|d| d.workload.as_ref().map(|w| w.pod.as_str()))
            .collect();
        assert_eq!(
            pods,
            vec![Some("job-1"), Some("job-1"), Some("job-2"), None]
        );
    }
    assert_eq!(metrics.slurm_jobs.get(), 2);
    assert!(JobsFrom::parse("sinfo").is_err());
    assert_eq!(
        JobsFrom::parse("/usr/bin/squeue").unwrap(),
        JobsFrom::Squeue("/usr/bin/squeue".into())
    );
}

/// A throwaway Slurm cluster (`scripts/slurm-scratch.sh`: munged, MariaDB, slurmdbd, slurmctld and one slurmd with
/// four GPU GRES, all in a temporary folder, installed first where Slurm is missing), stopped when dropped. A test
/// that needs it fails, loudly, when it cannot start.
struct SlurmCluster {
    child: std::process::Child,
    env: Vec<(String, String)>,
}

impl SlurmCluster {
    fn start() -> SlurmCluster {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-scratch.sh");
        let mut child = std::process::Command::new("bash")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let out = child.stdout.take().unwrap();
        let mut env = Vec::new();
        for line in std::io::BufReader::new(out).lines() {
            let line = line.unwrap();
            if let Some((k, v)) = line.strip_prefix("export ").and_then(|l| l.split_once('=')) {
                env.push((k.to_string(), v.to_string()));
            }
            if line.starts_with("(Enter") {
                break;
            }
        }
        assert!(
            env.iter().any(|(k, _)| k == "SLURM_CONF"),
            "{} did not start a Slurm cluster (its errors are above)",
            script.display()
        );
        SlurmCluster { child, env }
    }

    fn var(&self, k: &str) -> &str {
        &self.env.iter().find(|(n, _)| n == k).unwrap().1
    }

    /// A Slurm command of this cluster; its standard output (it must succeed).
    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = std::process::Command::new(program)
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        // Enter (here: the end of its input) stops it and removes its folder.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// End to end on a real Slurm (SPEC §12): a job of account physics holding GPUs 0-1 and one of account bio holding
/// GPU 2, submitted with sbatch; the prolog writes DCGM exporter's job-mapping files, the exporter's series carry
/// `hpc_job`, and the sampler (`--slurm-jobs squeue`) reads each job's account from `squeue --json` every 5 s
/// window. The allocation charges each account's tenant for the GPU-seconds measured, GPU 3 is idle; then, the
/// jobs done, `sacct --json` posted to the reconciliation lists each job with Slurm's allocated GPU-seconds beside
/// ours, within a window per GPU at each end of the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm_end_to_end_jobs_of_a_real_slurm_are_charged_to_their_accounts_and_reconciled() {
    use eai_sampler::source::slurm::{JobsFrom, WithSlurm};
    const WS: i64 = 5_000;
    let slurm = SlurmCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cp = control_plane(dir.path(), 0).await;
    let admin = cp.admin();
    admin
        .finops()
        .create_allocation_policy(&json!({
            "name": "h100", "deployment_pattern": "*", "currency": "EUR", "gpu_hourly_cost": "2.10",
            "overhead_pct": "18", "energy_kwh_price": "0.21", "pue": "1.4",
            "effective_from": "2026-01-01T00:00:00Z"
        }))
        .await
        .unwrap();
    let key = cp.sampler_key().await;

    // The sampler: squeue through a wrapper that names this cluster's configuration.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let squeue = bin.join("squeue");
    std::fs::write(
        &squeue,
        format!(
            "#!/bin/sh\nSLURM_CONF={} exec squeue \"$@\"\n",
            slurm.var("SLURM_CONF")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&squeue, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let job_map = Path::new(slurm.var("EAI_TEST_SLURM_DIR")).join("job-map");
    let exp = exporter(&slurm_node_exposition(&[&[], &[], &[], &[]])).await;
    let device = DcgmSource::new(
        &format!("http://{}/metrics", exp.addr),
        Duration::from_secs(2),
    )
    .unwrap();
    let source = WithSlurm::new(
        Box::new(device),
        JobsFrom::parse(squeue.to_str().unwrap()).unwrap(),
        slurm.var("EAI_TEST_SLURM_NODE"),
        Duration::ZERO,
        Duration::from_secs(300),
        Duration::from_secs(5),
    )
    .unwrap();
    let rules = Attribution::from_toml(&format!(
        "[[slurm_account]]\naccount = \"physics\"\ntenant_id = \"{PHYSICS}\"\n\n\
         [[slurm_account]]\naccount = \"bio\"\ntenant_id = \"{BIO}\"\n"
    ))
    .unwrap();
    let mut o = SamplerOptions::new(WS);
    o.scrape_attempts = 1;
    let mut sampler = Sampler::new(
        Box::new(source),
        Converter::new(rules, None),
        Output::Deliver {
            spool: Spool::open(&dir.path().join("spool"), DEFAULT_MAX_BYTES).unwrap(),
            sink: SinkBox(Arc::new(EnterpriseAi::new(&cp.base, &key).unwrap())),
        },
        o,
        Arc::new(Metrics::default()),
    )
    .unwrap();

    let partition = slurm.var("EAI_TEST_SLURM_PARTITION").to_string();
    let submit = |account: &str, gpus: u32| {
        slurm
            .run(
                "sbatch",
                &[
                    "--parsable",
                    "-A",
                    account,
                    "-p",
                    &partition,
                    &format!("--gres=gpu:{gpus}"),
                    "--mem=100",
                    "-o",
                    "/dev/null",
                    "--wrap",
                    "sleep 25",
                ],
            )
            .trim()
            .to_string()
    };
    let started = wall_clock();
    let physics = submit("physics", 2);
    let bio = submit("bio", 1);
    // Tick at each 5 s window's end while the jobs run, and once more after; the exposition follows the
    // job-mapping files, as DCGM exporter's `--hpc-job-mapping-dir` does.
    let mut mapped: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    let mut ticks = 0;
    loop {
        let now = wall_clock().0;
        let next = (now / WS + 1) * WS + 300;
        tokio::time::sleep(Duration::from_millis((next - now) as u64)).await;
        let files: [Vec<String>; 4] = std::array::from_fn(|i| {
            std::fs::read_to_string(job_map.join(i.to_string()))
                .map(|t| {
                    t.lines()
                        .map(str::to_string)
                        .filter(|l| !l.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        });
        for (i, jobs) in files.iter().enumerate() {
            for j in jobs {
                let e = mapped.entry(j.clone()).or_default();
                if !e.contains(&(i as u32)) {
                    e.push(i as u32);
                }
            }
        }
        let labels: Vec<Vec<&str>> = files
            .iter()
            .map(|f| f.iter().map(String::as_str).collect())
            .collect();
        let text = slurm_node_exposition(&[&labels[0], &labels[1], &labels[2], &labels[3]]);
        *exp.text.lock().unwrap() = Some(text);
        let r = sampler.tick(wall_clock()).await;
        assert_eq!(r.scrape_error, None, "{r:?}");
        ticks += 1;
        let running = slurm.run(
            "squeue",
            &["-h", "-t", "RUNNING,PENDING,CONFIGURING,COMPLETING"],
        );
        if running.trim().is_empty() && ticks > 2 {
            let r = sampler.tick(wall_clock()).await;
            assert_eq!(r.scrape_error, None, "{r:?}");
            break;
        }
        assert!(
            wall_clock().0 - started.0 < 180_000,
            "the jobs never ended: {running}"
        );
    }
    // The prolog mapped each job to its GPUs.
    assert_eq!(mapped.get(&physics), Some(&vec![0, 1]), "{mapped:?}");
    assert_eq!(mapped.get(&bio), Some(&vec![2]), "{mapped:?}");

    let (from, to) = (
        Timestamp(started.floor_to(3_600_000).0),
        Timestamp(started.floor_to(3_600_000).0 + 2 * 3_600_000),
    );
    let to = to.min(Timestamp(wall_clock().0 / 1000 * 1000 + 1000));
    let alloc = admin
        .finops()
        .gpu_allocation(&from.to_string(), &to.to_string())
        .await
        .unwrap();
    let tenant_cost = |t: &str| {
        alloc["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tenant_id"] == t)
            .map(|r| {
                r["cost"]["amount"]
                    .as_str()
                    .unwrap()
                    .parse::<rust_decimal::Decimal>()
                    .unwrap()
            })
    };
    assert!(
        tenant_cost(PHYSICS).is_some_and(|c| c > rust_decimal::Decimal::ZERO),
        "{alloc}"
    );
    assert!(
        tenant_cost(BIO).is_some_and(|c| c > rust_decimal::Decimal::ZERO),
        "{alloc}"
    );
    let deployments: Vec<&str> = alloc["deployments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["deployment_id"].as_str().unwrap())
        .collect();
    assert!(
        deployments.contains(&"idle") && deployments.contains(&"slurm/gpu"),
        "{alloc}"
    );

    // Slurm's accounting, posted as sacct prints it.
    let sacct: Value = serde_json::from_str(&slurm.run(
        "sacct",
        &[
            "--json",
            "-a",
            "-X",
            "-S",
            from.to_string().trim_end_matches('Z'),
        ],
    ))
    .unwrap();
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/v1/finops/gpu/slurm/reconciliation?from={from}&to={to}",
            cp.base
        ))
        .bearer_auth(ADMIN_KEY)
        .json(&sacct)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let r: Value = resp.json().await.unwrap();
    let job = |id: &str| {
        r["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("job {id} not in {r}"))
    };
    for (id, gpus, tenant, account) in [(&physics, 2u64, PHYSICS, "physics"), (&bio, 1, BIO, "bio")]
    {
        let j = job(id);
        let slurm_job = sacct["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["job_id"].as_u64().map(|n| n.to_string()).as_deref() == Some(id.as_str()))
            .unwrap();
        let t = &slurm_job["time"];
        let elapsed = t["end"].as_i64().unwrap() - t["start"].as_i64().unwrap();
        let allocated = j["allocated_gpu_seconds"].as_i64().unwrap();
        assert_eq!(allocated, elapsed * gpus as i64, "Slurm's own figure: {j}");
        let measured: f64 = j["measured_gpu_seconds"].as_f64().unwrap();
        eprintln!(
            "slurm job {id} ({account}): Slurm allocated {allocated} GPU-s, measured {measured}"
        );
        let slack = (2 * WS / 1000) as f64 * gpus as f64;
        assert!(
            (measured - allocated as f64).abs() <= slack,
            "measured {measured} vs allocated {allocated} (job {id}): {r}"
        );
        assert_eq!(j["gpus"], gpus, "{j}");
        assert_eq!(j["tenant_id"], tenant, "{j}");
        assert_eq!(j["account"], account, "{j}");
        assert_eq!(j["status"], "ok", "{j}");
    }
    cp.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// End to end: sampler -> control plane

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_the_allocation_shows_the_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let mut cp = control_plane(dir.path(), 0).await;
    let key = cp.sampler_key().await;
    let exp = exporter(&fixture(H100)).await;
    let mut sampler = dcgm_sampler(exp.addr, &dir.path().join("spool"), &cp.base, &key);
    let (metrics_addr, _task) =
        eai_sampler::metrics::serve("127.0.0.1:0".parse().unwrap(), sampler.metrics().clone())
            .await
            .unwrap();

    let t0 = base_time();
    for k in 1..=4 {
        let r = sampler.tick(Timestamp(t0.0 + k * W + 1234)).await;
        assert_eq!(r.scrape_error, None);
        assert_eq!(
            r.window_end,
            Timestamp(t0.0 + k * W),
            "aligned to the interval"
        );
        assert_eq!((r.delivered.batches, r.delivered.samples), (1, 8), "{r:?}");
    }
    // A second tick in the same window reads nothing again.
    let again = sampler.tick(Timestamp(t0.0 + 4 * W + 5000)).await;
    assert!(again.already_done && again.produced.is_empty());

    let (rows, gaps) = cp
        .deployments(Timestamp(t0.0 - 3_600_000), Timestamp(t0.0 + 3_600_000))
        .await;
    assert_eq!(
        rows,
        vec![
            ("idle".to_string(), 28, 7),
            ("vllm-agg-0-vllmdecodeworker".to_string(), 4, 1)
        ]
    );
    assert_eq!(gaps, json!([]));

    let resp = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let text = resp.text().await.unwrap();
    for line in [
        "eai_sampler_samples_sent_total 32",
        "eai_sampler_samples_spooled_total 32",
        "eai_sampler_scrape_errors_total 0",
        "eai_sampler_spool_bytes 0",
        "eai_sampler_unmapped_pod_samples_total 4",
        "eai_sampler_missing_memory_samples_total 32",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
    cp.stop().await;
}

/// An exporter that fails every other read, then the sampler's clock stepped back an hour and put right again: a
/// failed read makes no sample (the control plane estimates the short span, it is not the sampler's to invent),
/// no window is read or sent twice, the ticks behind the clock are counted, and reading resumes once the clock
/// passes the last window spooled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_exporter_and_a_clock_stepped_back_invent_and_double_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cp = control_plane(dir.path(), 0).await;
    let key = cp.sampler_key().await;
    let exp = exporter_failing(&fixture(H100), |read| read % 2 == 1).await;
    let mut sampler = dcgm_sampler(exp.addr, &dir.path().join("spool"), &cp.base, &key);
    let t0 = base_time();
    let at = |k: i64| Timestamp(t0.0 + k * W + 500);
    let (mut read, mut failed) = (0u64, 0u64);
    let mut tally = |r: &eai_sampler::sampler::TickReport| {
        if r.scrape_error.is_some() {
            assert!(
                r.produced.is_empty(),
                "a window made from a failed read: {r:?}"
            );
            failed += 1;
        } else {
            assert_eq!(r.produced[0].samples.len(), 8, "{r:?}");
            read += 1;
        }
    };
    for k in 1..=8 {
        tally(&sampler.tick(at(k)).await);
    }
    // The clock steps back an hour: four ticks read nothing and send nothing.
    let scrapes = Metrics::get(&sampler.metrics().scrapes);
    for k in 9..=12 {
        let r = sampler.tick(Timestamp(at(k).0 - 3_600_000)).await;
        assert!(r.already_done && r.produced.is_empty(), "{r:?}");
    }
    assert_eq!(
        Metrics::get(&sampler.metrics().scrapes),
        scrapes,
        "a window was read again"
    );
    assert_eq!(Metrics::get(&sampler.metrics().clock_behind_ticks), 4);
    // Put right: reading resumes.
    for k in 13..=16 {
        tally(&sampler.tick(at(k)).await);
    }
    assert_eq!((read, failed), (6, 6), "every other read fails");
    assert_eq!(sampler.spool().unwrap().pending_counts(), (0, 0));
    let (rows, _) = cp
        .deployments(Timestamp(t0.0 - 3_600_000), Timestamp(t0.0 + 3_600_000))
        .await;
    assert_eq!(
        rows,
        vec![
            ("idle".to_string(), 7 * read, 7),
            ("vllm-agg-0-vllmdecodeworker".to_string(), read, 1)
        ],
        "each window read is stored once, nothing else"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_and_restart_every_window_arrives_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let mut cp = control_plane(dir.path(), 0).await;
    let (base, port) = (cp.base.clone(), cp.port);
    let key = cp.sampler_key().await;
    let exp = exporter(&fixture(H100)).await;
    let mut sampler = dcgm_sampler(exp.addr, &spool_dir, &base, &key);
    let t0 = base_time();
    let at = |k: i64| Timestamp(t0.0 + k * W + 500);

    // Windows 1-2 delivered.
    let mut first_batch = None;
    for k in 1..=2 {
        let r = sampler.tick(at(k)).await;
        assert_eq!(r.delivered.samples, 8);
        first_batch.get_or_insert(r.produced[0].clone());
    }
    // The control plane goes down: windows 3-5 go to the spool, nothing is lost, nothing invented.
    cp.stop().await;
    for k in 3..=5 {
        let r = sampler.tick(at(k)).await;
        assert_eq!(r.scrape_error, None);
        assert_eq!(r.produced[0].samples.len(), 8);
        assert_eq!(r.delivered.samples, 0);
        assert!(
            r.delivered.failure.is_some() || r.delivered.backing_off,
            "{r:?}"
        );
    }
    assert!(Metrics::get(&sampler.metrics().delivery_errors) >= 1);
    assert_eq!(sampler.spool().unwrap().pending_counts(), (3, 24));
    // Its metrics say so: the spool's depth, and when it last ticked.
    let m = sampler.metrics();
    assert_eq!(
        (
            Metrics::get(&m.spool_batches),
            Metrics::get(&m.spool_samples)
        ),
        (3, 24)
    );
    assert!(Metrics::get(&m.spool_bytes) > 0);
    assert_eq!(Metrics::get(&m.last_tick_ms), at(5).0 as u64);
    // The exporter fails too for one window: no sample is made for it (the control plane reports the gap).
    *exp.text.lock().unwrap() = None;
    let r = sampler.tick(at(6)).await;
    assert!(r.scrape_error.is_some() && r.produced.is_empty());
    *exp.text.lock().unwrap() = Some(fixture(H100));
    // The sampler restarts during the outage: a new process resumes the same spool.
    drop(sampler);
    let mut sampler = dcgm_sampler(exp.addr, &spool_dir, &base, &key);
    let r = sampler.tick(at(7)).await;
    assert_eq!(r.delivered.samples, 0);
    assert_eq!(sampler.spool().unwrap().pending_counts(), (4, 32));
    // Back up on the same address and database: the spool drains in order at the next tick.
    let mut cp = control_plane(dir.path(), port).await;
    let r = sampler.tick(at(8)).await;
    assert_eq!(
        (
            r.delivered.batches,
            r.delivered.samples,
            r.delivered.duplicates
        ),
        (5, 40, 0),
        "{r:?}"
    );
    assert_eq!(sampler.spool().unwrap().pending_counts(), (0, 0));
    let m = sampler.metrics();
    assert_eq!(
        (
            Metrics::get(&m.spool_batches),
            Metrics::get(&m.spool_samples),
            Metrics::get(&m.spool_bytes)
        ),
        (0, 0, 0)
    );

    let period = (Timestamp(t0.0 - 3_600_000), Timestamp(t0.0 + 3_600_000));
    let (rows, gaps) = cp.deployments(period.0, period.1).await;
    // Windows 1-5 and 7-8: 7 windows x 8 GPUs, each once; window 6 is a reported 15 s span (interpolated).
    assert_eq!(
        rows,
        vec![
            ("idle".to_string(), 49, 7),
            ("vllm-agg-0-vllmdecodeworker".to_string(), 7, 1)
        ]
    );
    assert_eq!(
        gaps,
        json!([]),
        "a 15 s hole is filled by interpolation, flagged estimated"
    );

    // A re-send is harmless: accepted, counted as duplicates, counted once in the allocation.
    let again = EnterpriseAi::new(&base, &key)
        .unwrap()
        .finops()
        .gpu_samples(&first_batch.unwrap().samples)
        .await
        .unwrap();
    assert_eq!((again.accepted, again.duplicates), (8, 8));
    let (rows_after, _) = cp.deployments(period.0, period.1).await;
    assert_eq!(rows_after, rows);
    cp.stop().await;
}

/// A spool bounded to 8 KiB (three windows of eight GPUs) and keeping its oldest (the default), reading a real
/// Prometheus while the control plane is down: once full it refuses the next windows and records none of them as
/// read (nothing deleted, nothing counted as lost: Prometheus has them); when the control plane is back the
/// backlog is delivered and the refused windows are read back from Prometheus. The control plane then holds
/// every window from the first to the last, eight samples each, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_keeps_its_oldest_windows_and_prometheus_backfills_the_refused_ones() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let mut cp = control_plane(dir.path(), 0).await;
    let (base, port) = (cp.base.clone(), cp.port);
    let key = cp.sampler_key().await;
    let exp = exporter(&fixture(H100)).await;
    let mut prom = start_prometheus(exp.addr);
    prom.wait_for_series("DCGM_FI_DEV_GPU_UTIL", 8).await;
    let source = PrometheusSource::new(
        &prom.base,
        Some("job=\"dcgm\""),
        Some("gpu-node-1".into()),
        Duration::from_secs(5),
    )
    .unwrap();
    let spool = Spool::open(&spool_dir, 8192).unwrap();
    let mut o = SamplerOptions::new(1000);
    o.scrape_attempts = 1;
    o.retry_base_ms = 200;
    o.retry_max_ms = 400;
    let metrics = Arc::new(Metrics::default());
    let mut sampler = Sampler::new(
        Box::new(source),
        Converter::new(Attribution::default(), None),
        Output::Deliver {
            spool,
            sink: SinkBox(Arc::new(EnterpriseAi::new(&base, &key).unwrap())),
        },
        o,
        metrics.clone(),
    )
    .unwrap();
    // Ticks one second apart, each a little after its window's end (Prometheus has scraped it by then).
    async fn tick_now(sampler: &mut Sampler) -> eai_sampler::sampler::TickReport {
        let next = Timestamp(wall_clock().floor_to(1000).0 + 1000);
        while wall_clock().0 < next.0 + 1500 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        sampler.tick(Timestamp(next.0 + 1500)).await
    }
    let first = tick_now(&mut sampler).await;
    assert_eq!(first.produced.len(), 1, "{first:?}");
    assert_eq!(first.delivered.samples, 8, "{first:?}");
    let first_end = first.window_end;

    cp.stop().await;
    let mut full_ticks = 0;
    for _ in 0..7 {
        let r = tick_now(&mut sampler).await;
        assert_eq!(r.scrape_error, None, "{r:?}");
        if r.spool_full {
            full_ticks += 1;
        }
        let spool = sampler.spool().unwrap();
        assert!(
            spool.bytes() <= 8192,
            "the bound holds: {} bytes",
            spool.bytes()
        );
    }
    assert!(
        full_ticks >= 3,
        "the spool never filled: {full_ticks} full ticks"
    );
    let held = sampler.spool().unwrap().pending_counts();
    assert!(held.0 >= 2, "the spool holds its first windows: {held:?}");
    assert_eq!(
        Metrics::get(&metrics.samples_dropped),
        0,
        "Prometheus keeps what was refused: nothing is lost"
    );

    // Back: the backlog goes, and the refused windows are read back from Prometheus until the sampler is
    // level with the clock.
    let mut cp = control_plane(dir.path(), port).await;
    let mut last = None;
    for _ in 0..20 {
        let r = tick_now(&mut sampler).await;
        let level = !r.spool_full
            && r.backfilled_windows == 0
            && sampler.spool().unwrap().pending_counts() == (0, 0);
        last = Some(r.window_end);
        if level {
            break;
        }
    }
    assert_eq!(sampler.spool().unwrap().pending_counts(), (0, 0));
    assert!(Metrics::get(&metrics.backfilled_windows) >= 3);
    let last = last.unwrap();
    let windows = ((last.0 - first_end.0) / 1000 + 1) as u64;
    let (rows, gaps) = cp
        .deployments(Timestamp(first_end.0 - 60_000), Timestamp(last.0 + 60_000))
        .await;
    let samples: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(
        samples,
        8 * windows,
        "every window from {first_end} to {last}, once: {rows:?}"
    );
    assert_eq!(gaps, json!([]));
    cp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_the_control_plane_refuses_goes_to_rejected_and_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let mut cp = control_plane(dir.path(), 0).await;
    let key = cp.sampler_key().await;
    // A batch spooled by a buggy earlier version: utilization 2 is out of range (422).
    let (_, mut bad) = convert_text(&fixture(H100), T_FIX, None);
    bad[0].utilization = "2".into();
    let mut spool = Spool::open(&spool_dir, DEFAULT_MAX_BYTES).unwrap();
    spool
        .append(&Batch::samples(T_FIX.to_string(), bad))
        .unwrap();
    drop(spool);

    let exp = exporter(&fixture(H100)).await;
    let mut sampler = dcgm_sampler(exp.addr, &spool_dir, &cp.base, &key);
    let r = sampler.tick(Timestamp(base_time().0 + W)).await;
    assert_eq!(
        (r.delivered.rejected_batches, r.delivered.rejected_samples),
        (1, 8),
        "{r:?}"
    );
    assert_eq!(r.delivered.samples, 8, "the good window still flows");
    let rejected: Vec<PathBuf> = std::fs::read_dir(spool_dir.join("rejected"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(rejected.len(), 1);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&rejected[0]).unwrap()).unwrap();
    assert!(doc["reason"].as_str().unwrap().contains("422"), "{doc}");
    assert_eq!(doc["batch"]["samples"][0]["utilization"], "2");
    let r = sampler.tick(Timestamp(base_time().0 + 2 * W)).await;
    assert_eq!(
        (r.delivered.rejected_batches, r.delivered.samples),
        (0, 8),
        "never retried"
    );
    assert_eq!(Metrics::get(&sampler.metrics().samples_rejected), 8);
    cp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_exporter_is_counted_and_invents_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dead: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut sampler = dcgm_sampler(
        dead,
        &dir.path().join("spool"),
        "http://127.0.0.1:9",
        "eai_live_unused",
    );
    for k in 1..=3 {
        let r = sampler.tick(Timestamp(base_time().0 + k * W)).await;
        assert!(
            r.scrape_error
                .as_deref()
                .is_some_and(|e| e.contains("dcgm")),
            "{r:?}"
        );
        assert!(r.produced.is_empty());
    }
    let m = sampler.metrics();
    assert_eq!(
        (Metrics::get(&m.scrapes), Metrics::get(&m.scrape_errors)),
        (3, 3)
    );
    assert_eq!(Metrics::get(&m.samples_spooled), 0);
    assert_eq!(sampler.spool().unwrap().pending_counts(), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_keeps_every_window_in_the_spool_until_it_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let mut cp = control_plane(dir.path(), 0).await;
    let exp = exporter(&fixture(H100)).await;
    let wrong = "eai_live_0000000000000000000000000000000000000000000000000000000000wrong";
    let mut sampler = dcgm_sampler(exp.addr, &spool_dir, &cp.base, wrong);
    let t0 = base_time();
    let r = sampler.tick(Timestamp(t0.0 + W)).await;
    assert!(r.delivered.credentials_refused, "{r:?}");
    assert_eq!(
        (r.delivered.rejected_batches, r.delivered.samples),
        (0, 0),
        "no batch is blamed for a bad key"
    );
    drop(sampler);
    // The key is fixed (a restart with the right one): the spooled window goes out with the next.
    let key = cp.sampler_key().await;
    let mut sampler = dcgm_sampler(exp.addr, &spool_dir, &cp.base, &key);
    let r = sampler.tick(Timestamp(t0.0 + 2 * W)).await;
    assert_eq!((r.delivered.batches, r.delivered.samples), (2, 16), "{r:?}");
    cp.stop().await;
}

/// TLS end to end: the control plane serves HTTPS with a certificate of a private CA; the sampler, given that CA
/// with `--ca-file` (as in production), delivers every window; without it, the certificate is refused and the
/// windows wait in the spool, never lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_delivers_to_an_https_control_plane_with_a_private_ca() {
    use clap::Parser;
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: eai_sampler::cli::SamplerArgs,
    }

    let dir = tempfile::tempdir().unwrap();
    let ca = eai_store::testing::TestCa::new(&["localhost", "127.0.0.1"]).unwrap();
    let files = ca.write(dir.path()).unwrap();
    let mut cp = control_plane_with(
        dir.path(),
        0,
        Some(eai_api::config::Tls {
            cert: files.cert.clone(),
            key: files.key.clone(),
        }),
    )
    .await;
    let admin = EnterpriseAi::with_ca_file(&cp.base, ADMIN_KEY, Some(&files.ca)).unwrap();
    let key = admin
        .auth()
        .create_api_key("sampler", None, Some("gpu-node-1"))
        .await
        .unwrap()
        .key;
    let exp = exporter(&fixture(H100)).await;
    let dcgm = format!("http://{}/metrics", exp.addr);
    let args = |spool: &str, ca: Option<&Path>| {
        let mut argv = vec![
            "sampler".to_string(),
            "--dcgm-url".into(),
            dcgm.clone(),
            "--control-plane".into(),
            cp.base.clone(),
            "--spool-dir".into(),
            dir.path().join(spool).display().to_string(),
        ];
        if let Some(ca) = ca {
            argv.push("--ca-file".into());
            argv.push(ca.display().to_string());
        }
        Cli::try_parse_from(argv).unwrap().args
    };
    let t0 = base_time();

    // Without the private CA: the certificate is refused, the window stays in the spool.
    let mut untrusting = eai_sampler::cli::build(
        &args("spool-untrusting", None),
        Some(key.clone()),
        Arc::new(Metrics::default()),
    )
    .unwrap();
    let r = untrusting.tick(Timestamp(t0.0 + W + 1000)).await;
    assert_eq!(r.delivered.samples, 0, "{r:?}");
    assert_eq!(
        Spool::open(&dir.path().join("spool-untrusting"), DEFAULT_MAX_BYTES)
            .unwrap()
            .pending_counts(),
        (1, 8)
    );

    // With it: delivered.
    let mut sampler = eai_sampler::cli::build(
        &args("spool", Some(&files.ca)),
        Some(key),
        Arc::new(Metrics::default()),
    )
    .unwrap();
    for k in 1..=2 {
        let r = sampler.tick(Timestamp(t0.0 + k * W + 1000)).await;
        assert_eq!((r.delivered.batches, r.delivered.samples), (1, 8), "{r:?}");
    }
    let v = admin
        .finops()
        .gpu_allocation(
            &Timestamp(t0.0 - 3_600_000).to_string(),
            &Timestamp(t0.0 + 3_600_000).to_string(),
        )
        .await
        .unwrap();
    let samples: u64 = v["deployments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(samples, 16, "{v}");
    cp.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// vLLM's token counters -> usage events of source "vllm"

const VLLM: &str = "vllm_0.19.1_llama31_8b_a100.prom";
const VLLM_LEGACY: &str = "vllm_legacy_v0_opt125m_datadog_subset.prom";
const LLAMA: &str = "meta-llama/Llama-3.1-8B-Instruct";

fn dec(s: &str) -> rust_decimal::Decimal {
    s.parse().unwrap()
}

fn units(pairs: &[(&'static str, &str)]) -> vllm::Counters {
    pairs.iter().map(|(u, v)| (*u, dec(v))).collect()
}

#[test]
fn vllm_fixtures_give_the_expected_counters() {
    // Current V1 exposition: one engine, `_created` families beside every counter, five finished reasons.
    let p = vllm::from_text(&fixture(VLLM));
    assert_eq!((p.malformed, p.bad_values), (0, 0));
    assert_eq!(p.models.keys().collect::<Vec<_>>(), vec![LLAMA]);
    let want = units(&[
        (vllm::TOKENS_IN, "115898"),
        (vllm::TOKENS_OUT, "18488"),
        (vllm::CACHED_TOKENS_IN, "101440"),
        (vllm::REQUESTS, "917"),
    ]);
    // No prefill/decode time: the capture's request_prefill/decode_time families were trimmed (fixtures/README).
    assert_eq!(p.models[LLAMA], want);
    // Prompt tokens include the cached ones (fixtures/README): local compute 14458 + cached 101440.
    assert_eq!(
        dec("14458") + want[vllm::CACHED_TOKENS_IN],
        want[vllm::TOKENS_IN]
    );

    // Legacy V0: `model_name` only, no cache, timing or request counters: absent, never zero.
    let p = vllm::from_text(&fixture(VLLM_LEGACY));
    assert_eq!((p.malformed, p.bad_values), (0, 0));
    assert_eq!(
        p.models,
        [(
            "facebook/opt-125m".to_string(),
            units(&[(vllm::TOKENS_IN, "5"), (vllm::TOKENS_OUT, "7")])
        )]
        .into_iter()
        .collect()
    );

    // Two engines of a data-parallel server are summed; Ray Serve's names are read the same.
    let two = fixture(VLLM)
        .lines()
        .filter(|l| l.starts_with("vllm:generation_tokens_total{"))
        .flat_map(|l| [l.to_string(), l.replace("engine=\"0\"", "engine=\"1\"")])
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        vllm::from_text(&two).models[LLAMA],
        units(&[(vllm::TOKENS_OUT, "36976")])
    );
    let ray = vllm::from_text(&fixture(VLLM).replace("vllm:", "ray_vllm:"));
    assert_eq!(ray.models[LLAMA], want);
}

/// The fixture with some counters set to other values (whole lines replaced, so a typo fails the test).
fn vllm_text(tokens_in: &str, tokens_out: &str, requests_length: &str) -> String {
    let text = fixture(VLLM);
    let label = format!("{{engine=\"0\",model_name=\"{LLAMA}\"}}");
    let mut out = text.clone();
    for (name, old, new) in [
        ("vllm:prompt_tokens_total", "115898.0", tokens_in),
        ("vllm:generation_tokens_total", "18488.0", tokens_out),
    ] {
        let line = format!("{name}{label} {old}");
        assert!(text.contains(&line), "{line}");
        out = out.replace(&line, &format!("{name}{label} {new}"));
    }
    let line = format!(
        "vllm:request_success_total{{engine=\"0\",finished_reason=\"length\",model_name=\"{LLAMA}\"}} 917.0"
    );
    assert!(text.contains(&line));
    out.replace(&line, &line.replace("917.0", requests_length))
}

/// A stand-in control plane that records what it is sent (the real one does not take tenant-less vLLM events
/// from a sampler key yet); `down` makes it answer 503.
#[derive(Clone, Default)]
struct Receiver {
    events: Arc<Mutex<Vec<Value>>>,
    event_posts: Arc<Mutex<u64>>,
    samples: Arc<Mutex<u64>>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

async fn receiver() -> (String, Receiver) {
    use axum::http::StatusCode;
    use axum::routing::post;
    use std::sync::atomic::Ordering;
    let r = Receiver::default();
    let unavailable = || {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"error": {"code": "unavailable", "message": "down"}})),
        )
    };
    let (r1, r2) = (r.clone(), r.clone());
    let app = axum::Router::new()
        .route(
            "/v1/usage/events",
            post(move |axum::Json(body): axum::Json<Value>| {
                let r = r1.clone();
                async move {
                    if r.down.load(Ordering::SeqCst) {
                        return unavailable();
                    }
                    let events = body["events"].as_array().unwrap().clone();
                    let n = events.len();
                    *r.event_posts.lock().unwrap() += 1;
                    r.events.lock().unwrap().extend(events);
                    (StatusCode::OK, axum::Json(json!({ "accepted": n })))
                }
            }),
        )
        .route(
            "/v1/finops/gpu/samples",
            post(move |axum::Json(body): axum::Json<Value>| {
                let r = r2.clone();
                async move {
                    if r.down.load(Ordering::SeqCst) {
                        return unavailable();
                    }
                    let n = body["samples"].as_array().unwrap().len();
                    *r.samples.lock().unwrap() += n as u64;
                    (
                        StatusCode::OK,
                        axum::Json(json!({ "accepted": n, "duplicates": 0 })),
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), r)
}

impl Receiver {
    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }
    fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A sampler reading the H100 capture (file://) for its GPUs and `pod` for vLLM, delivering to `base`.
fn vllm_sampler(pod: SocketAddr, spool_dir: &Path, base: &str) -> Sampler {
    let gpus = DcgmSource::new(
        &format!("file://{}", fixtures_dir().join(H100).display()),
        Duration::from_secs(2),
    )
    .unwrap();
    let spool = Spool::open(spool_dir, DEFAULT_MAX_BYTES).unwrap();
    let sink = SinkBox(std::sync::Arc::new(
        EnterpriseAi::new(base, "eai_live_sampler").unwrap(),
    ));
    let reader = VllmReader::new(
        vec![vllm::Target::new("vllm-llama", &format!("http://{pod}/metrics")).unwrap()],
        None,
        Attribution::default(),
        Duration::from_secs(2),
    )
    .unwrap();
    Sampler::new(
        Box::new(gpus),
        Converter::new(Attribution::default(), None),
        Output::Deliver { spool, sink },
        opts(),
        Arc::new(Metrics::default()),
    )
    .unwrap()
    .with_vllm(reader)
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_counters_become_events_counted_once_through_an_outage_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let (base, cp) = receiver().await;
    let pod = exporter(&fixture(VLLM)).await;
    let instance = format!("http://{}/metrics", pod.addr);
    let key = vllm::SeriesKey {
        deployment_id: "vllm-llama".into(),
        instance: instance.clone(),
        model: LLAMA.into(),
    };
    let mut sampler = vllm_sampler(pod.addr, &spool_dir, &base);
    let t0 = base_time();
    let at = |k: i64| Timestamp(t0.0 + k * W + 700);
    let end = |k: i64| Timestamp(t0.0 + k * W);
    let serve = |text: String| *pod.text.lock().unwrap() = Some(text);

    // 1: the first read only sets the baseline.
    let r = sampler.tick(at(1)).await;
    assert_eq!(r.vllm_errors, Vec::<String>::new());
    assert!(r.vllm_events.is_empty());
    assert_eq!(r.delivered.samples, 8, "the GPUs flow as before");
    // 2: nothing happened: no event.
    let r = sampler.tick(at(2)).await;
    assert!(r.vllm_events.is_empty());
    // 3: 1000 prompt tokens, 120 generated, 3 requests: one event, sent.
    serve(vllm_text("116898.0", "18608.0", "920.0"));
    let r = sampler.tick(at(3)).await;
    assert_eq!(r.delivered.events, 1, "{r:?}");
    let sent = cp.events();
    assert_eq!(
        sent,
        vec![json!({
            "event_id": vllm::event_id(&key, end(2), end(3)),
            "schema_version": "1.0",
            "tenant_id": null,
            "usage_type": "llm_tokens",
            "source": "vllm",
            "occurred_at": end(3).to_string(),
            "deployment_id": "vllm-llama",
            "model": {"provider": "vllm", "name": LLAMA},
            "units": {"tokens_in": "1000", "tokens_out": "120", "cached_tokens_in": "0", "requests": "3"}
        })]
    );

    // 4: the control plane is down: the event waits in the spool.
    cp.set_down(true);
    serve(vllm_text("117000.0", "18700.0", "921.0"));
    let r = sampler.tick(at(4)).await;
    assert_eq!((r.vllm_events.len(), r.delivered.events), (1, 0));
    assert_eq!(cp.events().len(), 1);
    // 5: vLLM cannot be read: no event, the baseline stays (the next read covers the interval).
    *pod.text.lock().unwrap() = None;
    let r = sampler.tick(at(5)).await;
    assert_eq!(r.vllm_errors.len(), 1, "{r:?}");
    assert!(r.vllm_events.is_empty());
    // The sampler restarts: its baselines come back from the spool folder.
    drop(sampler);
    serve(vllm_text("117050.0", "18710.0", "921.0"));
    let mut sampler = vllm_sampler(pod.addr, &spool_dir, &base);
    let r = sampler.tick(at(6)).await;
    assert_eq!(r.vllm_events.len(), 1, "not a new baseline after a restart");
    assert_eq!(
        r.vllm_events[0].event_id,
        vllm::event_id(&key, end(4), end(6)),
        "from the last read before the restart, over the failed one"
    );
    // 7: vLLM restarted (its counters went down): the delta is the new value.
    serve(vllm_text("40.0", "9.0", "1.0"));
    let r = sampler.tick(at(7)).await;
    assert_eq!(Metrics::get(&sampler.metrics().vllm_counter_resets), 1);
    assert_eq!(r.vllm_events[0].units["tokens_in"], "40");
    // 8: back up: everything spooled arrives, in order.
    cp.set_down(false);
    let r = sampler.tick(at(8)).await;
    assert_eq!(r.delivered.events, 3, "{r:?}");
    let sent = cp.events();
    let ids: Vec<&str> = sent
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            vllm::event_id(&key, end(2), end(3)),
            vllm::event_id(&key, end(3), end(4)),
            vllm::event_id(&key, end(4), end(6)),
            vllm::event_id(&key, end(6), end(7)),
        ]
    );
    let total = |unit: &str| -> rust_decimal::Decimal {
        sent.iter()
            .map(|e| dec(e["units"][unit].as_str().unwrap()))
            .sum()
    };
    // 115898 -> 117050 before vLLM's restart, then 40 after it: every token once.
    assert_eq!(total("tokens_in"), dec("1152") + dec("40"));
    assert_eq!(total("tokens_out"), dec("222") + dec("9"));
    assert_eq!(total("requests"), dec("4") + dec("1"));
    assert!(sent
        .iter()
        .all(|e| e["tenant_id"].is_null() && e["source"] == "vllm"));
    let m = sampler.metrics();
    assert_eq!(Metrics::get(&m.vllm_events_sent), 3);
    assert_eq!(Metrics::get(&m.vllm_reads), 3);
    assert_eq!(sampler.spool().unwrap().pending_counts(), (0, 0));
    let text = m.render();
    assert!(
        text.contains("eai_sampler_vllm_events_sent_total 3"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_events_saved_but_not_spooled_before_a_crash_are_spooled_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let spool_dir = dir.path().join("spool");
    let (base, cp) = receiver().await;
    let pod = exporter(&fixture(VLLM)).await;
    let key = vllm::SeriesKey {
        deployment_id: "vllm-llama".into(),
        instance: format!("http://{}/metrics", pod.addr),
        model: LLAMA.into(),
    };
    let t0 = base_time();
    // What a crash just after the state was saved leaves: the new baseline, and its event not in the spool.
    let mut tracker = vllm::Tracker::default();
    let fixture_counters = vllm::from_text(&fixture(VLLM)).models[LLAMA].clone();
    let before: vllm::Counters = fixture_counters
        .iter()
        .map(|(u, v)| (*u, *v - dec("10")))
        .collect();
    tracker.observe(Timestamp(t0.0), &[(key.clone(), before)]);
    let made = tracker.observe(Timestamp(t0.0 + W), &[(key.clone(), fixture_counters)]);
    assert_eq!(made.events.len(), 1);
    let spool = Spool::open(&spool_dir, DEFAULT_MAX_BYTES).unwrap();
    spool
        .set_vllm_state(&tracker.to_state(&made.events))
        .unwrap();
    drop(spool);

    let mut sampler = vllm_sampler(pod.addr, &spool_dir, &base);
    assert_eq!(
        sampler.spool().unwrap().pending_counts(),
        (1, 0),
        "spooled at start"
    );
    let r = sampler.tick(Timestamp(t0.0 + 2 * W + 10)).await;
    assert!(r.vllm_events.is_empty(), "the fixture has not moved since");
    assert_eq!(
        cp.events(),
        vec![serde_json::to_value(&made.events[0]).unwrap()]
    );
    assert_eq!(*cp.event_posts.lock().unwrap(), 1);
    let state = Spool::open(&spool_dir, DEFAULT_MAX_BYTES)
        .unwrap()
        .vllm_state()
        .unwrap()
        .unwrap();
    assert!(state.unspooled.is_empty());
    assert_eq!(state.series.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_pods_are_discovered_through_a_real_prometheus() {
    let pod_name = "vllm-llama-7d9f8b6c5d-x2kqp";
    let pod = exporter(&fixture(VLLM)).await;
    let mut prom = start_prometheus_job(pod.addr, "vllm", pod_name, "ai", "vllm");
    prom.wait_for_series("vllm:prompt_tokens_total", 1).await;
    let reader = VllmReader::new(
        Vec::new(),
        Some((prom.base.as_str(), Some("job=\"vllm\""))),
        Attribution::default(),
        Duration::from_secs(5),
    )
    .unwrap();
    let read = reader.read(wall_clock()).await;
    assert_eq!(read.errors, Vec::<String>::new());
    assert_eq!(read.reads, 1);
    let key = vllm::SeriesKey {
        deployment_id: "vllm-llama".into(),
        instance: format!("ai/{pod_name}"),
        model: LLAMA.into(),
    };
    assert_eq!(
        read.series,
        vec![(key, vllm::from_text(&fixture(VLLM)).models[LLAMA].clone())],
        "the same counters as reading the pod, attributed by its namespace and pod"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_control_plane_takes_a_samplers_vllm_events_and_counts_them_once() {
    // The sampler's own key posts its tenant-less events (units as decimal strings, model, the ms-precision
    // time, the v5 id) to the real parser and store; a re-send counts once, and the counters reach the cost per
    // token of the deployment.
    let dir = tempfile::tempdir().unwrap();
    let mut cp = control_plane(dir.path(), 0).await;
    let sampler = EnterpriseAi::new(&cp.base, &cp.sampler_key().await).unwrap();
    let key = vllm::SeriesKey {
        deployment_id: "vllm-llama".into(),
        instance: "ai/vllm-llama-0".into(),
        model: LLAMA.into(),
    };
    let t = base_time();
    let c = units(&[
        (vllm::TOKENS_IN, "1000"),
        (vllm::TOKENS_OUT, "120"),
        (vllm::CACHED_TOKENS_IN, "800"),
        (vllm::PREFILL_SECONDS, "0.123457"),
        (vllm::DECODE_SECONDS, "2.5"),
        (vllm::REQUESTS, "3"),
    ]);
    let e = vllm::event(&key, t, Timestamp(t.0 + 15_250), &c);
    let v = serde_json::to_value(&e).unwrap();
    assert!(v["tenant_id"].is_null(), "{v}");
    let answer = sampler
        .usage()
        .events(&[v.clone(), v.clone()])
        .await
        .unwrap();
    assert_eq!(answer["accepted"], 2, "{answer}");
    let answer = sampler.usage().events(&[v]).await.unwrap();
    assert_eq!(answer["accepted"], 1, "{answer}");
    // Stored once, as the platform's row (no tenant's): read back from the store.
    let store = eai_store::sqlite::SqliteStore::open(&dir.path().join("eai-gpu.db")).unwrap();
    let stored = eai_store::UsageStore::usage_events(
        &store,
        eai_store::Scope::Platform,
        t,
        Timestamp(t.0 + 60_000),
    )
    .await
    .unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(stored[0].tenant_id.is_platform());
    assert_eq!(stored[0].source, "vllm");
    assert_eq!(
        stored[0].unit("prefill_seconds"),
        Some("0.123457".parse().unwrap())
    );
    cp.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// The exposition parsers on mangled captures: never a panic, never a sample out of a broken line.

/// A real capture, mangled: cut short, a span overwritten with characters the format gives meaning to, lines
/// repeated.
fn mangled_capture() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let captures = [
        H100,
        "dcgm_a100_mig_nvidia_docs.prom",
        "dcgm_t4_docker_datadog.prom",
        "vllm_0.19.1_llama31_8b_a100.prom",
        "vllm_legacy_v0_opt125m_datadog_subset.prom",
    ];
    let noise = prop::collection::vec(
        prop::sample::select(vec![
            "{",
            "}",
            "\"",
            "\\",
            "=",
            ",",
            " ",
            "\n",
            "#",
            "# TYPE ",
            "NaN",
            "+Inf",
            "-Inf",
            "1e308",
            "-1",
            "9999999999999999999999",
            "0x1F",
            "\u{0}",
            "é",
            "🦀",
            "DCGM_FI_DEV_GPU_UTIL",
            "gpu=\"0\"",
            "UUID=\"GPU-x\"",
            "GPU_I_PROFILE=\"1g.10gb\"",
            "vllm:prompt_tokens_total",
        ]),
        0..12,
    );
    (
        prop::sample::select(captures.to_vec()),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        noise,
        0usize..4,
    )
        .prop_map(|(name, cut, at, noise, repeat)| {
            let text = fixture(name);
            let floor = |i: usize| {
                (0..=i.min(text.len()))
                    .rev()
                    .find(|j| text.is_char_boundary(*j))
                    .unwrap_or(0)
            };
            let cut = floor(cut.index(text.len() + 1));
            let at = floor(at.index(cut + 1));
            let mut s = text[..at].to_string();
            s.push_str(&noise.concat());
            s.push_str(&text[at..cut]);
            let lines: Vec<&str> = text.lines().take(repeat * 7).collect();
            s.push_str(&lines.join("\n"));
            s
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 1000, ..Default::default() })]

    /// DCGM, the Prometheus exposition and vLLM's counters read from mangled captures, then converted: no panic,
    /// and every sample made carries a window, a GPU and readings the control plane accepts (parsed by its own
    /// parser).
    #[test]
    fn mangled_captures_never_panic_the_parsers_and_make_only_valid_samples(text in mangled_capture()) {
        let end = T_FIX;
        let _ = eai_sampler::exposition::parse(&text, |_| {});
        let _ = eai_sampler::vllm::from_text(&text);
        let readings = dcgm::from_text(&text, end);
        let mut c = Converter::new(Attribution::default(), Some("node-x".to_string()));
        let out = c.convert(&readings, Window { end, ms: W });
        let now = eai_engine::Timestamp(end.0 + 60_000);
        for s in &out.samples {
            let loose: eai_engine::wire::Loose = serde_json::from_value(serde_json::to_value(s).unwrap()).unwrap();
            let parsed = eai_engine::wire::parse_sample(&loose, now);
            proptest::prop_assert!(parsed.is_ok(), "{s:?}: {parsed:?}");
        }
    }
}
