//! The sampler behind a cut, slow, then lossy link to the control plane (a network namespace): every window
//! delivered once.

use super::*;

/// A network namespace joined to this one by a veth pair (10.231.N.1 here, 10.231.N.2 there), to put `serve`
/// behind a link a test can cut and slow down. Needs root (CI runs as root); removed when dropped.
struct NetNs {
    name: String,
    host_if: String,
    there: String,
}

impl NetNs {
    fn create() -> NetNs {
        let id = std::process::id() % 100_000;
        let net = id % 250;
        let ns = NetNs {
            name: format!("eai-net-{id}"),
            host_if: format!("eaih{id}"),
            there: format!("10.231.{net}.2"),
        };
        let peer = format!("eain{id}");
        let here = format!("10.231.{net}.1/30");
        let there = format!("{}/30", ns.there);
        let steps: [&[&str]; 8] = [
            &["netns", "add", &ns.name],
            &[
                "link",
                "add",
                &ns.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &peer,
            ],
            &["link", "set", &peer, "netns", &ns.name],
            &["addr", "add", &here, "dev", &ns.host_if],
            &["link", "set", &ns.host_if, "up"],
            &[
                "netns", "exec", &ns.name, "ip", "addr", "add", &there, "dev", &peer,
            ],
            &["netns", "exec", &ns.name, "ip", "link", "set", &peer, "up"],
            &["netns", "exec", &ns.name, "ip", "link", "set", "lo", "up"],
        ];
        for step in steps {
            let out = Command::new("ip").args(step).output().unwrap();
            assert!(
                out.status.success(),
                "ip {step:?} (the network test needs root and iproute2, as CI has): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ns
    }

    /// The link up (`true`) or cut.
    fn link(&self, up: bool) {
        let st = Command::new("ip")
            .args(["link", "set", &self.host_if, if up { "up" } else { "down" }])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Limits what the host sends to the namespace to `rate` (a token bucket), or lifts the limit.
    fn shape(&self, rate: Option<&str>) {
        let mut cmd = Command::new("tc");
        match rate {
            Some(r) => cmd.args([
                "qdisc",
                "add",
                "dev",
                &self.host_if,
                "root",
                "tbf",
                "rate",
                r,
                "burst",
                "4kbit",
                "latency",
                "2s",
            ]),
            None => cmd.args(["qdisc", "del", "dev", &self.host_if, "root"]),
        };
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "tc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Drops `percent` of the packets entering and leaving the namespace, at random (nftables' `numgen`; this
    /// kernel has no `tc netem`).
    fn lossy(&self, percent: u32) {
        self.nft(&format!(
            "table inet eai_loss {{\n\
               chain in {{ type filter hook input priority 0; numgen random mod 100 < {percent} counter drop; }}\n\
               chain out {{ type filter hook output priority 0; numgen random mod 100 < {percent} counter drop; }}\n\
             }}\n"
        ));
    }

    /// Lets every packet through again; answers how many were dropped.
    fn lossless(&self) -> u64 {
        let listed = self.nft("list table inet eai_loss\n");
        self.nft("delete table inet eai_loss\n");
        listed
            .split("packets ")
            .skip(1)
            .filter_map(|t| t.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    fn nft(&self, script: &str) -> String {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nft (Debian's nftables; scripts/test.sh installs it)");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), script.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "nft: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// One of the sampler's own metrics, as a number (`None` while its listener is not up).
fn sampler_metric(http: &reqwest::blocking::Client, url: &str, name: &str) -> Option<u64> {
    let text = http.get(url).send().ok()?.text().ok()?;
    metric(&text, name)?.parse::<f64>().ok().map(|v| v as u64)
}

/// A real sampler (the DCGM fixture of 8 GPUs as its source, a window a second) pushes to a `serve` behind a
/// link that is cut (until 4 windows are queued, within 5 s), then throttled to 64 kbit/s for 5 s, then drops a
/// third of its packets for 8 s: the sampler keeps reading into its spool, delivers everything once the link is back, and the control plane stores exactly the samples the sampler spooled, none
/// twice and none invented.
#[test]
fn a_cut_slow_then_lossy_link_between_sampler_and_control_plane_delivers_every_window_once() {
    let ns = NetNs::create();
    let dir = temp_dir("netcut");
    let key = "eai_live_netcuttestnetcuttestnetcuttestnetcuttestne0001";
    let port = free_port();
    let base = format!("http://{}:{port}", ns.there);
    let _server = Server(
        Command::new("ip")
            .args(["netns", "exec", &ns.name])
            .arg(env!("CARGO_BIN_EXE_eai-gpu"))
            .args([
                "serve",
                "--listen",
                &format!("{}:{port}", ns.there),
                "--data-dir",
            ])
            .arg(dir.join("data"))
            .env("EAI_BOOTSTRAP_ADMIN_KEY", key)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&base, Duration::from_secs(30));
    let http = reqwest::blocking::Client::new();
    let created: serde_json::Value = http
        .post(format!("{base}/v1/auth/api-keys"))
        .bearer_auth(key)
        .json(&serde_json::json!({ "role": "sampler", "name": "netcut" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let sampler_key = created["key"].as_str().unwrap().to_string();
    // A copy of the exporter's capture: removed at the end, so that the sampler stops making windows.
    let fixture = dir.join("capture.prom");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/dcgm_h100x8_k8s_gpu_operator_sampled.prom"),
        &fixture,
    )
    .unwrap();
    let metrics_port = free_port();
    let metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
    let sampler = Server(
        bin()
            .args([
                "sampler",
                "--dcgm-url",
                &format!("file://{}", fixture.display()),
            ])
            .args(["--control-plane", &base, "--interval", "1s", "--spool-dir"])
            .arg(dir.join("spool"))
            .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
            .env("EAI_API_KEY", &sampler_key)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let m = |name: &str| {
        sampler_metric(&http, &metrics, name).unwrap_or_else(|| panic!("{name} not in {metrics}"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while sampler_metric(&http, &metrics, "eai_sampler_samples_sent_total").unwrap_or(0) < 16 {
        assert!(Instant::now() < deadline, "the sampler delivered nothing");
        std::thread::sleep(Duration::from_millis(200));
    }

    ns.link(false);
    // The sampler keeps reading a window a second while its request hangs on the cut link: cut until 4
    // windows are queued, which must take no more than 5 s.
    let deadline = Instant::now() + Duration::from_secs(5);
    while m("eai_sampler_spool_batches") < 4 {
        assert!(
            Instant::now() < deadline,
            "windows were not read while the link was cut: {} batches queued in 5 s",
            m("eai_sampler_spool_batches")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    ns.link(true);
    // The slow and lossy phases are faults held for a time (the scenario itself), not waits for an outcome.
    ns.shape(Some("64kbit"));
    std::thread::sleep(Duration::from_secs(5));
    ns.shape(None);
    // Then lossy: a third of the packets each way dropped for 8 s (TCP retransmits, requests time out and are
    // sent again).
    ns.lossy(33);
    std::thread::sleep(Duration::from_secs(8));
    let dropped = ns.lossless();
    assert!(
        dropped > 0,
        "no packet was dropped: the loss proves nothing"
    );
    eprintln!("{dropped} packets dropped in the lossy phase");
    // No more windows from here (each read fails: a scrape error, no sample), then everything spooled is sent.
    std::fs::remove_file(&fixture).unwrap();
    let before = m("eai_sampler_scrape_errors_total");
    let deadline = Instant::now() + Duration::from_secs(60);
    let spooled = loop {
        let (spooled, sent, queued) = (
            m("eai_sampler_samples_spooled_total"),
            m("eai_sampler_samples_sent_total"),
            m("eai_sampler_spool_batches"),
        );
        if queued == 0 && sent >= spooled && m("eai_sampler_scrape_errors_total") > before {
            break spooled;
        }
        assert!(
            Instant::now() < deadline,
            "not delivered 60 s after the link came back: {spooled} spooled, {sent} sent, {queued} queued"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        m("eai_sampler_samples_spooled_total"),
        spooled,
        "a window after the capture went"
    );
    drop(sampler);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let a: serde_json::Value = http
        .get(format!(
            "{base}/v1/finops/gpu/allocation?from={}&to={}",
            rfc3339(now - 2 * 3600),
            rfc3339(now + 3600)
        ))
        .bearer_auth(key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let stored: u64 = a["deployments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(
        stored, spooled,
        "the control plane holds {stored} samples, the sampler spooled {spooled}: {a}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
