#![allow(clippy::unwrap_used)]
//! The sampler against the real formats and real servers: every DCGM and Prometheus fixture of the repository's
//! `fixtures/` (real exporter output) to exact samples; a real Prometheus (Debian's `prometheus`) scraping a local
//! exporter that serves the H100 fixture, read back by the `prometheus` source (instant and range queries); and the sampler
//! end to end into an in-process control plane, through an outage and a restart, every window arriving once.

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
use eai_sampler::source::Source;
use eai_sampler::spool::{Batch, Spool, DEFAULT_MAX_BYTES};
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
    use axum::routing::get;
    let shared = Arc::new(Mutex::new(Some(text.to_string())));
    let s = shared.clone();
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let s = s.clone();
            async move {
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
        database_url: Some(format!("sqlite://{}", db.display())),
        bootstrap_admin_key: Some(ADMIN_KEY.to_string()),
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
    let sink = SinkBox(Box::new(EnterpriseAi::new(base, key).unwrap()));
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
                "timestamp": "2026-03-10T03:41:30Z", "gpu_fraction": "0.142857"
            },
            {
                "node": "ub20-a100-k8s", "gpu_uuid": format!("{uuid}/mig-free"), "model": "unknown",
                "namespace": "-", "pod": "-", "deployment_id": "idle", "window_seconds": "15",
                "utilization": "0", "memory_used_gb": "4.0555245536", "power_w": "351.164571",
                "timestamp": "2026-03-10T03:41:30Z", "gpu_fraction": "0.857143"
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
             scrape_configs:\n  - job_name: dcgm\n    scrape_interval: 1s\n    static_configs:\n\
             \x20     - targets: ['{target}']\n        labels:\n          pod: nvidia-dcgm-exporter-abcde\n\
             \x20         namespace: gpu-operator\n          container: nvidia-dcgm-exporter\n"
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
        .append(&Batch {
            window_end: T_FIX.to_string(),
            samples: bad,
        })
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
