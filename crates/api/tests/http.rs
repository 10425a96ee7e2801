//! The HTTP API end to end: a real server on port 0 over a fresh store per test, driven with reqwest. Every
//! test runs on both backends ([`on_both_backends!`]): `NAME::sqlite` on a fresh SQLite file, `NAME::postgres`
//! on a fresh PostgreSQL database (server at `EAI_TEST_POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/postgres`; unreachable, the test fails saying how to start it).
//! The tests read like SPEC §2–§4: the worked example, the 70/30 acceptance test, roles and tenancy, the
//! error envelope, limits, idempotent ingest, and the audit chain.

use std::sync::Arc;

use eai_api::{Application, Config};
use eai_engine::time::Timestamp;
use eai_store::postgres::scratch::{test_server_url, ScratchDb};
use eai_store::{Role, Store};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

#[path = "http/portal.rs"]
mod portal;

const ADMIN_KEY: &str = "eai_live_test0000000000000000000000000000000000000000000000000000admin";
const TENANT_A: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
const TENANT_B: &str = "3d1e9b7a-5c2f-4e8d-b6a0-7f4c1e2d9a38";
const HOUR_MS: i64 = 3_600_000;

/// The store a test's application runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

tokio::task_local! {
    /// The backend of the test running on this task (set by [`on_both_backends!`]; SQLite when unset).
    static BACKEND: Backend;
}

/// Declares, for each test function named, a module with two tests: `sqlite` and `postgres`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::BACKEND.scope(super::Backend::Sqlite, super::$name()).await
            }
            #[tokio::test]
            async fn postgres() {
                super::BACKEND.scope(super::Backend::Postgres, super::$name()).await
            }
        }
    )*};
}

struct TestApp {
    base: String,
    admin_key: String,
    client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
    /// The application's configuration (its store's URL), to open a second handle on the store.
    config: Config,
    dir: tempfile::TempDir,
    /// The PostgreSQL database of the test, dropped with it.
    _db: Option<ScratchDb>,
    /// The running server's limits (to hold an allocation slot from a test).
    limits: Arc<eai_api::limits::Limits>,
    /// The server's clock: the wall clock, which a test may step forward instead of waiting.
    clock: eai_app::clock::SteppedClock,
}

/// What a webhook receiver got: (headers, body) of each delivery.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, String)>>>;

/// A real HTTP webhook receiver on a free port (its URL, and what it got): it keeps every delivery and
/// acknowledges it (204), but answers the first `fail_first` with 500.
async fn webhook_receiver(fail_first: usize) -> (String, Received) {
    let got: Received = Received::default();
    let seen = got.clone();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let (seen, calls) = (seen.clone(), calls.clone());
            async move {
                seen.lock().expect("lock").push((headers, body));
                if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < fail_first {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// A delivery the webhook receiver got, checked as every receiver must check it: its `X-EAI-Signature` is the
/// HMAC of its body with `secret` at the time it names, and its `X-EAI-Webhook-Id` is the body's `id`. Returns
/// the body.
fn signed_body(headers: &axum::http::HeaderMap, body: &str, secret: &str) -> Value {
    let sig = headers["x-eai-signature"].to_str().expect("ascii");
    let t: i64 = sig
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .and_then(|t| t.parse().ok())
        .expect("t=");
    assert_eq!(
        sig,
        eai_app::budget_alerts::signature(secret, t, body),
        "a valid signature"
    );
    let v: Value = serde_json::from_str(body).expect("json");
    assert_eq!(
        headers["x-eai-webhook-id"].to_str().expect("ascii"),
        v["id"].as_str().expect("id"),
        "the webhook id is the body's"
    );
    v
}

async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Builds the application on port 0 over a fresh store of the test's backend (a SQLite file in a temp dir, or
/// a scratch PostgreSQL database) with a known bootstrap key, and serves it on a task until the test stops it
/// (or ends).
async fn spawn_app_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = BACKEND.try_with(|b| *b).unwrap_or(Backend::Sqlite);
    let (database_url, db) = match backend {
        Backend::Sqlite => (
            format!("sqlite://{}", dir.path().join("eai-gpu.db").display()),
            None,
        ),
        Backend::Postgres => {
            let db = ScratchDb::create(&test_server_url())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            (db.url().to_string(), Some(db))
        }
    };
    let mut config = Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        data_dir: dir.path().to_path_buf(),
        database_url: Some(database_url.into()),
        bootstrap_admin_key: Some(ADMIN_KEY.into()),
        // The hourly batch writes audit events a minute after start: tests that count them run it themselves.
        allocation_batch: false,
        ..Config::default()
    };
    tweak(&mut config);
    let clock = eai_app::clock::SteppedClock::default();
    let app = Application::build(config.clone())
        .await
        .expect("the application builds")
        .with_clock(Arc::new(clock.clone()));
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let host = if config.tls.is_some() {
        "localhost"
    } else {
        "127.0.0.1"
    };
    let base = format!("{scheme}://{host}:{}", app.port());
    let limits = app.state().limits.clone();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = rx.await;
    }));
    TestApp {
        base,
        admin_key: ADMIN_KEY.to_string(),
        client: reqwest::Client::new(),
        shutdown: Some(tx),
        server: Some(server),
        config,
        dir,
        _db: db,
        limits,
        clock,
    }
}

/// A stopped application's store, still there to inspect.
struct Stopped {
    config: Config,
    _dir: tempfile::TempDir,
    _db: Option<ScratchDb>,
}

impl Stopped {
    /// The store the application ran on, opened again.
    async fn store(&self) -> Arc<dyn Store> {
        eai_api::open_store(&self.config)
            .await
            .expect("reopen the store")
    }
}

impl TestApp {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, body)
    }

    async fn get(&self, path: &str, key: &str) -> (StatusCode, Value) {
        self.send(self.client.get(self.url(path)).bearer_auth(key))
            .await
    }

    async fn post(&self, path: &str, key: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.client.post(self.url(path)).bearer_auth(key).json(body))
            .await
    }

    async fn get_text(&self, path: &str, key: &str) -> (StatusCode, String) {
        let resp = self
            .client
            .get(self.url(path))
            .bearer_auth(key)
            .send()
            .await
            .expect("request sent");
        (resp.status(), resp.text().await.expect("body"))
    }

    /// A new API key for a role (and a tenant), made by the platform admin.
    async fn key(&self, role: &str, tenant: Option<&str>) -> (String, String) {
        let mut body = json!({ "role": role, "name": format!("{role} key") });
        if let Some(t) = tenant {
            body["tenant_id"] = json!(t);
        }
        let (status, v) = self.post("/v1/auth/api-keys", &self.admin_key, &body).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        (
            v["key"].as_str().expect("key").to_string(),
            v["id"].as_str().expect("id").to_string(),
        )
    }

    async fn create_policy(&self, body: Value) -> String {
        let (status, v) = self
            .post("/v1/finops/allocation-policies", &self.admin_key, &body)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v["id"].as_str().expect("id").to_string()
    }

    async fn ingest(&self, samples: Vec<Value>) -> Value {
        let (status, v) = self
            .post(
                "/v1/finops/gpu/samples",
                &self.admin_key,
                &json!({ "samples": samples }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v
    }

    async fn allocation(&self, key: &str, from: Timestamp, to: Timestamp) -> (StatusCode, Value) {
        self.get(
            &format!("/v1/finops/gpu/allocation?from={from}&to={to}"),
            key,
        )
        .await
    }

    /// A second handle on the running application's store.
    async fn second_store(&self) -> Arc<dyn Store> {
        eai_api::open_store(&self.config)
            .await
            .expect("second handle on the store")
    }

    /// Stops the server gracefully and hands back its store (and what holds it).
    async fn stop(mut self) -> Stopped {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server ran cleanly");
        }
        Stopped {
            config: self.config.clone(),
            _dir: self.dir,
            _db: self._db.take(),
        }
    }
}

/// The start of a whole UTC hour a few hours ago (recent, so that raw samples are well within retention).
fn recent_hour() -> Timestamp {
    let now = eai_api::state::now();
    Timestamp(now.floor_to(HOUR_MS).0 - 3 * HOUR_MS)
}

fn sample(gpu: &str, deployment: &str, end: Timestamp, power_w: u32) -> Value {
    json!({
        "node": "gpu-node-3",
        "gpu_uuid": gpu,
        "model": "H100-80GB",
        "namespace": "eai-inference",
        "pod": format!("{deployment}-0"),
        "deployment_id": deployment,
        "window_seconds": 15,
        "utilization": 0.82,
        "memory_used_gb": 61.2,
        "power_w": power_w,
        "timestamp": end.to_string(),
    })
}

/// 240 samples of 15 s ending at hour+15 s .. hour+3600 s: the whole hour, inside it.
fn hour_of_samples(gpu: &str, deployment: &str, hour: Timestamp, power_w: u32) -> Vec<Value> {
    (1..=240)
        .map(|k| sample(gpu, deployment, Timestamp(hour.0 + k * 15_000), power_w))
        .collect()
}

fn usage_event(deployment: &str, at: Timestamp, units: Value) -> Value {
    json!({
        "event_id": Uuid::new_v4().to_string(),
        "schema_version": "1.0",
        "usage_type": "llm_tokens",
        "source": "gateway",
        "occurred_at": at.to_string(),
        "deployment_id": deployment,
        "units": units,
    })
}

fn worked_example_policy() -> Value {
    json!({
        "name": "local-gpu-default",
        "deployment_pattern": "*",
        "currency": "EUR",
        "gpu_hourly_cost": "2.10",
        "overhead_pct": "18",
        "energy_kwh_price": "0.21",
        "pue": "1.4",
        "effective_from": "2020-01-01",
    })
}

fn tenant_row<'a>(v: &'a Value, tenant: &str) -> &'a Value {
    v["tenants"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["tenant_id"] == tenant))
        .unwrap_or(&Value::Null)
}

fn assert_error(status: StatusCode, v: &Value, expected_status: StatusCode, code: &str) {
    assert_eq!(status, expected_status, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(v["error"]["message_i18n"]["en"].is_string(), "{v}");
    assert!(v["error"]["message_i18n"]["fr"].is_string(), "{v}");
    assert!(
        v["error"]["request_id"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{v}"
    );
}

/// A 422 `validation_error` in the envelope whose details name exactly `fields`, in order.
fn assert_invalid(status: StatusCode, v: &Value, fields: &[&str]) {
    assert_error(
        status,
        v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(detail_fields(v), fields, "{v}");
}

fn detail_fields(v: &Value) -> Vec<String> {
    v["error"]["details"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|e| e["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn the_worked_example_of_the_spec_holds_through_the_api() {
    let app = spawn_app().await;
    let hour = recent_hour();
    let (status, created) = app
        .post(
            "/v1/finops/allocation-policies",
            &app.admin_key,
            &worked_example_policy(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created, json!({ "id": "alp_1", "status": "active" }));

    // 2 GPUs x 240 samples of 15 s at 400 W inside one hour.
    let mut samples = hour_of_samples("GPU-aaaa", "vllm-llama-70b", hour, 400);
    samples.extend(hour_of_samples("GPU-bbbb", "vllm-llama-70b", hour, 400));
    assert_eq!(
        app.ingest(samples).await,
        json!({ "accepted": 480, "duplicates": 0 })
    );

    // Two tenants use it in that hour: 7,000 and 3,000 tokens, each with its own key.
    let (key_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (key_b, _) = app.key("developer", Some(TENANT_B)).await;
    let mid = Timestamp(hour.0 + HOUR_MS / 2);
    let (s, v) = app
        .post(
            "/v1/usage/events",
            &key_a,
            &json!({ "events": [usage_event("vllm-llama-70b", mid, json!({"tokens_in": 7000}))] }),
        )
        .await;
    assert_eq!((s, v), (StatusCode::OK, json!({ "accepted": 1 })));
    let (s, v) = app
        .post(
            "/v1/usage/events",
            &key_b,
            &json!({ "events": [usage_event("vllm-llama-70b", mid, json!({"tokens_in": 1000, "tokens_out": 2000}))] }),
        )
        .await;
    assert_eq!((s, v), (StatusCode::OK, json!({ "accepted": 1 })));

    let (status, a) = app
        .allocation(&app.admin_key, hour, Timestamp(hour.0 + HOUR_MS))
        .await;
    assert_eq!(status, StatusCode::OK, "{a}");
    let d = &a["deployments"][0];
    assert_eq!(d["deployment_id"], "vllm-llama-70b", "{a}");
    assert_eq!(d["samples"], 480, "{a}");
    assert_eq!(d["gpus"], 2, "{a}");
    assert_eq!(d["gpu_hours"].to_string(), "2", "{a}");
    assert_eq!(d["energy_kwh"].to_string(), "0.8", "{a}");
    assert_eq!(d["cost"], "5.19", "{a}");
    assert_eq!(d["allocated"], "5.19", "{a}");
    assert_eq!(d["unallocated"], "0.00", "{a}");
    assert_eq!(d["currency"], "EUR", "{a}");
    assert_eq!(
        tenant_row(&a, TENANT_A)["cost"],
        json!({ "amount": "3.63", "currency": "EUR" }),
        "{a}"
    );
    assert_eq!(
        tenant_row(&a, TENANT_B)["cost"],
        json!({ "amount": "1.56", "currency": "EUR" }),
        "{a}"
    );
    let items = a["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{a}");
    assert!(
        items
            .iter()
            .all(|i| i["policy_id"] == "alp_1" && i["deployment_id"] == "vllm-llama-70b"),
        "{a}"
    );

    // The catalog lists the deployment seen in samples.
    let (status, c) = app.get("/v1/providers/catalog", &key_a).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    let item = &c["items"][0];
    assert_eq!(item["id"], "vllm");
    assert_eq!(item["local"], true);
    assert_eq!(item["base_url"], "http://vllm-llama-70b:8000/v1");
    assert_eq!(
        item["discovery"], "samples",
        "seen in samples, never registered"
    );
    assert!(
        item["provider_id"]
            .as_str()
            .and_then(|p| Uuid::parse_str(p).ok())
            .is_some(),
        "{c}"
    );

    // Every mutation left a link in a chain that verifies.
    let stopped = app.stop().await;
    let store = stopped.store().await;
    assert_eq!(store.verify_audit_chain(None).await.expect("verify"), None);
}

/// Two hours of a shared deployment at 10 USD per GPU-hour (20.00), busy 82 %; tenant A 500 in / 200 out and
/// tenant B 300 in per hour (each with a developer key of its own): 70/30 in tokens. Answers the two hours.
async fn shared_deployment_of_two_tenants(app: &TestApp) -> (Timestamp, Timestamp) {
    let hour = recent_hour();
    app.create_policy(json!({ "name": "flat", "currency": "USD", "gpu_hourly_cost": 10, "effective_from": "2020-01-01" }))
        .await;
    let mut samples = hour_of_samples("GPU-cccc", "vllm-shared", hour, 300);
    samples.extend(hour_of_samples(
        "GPU-cccc",
        "vllm-shared",
        Timestamp(hour.0 + HOUR_MS),
        300,
    ));
    app.ingest(samples).await;
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    for h in [hour.0, hour.0 + HOUR_MS] {
        let at = Timestamp(h + 10 * 60_000);
        let a = usage_event(
            "vllm-shared",
            at,
            json!({ "tokens_in": 500, "tokens_out": 200 }),
        );
        let b = usage_event("vllm-shared", at, json!({ "tokens_in": 300 }));
        for (key, ev) in [(&dev_a, a), (&dev_b, b)] {
            let (status, body) = app
                .post("/v1/usage/events", key, &json!({ "events": [ev] }))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
    (hour, Timestamp(hour.0 + 2 * HOUR_MS))
}

async fn two_tenants_sharing_70_30_in_tokens_get_70_30_and_see_only_their_own() {
    let app = spawn_app().await;
    let (from, to) = shared_deployment_of_two_tenants(&app).await;
    let hour = from;
    let (status, a) = app.allocation(&app.admin_key, from, to).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["deployments"][0]["cost"], "20.00", "{a}");
    assert_eq!(a["deployments"][0]["allocated"], "20.00", "{a}");
    assert_eq!(tenant_row(&a, TENANT_A)["cost"]["amount"], "14.00", "{a}");
    assert_eq!(tenant_row(&a, TENANT_B)["cost"]["amount"], "6.00", "{a}");
    assert_eq!(tenant_row(&a, TENANT_A)["share"].to_string(), "0.7", "{a}");
    assert_eq!(tenant_row(&a, TENANT_B)["share"].to_string(), "0.3", "{a}");

    // Tenant A's readers see A's 70 % and nothing of B: not even B's id, anywhere.
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (auditor_a, _) = app.key("auditor", Some(TENANT_A)).await;
    let (status, text) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation?from={from}&to={to}"),
            &finops_a,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_B), "tenant A sees tenant B: {text}");
    let mine: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(mine["tenants"].as_array().map(Vec::len), Some(1), "{mine}");
    assert_eq!(
        tenant_row(&mine, TENANT_A)["cost"]["amount"],
        "14.00",
        "{mine}"
    );
    assert_eq!(
        mine["deployments"][0]["cost"], "14.00",
        "the shared total is withheld: {mine}"
    );
    assert!(
        mine["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["tenant_id"] == TENANT_A),
        "{mine}"
    );
    let (status, text) = app
        .get_text("/v1/audit/events?limit=1000", &auditor_a)
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        !text.contains(TENANT_B),
        "tenant A's auditor sees tenant B: {text}"
    );
    let (status, text) = app
        .get_text("/v1/finops/allocation-policies", &finops_a)
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_B));

    // Dates: a `to` date is inclusive of its day.
    let day = hour.date_string();
    let (status, by_date) = app
        .get(
            &format!("/v1/finops/gpu/allocation?from={day}&to={day}"),
            &finops_a,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{by_date}");
    assert_eq!(by_date["from"], format!("{day}T00:00:00Z"));
    let next = Timestamp(Timestamp::parse_date(&day).expect("date").0 + 24 * HOUR_MS);
    assert_eq!(by_date["to"], next.to_string());
}

async fn roles_are_enforced_and_denied_mutations_are_audited() {
    let app = spawn_app().await;
    let (finops_a, finops_a_id) = app.key("finops", Some(TENANT_A)).await;
    let (sampler, _) = app.key("sampler", None).await;

    // forbidden: a FinOps analyst creating a policy.
    let (status, v) = app
        .post(
            "/v1/finops/allocation-policies",
            &finops_a,
            &worked_example_policy(),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    // forbidden: the sampler identity reading the allocation (it may only post samples).
    let (status, v) = app.get("/v1/finops/gpu/allocation", &sampler).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    // ... but it posts samples.
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &sampler,
            &json!({ "samples": [sample("GPU-s", "vllm-x", recent_hour(), 100)] }),
        )
        .await;
    assert_eq!(
        (status, v),
        (StatusCode::OK, json!({ "accepted": 1, "duplicates": 0 }))
    );

    // tenant_required: a tenant role (finops) whose key is bound to no tenant. The API refuses to make such a
    // key, so it is put straight into the store, as an old or hand-made key would be.
    let (status, v) = app
        .post(
            "/v1/auth/api-keys",
            &app.admin_key,
            &json!({ "role": "finops" }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(detail_fields(&v), vec!["tenant_id"]);
    let orphan = eai_api::new_api_key();
    {
        let store = app.second_store().await;
        let at = eai_api::state::now();
        let new = eai_store::NewApiKey {
            hash: eai_api::hash_api_key(&orphan),
            role: Role::Finops,
            tenant_id: None,
            name: Some("orphan".into()),
            nodes: Vec::new(),
            expires_at: None,
            created_at: at,
        };
        store
            .create_api_key(
                &new,
                &eai_store::AuditDraft::system("test", "api_key.create", at, json!({})),
            )
            .await
            .expect("key");
    }
    let (status, v) = app.get("/v1/finops/gpu/allocation", &orphan).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "tenant_required");
    let (status, v) = app
        .post(
            "/v1/finops/allocation-policies",
            &orphan,
            &worked_example_policy(),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "tenant_required");

    // unauthorized: no key, a malformed one, an unknown one.
    let resp = app
        .client
        .get(app.url("/v1/finops/gpu/allocation"))
        .send()
        .await
        .expect("sent");
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok());
    assert_eq!(challenge, Some("Bearer"));
    let (status, v) = (resp.status(), resp.json::<Value>().await.expect("json"));
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");
    let (status, v) = app.get("/v1/finops/gpu/allocation", "not-a-key").await;
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");
    let (status, v) = app
        .get("/v1/finops/gpu/allocation", &eai_api::new_api_key())
        .await;
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");

    // The denied creation is in the audit chain, with its actor; no key secret is.
    let (status, audit) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let events = audit["items"].as_array().expect("items");
    let denied = events
        .iter()
        .find(|e| {
            e["action"] == "allocation_policy.create"
                && e["decision"] == "deny"
                && e["actor"] == finops_a_id
        })
        .unwrap_or_else(|| panic!("no denied policy creation in {audit}"));
    assert_eq!(denied["tenant_id"], TENANT_A);
    assert_eq!(denied["actor_role"], "finops");
    assert!(denied["request_id"].is_string(), "{denied}");
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "gpu_samples.ingest" && e["decision"] == "allow"),
        "{audit}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "api_key.create" && e["decision"] == "allow"),
        "{audit}"
    );
    let text = audit.to_string();
    assert!(
        !text.contains(&finops_a) && !text.contains(ADMIN_KEY),
        "a key leaked into the audit chain"
    );
    // Only the audit roles read it.
    let (status, v) = app.get("/v1/audit/events", &finops_a).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    let stopped = app.stop().await;
    let store = stopped.store().await;
    assert_eq!(store.verify_audit_chain(None).await.expect("verify"), None);
}

async fn invalid_policies_are_rejected_field_by_field() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({ "name": "p", "gpu_hourly_cost": "-2.10" }),
            "gpu_hourly_cost",
        ),
        (
            json!({ "name": "p", "gpu_hourly_cost": "2.10", "pue": 0.9 }),
            "pue",
        ),
        (
            json!({ "name": "p", "gpu_hourly_cost": "2.10", "currency": "eur" }),
            "currency",
        ),
        (json!({ "gpu_hourly_cost": "2.10" }), "name"),
    ];
    for (body, field) in cases {
        let (status, v) = app
            .post("/v1/finops/allocation-policies", &app.admin_key, &body)
            .await;
        assert_error(
            status,
            &v,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
        );
        assert_eq!(detail_fields(&v), vec![field.to_string()], "{v}");
    }
    // Not JSON at all: validation_error too, with a message that says so.
    let (status, v) = app
        .send(
            app.client
                .post(app.url("/v1/finops/allocation-policies"))
                .bearer_auth(&app.admin_key)
                .header("content-type", "application/json")
                .body("{\"name\": \"p\", "),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("JSON")),
        "{v}"
    );

    // A batch with one bad sample is rejected whole, naming the index and the field.
    let hour = recent_hour();
    let mut bad = sample("GPU-x", "vllm-x", Timestamp(hour.0 + 15_000), 100);
    bad["utilization"] = json!(1.5);
    let batch =
        json!({ "samples": [sample("GPU-x", "vllm-x", Timestamp(hour.0 + 30_000), 100), bad] });
    let (status, v) = app
        .post("/v1/finops/gpu/samples", &app.admin_key, &batch)
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(v["error"]["details"][0]["index"], 1, "{v}");
    assert_eq!(v["error"]["details"][0]["field"], "utilization", "{v}");
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &app.admin_key,
            &json!({ "samples": [] }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    // Nothing of the rejected batch was stored.
    let (_, c) = app.get("/v1/providers/catalog", &app.admin_key).await;
    assert_eq!(c["items"], json!([]), "{c}");

    // Bad periods.
    let (status, v) = app
        .get(
            "/v1/finops/gpu/allocation?from=2026-10-02&to=2026-10-01",
            &app.admin_key,
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    let (status, v) = app
        .get(
            "/v1/finops/gpu/allocation?from=2024-01-01&to=2026-10-01",
            &app.admin_key,
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    let (status, v) = app
        .get("/v1/finops/gpu/allocation?from=last-week", &app.admin_key)
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(detail_fields(&v), vec!["from"]);
}

async fn a_resent_batch_is_counted_once() {
    let app = spawn_app().await;
    let hour = recent_hour();
    app.create_policy(worked_example_policy()).await;
    let batch = hour_of_samples("GPU-dddd", "vllm-llama-70b", hour, 400);
    assert_eq!(
        app.ingest(batch.clone()).await,
        json!({ "accepted": 240, "duplicates": 0 })
    );
    let (_, before) = app
        .allocation(&app.admin_key, hour, Timestamp(hour.0 + HOUR_MS))
        .await;
    assert_eq!(
        app.ingest(batch).await,
        json!({ "accepted": 240, "duplicates": 240 })
    );
    let (_, after) = app
        .allocation(&app.admin_key, hour, Timestamp(hour.0 + HOUR_MS))
        .await;
    assert_eq!(before["deployments"], after["deployments"]);
    assert_eq!(after["deployments"][0]["samples"], 240, "{after}");
    assert_eq!(
        after["deployments"][0]["gpu_hours"].to_string(),
        "1",
        "{after}"
    );

    let scrape = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("scrape");
    assert_eq!(
        scrape.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let (status, metrics) = app.get_text("/metrics", "").await;
    assert_eq!(status, StatusCode::OK);
    assert!(metrics.ends_with("# EOF\n"), "{metrics}");
    assert!(
        metrics.contains("eai_gpu_samples_ingested_total 240"),
        "{metrics}"
    );
    assert!(
        metrics.contains("eai_gpu_samples_duplicates_total 240"),
        "{metrics}"
    );
    assert!(
        metrics.contains("eai_http_requests_total{method=\"POST\",route=\"/v1/finops/gpu/samples\",status=\"200\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains(
        "eai_http_request_duration_seconds_bucket{le=\"+Inf\",route=\"/v1/finops/gpu/samples\"} 2"
    ));
}

async fn batches_and_bodies_beyond_the_limits_get_413() {
    let app = spawn_app().await;
    let one = sample("GPU-e", "vllm-x", recent_hour(), 100);
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &app.admin_key,
            &json!({ "samples": vec![one; 10_001] }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    assert_eq!(v["error"]["details"], Value::Null);
    let (_, metrics) = app.get_text("/metrics", "").await;
    assert!(
        metrics.contains("eai_gpu_samples_rejected_total 10001"),
        "{metrics}"
    );

    let small = spawn_app_with(|c| c.max_body_bytes = 64 * 1024).await;
    let filler: Vec<Value> = (0..1000)
        .map(|k| sample("GPU-f", "vllm-x", Timestamp(k * 15_000), 100))
        .collect();
    let (status, v) = small
        .post(
            "/v1/finops/gpu/samples",
            &small.admin_key,
            &json!({ "samples": filler }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
}

async fn every_response_has_a_request_id_and_errors_share_one_envelope() {
    let app = spawn_app().await;
    // Probes, metrics and the OpenAPI document need no key.
    let (status, v) = app.send(app.client.get(app.url("/healthz"))).await;
    assert_eq!((status, v), (StatusCode::OK, json!({ "status": "ok" })));
    let (status, v) = app.send(app.client.get(app.url("/readyz"))).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = app.send(app.client.get(app.url("/openapi.json"))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(v["openapi"].is_string(), "{v}");

    // An incoming request id is echoed, in the header and in an error body.
    let resp = app
        .client
        .get(app.url("/v1/nowhere"))
        .header("x-request-id", "req-42")
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        resp.headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok()),
        Some("req-42")
    );
    let v: Value = resp.json().await.expect("json");
    assert_error(
        StatusCode::NOT_FOUND,
        &v,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_eq!(v["error"]["request_id"], "req-42");

    // Without one, one is made (a uuid) and it matches the body's.
    let resp = app
        .client
        .delete(app.url("/healthz"))
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    let allow = resp
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(allow.contains("GET"), "Allow: {allow}");
    let rid = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .expect("request id");
    assert!(Uuid::parse_str(&rid).is_ok(), "{rid}");
    let v: Value = resp.json().await.expect("json");
    assert_error(
        StatusCode::METHOD_NOT_ALLOWED,
        &v,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    assert_eq!(v["error"]["request_id"], rid.as_str());

    // A W3C traceparent is continued: same trace id, a new span id.
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let resp = app
        .client
        .get(app.url("/healthz"))
        .header("traceparent", incoming)
        .send()
        .await
        .expect("sent");
    let tp = resp
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .expect("traceparent")
        .to_string();
    assert!(
        tp.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "{tp}"
    );
    assert!(tp.ends_with("-01") && tp != incoming, "{tp}");

    // French on request; both languages always in message_i18n.
    let resp = app
        .client
        .get(app.url("/v1/finops/gpu/allocation"))
        .header("accept-language", "fr-FR,fr;q=0.9")
        .send()
        .await
        .expect("sent");
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["error"]["code"], "unauthorized");
    assert_eq!(v["error"]["message"], v["error"]["message_i18n"]["fr"]);
    assert_ne!(
        v["error"]["message_i18n"]["fr"],
        v["error"]["message_i18n"]["en"]
    );
}

async fn policies_are_superseded_and_disabled_never_edited() {
    let app = spawn_app().await;
    let id = app.create_policy(worked_example_policy()).await;
    let (status, v) = app
        .post(
            &format!("/v1/finops/allocation-policies/{id}/supersede"),
            &app.admin_key,
            &json!({ "effective_at": "2026-01-01T00:00:00Z", "name": "v2", "gpu_hourly_cost": "2.50", "pue": null }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["closed"]["id"], id);
    assert_eq!(v["closed"]["effective_to"], "2026-01-01T00:00:00Z");
    let v2 = v["opened"]["id"].as_str().expect("opened").to_string();
    assert_eq!(v["opened"]["effective_from"], "2026-01-01T00:00:00Z");
    // The replacement is the closed policy with the given fields overridden (null: back to the default).
    assert_eq!(v["opened"]["name"], "v2");
    assert_eq!(v["opened"]["gpu_hourly_cost"], "2.50");
    assert_eq!(v["opened"]["currency"], "EUR");
    assert_eq!(v["opened"]["overhead_pct"], "18");
    assert_eq!(v["opened"]["pue"], "1");

    let (status, v) = app
        .post(
            &format!("/v1/finops/allocation-policies/{v2}/disable"),
            &app.admin_key,
            &json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["opened"]["enabled"], false, "{v}");
    assert_eq!(v["opened"]["status"], "disabled", "{v}");

    let (finops, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, list) = app.get("/v1/finops/allocation-policies", &finops).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let statuses: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|p| p["status"].as_str())
        .collect();
    assert_eq!(statuses, vec!["closed", "closed", "disabled"], "{list}");
    let first = &list["items"][0];
    for field in [
        "name",
        "deployment_pattern",
        "currency",
        "gpu_hourly_cost",
        "overhead_pct",
        "energy_kwh_price",
        "pue",
    ] {
        assert!(first[field].is_string(), "{field} in {first}");
    }
    assert_eq!(first["gpu_hourly_cost"], "2.10");

    // A future policy is scheduled; an unknown one is not found; a closed one cannot be closed again; the
    // body is checked like a new policy's.
    let (_, v) = app
        .post(
            "/v1/finops/allocation-policies",
            &app.admin_key,
            &json!({ "name": "later", "gpu_hourly_cost": "1", "effective_from": "2999-01-01" }),
        )
        .await;
    assert_eq!(v["status"], "scheduled", "{v}");
    let (status, v) = app
        .post(
            "/v1/finops/allocation-policies/alp_99/disable",
            &app.admin_key,
            &json!({}),
        )
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app
        .post(
            &format!("/v1/finops/allocation-policies/{id}/supersede"),
            &app.admin_key,
            &json!({}),
        )
        .await;
    // Closed already: the stored state's conflict (409), naming the field, as a budget's second disable is.
    assert_error(status, &v, StatusCode::CONFLICT, "conflict");
    assert_eq!(detail_fields(&v), vec!["effective_at"]);
    let (_, v) = app
        .post(
            "/v1/finops/allocation-policies",
            &app.admin_key,
            &worked_example_policy(),
        )
        .await;
    let open = v["id"].as_str().expect("id").to_string();
    let path = format!("/v1/finops/allocation-policies/{open}/supersede");
    let (status, v) = app
        .post(
            &path,
            &app.admin_key,
            &json!({ "pue": "0.9", "colour": "blue" }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    let mut fields = detail_fields(&v);
    fields.sort();
    assert_eq!(fields, vec!["colour", "pue"]);
}

async fn without_a_bootstrap_key_one_is_generated_into_an_owner_only_file() {
    let mut app = spawn_app_with(|c| c.bootstrap_admin_key = None).await;
    let file = app.dir.path().join("bootstrap-admin-key");
    let key = std::fs::read_to_string(&file)
        .expect("the key file")
        .trim()
        .to_string();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(key.starts_with("eai_live_") && key != ADMIN_KEY);
    app.admin_key = key;
    let (status, audit) = app.get("/v1/audit/events", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    assert_eq!(audit["items"][0]["action"], "api_key.bootstrap", "{audit}");
    assert_eq!(audit["items"][0]["actor"], "system", "{audit}");
    let (status, v) = app.get("/v1/audit/events", ADMIN_KEY).await;
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");
}

/// The first reproduction of the late-samples issue: with the default raw retention (35 days), the sample of one
/// GPU ending 40 days ago at 10:00:30, then the one ending at 10:00:15. Both are counted; a re-send is a
/// duplicate; a window that cannot be merged exactly into that pruned hour is refused with its index, never
/// acknowledged.
async fn late_samples_older_than_the_retention_are_counted() {
    let app = spawn_app().await;
    app.create_policy(worked_example_policy()).await;
    let now = eai_api::state::now();
    let day = Timestamp(now.floor_to(24 * HOUR_MS).0 - 40 * 24 * HOUR_MS);
    let hour = Timestamp(day.0 + 10 * HOUR_MS);
    let at = |s: i64| Timestamp(hour.0 + s * 1000);
    // The pruner of `serve` runs at start; run it here too, so that the hour is surely past the retention.
    app.second_store()
        .await
        .prune_raw_samples(Timestamp(now.0 - 35 * 24 * HOUR_MS))
        .await
        .expect("prune");
    let first = sample("GPU-late", "vllm-llama-70b", at(30), 400);
    let late = sample("GPU-late", "vllm-llama-70b", at(15), 400);
    assert_eq!(
        app.ingest(vec![first]).await,
        json!({ "accepted": 1, "duplicates": 0 })
    );
    assert_eq!(
        app.ingest(vec![late.clone()]).await,
        json!({ "accepted": 1, "duplicates": 0 })
    );
    let (status, v) = app
        .allocation(&app.admin_key, hour, Timestamp(hour.0 + HOUR_MS))
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["deployments"][0]["samples"], 2, "{v}");
    assert_eq!(v["gaps"], json!([]), "{v}");
    assert_eq!(
        app.ingest(vec![late]).await,
        json!({ "accepted": 1, "duplicates": 1 })
    );

    // Windows up to 10:01:30, pruned again: those that touch both neighbours leave only their end.
    let more: Vec<Value> = (3..=6)
        .map(|i| sample("GPU-late", "vllm-llama-70b", at(15 * i), 400))
        .collect();
    app.ingest(more).await;
    app.second_store()
        .await
        .prune_raw_samples(Timestamp(now.0 - 35 * 24 * HOUR_MS))
        .await
        .expect("prune");
    // A 5 s window ending at 10:01:07 starts after the window ending at 10:01:00 (of which only the end is
    // left) and overlaps the next: refused, with nothing of its batch stored.
    let mut odd = sample("GPU-late", "vllm-llama-70b", at(67), 400);
    odd["window_seconds"] = json!(5);
    let fine = sample("GPU-other", "vllm-llama-70b", at(15), 400);
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &app.admin_key,
            &json!({ "samples": [fine, odd] }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(v["error"]["details"][0]["index"], 1, "{v}");
    assert_eq!(detail_fields(&v), vec!["timestamp"]);
    let (_, after) = app
        .allocation(&app.admin_key, hour, Timestamp(hour.0 + HOUR_MS))
        .await;
    assert_eq!(after["deployments"][0]["samples"], 6, "{after}");
    assert_eq!(
        after["deployments"][0]["gpus"], 1,
        "nothing of the refused batch: {after}"
    );
    let (_, metrics) = app.get_text("/metrics", "").await;
    assert!(
        metrics.contains("eai_gpu_samples_rejected_total 2"),
        "{metrics}"
    );
}

on_both_backends!(
    the_worked_example_of_the_spec_holds_through_the_api,
    two_tenants_sharing_70_30_in_tokens_get_70_30_and_see_only_their_own,
    roles_are_enforced_and_denied_mutations_are_audited,
    invalid_policies_are_rejected_field_by_field,
    a_resent_batch_is_counted_once,
    late_samples_older_than_the_retention_are_counted,
    batches_and_bodies_beyond_the_limits_get_413,
    every_response_has_a_request_id_and_errors_share_one_envelope,
    policies_are_superseded_and_disabled_never_edited,
    without_a_bootstrap_key_one_is_generated_into_an_owner_only_file,
);

#[path = "http/clickhouse.rs"]
mod clickhouse;

#[path = "http/clickhouse_cluster.rs"]
mod clickhouse_cluster;

#[path = "http/security.rs"]
mod security;
use security::*;

on_both_backends!(
    the_allocation_record_belongs_to_the_platform,
    every_role_holds_the_least_it_needs,
    keys_are_listed_revoked_expired_and_rotated,
    requests_are_rate_limited,
    a_gateway_key_is_not_limited_where_a_viewer_key_is,
    conflicts_reveal_nothing,
    the_audit_trail_cannot_be_cut_or_rewritten_unnoticed,
    a_change_and_its_audit_event_are_stored_together,
    failed_sign_ins_are_counted_and_audited_without_the_key,
);

#[path = "http/budgets.rs"]
mod budgets;
use budgets::*;

on_both_backends!(
    concurrent_reservations_grant_exactly_what_the_budget_fits,
    reservations_commit_once_release_and_stay_in_their_tenant,
    thresholds_fire_once_with_a_signed_webhook,
);

#[path = "http/tenants.rs"]
mod tenants;
use tenants::*;

on_both_backends!(
    tenants_are_registered_by_slug_and_read_by_slug_or_id,
    the_tenant_header_scopes_a_platform_key_and_binds_a_tenant_key,
    allocation_quantities_are_exact_json_numbers,
    the_platform_tenant_id_is_refused_wherever_a_request_names_it,
);

#[path = "http/metrics.rs"]
mod metrics;
use metrics::*;

on_both_backends!(metrics_show_the_fleet_and_its_cost_from_the_store_on_every_replica);

#[path = "http/split_cache.rs"]
mod split_cache;
use split_cache::*;

on_both_backends!(kept_splits_follow_late_writes_in_closed_hours_on_every_replica);

#[path = "http/explain.rs"]
mod explain;
use explain::*;

on_both_backends!(the_worked_example_is_explained_line_by_line_and_scoped_to_its_reader);

#[path = "http/breakdown.rs"]
mod breakdown;
use breakdown::*;

on_both_backends!(usage_is_broken_down_by_pod_node_and_gpu_to_the_cent_and_scoped_to_its_reader);
on_both_backends!(a_shared_gpu_is_broken_down_by_pod_with_each_share_and_its_method);

#[path = "http/slurm.rs"]
mod slurm;
use slurm::*;

on_both_backends!(slurms_jobs_are_reconciled_with_what_was_measured_and_scoped_to_their_tenant);

#[path = "http/focus.rs"]
mod focus;
use focus::*;

on_both_backends!(
    the_focus_export_conforms_and_reconciles_to_the_cent,
    a_tenant_reader_exports_only_its_own_rows,
    the_official_validator_passes_the_fleets_exports,
);

#[path = "http/forecast.rs"]
mod forecast;
use forecast::*;

on_both_backends!(a_forecast_lands_in_its_band_and_a_budget_alert_fires_once);

// The official FOCUS validator, also included by the CLI suite.
#[path = "http/focus_validator.rs"]
mod focus_validator;

#[path = "http/statements.rs"]
mod statements;
use statements::*;

on_both_backends!(
    a_closed_month_is_issued_once_per_tenant_and_reconciles_to_the_cent,
    a_late_sample_shows_as_an_adjustment_and_the_csv_says_the_same,
    issued_statements_are_the_focus_invoice_ids,
);

// The router against the OpenAPI document (one router whatever the backend).
#[path = "http/routes.rs"]
mod routes;

// Snapshots of the error envelope and of the worked example's allocation (insta; committed in http/snapshots/).
#[path = "http/snapshots.rs"]
mod snapshots;

#[path = "http/idempotency.rs"]
mod idempotency;
use idempotency::*;

on_both_backends!(
    a_retried_create_makes_one_resource_and_the_same_answer,
    another_caller_with_the_same_key_gets_its_own_resource,
    a_failed_first_answer_releases_the_key,
    a_key_in_flight_is_refused_then_taken_over_and_runs_once,
    a_replayed_sample_batch_is_not_counted_twice,
    a_stored_answer_is_sealed_and_opens_only_with_the_same_secret,
    a_body_over_the_limit_is_413_with_a_key_too,
);

#[path = "http/token_costs.rs"]
mod token_costs;
use token_costs::*;

on_both_backends!(
    a_token_costs_what_its_share_of_the_allocation_costs,
    vllm_counters_measure_the_split_but_never_weigh_the_tenants,
    the_steps_of_a_series_sum_to_the_period_exactly,
    providers_are_registered_confirmed_and_priced_by_last_month,
);

#[path = "http/recommendations.rs"]
mod recommendations;
use recommendations::*;

on_both_backends!(issue_40s_fleet_gets_its_idle_gpus_and_its_oversized_deployment_to_the_cent);
#[path = "http/anomalies.rs"]
mod anomalies;
use anomalies::*;

on_both_backends!(a_planted_spike_is_found_once_per_metric_posted_once_and_seen_by_its_tenant);

// Each answer's type (`eai_api::views`) against its component schema in the contract.
#[path = "http/views.rs"]
mod views;
