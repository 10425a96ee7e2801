//! The portal page `/finops/gpu` (SPEC §5, the portal guide) in a real browser: headless Chromium driven over
//! W3C WebDriver (chromedriver), against a real server on port 0 over a fresh SQLite file. The figures on the
//! screen are checked against the API's JSON; screenshots of the main states go to
//! `target/portal-screenshots/` for a reviewer.
//!
//! The WebDriver client is fantoccini (plain HTTP to the local chromedriver, no TLS stack); chromedriver's own
//! commands (the console log, DevTools) go through its custom-command trait. Chromium and chromedriver are
//! Debian's `chromium` and `chromium-driver` (scripts/test.sh installs them); without them these tests fail and
//! say so.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use eai_api::{Application, Config};
use eai_engine::time::Timestamp;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use reqwest::StatusCode;
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::{json, Value};
use tokio::sync::{oneshot, Mutex};
use tokio::task::JoinHandle;
use uuid::Uuid;

const ADMIN_KEY: &str = "eai_live_portal000000000000000000000000000000000000000000000000admin";
const ACME: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
const GLOBEX: &str = "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21";
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a condition on the page may take to hold.
const WAIT: Duration = Duration::from_secs(20);

/// One browser at a time: two cores are shared by the whole suite.
static BROWSER: Mutex<()> = Mutex::const_new(());

// ------------------------------------------------------------------------------------------------ the server

/// The control plane on a fixed data folder; it can be stopped and started again on the same port.
struct Portal {
    dir: tempfile::TempDir,
    port: u16,
    base: String,
    client: reqwest::Client,
    running: Option<(oneshot::Sender<()>, JoinHandle<anyhow::Result<()>>)>,
}

impl Portal {
    async fn start() -> Portal {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut portal = Portal {
            dir,
            port: 0,
            base: String::new(),
            client: reqwest::Client::new(),
            running: None,
        };
        portal.serve().await;
        portal
    }

    async fn serve(&mut self) {
        let config = Config {
            listen: format!("127.0.0.1:{}", self.port).parse().expect("addr"),
            data_dir: self.dir.path().to_path_buf(),
            database_url: Some(
                format!("sqlite://{}", self.dir.path().join("eai-gpu.db").display()).into(),
            ),
            bootstrap_admin_key: Some(ADMIN_KEY.into()),
            ..Config::default()
        };
        // Right after a stop the port may still be held for a moment.
        let mut tries = 0;
        let app = loop {
            match Application::build(config.clone()).await {
                Ok(app) => break app,
                Err(e) if tries < 50 => {
                    tries += 1;
                    eprintln!("portal test: server not up yet ({e:#}), retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("the application does not start: {e:#}"),
            }
        };
        self.port = app.port();
        self.base = format!("http://127.0.0.1:{}", self.port);
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until_stopped(async {
            let _ = rx.await;
        }));
        self.running = Some((tx, server));
    }

    /// Stops the server (graceful: idle browser connections are closed).
    async fn stop(&mut self) {
        if let Some((tx, server)) = self.running.take() {
            let _ = tx.send(());
            let abort = server.abort_handle();
            if tokio::time::timeout(Duration::from_secs(10), server)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str, key: &str) -> (StatusCode, Value) {
        self.send(self.client.get(self.url(path)).bearer_auth(key))
            .await
    }

    async fn post(&self, path: &str, key: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.client.post(self.url(path)).bearer_auth(key).json(body))
            .await
    }

    async fn key(&self, role: &str, tenant: Option<&str>) -> String {
        let mut body = json!({ "role": role, "name": format!("{role} (portal test)") });
        if let Some(t) = tenant {
            body["tenant_id"] = json!(t);
        }
        let (status, v) = self.post("/v1/auth/api-keys", ADMIN_KEY, &body).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v["key"].as_str().expect("key").to_string()
    }

    /// The allocation of the page's default period (the last 30 days until today, UTC), as the API gives it.
    async fn default_allocation(&self, key: &str) -> Value {
        let (from, to) = default_period();
        let (status, v) = self
            .get(
                &format!("/v1/finops/gpu/allocation?from={from}&to={to}"),
                key,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v
    }

    async fn policies(&self) -> Vec<Value> {
        let (status, v) = self.get("/v1/finops/allocation-policies", ADMIN_KEY).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// A small fleet like the demo's (crates/cli/src/demo_data.rs), over the last four days, loaded through the
    /// API: two shared H100 deployments used by two tenants, one with a short gap (interpolated) and a long one
    /// (reported); an A100 deployment dedicated to one tenant; an L40S deployment that no policy prices.
    async fn load_fleet(&self) -> Fleet {
        let now = eai_api::state::now();
        let end = now.floor_to(HOUR_MS).0 - HOUR_MS;
        let start = end - 4 * DAY_MS;
        let start_day = Timestamp(start).floor_to(DAY_MS);
        let window_ms = 300_000;
        let gpus = [
            (
                "gpu-node-1",
                "GPU-h100-0001",
                "NVIDIA H100 80GB HBM3",
                "vllm-llama-70b",
                None,
            ),
            (
                "gpu-node-1",
                "GPU-h100-0002",
                "NVIDIA H100 80GB HBM3",
                "vllm-llama-70b",
                None,
            ),
            (
                "gpu-node-1",
                "GPU-h100-0003",
                "NVIDIA H100 80GB HBM3",
                "vllm-mixtral",
                None,
            ),
            (
                "gpu-node-2",
                "GPU-a100-0001",
                "NVIDIA A100-SXM4-80GB",
                "acme-finetune",
                Some(ACME),
            ),
            (
                "gpu-node-3",
                "GPU-l40s-0001",
                "NVIDIA L40S",
                "experimental-sd",
                None,
            ),
        ];
        let mut samples = Vec::new();
        for (gi, (node, uuid, model, deployment, owner)) in gpus.iter().enumerate() {
            let mut k = 0i64;
            let mut t = start + window_ms;
            while t <= end {
                k += 1;
                t += window_ms;
                let at = t - window_ms;
                // Mixtral misses one sample at sample 360 (interpolated) and eight from 600 (a 40-minute gap).
                if *deployment == "vllm-mixtral" && (k == 360 || (600..608).contains(&k)) {
                    continue;
                }
                let hour = (at / HOUR_MS).rem_euclid(24);
                let util = match *deployment {
                    "acme-finetune" => 0.93,
                    "experimental-sd" => 0.25,
                    _ => 0.15 + 0.03 * ((hour + gi as i64) % 24) as f64,
                };
                samples.push(json!({
                    "node": node, "gpu_uuid": uuid, "model": model, "namespace": "eai-inference",
                    "pod": format!("{deployment}-0"), "deployment_id": deployment, "tenant_id": owner,
                    "window_seconds": 300, "utilization": format!("{util:.2}"),
                    "memory_used_gb": "61.2", "power_w": format!("{:.1}", 90.0 + 500.0 * util),
                    "timestamp": Timestamp(at).to_string(),
                }));
            }
        }
        let sample_count = samples.len();
        let (status, v) = self
            .post(
                "/v1/finops/gpu/samples",
                ADMIN_KEY,
                &json!({ "samples": samples }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");

        let mut events = Vec::new();
        let mut hour = Timestamp(start).ceil_to(HOUR_MS).0;
        while hour < end {
            let at = Timestamp(hour + 1_800_000).to_string();
            let n = 1_000 + (hour / HOUR_MS).rem_euclid(7) * 150;
            let ev = |tenant: &str, dep: &str, units: Value| {
                json!({
                    "event_id": Uuid::new_v4().to_string(), "schema_version": "1.0", "tenant_id": tenant,
                    "usage_type": "llm_tokens", "source": "gateway", "occurred_at": at,
                    "deployment_id": dep, "units": units,
                })
            };
            events.push(ev(
                ACME,
                "vllm-llama-70b",
                json!({"tokens_in": n * 5, "tokens_out": n * 2}),
            ));
            events.push(ev(
                GLOBEX,
                "vllm-llama-70b",
                json!({"tokens_in": n * 2, "tokens_out": n}),
            ));
            events.push(ev(GLOBEX, "vllm-mixtral", json!({"gpu_seconds": 1_800})));
            events.push(ev(
                ACME,
                "vllm-mixtral",
                json!({"tokens_in": n, "tokens_out": n / 2}),
            ));
            hour += HOUR_MS;
        }
        let (status, v) = self
            .post("/v1/usage/events", ADMIN_KEY, &json!({ "events": events }))
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");

        for (name, model, hourly, overhead) in [
            ("h100-inference", "H100", "2.10", "18"),
            ("a100-training", "A100", "1.60", "15"),
        ] {
            let body = json!({
                "name": name, "deployment_pattern": "*", "gpu_model": model, "currency": "EUR",
                "gpu_hourly_cost": hourly, "overhead_pct": overhead, "energy_kwh_price": "0.21", "pue": "1.4",
                "effective_from": start_day.to_string(),
            });
            let (status, v) = self
                .post("/v1/finops/allocation-policies", ADMIN_KEY, &body)
                .await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
        }
        Fleet {
            start_day: start_day.to_string()[..10].to_string(),
            samples: sample_count,
        }
    }
}

impl Drop for Portal {
    fn drop(&mut self) {
        if let Some((tx, server)) = self.running.take() {
            let _ = tx.send(());
            server.abort();
        }
    }
}

/// What [`Portal::load_fleet`] loaded.
struct Fleet {
    /// The UTC day the data starts on (`YYYY-MM-DD`).
    start_day: String,
    samples: usize,
}

/// The page's default period: From = today - 30 days, To = today (UTC dates; To is inclusive).
fn default_period() -> (String, String) {
    let today = eai_api::state::now().floor_to(DAY_MS);
    let day = |t: Timestamp| t.to_string()[..10].to_string();
    (day(Timestamp(today.0 - 30 * DAY_MS)), day(today))
}

// ------------------------------------------------------------------------------------------------ the browser

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("portal-screenshots")
}

/// A headless Chromium session through chromedriver, driven by fantoccini. Dropping it ends the session and
/// the driver.
struct Browser {
    driver: Child,
    port: u16,
    client: Client,
    session: String,
    _profile: tempfile::TempDir,
}

/// A command of chromedriver's own (`POST /session/{id}/PATH`) that the W3C protocol does not have: the
/// browser's console log, Chrome DevTools commands.
#[derive(Debug)]
struct Vendor {
    path: &'static str,
    body: Value,
}

impl WebDriverCompatibleCommand for Vendor {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

impl Browser {
    async fn launch() -> Browser {
        Self::launch_with_lang("en-US").await
    }

    /// A fresh profile whose browser language is `lang` (what `navigator.language` says).
    async fn launch_with_lang(lang: &str) -> Browser {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(bin).exists(),
                "{bin} is missing: the portal tests need Debian's `chromium` and `chromium-driver` \
                 (scripts/test.sh installs them: apt-get install chromium chromium-driver)"
            );
        }
        let port = free_port();
        let mut driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().expect("profile dir");
        let started = Instant::now();
        let http = reqwest::Client::new();
        loop {
            let ready = http
                .get(format!("http://127.0.0.1:{port}/status"))
                .send()
                .await
                .ok()
                .filter(|r| r.status().is_success());
            if ready.is_some() {
                break;
            }
            if started.elapsed() > WAIT {
                let _ = driver.kill();
                panic!("chromedriver did not answer on port {port}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--hide-scrollbars".into(),
            "--window-size=1366,900".into(),
            format!("--lang={lang}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": args,
                "prefs": { "intl.accept_languages": lang },
            },
            "goog:loggingPrefs": { "browser": "ALL" },
        });
        let Value::Object(caps) = caps else {
            unreachable!("an object")
        };
        let connected = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await;
        let client = match connected {
            Ok(c) => c,
            Err(e) => {
                let _ = driver.kill();
                panic!("no WebDriver session: {e}");
            }
        };
        let session = client
            .session_id()
            .await
            .ok()
            .flatten()
            .expect("a session id");
        Browser {
            driver,
            port,
            client,
            session,
            _profile: profile,
        }
    }

    async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("WebDriver goto {url}: {e}"));
    }

    /// Runs `script` (a function body: `return …`) in the page.
    async fn js(&self, script: &str, args: Value) -> Value {
        let args = match args {
            Value::Array(a) => a,
            other => vec![other],
        };
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("WebDriver execute {script}: {e}"))
    }

    /// Waits until the expression holds in the page; its value then.
    async fn wait(&self, expr: &str, what: &str) -> Value {
        let started = Instant::now();
        loop {
            let v = self
                .js(
                    &format!("try {{ return ({expr}); }} catch (e) {{ return null; }}"),
                    json!([]),
                )
                .await;
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            if started.elapsed() > WAIT {
                self.screenshot(&format!("timeout-{}", what.replace(' ', "-")))
                    .await;
                let text = self.js("return document.body.innerText", json!([])).await;
                panic!("timed out waiting for {what} ({expr}); the page says:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn find(&self, css: &str) -> Element {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    async fn click(&self, css: &str) {
        self.find(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("WebDriver click {css}: {e}"));
    }

    /// Clears a field and types into it, as a person would.
    async fn fill(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        e.clear()
            .await
            .unwrap_or_else(|err| panic!("WebDriver clear {css}: {err}"));
        if !text.is_empty() {
            e.send_keys(text)
                .await
                .unwrap_or_else(|err| panic!("WebDriver send keys to {css}: {err}"));
        }
    }

    /// Sends keys (WebDriver key codes included: `\u{E007}` Enter, `\u{E00C}` Escape) to an element.
    async fn keys(&self, css: &str, text: &str) {
        self.find(css)
            .await
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("WebDriver send keys to {css}: {e}"));
    }

    /// Presses a key (`\u{E007}` Enter, `\u{E00C}` Escape) on whatever has the focus.
    async fn press(&self, key: &str) {
        let mut chars = key.chars();
        let (Some(value), None) = (chars.next(), chars.next()) else {
            panic!("press takes one key, not {key:?}")
        };
        let actions = KeyActions::new("keyboard".to_string())
            .then(KeyAction::Down { value })
            .then(KeyAction::Up { value });
        self.client
            .perform_actions(actions)
            .await
            .unwrap_or_else(|e| panic!("WebDriver press {key:?}: {e}"));
    }

    /// Sets the value of an input whose typing is locale-dependent (a date) and fires `change`.
    async fn set_value(&self, css: &str, value: &str) {
        self.js(
            "const el = document.querySelector(arguments[0]); el.value = arguments[1]; \
             el.dispatchEvent(new Event('input', {bubbles: true})); \
             el.dispatchEvent(new Event('change', {bubbles: true})); return true;",
            json!([css, value]),
        )
        .await;
    }

    async fn text(&self, css: &str) -> String {
        let v = self
            .js(
                "const el = document.querySelector(arguments[0]); return el ? el.textContent.trim() : null;",
                json!([css]),
            )
            .await;
        v.as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    async fn exists(&self, css: &str) -> bool {
        self.js(
            "return !!document.querySelector(arguments[0]);",
            json!([css]),
        )
        .await
            == json!(true)
    }

    async fn focused_id(&self) -> String {
        self.js(
            "return document.activeElement ? document.activeElement.id : '';",
            json!([]),
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    async fn resize(&self, width: i64, height: i64) {
        let size = |v: i64| u32::try_from(v).unwrap_or_else(|_| panic!("a window size, not {v}"));
        self.client
            .set_window_size(size(width), size(height))
            .await
            .unwrap_or_else(|e| panic!("WebDriver window size {width}x{height}: {e}"));
    }

    /// Emulates a phone 390 CSS pixels wide and `height` tall (Chrome DevTools through chromedriver), or
    /// stops emulating.
    async fn phone(&self, height: Option<i64>) {
        let (cmd, params) = match height {
            Some(h) => (
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": 390, "height": h, "deviceScaleFactor": 1, "mobile": true }),
            ),
            None => ("Emulation.clearDeviceMetricsOverride", json!({})),
        };
        self.client
            .issue_cmd(Vendor {
                path: "goog/cdp/execute",
                body: json!({ "cmd": cmd, "params": params }),
            })
            .await
            .unwrap_or_else(|e| panic!("chromedriver {cmd}: {e}"));
    }

    /// A PNG of the whole page (the window is made as tall as the page for the shot).
    async fn screenshot(&self, name: &str) {
        let size = self
            .js(
                "return [window.outerWidth, window.outerHeight, document.documentElement.scrollHeight, window.innerHeight];",
                json!([]),
            )
            .await;
        let n = |i: usize| size[i].as_i64().unwrap_or(900);
        let (w, h, page, inner) = (n(0), n(1), n(2), n(3));
        let tall = page > inner;
        if tall {
            self.resize(w, (page + (h - inner)).min(8000)).await;
        }
        let png = self
            .client
            .screenshot()
            .await
            .unwrap_or_else(|e| panic!("WebDriver screenshot: {e}"));
        if tall {
            self.resize(w, h).await;
        }
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("screenshot written");
    }

    /// Console messages that must never appear: script errors and Content-Security-Policy violations.
    async fn assert_clean_console(&self) {
        let logs = self
            .client
            .issue_cmd(Vendor {
                path: "se/log",
                body: json!({ "type": "browser" }),
            })
            .await
            .unwrap_or_else(|e| panic!("chromedriver's browser log: {e}"));
        let bad: Vec<String> = logs
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l["message"].as_str())
            .filter(|m| {
                m.contains("Content Security Policy")
                    || m.contains("Uncaught")
                    || m.contains("SyntaxError")
                    || m.contains("TypeError")
            })
            .map(str::to_string)
            .collect();
        assert!(bad.is_empty(), "the browser console has errors: {bad:#?}");
    }

    /// Signs in through the page's key field.
    async fn sign_in(&self, key: &str) {
        self.wait("document.querySelector('#signin-key')", "the sign-in form")
            .await;
        self.fill("#signin-key", key).await;
        self.click("#signin-submit").await;
    }

    async fn sign_out(&self) {
        self.click("#signout").await;
        self.wait("document.querySelector('#signin-key')", "the sign-in form")
            .await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // fantoccini ends the session from its own task once the client is dropped, but that task runs on the
        // test's runtime, which may be gone by then: end it here (Chromium exits with it), then the driver.
        // Plain HTTP/1.1, no runtime needed.
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let req = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session, self.port
            );
            if s.write_all(req.as_bytes()).is_ok() {
                // The answer comes once Chromium has quit; the driver may keep the connection open.
                let mut answer = [0u8; 512];
                let _ = s.read(&mut answer);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

// ------------------------------------------------------------------------------------------------ expected text

fn rounded(v: &str, dp: u32) -> Decimal {
    Decimal::from_str(v)
        .unwrap_or_else(|e| panic!("{v} is not a decimal: {e}"))
        .round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero)
}

fn grouped(int: &str, sep: &str) -> String {
    let digits: Vec<char> = int.chars().collect();
    let mut out = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push_str(sep);
        }
        out.push(*c);
    }
    out
}

/// A decimal as `en` shows it: at most `dp` places, no trailing zeros, `1,234.5`.
fn en_number(v: &str, dp: u32) -> String {
    let s = rounded(v, dp).normalize().to_string();
    match s.split_once('.') {
        Some((i, f)) => format!("{}.{f}", grouped(i, ",")),
        None => grouped(&s, ","),
    }
}

/// An amount as `en` shows it: `€1,234.50`.
fn en_money(v: &str, currency: &str) -> String {
    let mut d = rounded(v, 2);
    d.rescale(2);
    let s = d.to_string();
    let (i, f) = s.split_once('.').expect("two places");
    let symbol = match currency {
        "EUR" => "€",
        "USD" => "$",
        other => panic!("no symbol known for {other}"),
    };
    format!("{symbol}{}.{f}", grouped(i, ","))
}

/// A rate as `en` shows it: the currency's two places at least, every given digit kept (`€0.2133`, `€12.50`).
fn en_price(v: &str, currency: &str) -> String {
    let d: Decimal = v.parse().expect("decimal");
    let mut n = d.normalize();
    if n.scale() < 2 {
        n.rescale(2);
    }
    let s = n.to_string();
    let (i, f) = s.split_once('.').expect("places");
    let symbol = match currency {
        "EUR" => "€",
        "USD" => "$",
        other => panic!("no symbol known for {other}"),
    };
    format!("{symbol}{}.{f}", grouped(i, ","))
}

/// The cost per 1M tokens cells of a table: the API's rates (`aggregate`), formatted the `en` way, with input
/// and output on hover.
async fn assert_rates_match(b: &Browser, portal: &Portal, key: &str, aggregate: &str) {
    b.wait(
        "document.querySelector('#alloc-body').dataset.tokens === 'ok'",
        "the cost per token",
    )
    .await;
    let (from, to) = default_period();
    let (status, api) = portal
        .get(
            &format!("/v1/finops/gpu/token-costs?from={from}&to={to}&aggregate={aggregate}"),
            key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{api}");
    let (table, attr, id) = match aggregate {
        "deployment" => ("#deployments-table", "data-deployment", "deployment_id"),
        _ => ("#tenants-table", "data-tenant", "tenant_id"),
    };
    let rows = table_rows(b, table, attr).await;
    let items = api["items"].as_array().expect("items");
    assert!(!items.is_empty(), "{api}");
    for item in items {
        let row = rows
            .iter()
            .find(|r| r["key"] == item[id])
            .unwrap_or_else(|| panic!("no row for {item}"));
        let (value, text) = cell(row, "cost_per_mtok");
        match item["cost_per_mtok"].as_str() {
            Some(rate) => {
                assert_eq!(value, rate, "{item}");
                let currency = item["currency"].as_str().expect("currency");
                assert_eq!(text, en_price(rate, currency), "{item}");
            }
            None => assert_eq!(text, "—", "no tokens, no rate: {item}"),
        }
    }
    let title = b
        .js(
            "return document.querySelector(arguments[0] + ' tbody td[data-col=cost_per_mtok]:not([data-value=\"\"])').title;",
            json!([table]),
        )
        .await;
    assert!(
        title.as_str().is_some_and(|t| t.starts_with("Input: ")),
        "input and output on hover: {title}"
    );
}

/// An amount in euros as `fr` shows it: `1 234,50 €` (narrow no-break space between groups, no-break space
/// before the sign).
fn fr_euros(v: &str) -> String {
    let mut d = rounded(v, 2);
    d.rescale(2);
    let s = d.to_string();
    let (i, f) = s.split_once('.').expect("two places");
    format!("{},{f}\u{a0}€", grouped(i, "\u{202f}"))
}

fn en_percent(share: &str) -> String {
    let pct = Decimal::from_str(share).expect("share") * Decimal::from(100);
    format!("{}%", en_number(&pct.to_string(), 2))
}

/// The rows of a table of the page: `[{key, currency, cells: {col: {value, text}}}]`.
async fn table_rows(b: &Browser, table: &str, key_attr: &str) -> Vec<Value> {
    b.js(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')].map(tr => ({
            key: tr.getAttribute(arguments[1]), currency: tr.dataset.currency || null,
            cells: Object.fromEntries([...tr.querySelectorAll('[data-col]')].map(td =>
                [td.dataset.col, { value: td.dataset.value, text: td.textContent.trim() }])) }));",
        json!([table, key_attr]),
    )
    .await
    .as_array()
    .cloned()
    .unwrap_or_default()
}

fn cell<'a>(row: &'a Value, col: &str) -> (&'a str, &'a str) {
    let c = &row["cells"][col];
    (
        c["value"]
            .as_str()
            .unwrap_or_else(|| panic!("no {col}: {row}")),
        c["text"].as_str().unwrap_or_default(),
    )
}

/// Every figure of the deployments and tenants tables is the API's, formatted the `en` way.
async fn assert_tables_match(b: &Browser, api: &Value) {
    let rows = table_rows(b, "#deployments-table", "data-deployment").await;
    let deployments = api["deployments"].as_array().expect("deployments");
    assert_eq!(rows.len(), deployments.len(), "one row per deployment");
    for d in deployments {
        let id = d["deployment_id"].as_str().expect("id");
        let currency = d["currency"].as_str();
        let row = rows
            .iter()
            .find(|r| r["key"] == id && r["currency"].as_str() == currency)
            .unwrap_or_else(|| panic!("no row for {id}"));
        for col in ["samples", "estimated_samples", "gpus", "unpriced_samples"] {
            let (value, text) = cell(row, col);
            assert_eq!(value, d[col].to_string(), "{id} {col}");
            assert_eq!(text, en_number(value, 0), "{id} {col}");
        }
        for col in ["gpu_hours", "busy_gpu_hours", "energy_kwh"] {
            let (value, text) = cell(row, col);
            assert!(d[col].is_number(), "{id} {col}: a JSON number");
            assert_eq!(
                value,
                d[col].to_string(),
                "{id} {col}: the number's exact text"
            );
            assert_eq!(text, en_number(value, 2), "{id} {col}");
        }
        for col in ["cost", "allocated", "unallocated"] {
            let (value, text) = cell(row, col);
            assert_eq!(value, d[col].as_str().expect("decimal"), "{id} {col}");
            match currency {
                Some(c) => assert_eq!(text, en_money(value, c), "{id} {col}"),
                None => assert_eq!(text, "—", "{id} {col}: unpriced, no currency"),
            }
        }
    }
    let tenants = api["tenants"].as_array().expect("tenants");
    if tenants.is_empty() {
        assert!(!b.exists("#tenants-table").await, "no tenants table");
        return;
    }
    let rows = table_rows(b, "#tenants-table", "data-tenant").await;
    assert_eq!(rows.len(), tenants.len(), "one row per tenant");
    for t in tenants {
        let id = t["tenant_id"].as_str().expect("tenant");
        let row = rows
            .iter()
            .find(|r| r["key"] == id)
            .unwrap_or_else(|| panic!("no row for tenant {id}"));
        let (v, text) = cell(row, "gpu_seconds");
        assert_eq!(v, t["gpu_seconds"].to_string());
        assert_eq!(text, en_number(v, 3));
        let (v, text) = cell(row, "share");
        assert_eq!(v, t["share"].to_string());
        assert_eq!(text, en_percent(v));
        let (v, text) = cell(row, "cost");
        assert_eq!(v, t["cost"]["amount"].as_str().expect("decimal"));
        assert_eq!(
            text,
            en_money(v, t["cost"]["currency"].as_str().expect("currency"))
        );
    }
}

fn deployment<'a>(api: &'a Value, id: &str) -> &'a Value {
    api["deployments"]
        .as_array()
        .and_then(|ds| ds.iter().find(|d| d["deployment_id"] == id))
        .unwrap_or_else(|| panic!("no deployment {id} in {api}"))
}

async fn wait_allocation(b: &Browser) {
    b.wait(
        "document.querySelector('#deployments-table') || document.querySelector('#empty-usage')",
        "the allocation",
    )
    .await;
}

async fn wait_policies(b: &Browser) {
    b.wait(
        "document.querySelector('#policies-table') || document.querySelector('#empty-policies')",
        "the policies",
    )
    .await;
}

// ------------------------------------------------------------------------------------------------ the tests

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_types_cache_headers_and_a_strict_csp() {
    let portal = Portal::start().await;
    let resp = portal
        .client
        .get(portal.url("/finops/gpu"))
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::OK);
    let h = resp.headers().clone();
    let header = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(header("content-type"), "text/html; charset=utf-8");
    assert_eq!(header("cache-control"), "no-cache");
    let csp = header("content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert!(!header("x-request-id").is_empty());
    let etag = header("etag");
    let html = resp.text().await.expect("html");
    assert!(html.contains("<script type=\"module\" src=\"/assets/portal/"));

    // Revalidation answers 304.
    let again = portal
        .client
        .get(portal.url("/finops/gpu"))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("sent");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    // Every asset the page links, with its type, cached for good under its versioned path.
    let links: Vec<&str> = html
        .split('"')
        .filter(|s| s.starts_with("/assets/portal/"))
        .collect();
    assert!(links.len() >= 6, "{links:?}");
    for link in &links {
        let resp = portal
            .client
            .get(portal.url(link))
            .send()
            .await
            .expect("sent");
        assert_eq!(resp.status(), StatusCode::OK, "{link}");
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let expected = if link.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else if link.ends_with(".css") {
            "text/css; charset=utf-8"
        } else {
            "image/svg+xml"
        };
        assert_eq!(ct, expected, "{link}");
        assert_eq!(
            resp.headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("public, max-age=31536000, immutable"),
            "{link}"
        );
    }
    // Another build's asset, or no such file: 404 in the envelope. No key is needed for any of it.
    let (status, v) = portal
        .send(
            portal
                .client
                .get(portal.url("/assets/portal/0000000000000000/app.js")),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "not_found");
    let app_js = links
        .iter()
        .find(|l| l.ends_with("/app.js"))
        .expect("app.js linked");
    let stale = app_js.replace("app.js", "nope.js");
    let (status, _) = portal.send(portal.client.get(portal.url(&stale))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The trailing-slash form goes to the page.
    let resp = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(portal.url("/finops/gpu/"))
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::PERMANENT_REDIRECT);
}

#[tokio::test]
async fn whoami_tells_a_key_its_role_and_tenant() {
    let portal = Portal::start().await;
    let (status, v) = portal.get("/v1/auth/whoami", ADMIN_KEY).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["role"], "platform_admin");
    assert_eq!(v["tenant_id"], Value::Null);
    assert!(v["key_id"].as_str().is_some_and(|k| k.starts_with("key_")));
    let finops = portal.key("finops", Some(ACME)).await;
    let (status, v) = portal.get("/v1/auth/whoami", &finops).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["role"].as_str(), v["tenant_id"].as_str()),
        (Some("finops"), Some(ACME))
    );
    let sampler = portal.key("sampler", None).await;
    let (status, v) = portal.get("/v1/auth/whoami", &sampler).await;
    assert_eq!(
        (status, v["role"].as_str()),
        (StatusCode::OK, Some("sampler"))
    );
    let bad = format!("eai_live_{}", "0".repeat(64));
    let (status, v) = portal.get("/v1/auth/whoami", &bad).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{v}");
    assert_eq!(v["error"]["code"], "unauthorized");
}

#[tokio::test]
async fn an_administrator_reads_every_tenant_and_prices_a_deployment_through_the_form() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    let fleet = portal.load_fleet().await;
    let b = Browser::launch().await;

    b.goto(&portal.url("/finops/gpu")).await;
    b.wait("document.querySelector('#signin-key')", "the sign-in form")
        .await;
    assert_eq!(b.text("h1").await, "Sign in");
    b.screenshot("01-sign-in").await;
    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;
    wait_policies(&b).await;

    // Who is signed in, and the default period.
    assert_eq!(b.text("#who .who-role").await, "Platform administrator");
    assert_eq!(b.text("#who .who-tenant").await, "All tenants");
    let (from, to) = default_period();
    let shown = b
        .js(
            "return [document.querySelector('#period-from').value, document.querySelector('#period-to').value];",
            json!([]),
        )
        .await;
    assert_eq!(shown, json!([from, to]));

    // The tables are the API's figures.
    let api = portal.default_allocation(ADMIN_KEY).await;
    let total: u64 = api["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["samples"].as_u64())
        .sum();
    assert_eq!(
        total, fleet.samples as u64,
        "every sample received is counted once: {api}"
    );
    assert_tables_match(&b, &api).await;
    assert_eq!(api["tenants"].as_array().map(Vec::len), Some(2), "{api}");
    let headers = b
        .js(
            "return [...document.querySelectorAll('#deployments-table thead th')].map(th => th.textContent);",
            json!([]),
        )
        .await;
    assert_eq!(
        headers,
        json!([
            "Deployment id",
            "Samples",
            "Estimated samples",
            "GPUs",
            "GPU hours",
            "Busy GPU hours",
            "Energy (kWh)",
            "Cost",
            "Allocated",
            "Unallocated",
            "Cost per 1M tokens",
            "Unpriced samples"
        ])
    );
    let sd_before = deployment(&api, "experimental-sd")["unpriced_samples"]
        .as_u64()
        .expect("count");
    assert!(sd_before > 0, "the L40S deployment starts unpriced");
    assert!(
        deployment(&api, "vllm-mixtral")["estimated_samples"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{api}"
    );
    assert!(
        b.exists("tr[data-deployment='vllm-mixtral'] .badge.est")
            .await
    );
    assert!(
        b.exists("tr[data-deployment='experimental-sd'] .badge.warn")
            .await
    );
    assert!(
        b.exists("tr[data-deployment='acme-finetune'] .badge.info")
            .await
    );

    // Gaps and findings are listed, not hidden.
    let gaps = api["gaps"].as_array().map_or(0, Vec::len);
    assert!(gaps > 0, "the long outage is a gap: {api}");
    let shown_gaps = b
        .js(
            "return document.querySelectorAll('#gaps-table tbody tr').length;",
            json!([]),
        )
        .await;
    assert_eq!(shown_gaps, json!(gaps));
    assert!(b.text("#gaps h3").await.contains(&gaps.to_string()));
    let findings = api["findings"].as_array().map_or(0, Vec::len);
    let shown_findings = b
        .js(
            "return document.querySelectorAll('#findings li').length;",
            json!([]),
        )
        .await;
    assert_eq!(shown_findings, json!(findings));
    assert!(b.exists("#findings li[data-code='unpriced_samples']").await);

    // The chart: a title, a legend, one stacked segment per (day, deployment) with a cost, and the table
    // fallback whose figures are the API's daily costs.
    let chart = b
        .js(
            "const svg = document.querySelector('#chart svg.chart');
             return { title: svg.querySelector('title').textContent, labelled: svg.getAttribute('aria-labelledby'),
                      role: svg.getAttribute('role'), legend: [...document.querySelectorAll('#chart .legend li')].length,
                      rects: svg.querySelectorAll('rect[data-deployment]').length,
                      cells: [...svg.querySelectorAll('rect[data-deployment]')].map(r => [r.dataset.date, r.dataset.deployment, r.dataset.amount]),
                      rows: document.querySelectorAll('#chart .chart-table tbody tr').length };",
            json!([]),
        )
        .await;
    assert_eq!(chart["title"], "Daily cost per deployment");
    assert_eq!(chart["role"], "img");
    assert!(chart["labelled"]
        .as_str()
        .is_some_and(|l| l.contains("-desc")));
    let daily: Vec<(String, String, String)> = api["daily"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["cost"]["amount"] != "0" && d["cost"]["amount"] != "0.00")
        .map(|d| {
            (
                d["date"].as_str().unwrap_or_default().to_string(),
                d["deployment_id"].as_str().unwrap_or_default().to_string(),
                d["cost"]["amount"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut drawn: Vec<(String, String, String)> =
        serde_json::from_value(chart["cells"].clone()).expect("cells");
    drawn.sort();
    let mut expected = daily.clone();
    expected.sort();
    assert_eq!(drawn, expected, "one segment per daily cost of the API");
    let priced: std::collections::BTreeSet<&str> =
        daily.iter().map(|(_, d, _)| d.as_str()).collect();
    assert_eq!(chart["legend"], json!(priced.len()));
    assert!(chart["rows"].as_u64().is_some_and(|n| n >= 30), "{chart}");

    // The policies table.
    let names = b
        .js(
            "return [...document.querySelectorAll('#policies-table tbody tr')].map(tr => tr.querySelector('th .strong').textContent);",
            json!([]),
        )
        .await;
    assert_eq!(names, json!(["h100-inference", "a100-training"]));
    let policy_rows = table_rows(&b, "#policies-table", "data-policy").await;
    assert_eq!(cell(&policy_rows[0], "gpu_hourly_cost").1, "€2.10");
    assert_eq!(cell(&policy_rows[0], "overhead_pct").1, "18");
    assert_eq!(cell(&policy_rows[0], "pue").1, "1.4");
    b.screenshot("02-admin-allocation").await;

    // Cost per 1M tokens: a column in both tables, and the chart switched to it.
    assert_rates_match(&b, &portal, ADMIN_KEY, "deployment").await;
    assert_rates_match(&b, &portal, ADMIN_KEY, "tenant").await;
    b.click("#chart .seg[data-mode=rate]").await;
    b.wait(
        "document.querySelector('#chart figure[data-mode=rate]')",
        "the cost per token chart",
    )
    .await;
    let rate_chart = b
        .js(
            "return { pressed: document.querySelector('#chart .seg[data-mode=rate]').getAttribute('aria-pressed'),
                      lines: document.querySelectorAll('#chart path[data-deployment]').length,
                      points: document.querySelectorAll('#chart circle[data-rate]').length };",
            json!([]),
        )
        .await;
    assert_eq!(rate_chart["pressed"], "true", "{rate_chart}");
    // The two shared deployments with tokens (llama, mixtral), a point per day with tokens.
    assert_eq!(rate_chart["lines"], 2, "{rate_chart}");
    assert!(
        rate_chart["points"].as_u64().is_some_and(|n| n >= 8),
        "{rate_chart}"
    );
    b.screenshot("02b-cost-per-token").await;
    b.click("#chart .seg[data-mode=cost]").await;
    b.wait(
        "document.querySelector('#chart figure:not([data-mode=rate])')",
        "the cost chart again",
    )
    .await;

    // The form opens on the right from the keyboard, with its defaults, focus on Name.
    b.js(
        "document.querySelector('#policy-new').focus(); return true;",
        json!([]),
    )
    .await;
    b.press("\u{E007}").await;
    b.wait("document.querySelector('#policy-drawer')", "the form")
        .await;
    assert_eq!(b.focused_id().await, "f-name");
    // On the right: against the right edge (once it has slid in), in the right half of a laptop screen.
    b.wait(
        "(() => { const r = document.querySelector('#policy-drawer').getBoundingClientRect();
                  return Math.round(r.right) === window.innerWidth && r.left > window.innerWidth / 2; })()",
        "the form on the right",
    )
    .await;
    let defaults = b
        .js(
            "return ['f-deployment_pattern', 'f-currency', 'f-overhead_pct', 'f-gpu_model', 'f-gpu_hourly_cost', 'f-pue', 'f-energy_kwh_price']
               .map(id => [document.getElementById(id).value, document.getElementById(id).placeholder])
               .concat([[String(document.getElementById('f-enabled').checked), '']]);",
            json!([]),
        )
        .await;
    assert_eq!(
        defaults,
        json!([
            ["*", ""],
            ["USD", ""],
            ["0", ""],
            ["", "L40S"],
            ["", "2.10"],
            ["", "1.4"],
            ["", "0.18"],
            ["true", ""]
        ])
    );
    b.screenshot("03-form-open").await;
    // Focus stays in the form: Tab from its last control comes back to its first (Close).
    b.js(
        "document.querySelector('#form-create').focus(); return true;",
        json!([]),
    )
    .await;
    b.press("\u{E004}").await;
    assert_eq!(b.focused_id().await, "form-close");

    // Client-side checks, with the guide's messages; nothing is sent.
    b.fill("#f-name", "l40s-sd").await;
    b.fill("#f-deployment_pattern", "experimental-*").await;
    b.fill("#f-gpu_model", "L40S").await;
    b.fill("#f-currency", "eur").await;
    b.fill("#f-gpu_hourly_cost", "-0.90").await;
    b.fill("#f-pue", "0.9").await;
    b.fill("#f-energy_kwh_price", "0.18").await;
    b.click("#form-create").await;
    b.wait("document.querySelector('#f-pue-error')", "the PUE message")
        .await;
    assert_eq!(b.text("#f-pue-error").await, "PUE must be 1 or more.");
    assert_eq!(
        b.text("#f-currency-error").await,
        "Currency must be three capital letters, for example EUR."
    );
    assert_eq!(
        b.text("#f-gpu_hourly_cost-error").await,
        "GPU hourly cost must not be negative."
    );
    assert_eq!(
        b.focused_id().await,
        "f-currency",
        "focus on the first bad field"
    );
    b.screenshot("04-form-errors").await;
    assert_eq!(portal.policies().await.len(), 2, "nothing was sent");

    // One at a time: PUE 0.9 alone.
    b.fill("#f-currency", "EUR").await;
    b.fill("#f-gpu_hourly_cost", "0.90").await;
    b.click("#form-create").await;
    b.wait(
        "!document.querySelector('#f-currency-error') && document.querySelector('#f-pue-error')",
        "only the PUE message",
    )
    .await;
    assert!(!b.exists("#f-gpu_hourly_cost-error").await);
    assert_eq!(b.text("#f-pue-error").await, "PUE must be 1 or more.");

    // A field only the service checks: its answer shows under that field, with the code and request id.
    b.fill("#f-pue", "1.3").await;
    b.fill("#f-overhead_pct", "20000").await;
    let effective = fleet.start_day.clone();
    b.set_value("#f-effective_from", &effective).await;
    b.click("#form-create").await;
    b.wait(
        "document.querySelector('#f-overhead_pct-error')",
        "the service's answer",
    )
    .await;
    let (status, refused) = portal
        .post(
            "/v1/finops/allocation-policies",
            ADMIN_KEY,
            &json!({"name": "x", "gpu_hourly_cost": "0.90", "overhead_pct": "20000"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let reason = refused["error"]["details"][0]["reason"]
        .as_str()
        .expect("reason");
    assert_eq!(
        b.text("#f-overhead_pct-error").await,
        format!("Refused by the service: {reason}")
    );
    assert_eq!(
        b.text("#form-error [data-fact='code']").await,
        "validation_error"
    );
    assert!(!b
        .text("#form-error [data-fact='request-id']")
        .await
        .is_empty());
    b.screenshot("05-form-server-error").await;

    // Escape closes the form, focus goes back to the button; reopening starts afresh.
    b.keys("#f-name", "\u{E00C}").await;
    b.wait(
        "!document.querySelector('#policy-drawer')",
        "the form to close",
    )
    .await;
    assert_eq!(b.focused_id().await, "policy-new");
    b.click("#policy-new").await;
    b.wait("document.querySelector('#policy-drawer')", "the form")
        .await;

    // Create: the policy is listed and the L40S samples since its start are priced.
    b.fill("#f-name", "l40s-sd").await;
    b.fill("#f-deployment_pattern", "experimental-*").await;
    b.fill("#f-gpu_model", "L40S").await;
    b.fill("#f-currency", "EUR").await;
    b.fill("#f-gpu_hourly_cost", "0.90").await;
    b.fill("#f-overhead_pct", "10").await;
    b.fill("#f-pue", "1.3").await;
    b.fill("#f-energy_kwh_price", "0.18").await;
    b.set_value("#f-effective_from", &effective).await;
    b.click("#form-create").await;
    b.wait(
        "!document.querySelector('#policy-drawer')",
        "the form to close",
    )
    .await;
    b.wait(
        "document.querySelectorAll('#policies-table tbody tr').length === 3",
        "the new policy",
    )
    .await;
    b.wait(
        "document.querySelector(\"tr[data-deployment='experimental-sd'] td[data-col='unpriced_samples']\")?.dataset.value === '0'",
        "Unpriced samples to fall",
    )
    .await;
    assert!(b
        .text("#toast")
        .await
        .starts_with("Policy l40s-sd created (alp_"));
    assert_eq!(b.focused_id().await, "policy-new");
    let created = portal.policies().await;
    let new = created
        .iter()
        .find(|p| p["name"] == "l40s-sd")
        .expect("created");
    assert_eq!(
        (
            new["deployment_pattern"].as_str(),
            new["gpu_model"].as_str(),
            new["currency"].as_str(),
            new["pue"].as_str(),
            new["energy_kwh_price"].as_str(),
            new["enabled"].as_bool()
        ),
        (
            Some("experimental-*"),
            Some("L40S"),
            Some("EUR"),
            Some("1.3"),
            Some("0.18"),
            Some(true)
        )
    );
    let after = portal.default_allocation(ADMIN_KEY).await;
    let sd = deployment(&after, "experimental-sd");
    assert_eq!(sd["unpriced_samples"], 0, "{sd}");
    assert_eq!(sd["currency"], "EUR");
    assert_tables_match(&b, &after).await;
    b.screenshot("06-policy-created").await;
    b.assert_clean_console().await;
}

#[tokio::test]
async fn finops_tenant_admin_and_auditor_read_their_tenant_without_the_button() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    portal.load_fleet().await;
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;

    for (role, tenant, label) in [
        ("finops", ACME, "FinOps analyst"),
        ("tenant_admin", GLOBEX, "Tenant administrator"),
        ("auditor", ACME, "Auditor"),
    ] {
        let key = portal.key(role, Some(tenant)).await;
        b.sign_in(&key).await;
        wait_allocation(&b).await;
        wait_policies(&b).await;
        assert_eq!(b.text("#who .who-role").await, label);
        assert_eq!(b.text("#who .who-tenant").await, format!("Tenant {tenant}"));
        let api = portal.default_allocation(&key).await;
        assert_tables_match(&b, &api).await;
        let tenants = table_rows(&b, "#tenants-table", "data-tenant").await;
        assert_eq!(tenants.len(), 1, "{role} sees its own tenant only");
        assert_eq!(tenants[0]["key"], tenant);
        assert!(
            !b.exists("#policy-new").await,
            "{role}: no New allocation policy"
        );
        assert!(b.exists("#policies-refresh").await);
        assert_eq!(
            b.js(
                "return document.querySelectorAll('#policies-table tbody tr').length;",
                json!([])
            )
            .await,
            json!(2)
        );
        if role == "finops" {
            b.screenshot("07-finops").await;
            // Refresh (the round arrow) reloads the policies.
            b.click("#policies-refresh").await;
            wait_policies(&b).await;
            // A phone: the page fits the width, the wide tables scroll sideways.
            b.phone(Some(844)).await;
            let fit = b
                .js(
                    "const wrap = document.querySelector('#deployments .table-wrap');
                     return [document.documentElement.scrollWidth <= window.innerWidth + 1,
                             wrap.scrollWidth > wrap.clientWidth, getComputedStyle(wrap).overflowX];",
                    json!([]),
                )
                .await;
            assert_eq!(fit, json!([true, true, "auto"]));
            let height = b
                .js("return document.documentElement.scrollHeight;", json!([]))
                .await;
            b.phone(height.as_i64()).await;
            b.screenshot("08-phone").await;
            b.phone(None).await;
        }
        b.sign_out().await;
    }
    b.assert_clean_console().await;
}

#[tokio::test]
async fn tenants_show_by_name_and_an_administrator_views_the_page_as_one() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    portal.load_fleet().await;
    let (status, v) = portal
        .post(
            "/v1/tenants",
            ADMIN_KEY,
            &json!({ "slug": "acme", "name": "Acme Corp", "id": ACME }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    // A budget of acme with a committed reservation: the page shows what is spent, held and left.
    let (status, v) = portal
        .post(
            "/v1/finops/budgets",
            ADMIN_KEY,
            &json!({ "tenant_id": ACME, "name": "acme monthly", "limit": { "amount": "100", "currency": "EUR" },
                     "thresholds_pct": [2, 50], "enforce": true }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let dev = portal.key("developer", Some(ACME)).await;
    let (status, r) = portal
        .post(
            "/v1/finops/reservations",
            &dev,
            &json!({ "action": "llm.invoke", "estimate": { "cost": "3" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    let commit = format!(
        "/v1/finops/reservations/{}/commit",
        r["id"].as_str().expect("id")
    );
    let (status, c) = portal
        .post(&commit, &dev, &json!({ "actual": { "cost": "2.10" } }))
        .await;
    assert_eq!(status, StatusCode::OK, "{c}");
    let (status, _) = portal
        .post(
            "/v1/finops/reservations",
            &dev,
            &json!({ "action": "llm.invoke", "estimate": { "cost": "1.5" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;
    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;
    b.wait(
        "document.querySelector('#tenants-table .tenant-name')",
        "the tenant names",
    )
    .await;
    b.wait("document.querySelector('#budgets-table')", "the budgets")
        .await;
    let budget = b
        .js(
            "const tr = document.querySelector('#budgets-table tr[data-budget=\"bud_1\"]');
             return Object.fromEntries([...tr.querySelectorAll('[data-col]')].map(td => [td.dataset.col, td.dataset.value || td.textContent.trim()]));",
            json!([]),
        )
        .await;
    assert_eq!(budget["limit"], "100.00", "{budget}");
    assert_eq!(budget["spent"], "2.10", "{budget}");
    assert_eq!(budget["held"], "1.50", "{budget}");
    assert_eq!(budget["left"], "96.40", "{budget}");
    assert_eq!(budget["thresholds"], "2 %50 %", "{budget}");
    assert!(
        b.exists("#budgets-table tr[data-budget='bud_1'] .badge.warn")
            .await,
        "the 2 % threshold is reached"
    );

    // A registered tenant by name (its id on hover); one only seen in data by id.
    let names = b
        .js(
            "return Object.fromEntries([...document.querySelectorAll('#tenants-table tbody tr')].map(tr => {
                const th = tr.querySelector('th span'); return [tr.dataset.tenant, [th.textContent, th.title]]; }));",
            json!([]),
        )
        .await;
    assert_eq!(
        names,
        json!({ ACME: ["Acme Corp acme", ACME], GLOBEX: [GLOBEX, GLOBEX] })
    );

    // View as acme: the page is what acme's readers see, exactly as the API gives it under X-EAI-Tenant.
    let options = b
        .js(
            "return [...document.querySelectorAll('#view-as option')].map(o => [o.value, o.textContent]);",
            json!([]),
        )
        .await;
    assert_eq!(
        options,
        json!([
            ["", "The platform (all tenants)"],
            [ACME, "Acme Corp"],
            [GLOBEX, GLOBEX]
        ])
    );
    b.set_value("#view-as", ACME).await;
    b.wait(
        "document.querySelectorAll('#tenants-table tbody tr').length === 1 && document.querySelector('#view-as-hint').textContent.includes('Acme Corp')",
        "the page as acme",
    )
    .await;
    wait_policies(&b).await;
    let (from, to) = default_period();
    let path = format!("/v1/finops/gpu/allocation?from={from}&to={to}");
    let (status, as_acme) = portal
        .send(
            portal
                .client
                .get(portal.url(&path))
                .bearer_auth(ADMIN_KEY)
                .header("X-EAI-Tenant", "acme"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{as_acme}");
    let finops = portal.key("finops", Some(ACME)).await;
    assert_eq!(
        as_acme,
        portal.default_allocation(&finops).await,
        "signed in to acme, the platform reads what acme's finops reads"
    );
    assert_tables_match(&b, &as_acme).await;
    assert!(
        b.text("#chart .note").await.len() > 10,
        "the chart says it is scoped"
    );
    b.screenshot("07b-view-as-tenant").await;

    // Back to the platform: every tenant again.
    b.set_value("#view-as", "").await;
    b.wait(
        "document.querySelectorAll('#tenants-table tbody tr').length === 2",
        "the platform view",
    )
    .await;

    // A tenant's own key shows its name in the top bar.
    b.sign_out().await;
    b.sign_in(&finops).await;
    wait_allocation(&b).await;
    assert_eq!(b.text("#who .who-tenant").await, "Tenant Acme Corp");
    assert!(
        !b.exists("#view-as").await,
        "only the platform views as a tenant"
    );
    b.assert_clean_console().await;
}

#[tokio::test]
async fn developer_viewer_and_security_officer_get_a_not_available_state() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;
    for (role, tenant) in [
        ("developer", Some(ACME)),
        ("viewer", Some(GLOBEX)),
        ("security_officer", Some(ACME)),
        ("sampler", None),
    ] {
        let key = portal.key(role, tenant).await;
        b.sign_in(&key).await;
        b.wait(
            "document.querySelector('#denied')",
            "the not-available state",
        )
        .await;
        assert_eq!(
            b.text("#denied h1").await,
            "The FinOps section is not available for your role"
        );
        assert!(!b.exists("#alloc-body").await, "no allocation for {role}");
        assert!(!b.exists(".error-panel").await, "not an error for {role}");
        if role == "viewer" {
            b.screenshot("09-not-available").await;
        }
        b.sign_out().await;
    }
    b.assert_clean_console().await;
}

#[tokio::test]
async fn errors_show_the_envelope_and_retry_recovers_once_the_server_is_back() {
    let _one = BROWSER.lock().await;
    let mut portal = Portal::start().await;
    portal.load_fleet().await;
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;

    // A key the service does not know: its unauthorized message, code and request id.
    let bad = format!("eai_live_{}", "f".repeat(64));
    let (status, expected) = portal.get("/v1/auth/whoami", &bad).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    b.sign_in(&bad).await;
    b.wait(
        "document.querySelector('#signin-error')",
        "the sign-in error",
    )
    .await;
    assert_eq!(
        b.text("#signin-error .error-text").await,
        expected["error"]["message_i18n"]["en"]
            .as_str()
            .expect("message")
    );
    assert_eq!(
        b.text("#signin-error [data-fact='code']").await,
        "unauthorized"
    );
    assert!(!b
        .text("#signin-error [data-fact='request-id']")
        .await
        .is_empty());
    b.screenshot("10-bad-key").await;

    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;

    // A period the service refuses: the error panel with its message, code and request id.
    b.set_value("#period-from", "2020-01-01").await;
    b.wait("document.querySelector('#alloc-error')", "the error panel")
        .await;
    let (_, refused) = portal
        .get(
            &format!(
                "/v1/finops/gpu/allocation?from=2020-01-01&to={}",
                default_period().1
            ),
            ADMIN_KEY,
        )
        .await;
    assert_eq!(
        b.text("#alloc-error .error-text").await,
        refused["error"]["message_i18n"]["en"]
            .as_str()
            .expect("message")
    );
    assert_eq!(
        b.text("#alloc-error [data-fact='code']").await,
        "validation_error"
    );
    let rid = b.text("#alloc-error [data-fact='request-id']").await;
    assert_eq!(rid.len(), 36, "a uuid: {rid}");

    // From after To: said on the spot, nothing sent.
    b.set_value("#period-from", "2099-01-01").await;
    b.wait(
        "!document.querySelector('#period-error').hidden",
        "the period message",
    )
    .await;
    assert_eq!(
        b.text("#period-error").await,
        "From must be on or before To."
    );

    // The server goes away: the panel says it cannot be reached; Retry works once it is back.
    portal.stop().await;
    b.set_value("#period-from", &default_period().0).await;
    b.wait(
        "document.querySelector('#alloc-error') && !document.querySelector(\"#alloc-error [data-fact='code']\")",
        "the network error",
    )
    .await;
    assert_eq!(
        b.text("#alloc-error .error-text").await,
        "The service cannot be reached. Check that it is running and that you are connected, then retry."
    );
    b.screenshot("11-server-down").await;
    b.click("#alloc-error [data-action='retry']").await;
    b.wait(
        "document.querySelector('#alloc-error') && !document.querySelector('#alloc-loading')",
        "the retry to fail again",
    )
    .await;
    portal.serve().await;
    b.click("#alloc-error [data-action='retry']").await;
    b.wait(
        "document.querySelector('#deployments-table')",
        "the allocation after Retry",
    )
    .await;
    let api = portal.default_allocation(ADMIN_KEY).await;
    assert_tables_match(&b, &api).await;
    assert!(!b.exists("#alloc-error").await);
    b.assert_clean_console().await;
}

#[tokio::test]
async fn an_empty_store_shows_no_gpu_usage_and_no_allocation_policy() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;
    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;
    wait_policies(&b).await;
    assert_eq!(b.text("#empty-usage .state-title").await, "No GPU usage");
    assert!(b
        .text("#empty-usage .muted")
        .await
        .contains("GPU samples are sent by vLLM deployments"));
    assert_eq!(
        b.text("#empty-policies .state-title").await,
        "No allocation policy"
    );
    assert!(!b.exists("#deployments-table").await);
    assert!(!b.exists("#tenants-table").await);
    assert!(b.exists("#policy-new").await);
    b.screenshot("12-empty").await;
    b.assert_clean_console().await;
}

#[tokio::test]
async fn french_is_the_default_for_a_french_browser_labels_numbers_and_the_choice_are_remembered() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    portal.load_fleet().await;
    let b = Browser::launch_with_lang("fr-FR").await;
    b.goto(&portal.url("/finops/gpu")).await;

    // navigator.language decides at first: French.
    b.wait("document.querySelector('#signin-key')", "the sign-in form")
        .await;
    assert_eq!(b.text("h1").await, "Connexion");
    assert_eq!(
        b.js("return document.documentElement.lang;", json!([]))
            .await,
        json!("fr")
    );

    // The unauthorized message in French, as the envelope gives it.
    let bad = format!("eai_live_{}", "e".repeat(64));
    let (_, expected) = portal.get("/v1/auth/whoami", &bad).await;
    b.sign_in(&bad).await;
    b.wait(
        "document.querySelector('#signin-error')",
        "the sign-in error",
    )
    .await;
    assert_eq!(
        b.text("#signin-error .error-text").await,
        expected["error"]["message_i18n"]["fr"]
            .as_str()
            .expect("message")
    );

    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;
    wait_policies(&b).await;
    assert_eq!(b.text("main h1").await, "Allocation GPU");
    let headers = b
        .js(
            "return [...document.querySelectorAll('#deployments-table thead th')].map(th => th.textContent);",
            json!([]),
        )
        .await;
    assert_eq!(headers[7], "Coût");
    assert_eq!(headers[10], "Coût par million de jetons");
    assert_eq!(headers[11], "Échantillons non tarifés");
    assert_eq!(b.text("#policies-title").await, "Politiques d'allocation");
    assert_eq!(
        b.text("#policy-new").await,
        "Nouvelle politique d'allocation"
    );

    // `1 234,56 €`: narrow no-break spaces between groups, a comma, the sign after a no-break space.
    let api = portal.default_allocation(ADMIN_KEY).await;
    let rows = table_rows(&b, "#deployments-table", "data-deployment").await;
    let mut checked = 0;
    for d in api["deployments"].as_array().into_iter().flatten() {
        if d["currency"] != "EUR" {
            continue;
        }
        let row = rows
            .iter()
            .find(|r| r["key"] == d["deployment_id"])
            .expect("row");
        for col in ["cost", "allocated", "unallocated"] {
            let (v, text) = cell(row, col);
            assert_eq!(text, fr_euros(v), "{col} of {}", d["deployment_id"]);
            checked += 1;
        }
        let (v, text) = cell(row, "samples");
        let n: u64 = v.parse().expect("count");
        if n >= 1000 {
            assert!(text.contains('\u{202f}'), "grouped: {text:?}");
        }
    }
    assert!(checked >= 6, "at least two priced deployments checked");
    let hours = b
        .text("tr[data-deployment='vllm-mixtral'] td[data-col='gpu_hours']")
        .await;
    assert!(hours.contains(','), "decimal comma: {hours}");
    let share = b.text("#tenants-table tbody tr td[data-col='share']").await;
    assert!(
        share.ends_with("\u{a0}%") || share.ends_with("\u{202f}%"),
        "{share:?}"
    );
    b.screenshot("13-french").await;

    // The form in French, with its messages.
    b.click("#policy-new").await;
    b.wait("document.querySelector('#policy-drawer')", "the form")
        .await;
    assert_eq!(
        b.text("#form-title").await,
        "Nouvelle politique d'allocation"
    );
    b.fill("#f-name", "essai").await;
    b.fill("#f-gpu_hourly_cost", "2,10").await;
    b.fill("#f-pue", "0,9").await;
    b.click("#form-create").await;
    b.wait("document.querySelector('#f-pue-error')", "the PUE message")
        .await;
    assert_eq!(
        b.text("#f-pue-error").await,
        "Le PUE doit être supérieur ou égal à 1."
    );
    assert!(
        !b.exists("#f-gpu_hourly_cost-error").await,
        "2,10 is a number"
    );
    b.screenshot("14-french-form").await;
    b.keys("#f-pue", "\u{E00C}").await;
    b.wait(
        "!document.querySelector('#policy-drawer')",
        "the form to close",
    )
    .await;

    // Switch to English: remembered over a reload (and the key too, for this tab).
    b.set_value("#lang", "en").await;
    b.wait(
        "document.querySelector('main h1')?.textContent === 'GPU allocation'",
        "English",
    )
    .await;
    b.goto(&portal.url("/finops/gpu")).await;
    wait_allocation(&b).await;
    assert_eq!(b.text("main h1").await, "GPU allocation");
    assert_eq!(b.text("#who .who-role").await, "Platform administrator");
    b.set_value("#lang", "fr").await;
    b.wait(
        "document.querySelector('main h1')?.textContent === 'Allocation GPU'",
        "French",
    )
    .await;
    b.goto(&portal.url("/finops/gpu")).await;
    wait_allocation(&b).await;
    assert_eq!(b.text("main h1").await, "Allocation GPU");

    // Sign out forgets the key.
    b.sign_out().await;
    b.goto(&portal.url("/finops/gpu")).await;
    b.wait("document.querySelector('#signin-key')", "the sign-in form")
        .await;
    assert_eq!(
        b.js("return sessionStorage.length;", json!([])).await,
        json!(0)
    );
    b.assert_clean_console().await;
}

/// Clicking a deployment's name opens why it costs what it does, hour by hour (the chart, the rounding, the
/// hours), in English and in French; clicking a tenant opens its charge as the tenant sees it (the other tenants
/// summed, never named); a tenant's reader sees the same. The rounding's lines are the API's explanation and
/// the allocation's items.
#[tokio::test]
async fn a_deployments_cost_and_a_tenants_charge_are_explained_hour_by_hour() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    portal.load_fleet().await;
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;
    b.sign_in(ADMIN_KEY).await;
    wait_allocation(&b).await;
    let (from, to) = default_period();
    let index = row_index(&b, "#deployments-table", "deployment", "vllm-llama-70b").await;
    let opener = format!("#explain-dep-{index}");
    b.click(&opener).await;
    b.wait(
        "document.querySelector('#explain-rounding')",
        "the explanation",
    )
    .await;
    assert!(
        b.text("#explain-title")
            .await
            .starts_with("Why vllm-llama-70b costs €"),
        "{}",
        b.text("#explain-title").await
    );
    let bars = b
        .js(
            "return document.querySelectorAll('#explain-chart rect').length;",
            json!([]),
        )
        .await;
    assert!(bars.as_u64().unwrap_or(0) > 24, "hourly bars: {bars}");
    // The rounding shown is the API's, line for line.
    let path = format!(
        "/v1/finops/gpu/allocation/explain?deployment_id=vllm-llama-70b&from={from}&to={to}"
    );
    let (status, api) = portal.get(&path, ADMIN_KEY).await;
    assert_eq!(status, StatusCode::OK, "{api}");
    let want: Vec<Value> = api["rounding"][0]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let party = match l["party"]["kind"].as_str().unwrap() {
                "tenant" => l["party"]["tenant_id"].clone(),
                "other_tenants" => json!("others"),
                _ => json!("idle"),
            };
            json!([party, l["amount"]])
        })
        .collect();
    assert_eq!(rounding_rows(&b).await, json!(want));
    b.screenshot("15-explain").await;
    // Where it ran: the deployment's pods, nodes and GPUs, their costs adding up to the deployment's.
    b.wait("document.querySelector('#explain-pods')", "the pods")
        .await;
    let costs = b
        .js(
            "return [...document.querySelectorAll('#explain-pods tbody td[data-col=cost]')].map(td => td.dataset.value);",
            json!([]),
        )
        .await;
    let costs = costs.as_array().expect("pod costs");
    assert!(!costs.is_empty(), "no pod rows");
    let sum: rust_decimal::Decimal = costs
        .iter()
        .map(|v| rust_decimal::Decimal::from_str(v.as_str().expect("a cost")).expect("a decimal"))
        .sum();
    assert_eq!(
        sum.to_string(),
        api["rounding"][0]["cost"].as_str().unwrap(),
        "the pods' costs add up to the deployment's"
    );
    // Each pod says how its share of the GPU was obtained: the demo's GPUs are each one pod's.
    let shares = b
        .js(
            "return [...document.querySelectorAll('#explain-pods tbody td[data-col=share]')].map(td => [td.dataset.value, td.textContent]);",
            json!([]),
        )
        .await;
    assert_eq!(
        shares.as_array().map(Vec::len),
        Some(costs.len()),
        "a share per pod: {shares}"
    );
    assert!(
        shares
            .as_array()
            .expect("shares")
            .iter()
            .all(|s| s == &json!(["exclusive", "whole GPU"])),
        "{shares}"
    );
    b.js(
        "document.querySelector('#explain-pods').scrollIntoView(); return null;",
        json!([]),
    )
    .await;
    b.screenshot("18-explain-pods").await;
    // Escape closes it and gives the focus back.
    b.press("\u{E00C}").await;
    assert!(!b.exists("#explain-dialog").await);
    assert_eq!(b.focused_id().await, opener.trim_start_matches('#'));
    // In French.
    b.set_value("#lang", "fr").await;
    b.click(&opener).await;
    b.wait(
        "document.querySelector('#explain-rounding')",
        "l'explication",
    )
    .await;
    assert!(
        b.text("#explain-title")
            .await
            .starts_with("Pourquoi vllm-llama-70b coûte"),
        "{}",
        b.text("#explain-title").await
    );
    b.screenshot("16-explain-fr").await;
    b.press("\u{E00C}").await;
    b.set_value("#lang", "en").await;

    // A tenant's charge, as the tenant sees it: ACME's lines, GLOBEX summed into the other tenants.
    let index = row_index(&b, "#tenants-table", "tenant", ACME).await;
    b.click(&format!("#explain-tenant-{index}")).await;
    b.wait(
        "document.querySelector('#explain-rounding')",
        "the tenant's charge",
    )
    .await;
    // Its charges to pick from, largest first: ACME's dedicated deployment, then back to the shared one.
    let picked = b
        .js(
            "return [...document.querySelectorAll('#explain-deployment option')].map(o => o.value);",
            json!([]),
        )
        .await;
    assert!(
        picked.as_array().is_some_and(|v| v.len() >= 2
            && v.contains(&json!("acme-finetune"))
            && v.contains(&json!("vllm-llama-70b"))),
        "{picked}"
    );
    b.set_value("#explain-deployment", "acme-finetune").await;
    b.wait(
        "document.querySelector('#explain-title').textContent.includes('acme-finetune')",
        "the dedicated deployment",
    )
    .await;
    assert!(
        b.text("#explain-title")
            .await
            .starts_with(&format!("Why {ACME} is charged €")),
        "{}",
        b.text("#explain-title").await
    );
    b.set_value("#explain-deployment", "vllm-llama-70b").await;
    b.wait(
        "document.querySelector('#explain-rounding tr[data-party=others]')",
        "the shared deployment's charge",
    )
    .await;
    let dialog = b.text("#explain-dialog").await;
    assert!(!dialog.contains(GLOBEX), "{dialog}");
    let parties: Vec<String> = rounding_rows(&b)
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect();
    assert!(
        parties.contains(&ACME.to_string()) && parties.contains(&"others".to_string()),
        "{parties:?}"
    );
    b.screenshot("17-explain-tenant").await;
    b.press("\u{E00C}").await;
    b.sign_out().await;

    // ACME's FinOps reader: the same view of the shared deployment, GLOBEX never named.
    let key = portal.key("finops", Some(ACME)).await;
    b.sign_in(&key).await;
    wait_allocation(&b).await;
    let index = row_index(&b, "#deployments-table", "deployment", "vllm-llama-70b").await;
    b.click(&format!("#explain-dep-{index}")).await;
    b.wait(
        "document.querySelector('#explain-rounding')",
        "the explanation",
    )
    .await;
    assert!(!b.text("#explain-dialog").await.contains(GLOBEX));
    // Its title says what the tenant pays on it, not the deployment's whole cost.
    assert!(
        b.text("#explain-title")
            .await
            .starts_with(&format!("Why {ACME} is charged €")),
        "{}",
        b.text("#explain-title").await
    );
    b.press("\u{E00C}").await;
    b.assert_clean_console().await;
}

/// The explanation dialog's rounding table: `[party, amount]` per line.
async fn rounding_rows(b: &Browser) -> Value {
    b.js(
        "return [...document.querySelectorAll('#explain-rounding tbody tr')].map(r =>
           [r.dataset.party, r.querySelector('[data-col=amount]').dataset.value]);",
        json!([]),
    )
    .await
}

/// The index of the row of `table` whose `data-<key>` is `value` (-1 if none): the suffix of its buttons' ids.
async fn row_index(b: &Browser, table: &str, key: &str, value: &str) -> Value {
    b.js(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')]
           .findIndex(r => r.dataset[arguments[1]] === arguments[2]);",
        json!([table, key, value]),
    )
    .await
}

// ------------------------------------------------------------------------------------------------ statements

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The month before this one (UTC): `("2026-11", "November 2026")`.
fn last_month() -> (String, String) {
    let today = eai_api::state::now().to_string();
    let year: i32 = today[..4].parse().expect("year");
    let month: usize = today[5..7].parse().expect("month");
    let (y, m) = if month == 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    };
    (format!("{y}-{m:02}"), format!("{} {y}", MONTHS[m - 1]))
}

impl Portal {
    /// A closed month (the one before this one) of two registered tenants on dedicated deployments, priced in
    /// EUR; every GPU at 400 W, sampled every 5 minutes from the 10th at midnight:
    /// - acme-finetune (A100, Acme) 10 h: 1.60 x 10 x 1.15 = 18.40 + 4 kWh x 1.4 x 0.21 = 1.176 -> 19.576 -> 19.58;
    /// - acme-embed (H100, Acme) 4 h: 2.10 x 4 x 1.18 = 9.912 + 1.6 x 1.4 x 0.21 = 0.4704 -> 10.3824 -> 10.38;
    /// - globex-chat (H100, Globex) 6 h: 2.10 x 6 x 1.18 = 14.868 + 2.4 x 1.4 x 0.21 = 0.7056 -> 15.5736 -> 15.57;
    /// - globex-batch-01 to -40 (an H100 each, Globex) 1 h: 2.10 x 1.18 = 2.478 + 0.4 x 1.4 x 0.21 = 0.1176 ->
    ///   2.5956 -> 2.60 each (a statement of 41 lines: more than one printed page).
    ///
    /// Acme's month: 19.58 + 10.38 = 29.96; Globex's: 15.57 + 40 x 2.60 = 119.57. Returns the moment the samples
    /// start.
    async fn load_closed_month(&self) -> i64 {
        for (id, slug, name) in [
            (ACME, "acme", "Acme Corp"),
            (GLOBEX, "globex", "Globex Corporation"),
        ] {
            let (status, v) = self
                .post(
                    "/v1/tenants",
                    ADMIN_KEY,
                    &json!({ "slug": slug, "name": name, "id": id }),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
        }
        let (period, _) = last_month();
        let first_day = format!("{period}-01T00:00:00Z");
        let start = Timestamp::parse_rfc3339(&format!("{period}-10T00:00:00Z"))
            .expect("a date")
            .0;
        let a100 = "NVIDIA A100-SXM4-80GB";
        let h100 = "NVIDIA H100 80GB HBM3";
        let mut gpus = vec![
            (
                "acme-finetune".to_string(),
                "GPU-a100-0101".to_string(),
                a100,
                ACME,
                10,
            ),
            ("acme-embed".into(), "GPU-h100-0101".into(), h100, ACME, 4),
            (
                "globex-chat".into(),
                "GPU-h100-0102".into(),
                h100,
                GLOBEX,
                6,
            ),
        ];
        for i in 1..=40 {
            gpus.push((
                format!("globex-batch-{i:02}"),
                format!("GPU-h100-02{i:02}"),
                h100,
                GLOBEX,
                1,
            ));
        }
        let mut samples = Vec::new();
        for (deployment, uuid, model, owner, hours) in &gpus {
            for k in 1..=hours * 12 {
                samples.push(statement_sample(
                    deployment,
                    uuid,
                    model,
                    owner,
                    start + k * 300_000,
                ));
            }
        }
        let (status, v) = self
            .post(
                "/v1/finops/gpu/samples",
                ADMIN_KEY,
                &json!({ "samples": samples }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        for (name, model, hourly, overhead) in [
            ("h100-inference", "H100", "2.10", "18"),
            ("a100-training", "A100", "1.60", "15"),
        ] {
            let body = json!({
                "name": name, "deployment_pattern": "*", "gpu_model": model, "currency": "EUR",
                "gpu_hourly_cost": hourly, "overhead_pct": overhead, "energy_kwh_price": "0.21", "pue": "1.4",
                "effective_from": first_day,
            });
            let (status, v) = self
                .post("/v1/finops/allocation-policies", ADMIN_KEY, &body)
                .await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
        }
        start
    }
}

/// One 5-minute sample at 400 W ending at `end_ms`: 400 x 300 / 3600 = 33.3… Wh, 400 Wh an hour.
fn statement_sample(deployment: &str, uuid: &str, model: &str, owner: &str, end_ms: i64) -> Value {
    json!({
        "node": "gpu-node-9", "gpu_uuid": uuid, "model": model, "namespace": "eai-inference",
        "pod": format!("{deployment}-0"), "deployment_id": deployment, "tenant_id": owner,
        "window_seconds": 300, "utilization": "0.90", "memory_used_gb": "40", "power_w": "400.0",
        "timestamp": Timestamp(end_ms).to_string(),
    })
}

/// Standard base64 (what WebDriver's print answers) to bytes.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
    {
        let v = ALPHABET
            .iter()
            .position(|&a| a == c)
            .unwrap_or_else(|| panic!("not base64: {:?}", c as char));
        acc = (acc << 6) | u32::try_from(v).expect("six bits");
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).expect("a byte"));
        }
    }
    out
}

/// What poppler's `pdfinfo` and `pdftotext -layout` read in a PDF: (its info lines, its text).
fn read_pdf(path: &Path) -> (String, String) {
    let run = |tool: &str, args: &[&str]| {
        let out = Command::new(tool)
            .args(args)
            .arg(path)
            .args(if tool == "pdftotext" { &["-"][..] } else { &[][..] })
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "{tool} does not run ({e}): the statement's print test needs Debian's `poppler-utils` \
                     (scripts/test.sh installs it)"
                )
            });
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    (run("pdfinfo", &[]), run("pdftotext", &["-layout"]))
}

/// The page count `pdfinfo` reads.
fn pdf_pages(info: &str) -> u32 {
    info.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page count in {info}"))
}

impl Browser {
    /// The page printed by Chromium (WebDriver's `POST /session/{id}/print`) on A4 (21 x 29.7 cm), written to
    /// `target/portal-screenshots/<name>.pdf`: (its info, its text).
    async fn print_pdf(&self, name: &str) -> (String, String) {
        let answer = self
            .client
            .issue_cmd(Vendor {
                path: "print",
                body: json!({
                    "page": { "width": 21.0, "height": 29.7 },
                    "margin": { "top": 0, "bottom": 0, "left": 0, "right": 0 },
                    "orientation": "portrait", "background": false, "shrinkToFit": false,
                }),
            })
            .await
            .unwrap_or_else(|e| panic!("WebDriver print: {e}"));
        let pdf = base64_decode(answer.as_str().expect("base64 text"));
        assert!(pdf.starts_with(b"%PDF-"), "not a PDF");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let path = dir.join(format!("{name}.pdf"));
        std::fs::write(&path, &pdf).expect("PDF written");
        read_pdf(&path)
    }
}

/// The statement view's lines (`table`): `[deployment, amount as given, amount as shown]` per row.
async fn statement_rows(b: &Browser, table: &str) -> Value {
    b.js(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')].map(r => [r.dataset.deployment,
           r.querySelector('[data-col=amount]').dataset.value, r.querySelector('[data-col=amount]').textContent]);",
        json!([table]),
    )
    .await
}

/// The statement view's totals (`table`): `[currency, amount as given, amount as shown]` per row.
async fn statement_totals(b: &Browser, table: &str) -> Value {
    b.js(
        "return [...document.querySelectorAll(arguments[0] + ' tfoot tr')].map(r => [r.dataset.currency,
           r.querySelector('[data-col=total]').dataset.value, r.querySelector('[data-col=total]').textContent]);",
        json!([table]),
    )
    .await
}

/// Asserts that `text` (a printed page's) holds each of `wanted` and none of `unwanted`.
fn assert_printed(text: &str, wanted: &[&str], unwanted: &[&str]) {
    for w in wanted {
        assert!(text.contains(w), "the PDF lacks {w:?}:\n{text}");
    }
    for u in unwanted {
        assert!(!text.contains(u), "the PDF shows {u:?}:\n{text}");
    }
}

/// Last month's statements, issued from the page by a platform administrator (again: nothing new), listed newest
/// first, one opened as a printable page: its figures are the API's and the hand-computed ones, and Chromium
/// prints it on one A4 page without the portal's menus and buttons. A sample arriving after issue shows as an
/// adjustment (on screen and on paper), never a rewrite; a tenant's reader sees only its own statements.
#[tokio::test]
async fn statements_are_issued_listed_opened_and_printed_on_a4() {
    let _one = BROWSER.lock().await;
    let portal = Portal::start().await;
    let start = portal.load_closed_month().await;
    let (period, month) = last_month();
    let b = Browser::launch().await;
    b.goto(&portal.url("/finops/gpu")).await;
    b.sign_in(ADMIN_KEY).await;
    b.wait(
        "document.querySelector('#empty-statements')",
        "no statement yet",
    )
    .await;
    assert_eq!(
        b.text("#statements-issue").await,
        format!("Issue statements for {month}")
    );

    // Issue: Acme's and Globex's statements (what the API then lists).
    b.click("#statements-issue").await;
    b.wait(
        "document.querySelector('#statements-result [data-kind=issued]')",
        "the statements issued",
    )
    .await;
    let (status, list) = portal
        .get(
            &format!("/v1/finops/gpu/statements?period={period}"),
            ADMIN_KEY,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let listed: Vec<Value> = list["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .map(|s| s["number"].clone())
        .collect();
    let number_of = |tenant: &str| -> String {
        list["statements"]
            .as_array()
            .and_then(|ss| ss.iter().find(|s| s["tenant_id"] == tenant))
            .and_then(|s| s["number"].as_str())
            .unwrap_or_else(|| panic!("no statement of {tenant}: {list}"))
            .to_string()
    };
    let (acme, globex) = (number_of(ACME), number_of(GLOBEX));
    let shown = |kind: &str| {
        format!(
            "return [...document.querySelectorAll('#statements-result [data-kind={kind}] li')].map(li => li.dataset.statement).sort();"
        )
    };
    let mut sorted = listed.clone();
    sorted.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    assert_eq!(b.js(&shown("issued"), json!([])).await, json!(sorted));
    b.wait(
        "document.querySelectorAll('#statements-table tbody tr').length >= 2",
        "the list",
    )
    .await;
    // The list is the API's, in its order, each total as given.
    let rows = b
        .js(
            "return [...document.querySelectorAll('#statements-table tbody tr')].map(r => [r.dataset.statement,
               r.children[1].textContent, [...r.querySelectorAll('[data-col=totals] [data-value]')].map(s => s.dataset.value)]);",
            json!([]),
        )
        .await;
    let want: Vec<Value> = list["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .map(|s| {
            let totals: Vec<&Value> = s["totals"]
                .as_array()
                .expect("totals")
                .iter()
                .map(|m| &m["amount"])
                .collect();
            let name = s["tenant_name"]
                .as_str()
                .unwrap_or("Unallocated capacity (the platform's own)");
            json!([s["number"], name, totals])
        })
        .collect();
    assert_eq!(rows, json!(want));
    let acme_row = want
        .iter()
        .find(|r| r[0] == acme.as_str())
        .expect("Acme's row");
    assert_eq!(acme_row[1], "Acme Corp");
    assert_eq!(acme_row[2], json!(["29.96"]), "19.58 + 10.38");
    // Again: nothing new, the same numbers already issued.
    b.click("#statements-issue").await;
    b.wait(
        "document.querySelector('#statements-result [data-kind=already_issued]')",
        "already issued",
    )
    .await;
    assert!(!b.exists("#statements-result [data-kind=issued]").await);
    assert_eq!(
        b.js(&shown("already_issued"), json!([])).await,
        json!(sorted)
    );
    b.screenshot("19-statements").await;

    // Acme's statement, opened from its number: a page of its own, addressed by it.
    b.click(&format!("#statements-table tr[data-statement='{acme}'] a"))
        .await;
    b.wait(
        "document.querySelector('#statement-lines')",
        "the statement",
    )
    .await;
    assert_eq!(
        b.js("return location.hash;", json!([])).await,
        json!(format!("#statement/{acme}"))
    );
    assert_eq!(
        b.text("#statement-title").await,
        format!("Statement {acme}")
    );
    assert_eq!(b.text("#statement-issuer").await, "eai-gpu");
    assert_eq!(
        b.text("#statement-tenant").await,
        format!("Acme Corp{ACME}")
    );
    assert!(b.text("#statement-period").await.starts_with(&month));
    let (status, st) = portal
        .get(&format!("/v1/finops/gpu/statements/{acme}"), ADMIN_KEY)
        .await;
    assert_eq!(status, StatusCode::OK, "{st}");
    let lines = statement_rows(&b, "#statement-lines").await;
    let api_lines: Vec<Value> = st["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            let amount = l["amount"]["amount"].as_str().expect("amount");
            json!([l["deployment_id"], amount, en_money(amount, "EUR")])
        })
        .collect();
    assert_eq!(lines, json!(api_lines), "the lines are the API's");
    // And the hand-computed ones (Portal::load_closed_month).
    let mut by_hand: Vec<(&str, &str)> = api_lines
        .iter()
        .filter_map(|l| Some((l[0].as_str()?, l[1].as_str()?)))
        .collect();
    by_hand.sort_unstable();
    assert_eq!(
        by_hand,
        [("acme-embed", "10.38"), ("acme-finetune", "19.58")]
    );
    assert_eq!(
        statement_totals(&b, "#statement-lines").await,
        json!([["EUR", "29.96", "€29.96"]])
    );
    assert!(
        !b.exists("#statement-adjustments").await,
        "no adjustment yet"
    );
    b.screenshot("20-statement").await;

    // Printed: one A4 page, the statement alone.
    let (info, text) = b.print_pdf("20-statement").await;
    assert_eq!(pdf_pages(&info), 1, "{info}");
    assert!(info.contains(" pts (A4)\n"), "{info}");
    assert_printed(
        &text,
        &[
            &format!("Statement {acme}"),
            "Acme Corp",
            ACME,
            &month,
            "acme-finetune",
            "acme-embed",
            "€19.58",
            "€10.38",
            "€29.96",
        ],
        &[
            "Sign out",
            "Skip to content",
            "Platform administrator",
            "Back to GPU allocation",
            "Print",
            "Adjustments",
            "Globex",
        ],
    );

    // A sample arriving after issue (acme-finetune, 10:00 to 10:05): the month is now 1.60 x (10 + 1/12) x 1.15
    // = 18.553333… + 4.0333… kWh x 1.4 x 0.21 = 1.1858 -> 19.739133… -> 19.74; the adjustment is 19.74 - 19.58 =
    // +0.16, the adjusted total 29.96 + 0.16 = 30.12. The issued lines stay.
    let late = statement_sample(
        "acme-finetune",
        "GPU-a100-0101",
        "NVIDIA A100-SXM4-80GB",
        ACME,
        start + 121 * 300_000,
    );
    let (status, v) = portal
        .post(
            "/v1/finops/gpu/samples",
            ADMIN_KEY,
            &json!({ "samples": [late] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    // Opened again from its address (a reload: the tab's key signs in again).
    b.client.refresh().await.expect("reload");
    b.wait(
        "document.querySelector('#statement-adjustments')",
        "the adjustments",
    )
    .await;
    assert!(b
        .text("#statement-adjustments-title")
        .await
        .starts_with("Adjustments since issue (as of "));
    assert_eq!(
        statement_rows(&b, "#statement-adjustments-table").await,
        json!([["acme-finetune", "0.16", "+€0.16"]])
    );
    assert_eq!(
        statement_totals(&b, "#statement-adjustments-table").await,
        json!([["EUR", "30.12", "€30.12"]])
    );
    assert_eq!(
        statement_rows(&b, "#statement-lines").await,
        json!(api_lines),
        "never a rewrite"
    );
    b.screenshot("21-statement-adjusted").await;
    let (info, text) = b.print_pdf("21-statement-adjusted").await;
    assert_eq!(pdf_pages(&info), 1, "{info}");
    assert_printed(
        &text,
        &[
            &format!("Statement {acme}"),
            "Adjustments since issue",
            "€29.96",
            "+€0.16",
            "€30.12",
        ],
        &["Sign out", "Back to GPU allocation", "Print"],
    );

    // In French.
    b.set_value("#lang", "fr").await;
    b.wait(
        "document.querySelector('#statement-title').textContent.startsWith('Relevé')",
        "le relevé",
    )
    .await;
    assert_eq!(b.text("#statement-title").await, format!("Relevé {acme}"));
    assert_eq!(
        statement_totals(&b, "#statement-lines").await,
        json!([["EUR", "29.96", fr_euros("29.96")]])
    );
    assert!(b
        .text("#statement-adjustments-title")
        .await
        .starts_with("Ajustements depuis l'émission (au "));
    b.screenshot("22-statement-fr").await;
    b.set_value("#lang", "en").await;
    b.sign_out().await;

    // Globex's reader, on Acme's statement's address: not found, nothing of Acme shown; its own list and
    // statement, no Issue button.
    let key = portal.key("finops", Some(GLOBEX)).await;
    b.sign_in(&key).await;
    b.wait("document.querySelector('#statement-error')", "not found")
        .await;
    let page = b.text("#main").await;
    assert!(!page.contains("Acme") && !page.contains("29.96"), "{page}");
    b.click("#statement-back").await;
    b.wait(
        "document.querySelector('#statements-table')",
        "Globex's statements",
    )
    .await;
    assert_eq!(
        b.js(
            "return [...document.querySelectorAll('#statements-table tbody tr')].map(r => r.dataset.statement);",
            json!([])
        )
        .await,
        json!([globex])
    );
    assert!(!b.exists("#statements-issue").await, "finops issues none");
    b.click(&format!(
        "#statements-table tr[data-statement='{globex}'] a"
    ))
    .await;
    b.wait("document.querySelector('#statement-lines')", "Globex's")
        .await;
    let rows = statement_rows(&b, "#statement-lines").await;
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 41, "globex-chat and 40 batch deployments");
    assert!(rows.contains(&json!(["globex-chat", "15.57", "€15.57"])));
    assert!(rows.contains(&json!(["globex-batch-07", "2.60", "€2.60"])));
    assert_eq!(
        statement_totals(&b, "#statement-lines").await,
        json!([["EUR", "119.57", "€119.57"]]),
        "15.57 + 40 x 2.60"
    );

    // Printed, 41 lines run onto a second page: each page repeats the running header and the table's head,
    // no line is cut between two pages, and the total comes last.
    let (info, text) = b.print_pdf("23-statement-two-pages").await;
    assert_eq!(pdf_pages(&info), 2, "{info}");
    let pages: Vec<&str> = text
        .split('\u{c}')
        .filter(|p| !p.trim().is_empty())
        .collect();
    assert_eq!(pages.len(), 2, "{text}");
    for (i, page) in pages.iter().enumerate() {
        assert!(
            page.contains(&format!(
                "eai-gpu · Statement {globex} · Globex Corporation · {month}"
            )),
            "the running header on page {}:\n{page}",
            i + 1
        );
        assert!(
            page.lines()
                .any(|l| l.contains("Deployment") && l.contains("Amount")),
            "the table's head on page {}:\n{page}",
            i + 1
        );
        assert!(
            page.replace(' ', "").contains(&format!("{}/2", i + 1)),
            "page {} of 2:\n{page}",
            i + 1
        );
    }
    for row in rows {
        let (deployment, amount) = (
            row[0].as_str().expect("id"),
            row[2].as_str().expect("amount"),
        );
        let found: Vec<bool> = pages
            .iter()
            .filter(|p| p.contains(&format!("{deployment} ")))
            .map(|p| {
                p.lines().any(|l| {
                    l.contains(&format!("{deployment} ")) && l.trim_end().ends_with(amount)
                })
            })
            .collect();
        assert_eq!(
            found,
            [true],
            "{deployment}: one page, its whole line:\n{text}"
        );
    }
    assert!(
        pages[1].contains("Total EUR") && pages[1].contains("€119.57"),
        "{text}"
    );
    b.assert_clean_console().await;
}
