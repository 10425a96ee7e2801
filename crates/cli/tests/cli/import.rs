//! `eai-gpu import` of Prometheus history, killed and resumed, as a live sampler would have sent it.

use super::*;

/// `eai-gpu import` on a real Prometheus: two days of generated DCGM series for three GPUs (one busy whose pod
/// changes half way and that misses an hour of scrapes, one idle, one busy in another namespace), written as
/// OpenMetrics, turned into TSDB blocks by Debian's `promtool tsdb create-blocks-from openmetrics`, served by
/// `prometheus`; the history ends three days ago, past the control plane's raw retention (one day). The import
/// reads sample for sample what a live sampler reading the exporter at each window's end would have sent
/// (`--dry-run` compared with the sampler's own conversion of each window's exposition); imported into a
/// `serve`, the allocation equals that of the live samples posted to another; a second run adds nothing; a run
/// killed -9 half way carries on from its checkpoint to the same allocation; the missing hour is reported as a
/// gap, by the import and by the control plane.
#[test]
fn import_reads_prometheus_history_as_a_live_sampler_would() {
    use eai_engine::Timestamp;
    use eai_sampler::convert::{Converter, Window};
    const W: i64 = 60_000;
    const HOUR: i64 = 3_600_000;
    let dir = temp_dir("import");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let end = (now - 3 * 86_400_000).div_euclid(HOUR) * HOUR;
    let start = end - 2 * 86_400_000;
    let hole = (start + 10 * HOUR, start + 11 * HOUR);
    let gpus = [
        (
            "GPU-0a000000-0000-4000-8000-000000000001",
            Some("acme-prod"),
        ),
        ("GPU-0a000000-0000-4000-8000-000000000002", None),
        (
            "GPU-0a000000-0000-4000-8000-000000000003",
            Some("beta-train"),
        ),
    ];
    // One scrape a minute, a second before each window's end; what each GPU reports at scrape `k`.
    let scrapes: Vec<i64> = (1..=(end - start) / W)
        .map(|k| start + k * W - 1_000)
        .collect();
    let labels = |g: usize, t: i64| -> String {
        let (uuid, ns) = gpus[g];
        let mut l = format!(
            "gpu=\"{g}\",UUID=\"{uuid}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\""
        );
        if let Some(ns) = ns {
            let pod = if g == 0 && t >= start + 86_400_000 {
                "vllm-llama-7d9f8-fghij"
            } else if g == 0 {
                "vllm-llama-7d9f8-abcde"
            } else {
                "trainer-0"
            };
            l.push_str(&format!(
                ",namespace=\"{ns}\",pod=\"{pod}\",container=\"main\""
            ));
        }
        l
    };
    let present = |g: usize, t: i64| !(g == 0 && hole.0 <= t && t < hole.1);
    let value = |family: &str, g: usize, k: i64| -> String {
        let power = 100 + (k * 7 + g as i64 * 13) % 250;
        match family {
            "DCGM_FI_DEV_FB_USED" => format!("{}", 1_000 + (k * 31 + g as i64) % 70_000),
            "DCGM_FI_DEV_GPU_UTIL" if g == 1 => "0".to_string(),
            "DCGM_FI_DEV_GPU_UTIL" => format!("{}", (k * 3 + g as i64) % 101),
            "DCGM_FI_DEV_POWER_USAGE" => format!("{power}.5"),
            // mJ since boot: a minute at each scrape's power.
            _ => format!("{}", 1_000_000 + k * (k + 1) / 2 * 60_000 + g as i64),
        }
    };
    let families = [
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ];
    // The history, as OpenMetrics (each series in time order, integer seconds), and the blocks.
    let mut om = String::new();
    for f in families {
        om.push_str(&format!("# TYPE {f} gauge\n"));
        for g in 0..gpus.len() {
            for (k, &t) in scrapes.iter().enumerate() {
                if present(g, t) {
                    om.push_str(&format!(
                        "{f}{{{}}} {} {}\n",
                        labels(g, t),
                        value(f, g, k as i64),
                        t / 1000
                    ));
                }
            }
        }
    }
    // vLLM's counters of GPU 0's pods (the sampler's --vllm-discover series): tokens since each pod started.
    let vllm_at = |k: i64, t: i64| -> (String, [(&'static str, i64); 2]) {
        let pod_start = if t >= start + 86_400_000 {
            86_400_000 / W
        } else {
            0
        };
        let pod = labels(0, t);
        let pod = pod
            .split("pod=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        let n = k - pod_start;
        (
            pod,
            [
                ("vllm:prompt_tokens_total", 1_000 * n),
                ("vllm:generation_tokens_total", 250 * n + n % 7),
            ],
        )
    };
    for name in ["vllm:generation_tokens_total", "vllm:prompt_tokens_total"] {
        for (k, &t) in scrapes.iter().enumerate() {
            let (pod, values) = vllm_at(k as i64, t);
            let v = values.iter().find(|(n, _)| *n == name).unwrap().1;
            om.push_str(&format!(
                "{name}{{namespace=\"acme-prod\",pod=\"{pod}\",model_name=\"llama-70b\",engine=\"0\"}} {v} {}\n",
                t / 1000
            ));
        }
    }
    om.push_str("# EOF\n");
    std::fs::write(dir.join("history.om"), om).unwrap();
    let data = dir.join("tsdb");
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(dir.join("history.om"))
        .arg(&data)
        .output()
        .expect("promtool is missing: the import test needs Debian's `prometheus` package (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  scrape_interval: 15s\n",
    )
    .unwrap();
    let prom_port = free_port();
    let _prometheus = Server(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .args(["--storage.tsdb.retention.time=10y", "--log.level=warn"])
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let prom = format!("http://127.0.0.1:{prom_port}");
    let http = reqwest::blocking::Client::new();
    let t0 = Instant::now();
    loop {
        let n = http
            .get(format!("{prom}/api/v1/query"))
            .query(&[
                ("query", "count(DCGM_FI_DEV_POWER_USAGE)".to_string()),
                ("time", format!("{}", (start + HOUR) / 1000)),
            ])
            .send()
            .ok()
            .and_then(|r| r.json::<serde_json::Value>().ok())
            .and_then(|v| {
                v["data"]["result"][0]["value"][1]
                    .as_str()
                    .map(str::to_string)
            });
        if n.as_deref() == Some("3") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "prometheus did not serve the history: {n:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // What a live sampler would have sent: each window's exposition (the scrape a second before its end),
    // through the sampler's own parser and converter.
    let mut converter = Converter::new(eai_sampler::attribution::Attribution::default(), None);
    let mut live: Vec<eai_client::GpuSample> = Vec::new();
    let mut tracker = eai_sampler::vllm::Tracker::default();
    let mut live_events: Vec<eai_sampler::vllm::UsageEvent> = Vec::new();
    for (k, &t) in scrapes.iter().enumerate() {
        let mut text = String::new();
        for f in families {
            for g in 0..gpus.len() {
                if present(g, t) {
                    text.push_str(&format!(
                        "{f}{{{}}} {}\n",
                        labels(g, t),
                        value(f, g, k as i64)
                    ));
                }
            }
        }
        let e = Timestamp(t + 1_000);
        let readings = eai_sampler::dcgm::from_text(&text, e);
        live.extend(
            converter
                .convert(&readings, Window { end: e, ms: W })
                .samples,
        );
        // The discovery query's answer at the window's end, through the sampler's own reading of it.
        let (pod, values) = vllm_at(k as i64, t);
        let result: Vec<serde_json::Value> = values
            .iter()
            .map(|(name, v)| {
                serde_json::json!({ "metric": { "__name__": name, "namespace": "acme-prod", "pod": pod,
                    "model_name": "llama-70b" }, "value": [e.0 / 1000, v.to_string()] })
            })
            .collect();
        let body = serde_json::json!({ "status": "success",
            "data": { "resultType": "vector", "result": result } });
        let (series, _) = eai_sampler::source::vllm::series_from_query(
            &body.to_string(),
            &eai_sampler::attribution::Attribution::default(),
        )
        .unwrap();
        live_events.extend(tracker.observe(e, &series).events);
    }
    let key = "eai_live_importtestadminkey000000000000000";
    let rfc = |ms: i64| Timestamp(ms).to_string();
    let import = |extra: &[&str]| {
        let mut c = bin();
        c.args([
            "import",
            "--prometheus-url",
            &prom,
            "--from",
            &rfc(start),
            "--to",
            &rfc(end),
        ])
        .args(["--interval", "1m", "--vllm"])
        .args(extra)
        .env("RUST_LOG", "warn");
        c
    };

    // 1. Sample for sample.
    let out = import(&["--dry-run"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |key: &str| -> Vec<serde_json::Value> {
        printed
            .iter()
            .filter_map(|v| v[key].as_array())
            .flatten()
            .cloned()
            .collect()
    };
    let mut got = of("samples");
    let mut got_events = of("events");
    let mut want_events: Vec<serde_json::Value> = live_events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let by_id = |v: &serde_json::Value| v["event_id"].to_string();
    got_events.sort_by_key(by_id);
    want_events.sort_by_key(by_id);
    assert!(want_events.len() > 2_000, "{} events", want_events.len());
    assert!(
        got_events == want_events,
        "vLLM events: {} read, {} live",
        got_events.len(),
        want_events.len()
    );
    let mut want: Vec<serde_json::Value> = live
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    let order = |v: &serde_json::Value| (v["timestamp"].to_string(), v["gpu_uuid"].to_string());
    got.sort_by_key(order);
    want.sort_by_key(order);
    assert_eq!(got.len(), want.len(), "samples read");
    assert!(
        got == want,
        "the first difference: {:?}",
        got.iter().zip(&want).find(|(a, b)| a != b)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scrape interval 60 s"), "{stderr}");
    assert!(
        stderr.contains("gaps: 1 spans, 60 GPU-windows missing"),
        "{stderr}"
    );

    // 2. The control planes: the live samples posted to one, the history imported into another.
    let serve = |name: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let port = free_port();
        let mut cmd = serve_cmd(&d, port, key, None);
        let s = Server(
            cmd.env("EAI_RAW_RETENTION_DAYS", "1")
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(d.join("serve.log")).unwrap())
                .spawn()
                .unwrap(),
        );
        let base = format!("http://127.0.0.1:{port}");
        wait_healthy(&base, Duration::from_secs(30));
        post_policy(&http, &base, key);
        let created: serde_json::Value = http
            .post(format!("{base}/v1/auth/api-keys"))
            .bearer_auth(key)
            .json(&serde_json::json!({ "role": "sampler", "name": "import" }))
            .send()
            .unwrap()
            .json()
            .unwrap();
        (s, base, created["key"].as_str().unwrap().to_string())
    };
    let allocation = |base: &str| -> serde_json::Value {
        let mut v: serde_json::Value = http
            .get(format!("{base}/v1/finops/gpu/allocation"))
            .query(&[("from", rfc(start)), ("to", rfc(end))])
            .bearer_auth(key)
            .send()
            .unwrap()
            .json()
            .unwrap();
        v.as_object_mut()
            .unwrap()
            .retain(|k, _| k != "generated_at" && k != "computed_at");
        v
    };
    let (_a, live_base, live_key) = serve("live");
    for batch in live.chunks(5_000) {
        let r = http
            .post(format!("{live_base}/v1/finops/gpu/samples"))
            .bearer_auth(&live_key)
            .json(&serde_json::json!({ "samples": batch }))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    for batch in live_events.chunks(5_000) {
        let r = http
            .post(format!("{live_base}/v1/usage/events"))
            .bearer_auth(&live_key)
            .json(&serde_json::json!({ "events": batch }))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    let want = allocation(&live_base);
    let tokens = |base: &str| -> serde_json::Value {
        let r = http
            .get(format!("{base}/v1/finops/gpu/token-costs"))
            .query(&[("from", rfc(start)), ("to", rfc(end))])
            .bearer_auth(key)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
        r.json().unwrap()
    };
    let want_tokens = tokens(&live_base);
    assert!(
        want_tokens.to_string().contains("llama-70b"),
        "{want_tokens}"
    );
    assert!(
        want["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["gpu_uuid"] == gpus[0].0),
        "the live samples' hole is a gap: {}",
        want["gaps"]
    );
    let (_b, base, sampler_key) = serve("imported");
    let checkpoint = dir.join("b.checkpoint.json");
    let run = |base: &str, key: &str, checkpoint: &std::path::Path, extra: &[&str]| {
        let out = import(&["--control-plane", base, "--batch-size", "2000"])
            .arg("--checkpoint")
            .arg(checkpoint)
            .args(extra)
            .env("EAI_API_KEY", key)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        err
    };
    let n = live.len();
    let first = run(&base, &sampler_key, &checkpoint, &[]);
    assert!(
        first.contains(&format!("{n} samples: {n} added, 0 already stored")),
        "{first}"
    );
    assert_eq!(allocation(&base), want, "imported vs live");
    assert_eq!(tokens(&base), want_tokens, "token costs, imported vs live");
    // 3. Again: nothing left (the checkpoint), and from the start, nothing added.
    let again = run(&base, &sampler_key, &checkpoint, &[]);
    assert!(again.contains("this run: 0 samples"), "{again}");
    let over = run(&base, &sampler_key, &checkpoint, &["--restart"]);
    assert!(
        over.contains(&format!("{n} samples: 0 added, {n} already stored")),
        "{over}"
    );
    assert_eq!(allocation(&base), want, "after a second import");

    // 4. Killed half way, then run again: it carries on from the checkpoint.
    let (_c, base_c, key_c) = serve("killed");
    let cp_c = dir.join("c.checkpoint.json");
    let mut child = import(&[
        "--control-plane",
        &base_c,
        "--batch-size",
        "300",
        "--concurrency",
        "1",
    ])
    .arg("--checkpoint")
    .arg(&cp_c)
    .env("EAI_API_KEY", &key_c)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_to_string(&cp_c)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["done_through_ms"].as_i64());
        if done.is_some_and(|d| d > start + 12 * HOUR) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no progress: {done:?}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let resumed = run(&base_c, &key_c, &cp_c, &[]);
    assert!(resumed.contains("resumed after"), "{resumed}");
    assert_eq!(allocation(&base_c), want, "killed and resumed vs live");
    assert_eq!(
        tokens(&base_c),
        want_tokens,
        "token costs, killed and resumed vs live"
    );
}
