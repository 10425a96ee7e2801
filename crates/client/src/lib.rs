//! eai-client: the Rust SDK of the eai-gpu control plane. The same calls as the other SDKs of the seed:
//! `finops().gpu_samples(..)`, `finops().gpu_allocation(..)`, `finops().create_allocation_policy(..)`,
//! `providers().catalog()`, plus usage events, API keys and the audit trail.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One GPU sample as the API takes it (contract gpu-sample.schema.json). Decimals travel as strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub node: String,
    pub gpu_uuid: String,
    pub model: String,
    pub namespace: String,
    pub pod: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    pub deployment_id: String,
    pub window_seconds: String,
    pub utilization: String,
    pub memory_used_gb: String,
    pub power_w: String,
    /// RFC 3339, end of the window. Senders that retry must set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_gb: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_fraction: Option<String>,
    /// How `gpu_fraction` was obtained: `mig`, `measured` or `equal` (a GPU shared by several pods); absent:
    /// `exclusive`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub share_method: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Ingested {
    pub accepted: u64,
    #[serde(default)]
    pub duplicates: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Created {
    pub id: String,
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NewApiKey {
    pub id: String,
    pub key: String,
    pub role: String,
    pub tenant_id: Option<String>,
}

/// An error from the control plane (its envelope) or from the way there.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with its error envelope.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        details: Value,
        request_id: Option<String>,
    },
    /// No answer: connection refused, timeout, reset. Worth retrying.
    #[error("transport: {0}")]
    Transport(String),
    /// An answer that is not what the API documents.
    #[error("unexpected response: {0}")]
    Decode(String),
}

impl ClientError {
    /// True when sending the same request again later may succeed (nothing was or will be counted twice:
    /// ingest is idempotent).
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Transport(_) => true,
            ClientError::Api { status, .. } => *status == 429 || *status >= 500,
            ClientError::Decode(_) => false,
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// A connection to one control plane with one API key.
#[derive(Debug, Clone)]
pub struct EnterpriseAi {
    base: String,
    key: String,
    http: reqwest::Client,
    tenant: Option<String>,
    locale: Option<String>,
}

/// The certificates of a PEM file, to trust beside the system's roots (a private CA).
pub fn ca_certificates(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>> {
    let pem = std::fs::read(path).map_err(|e| {
        ClientError::Transport(format!("cannot read the CA file {}: {e}", path.display()))
    })?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        ClientError::Transport(format!(
            "{} is not a PEM certificate bundle: {e}",
            path.display()
        ))
    })?;
    if certs.is_empty() {
        return Err(ClientError::Transport(format!(
            "{} holds no certificate",
            path.display()
        )));
    }
    Ok(certs)
}

impl EnterpriseAi {
    /// A client of the control plane at `base_url` (`http://` or `https://`, trusting the system's roots and,
    /// when `EAI_CA_FILE` names a PEM file, its certificates too).
    pub fn new(base_url: &str, api_key: &str) -> Result<Self> {
        let ca = std::env::var_os("EAI_CA_FILE").filter(|v| !v.is_empty());
        Self::with_ca_file(base_url, api_key, ca.as_deref().map(std::path::Path::new))
    }

    /// Like [`EnterpriseAi::new`], trusting the certificates of `ca_file` (a private CA) beside the system's.
    pub fn with_ca_file(
        base_url: &str,
        api_key: &str,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(5));
        if let Some(path) = ca_file {
            for c in ca_certificates(path)? {
                builder = builder.add_root_certificate(c);
            }
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(EnterpriseAi {
            base: base_url.trim_end_matches('/').to_string(),
            key: api_key.to_string(),
            http,
            tenant: None,
            locale: None,
        })
    }

    /// Every call "signed in to" `tenant` (a slug such as `acme`, or an id), sent as `X-EAI-Tenant`: a platform
    /// key reads as that tenant's readers do; a tenant's key may only name its own tenant.
    pub fn with_tenant(mut self, tenant: &str) -> Self {
        self.tenant = Some(tenant.to_string());
        self
    }

    /// The language of error messages (`en` or `fr`), sent as `Accept-Language`.
    pub fn with_locale(mut self, locale: &str) -> Self {
        self.locale = Some(locale.to_string());
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn finops(&self) -> FinOps<'_> {
        FinOps(self)
    }

    pub fn providers(&self) -> Providers<'_> {
        Providers(self)
    }

    pub fn usage(&self) -> Usage<'_> {
        Usage(self)
    }

    pub fn auth(&self) -> Auth<'_> {
        Auth(self)
    }

    pub fn audit(&self) -> Audit<'_> {
        Audit(self)
    }

    pub fn tenants(&self) -> Tenants<'_> {
        Tenants(self)
    }

    async fn send<T: for<'de> Deserialize<'de>>(&self, req: reqwest::RequestBuilder) -> Result<T> {
        let mut req = req.bearer_auth(&self.key);
        if let Some(t) = &self.tenant {
            req = req.header("X-EAI-Tenant", t);
        }
        if let Some(l) = &self.locale {
            req = req.header(reqwest::header::ACCEPT_LANGUAGE, l);
        }
        // The caller's trace continues in the control plane.
        if let Some(tp) = eai_telemetry::traceparent() {
            req = req.header("traceparent", tp);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        let status = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        if (200..300).contains(&status) {
            return serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()));
        }
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let e = &v["error"];
        Err(ClientError::Api {
            status,
            code: e["code"].as_str().unwrap_or("unknown").to_string(),
            message: e["message"]
                .as_str()
                .unwrap_or("no error envelope")
                .to_string(),
            details: e["details"].clone(),
            request_id: e["request_id"].as_str().map(str::to_string),
        })
    }

    async fn get<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T> {
        self.send(self.http.get(format!("{}{path}", self.base)).query(query))
            .await
    }

    async fn post<T: for<'de> Deserialize<'de>, B: Serialize + ?Sized>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }
}

#[derive(Debug, Clone, Copy)]
pub struct FinOps<'a>(&'a EnterpriseAi);

impl FinOps<'_> {
    /// POST /v1/finops/gpu/samples: one atomic, idempotent batch.
    pub async fn gpu_samples(&self, samples: &[GpuSample]) -> Result<Ingested> {
        #[derive(Serialize)]
        struct Body<'b> {
            samples: &'b [GpuSample],
        }
        self.0
            .post("/v1/finops/gpu/samples", &Body { samples })
            .await
    }

    /// GET /v1/finops/gpu/allocation (dates or RFC 3339).
    pub async fn gpu_allocation(&self, start: &str, end: &str) -> Result<Value> {
        self.0
            .get("/v1/finops/gpu/allocation", &[("from", start), ("to", end)])
            .await
    }

    /// POST /v1/finops/allocation-policies.
    pub async fn create_allocation_policy(&self, policy: &Value) -> Result<Created> {
        self.0.post("/v1/finops/allocation-policies", policy).await
    }

    /// GET /v1/finops/allocation-policies.
    pub async fn allocation_policies(&self) -> Result<Value> {
        self.0.get("/v1/finops/allocation-policies", &[]).await
    }

    /// POST /v1/finops/budgets (the answer: the budget, with its webhook secret when it has a webhook).
    pub async fn create_budget(&self, budget: &Value) -> Result<Value> {
        self.0.post("/v1/finops/budgets", budget).await
    }

    /// GET /v1/finops/gpu/forecast (`period`: `YYYY-MM`; `None`: this month).
    pub async fn gpu_forecast(&self, period: Option<&str>) -> Result<Value> {
        let q: Vec<(&str, &str)> = period.map(|p| ("period", p)).into_iter().collect();
        self.0.get("/v1/finops/gpu/forecast", &q).await
    }

    /// POST /v1/finops/gpu/statements: issues the statements of a month that is over (`period`: `YYYY-MM`), every
    /// tenant's with cost and the unallocated capacity's; those already issued come back under `already_issued`.
    pub async fn issue_gpu_statements(&self, period: &str) -> Result<Value> {
        self.0
            .post(
                "/v1/finops/gpu/statements",
                &serde_json::json!({ "period": period }),
            )
            .await
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Providers<'a>(&'a EnterpriseAi);

impl Providers<'_> {
    /// GET /v1/providers/catalog.
    pub async fn catalog(&self) -> Result<Value> {
        self.0.get("/v1/providers/catalog", &[]).await
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Usage<'a>(&'a EnterpriseAi);

impl Usage<'_> {
    /// POST /v1/usage/events: upserted by event_id.
    pub async fn events(&self, events: &[Value]) -> Result<Value> {
        self.0
            .post("/v1/usage/events", &serde_json::json!({ "events": events }))
            .await
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Auth<'a>(&'a EnterpriseAi);

impl Auth<'_> {
    /// POST /v1/auth/api-keys: the key is in the answer, and never again.
    pub async fn create_api_key(
        &self,
        role: &str,
        tenant_id: Option<&str>,
        name: Option<&str>,
    ) -> Result<NewApiKey> {
        let mut body = serde_json::json!({ "role": role });
        if let Some(t) = tenant_id {
            body["tenant_id"] = Value::String(t.to_string());
        }
        if let Some(n) = name {
            body["name"] = Value::String(n.to_string());
        }
        self.0.post("/v1/auth/api-keys", &body).await
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Audit<'a>(&'a EnterpriseAi);

impl Audit<'_> {
    /// GET /v1/audit/events.
    pub async fn events(&self, after: u64, limit: u64) -> Result<Value> {
        self.0
            .get(
                "/v1/audit/events",
                &[("after", &after.to_string()), ("limit", &limit.to_string())],
            )
            .await
    }
}

/// A registered tenant: a stable id, a unique immutable slug, a display name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    pub id: String,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy)]
pub struct Tenants<'a>(&'a EnterpriseAi);

impl Tenants<'_> {
    /// POST /v1/tenants (platform_admin): registers `slug` (and `id`, to name a tenant already seen in data).
    pub async fn create(&self, slug: &str, name: &str, id: Option<&str>) -> Result<Tenant> {
        let mut body = serde_json::json!({ "slug": slug, "name": name });
        if let Some(id) = id {
            body["id"] = Value::String(id.to_string());
        }
        self.0.post("/v1/tenants", &body).await
    }

    /// GET /v1/tenants: all of them for the platform, a tenant's own for its keys.
    pub async fn list(&self) -> Result<Vec<Tenant>> {
        #[derive(Deserialize)]
        struct Items {
            items: Vec<Tenant>,
        }
        let items: Items = self.0.get("/v1/tenants", &[]).await?;
        Ok(items.items)
    }

    /// GET /v1/tenants/{id or slug}.
    pub async fn get(&self, key: &str) -> Result<Tenant> {
        self.0.get(&format!("/v1/tenants/{key}"), &[]).await
    }
}
