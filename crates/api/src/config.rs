//! The control plane's configuration: one typed `Config`, read from `EAI_*` environment variables and validated
//! once. Secrets (the bootstrap key, database passwords) are never printed: `Debug` redacts them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::bail;
use secrecy::{ExposeSecret, SecretString};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_DATA_DIR: &str = "./eai-gpu-data";
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./eai-gpu-data/eai-gpu.db";
pub const DEFAULT_MAX_BATCH: usize = 10_000;
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
pub const DEFAULT_RAW_RETENTION_DAYS: u32 = 35;
pub const DEFAULT_MAX_GAP_MINUTES: u32 = 15;
pub const DEFAULT_ALLOCATION_BUCKET_MINUTES: u32 = 60;
pub const DEFAULT_RATE_LIMIT_PER_KEY: u32 = 50;
/// A `usage_reporter` key's default rate: a gateway sends a reserve and a commit per model call, and issue 42's
/// target of 2,000 pairs/s from one gateway is 4,000 requests/s; bursts of twice the rate.
pub const DEFAULT_RATE_LIMIT_USAGE_REPORTER: u32 = 5_000;
pub const DEFAULT_RATE_LIMIT_PER_ADDRESS: u32 = 20;
pub const DEFAULT_MAX_CLOCK_SKEW_SECONDS: u32 = 300;
pub const DEFAULT_METRICS_REFRESH_SECONDS: u32 = 60;
pub const DEFAULT_METRICS_MAX_GPU_SERIES: u64 = 10_000;
/// How long idempotency keys are kept, and the least they may be: a client retries within a day.
pub const DEFAULT_IDEMPOTENCY_RETENTION: std::time::Duration =
    std::time::Duration::from_secs(24 * 3600);

/// Where the data lives, parsed from `EAI_DATABASE_URL`: made where the store is opened, and dropped then.
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// The embedded default: one SQLite file.
    Sqlite(PathBuf),
    /// PostgreSQL (schema `eai`, row level security). The URL may hold a password: `Debug` redacts it.
    Postgres(String),
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Database::Postgres(url) => f.debug_tuple("Postgres").field(&redact_url(url)).finish(),
        }
    }
}

impl Database {
    /// Accepts `sqlite://PATH`, `sqlite:PATH` (`sqlite:///abs/path` is absolute) and `postgres://` /
    /// `postgresql://` URLs.
    pub fn parse(url: &str) -> anyhow::Result<Database> {
        let url = url.trim();
        if let Some(rest) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = rest.split('?').next().unwrap_or_default();
            if path.is_empty() {
                bail!("EAI_DATABASE_URL `{url}` names no file: use sqlite://PATH, e.g. {DEFAULT_DATABASE_URL}");
            }
            return Ok(Database::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres(url.to_string()));
        }
        bail!(
            "EAI_DATABASE_URL must start with sqlite:// or postgres:// (got `{}`)",
            redact_url(url)
        )
    }
}

/// A URL with its password replaced by `***`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        None => url.to_string(),
    }
}

/// Where the allocation batch reads usage from (`EAI_ALLOCATION_SOURCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllocationSource {
    /// The primary store (default).
    #[default]
    Primary,
    /// The ClickHouse replica (`EAI_CLICKHOUSE_URL`): rollups, gaps and usage events; policies and the exact
    /// hours still come from the primary.
    ClickHouse,
}

impl AllocationSource {
    pub fn parse(s: &str) -> anyhow::Result<AllocationSource> {
        match s.to_ascii_lowercase().as_str() {
            "primary" => Ok(AllocationSource::Primary),
            "clickhouse" => Ok(AllocationSource::ClickHouse),
            _ => bail!("EAI_ALLOCATION_SOURCE must be `primary` or `clickhouse`, not `{s}`"),
        }
    }
}

/// Everything `serve` needs.
#[derive(Clone)]
pub struct Config {
    /// `EAI_LISTEN`, default 127.0.0.1:8080 (port 0 picks a free port).
    pub listen: SocketAddr,
    /// `EAI_DATA_DIR`, default `./eai-gpu-data`: where the generated bootstrap key file is written.
    pub data_dir: PathBuf,
    /// `EAI_DATABASE_URL`; `None`: the SQLite file `<data_dir>/eai-gpu.db`. Secret (it may hold a password):
    /// read through [`Config::database`].
    pub database_url: Option<SecretString>,
    /// `EAI_BOOTSTRAP_ADMIN_KEY`: the first platform_admin key when the store has none. Secret.
    pub bootstrap_admin_key: Option<SecretString>,
    /// `EAI_MAX_BATCH`: samples or usage events per request (beyond: 413).
    pub max_batch: usize,
    /// `EAI_MAX_BODY_BYTES`: request body limit (beyond: 413).
    pub max_body_bytes: usize,
    /// `EAI_RAW_RETENTION_DAYS`: raw samples older than this are pruned hourly (rollups are kept); 0 keeps them.
    pub raw_retention_days: u32,
    /// `EAI_MAX_GAP_MINUTES`: missing spans up to this long are interpolated, longer ones reported as gaps.
    pub max_gap_minutes: u32,
    /// `EAI_IDEMPOTENCY_RETENTION` (`24h`, at least that): how long an `Idempotency-Key` is kept after its
    /// first request (its answer replayed, another request with it refused); pruned hourly after.
    pub idempotency_retention: std::time::Duration,
    /// `EAI_READ_CACHE_ROWS`: group rollups and claims the allocation's read cache keeps decoded (buckets
    /// unchanged since are not read again; 0 turns it off). Default 500,000 (about 100 MiB).
    pub read_cache_rows: usize,
    /// `EAI_SPLIT_CACHE_BUCKETS`: shared deployment-buckets whose settled split (each tenant's exact, unrounded
    /// part) the allocation keeps between requests, each used only for the very inputs it was computed from; an
    /// allocation that leaves more empties it; 0 turns it off. Default 500,000 (about 1 KiB each at most).
    pub split_cache_buckets: usize,
    /// `EAI_USAGE_CACHE_ROWS`: per-GPU rollups the breakdown's read cache keeps decoded (SQLite; buckets
    /// unchanged since are not read again; 0 turns it off). Default 1,000,000 (at most about 150 MiB, filled
    /// only by breakdowns).
    pub usage_cache_rows: usize,
    /// `EAI_ALLOCATION_BUCKET_MINUTES`: shared deployments are split per bucket of this length (a whole number of
    /// hours, since rollups are hourly). Default 60.
    pub allocation_bucket_minutes: u32,
    /// `EAI_CLICKHOUSE_URL` (`http://[user[:pass]@]host:port[/database]`): the analytics replica. When set, the
    /// store writes the outbox and `serve` replicates it. May hold a password: never print it.
    pub clickhouse_url: Option<SecretString>,
    /// `EAI_CLICKHOUSE_CLUSTER`: the ClickHouse cluster (a name in the servers' `remote_servers`) the replica's
    /// tables are created on: replicated tables on every server behind `Distributed` tables. Unset: plain
    /// tables on the one server of `EAI_CLICKHOUSE_URL`.
    pub clickhouse_cluster: Option<String>,
    /// `EAI_ALLOCATION_SOURCE`: `primary` (default) or `clickhouse` (needs `EAI_CLICKHOUSE_URL`).
    pub allocation_source: AllocationSource,
    /// `EAI_ALLOCATION_BATCH`: `on` (default) runs the allocation batch hourly in `serve`; `off` disables it.
    pub allocation_batch: bool,
    /// `EAI_ALLOCATION_BATCH_INTERVAL_SECONDS` (3600): between two runs of the allocation batch.
    pub allocation_batch_interval_seconds: u32,
    /// `EAI_LEADER_POLL_SECONDS` (15, at most 60): how often a replica checks or tries to take the lease of each
    /// one-replica job (the batch, the pruner, the replicator, the budget chores); a replica takes over within
    /// this once the leader is gone.
    pub leader_poll_seconds: u32,
    /// `EAI_MALLOC_TRIM_SECONDS` (60; 0: never): how often `serve` hands the allocator's free pages back to the
    /// system (glibc `malloc_trim`), so that resident memory follows what is in use (see RELIABILITY.md).
    pub malloc_trim_seconds: u32,
    /// `EAI_RATE_LIMIT_PER_KEY`: requests per second one API key may make (bursts of twice that); 0: no limit.
    /// The rate of every role without one of its own in `rate_limit_per_key_by_role`.
    pub rate_limit_per_key: u32,
    /// `EAI_RATE_LIMIT_PER_KEY_BY_ROLE` (`usage_reporter=5000`): roles whose keys have a rate of their own, as
    /// `role=N,role=N` (0: no limit). The roles named replace their defaults; the others keep them.
    pub rate_limit_per_key_by_role: Vec<(eai_store::Role, u32)>,
    /// `EAI_RATE_LIMIT_PER_ADDRESS`: requests per second one client address may make without a valid key
    /// (probes, metrics, the portal's files, failed sign-ins; bursts of twice that); 0: no limit.
    pub rate_limit_per_address: u32,
    /// `EAI_MAX_CONCURRENT_ALLOCATIONS`: allocation computations at once (beyond: 429). Default: the cores.
    pub max_concurrent_allocations: usize,
    /// `EAI_MAX_CLOCK_SKEW_SECONDS`: a sample ending later than this after the server's clock is refused.
    pub max_clock_skew_seconds: u32,
    /// `EAI_METRICS_TOKEN`: when set, `/metrics` asks for `Authorization: Bearer <token>`. Secret.
    pub metrics_token: Option<SecretString>,
    /// `EAI_TLS_CERT` and `EAI_TLS_KEY`: PEM files; when both are set the server speaks HTTPS only.
    pub tls: Option<Tls>,
    /// `EAI_BUDGET_CHECK_SECONDS` (15): how often budgets' thresholds are checked, expired holds marked and due
    /// webhooks delivered.
    pub budget_check_seconds: u32,
    /// `EAI_METRICS_REFRESH_SECONDS` (60): how often the figures `/metrics` reads from the store (latest sample per
    /// GPU, the month to date's allocation, the audit chain's verification…) are refreshed; scrapes read the cache.
    pub metrics_refresh_seconds: u32,
    /// `EAI_METRICS_MAX_GPU_SERIES` (10,000): GPUs shown in the per-GPU series; beyond, those seen longest ago are
    /// left out and counted in `eai_metrics_gpu_series_omitted`.
    pub metrics_max_gpu_series: u64,
    /// `EAI_METRICS_TENANT_COST` (off): the month to date's cost per tenant in `/metrics` (a series per tenant).
    pub metrics_tenant_cost: bool,
    /// `EAI_FOCUS_PROVIDER_NAME` and `EAI_FOCUS_BILLING_ACCOUNT_ID` (both `eai-gpu`): who issues the charges of
    /// the FOCUS export (ProviderName, PublisherName, InvoiceIssuerName, BillingAccountName; BillingAccountId).
    pub focus_issuer: eai_engine::focus::Issuer,
    /// `EAI_RECOMMEND_IDLE_UTILIZATION` (0.05), `EAI_RECOMMEND_IDLE_SHARE` (0.5) and `EAI_RECOMMEND_LOW_UTILIZATION`
    /// (0.3): the recommendations' thresholds when a request gives none (decimals from 0 to 1, 6 places at most).
    pub recommend: eai_engine::recommend::Thresholds,
    /// `EAI_ANOMALY_CHECK_SECONDS` (3600), `EAI_ANOMALY_BASELINE_DAYS` (28), `EAI_ANOMALY_THRESHOLD_MADS` (5),
    /// `EAI_ANOMALY_MIN_RATIO` (0.5), `EAI_ANOMALY_WEBHOOK_URL` and `EAI_ANOMALY_WEBHOOK_SECRET` (secret): the
    /// spend anomalies' job (see `eai_app::anomalies`).
    pub anomalies: eai_app::anomalies::AnomalyConfig,
}

/// The server's certificate chain and private key (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The machine's cores (at least one): the default number of allocations computed at once.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            database_url: None,
            bootstrap_admin_key: None,
            max_batch: DEFAULT_MAX_BATCH,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            raw_retention_days: DEFAULT_RAW_RETENTION_DAYS,
            max_gap_minutes: DEFAULT_MAX_GAP_MINUTES,
            idempotency_retention: DEFAULT_IDEMPOTENCY_RETENTION,
            read_cache_rows: eai_store::read_cache::DEFAULT_ROWS,
            split_cache_buckets: eai_engine::allocate::DEFAULT_SPLIT_BUCKETS,
            usage_cache_rows: eai_store::usage_cache::DEFAULT_ROWS,
            allocation_bucket_minutes: DEFAULT_ALLOCATION_BUCKET_MINUTES,
            clickhouse_url: None,
            clickhouse_cluster: None,
            allocation_source: AllocationSource::Primary,
            allocation_batch: true,
            allocation_batch_interval_seconds: 3600,
            leader_poll_seconds: 15,
            malloc_trim_seconds: 60,
            rate_limit_per_key: DEFAULT_RATE_LIMIT_PER_KEY,
            rate_limit_per_key_by_role: vec![(
                eai_store::Role::UsageReporter,
                DEFAULT_RATE_LIMIT_USAGE_REPORTER,
            )],
            rate_limit_per_address: DEFAULT_RATE_LIMIT_PER_ADDRESS,
            max_concurrent_allocations: cores(),
            max_clock_skew_seconds: DEFAULT_MAX_CLOCK_SKEW_SECONDS,
            metrics_token: None,
            tls: None,
            budget_check_seconds: 15,
            metrics_refresh_seconds: DEFAULT_METRICS_REFRESH_SECONDS,
            metrics_max_gpu_series: DEFAULT_METRICS_MAX_GPU_SERIES,
            metrics_tenant_cost: false,
            focus_issuer: eai_engine::focus::Issuer::default(),
            recommend: eai_engine::recommend::Thresholds::default(),
            anomalies: eai_app::anomalies::AnomalyConfig::default(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field(
                "database_url",
                &self
                    .database_url
                    .as_ref()
                    .map(|u| redact_url(u.expose_secret())),
            )
            .field(
                "bootstrap_admin_key",
                &self.bootstrap_admin_key.as_ref().map(|_| "<redacted>"),
            )
            .field("max_batch", &self.max_batch)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("raw_retention_days", &self.raw_retention_days)
            .field("max_gap_minutes", &self.max_gap_minutes)
            .field("idempotency_retention", &self.idempotency_retention)
            .field("read_cache_rows", &self.read_cache_rows)
            .field("split_cache_buckets", &self.split_cache_buckets)
            .field("usage_cache_rows", &self.usage_cache_rows)
            .field("allocation_bucket_minutes", &self.allocation_bucket_minutes)
            .field(
                "clickhouse_url",
                &self
                    .clickhouse_url
                    .as_ref()
                    .map(|u| redact_url(u.expose_secret())),
            )
            .field("clickhouse_cluster", &self.clickhouse_cluster)
            .field("allocation_source", &self.allocation_source)
            .field("allocation_batch", &self.allocation_batch)
            .field(
                "allocation_batch_interval_seconds",
                &self.allocation_batch_interval_seconds,
            )
            .field("leader_poll_seconds", &self.leader_poll_seconds)
            .field("malloc_trim_seconds", &self.malloc_trim_seconds)
            .field("budget_check_seconds", &self.budget_check_seconds)
            .field("rate_limit_per_key", &self.rate_limit_per_key)
            .field(
                "rate_limit_per_key_by_role",
                &self.rate_limit_per_key_by_role,
            )
            .field("rate_limit_per_address", &self.rate_limit_per_address)
            .field(
                "max_concurrent_allocations",
                &self.max_concurrent_allocations,
            )
            .field("max_clock_skew_seconds", &self.max_clock_skew_seconds)
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| "<redacted>"),
            )
            .field("tls", &self.tls)
            .field("metrics_refresh_seconds", &self.metrics_refresh_seconds)
            .field("metrics_max_gpu_series", &self.metrics_max_gpu_series)
            .field("metrics_tenant_cost", &self.metrics_tenant_cost)
            .field("focus_issuer", &self.focus_issuer)
            .field("recommend", &self.recommend)
            .field("anomalies", &self.anomalies)
            .finish()
    }
}

impl Config {
    /// The per-key rates of [`crate::limits::Limits`]: `rate_limit_per_key` for every role but those of
    /// `rate_limit_per_key_by_role`.
    pub fn key_rates(&self) -> crate::limits::KeyRates {
        crate::limits::KeyRates {
            default: self.rate_limit_per_key,
            by_role: self.rate_limit_per_key_by_role.clone(),
        }
    }

    /// Reads the `EAI_*` environment variables (unset ones take their defaults) and validates the result: the
    /// [`ConfigArgs`] with no flag given.
    pub fn from_env() -> anyhow::Result<Config> {
        ConfigArgs::from_env()?.into_config()
    }

    /// Checks what the types cannot say. Called by `from_env` and by `Application::build`.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.max_batch == 0 {
            bail!("EAI_MAX_BATCH must be at least 1");
        }
        if self.max_body_bytes < 1024 {
            bail!("EAI_MAX_BODY_BYTES must be at least 1024");
        }
        if self.allocation_bucket_minutes == 0 || self.allocation_bucket_minutes % 60 != 0 {
            bail!("EAI_ALLOCATION_BUCKET_MINUTES must be a whole number of hours (60, 120, …): rollups are hourly");
        }
        if self.allocation_batch_interval_seconds == 0 {
            bail!("EAI_ALLOCATION_BATCH_INTERVAL_SECONDS must be at least 1");
        }
        if !(1..=60).contains(&self.leader_poll_seconds) {
            bail!("EAI_LEADER_POLL_SECONDS must be from 1 to 60: a replica takes over within this once the leader is gone");
        }
        if self.max_gap_minutes == 0 {
            bail!("EAI_MAX_GAP_MINUTES must be at least 1");
        }
        if self.idempotency_retention < DEFAULT_IDEMPOTENCY_RETENTION {
            bail!("EAI_IDEMPOTENCY_RETENTION must be at least 24h: clients retry with the same key within a day");
        }
        if self.metrics_refresh_seconds == 0 {
            bail!("EAI_METRICS_REFRESH_SECONDS must be at least 1");
        }
        if self.max_concurrent_allocations == 0 {
            bail!("EAI_MAX_CONCURRENT_ALLOCATIONS must be at least 1");
        }
        for (name, v) in [
            (
                "EAI_RECOMMEND_IDLE_UTILIZATION",
                self.recommend.idle_utilization,
            ),
            ("EAI_RECOMMEND_IDLE_SHARE", self.recommend.idle_share),
            (
                "EAI_RECOMMEND_LOW_UTILIZATION",
                self.recommend.low_utilization,
            ),
        ] {
            if !(rust_decimal::Decimal::ZERO..=rust_decimal::Decimal::ONE).contains(&v)
                || v.scale() > 6
            {
                bail!("{name} must be a decimal from 0 to 1 with at most 6 places, not {v}");
            }
        }
        if let Some(t) = &self.metrics_token {
            if t.expose_secret().len() < 16 {
                bail!("EAI_METRICS_TOKEN must have at least 16 characters");
            }
        }
        if let Some(k) = &self.bootstrap_admin_key {
            crate::key_format::check_key_format(k.expose_secret())
                .map_err(|why| anyhow::anyhow!("EAI_BOOTSTRAP_ADMIN_KEY is not usable: {why}"))?;
        }
        self.validate_anomalies()?;
        self.database()?;
        self.clickhouse()?;
        if self.clickhouse_cluster.is_some() && self.clickhouse_url.is_none() {
            bail!("EAI_CLICKHOUSE_CLUSTER needs EAI_CLICKHOUSE_URL (a server of the cluster)");
        }
        if self.allocation_source == AllocationSource::ClickHouse && self.clickhouse_url.is_none() {
            bail!("EAI_ALLOCATION_SOURCE=clickhouse needs EAI_CLICKHOUSE_URL");
        }
        Ok(())
    }

    fn validate_anomalies(&self) -> anyhow::Result<()> {
        let a = &self.anomalies;
        if a.every.is_zero() {
            bail!("EAI_ANOMALY_CHECK_SECONDS must be at least 1");
        }
        if !(1..=366).contains(&a.thresholds.baseline_days) {
            bail!("EAI_ANOMALY_BASELINE_DAYS must be from 1 to 366");
        }
        if a.thresholds.threshold_mads <= rust_decimal::Decimal::ZERO {
            bail!("EAI_ANOMALY_THRESHOLD_MADS must be above 0");
        }
        if a.thresholds.min_ratio < rust_decimal::Decimal::ZERO {
            bail!("EAI_ANOMALY_MIN_RATIO must be 0 or more");
        }
        if let Some(w) = &a.webhook {
            let url = reqwest::Url::parse(&w.url)
                .map_err(|e| anyhow::anyhow!("EAI_ANOMALY_WEBHOOK_URL is not a URL ({e})"))?;
            if !matches!(url.scheme(), "http" | "https") {
                bail!("EAI_ANOMALY_WEBHOOK_URL must be an http or https URL");
            }
            if w.secret.len() < 16 {
                bail!("EAI_ANOMALY_WEBHOOK_SECRET must have at least 16 characters (it signs the webhooks)");
            }
        }
        Ok(())
    }

    /// The ClickHouse replica, when `EAI_CLICKHOUSE_URL` is set (on `EAI_CLICKHOUSE_CLUSTER` when that is).
    pub fn clickhouse(&self) -> anyhow::Result<Option<eai_store::clickhouse::ClickHouse>> {
        self.clickhouse_url
            .as_ref()
            .map(|u| {
                eai_store::clickhouse::ClickHouse::from_url(u.expose_secret())
                    .and_then(|c| c.with_cluster(self.clickhouse_cluster.as_deref()))
            })
            .transpose()
            .map_err(anyhow::Error::from)
    }

    /// The database to open: `EAI_DATABASE_URL`, or the SQLite file in the data directory.
    pub fn database(&self) -> anyhow::Result<Database> {
        match &self.database_url {
            Some(url) => Database::parse(url.expose_secret()),
            None => Ok(Database::Sqlite(self.data_dir.join("eai-gpu.db"))),
        }
    }

    /// The file a generated bootstrap key is written to.
    pub fn bootstrap_key_file(&self) -> PathBuf {
        bootstrap_key_file(&self.data_dir)
    }
}

pub fn bootstrap_key_file(data_dir: &Path) -> PathBuf {
    data_dir.join("bootstrap-admin-key")
}

/// The control plane's settings as flags, each with its `EAI_*` environment variable: a flag wins over its
/// variable, and an unset variable takes the default. `eai-gpu serve` takes them all (`--help` lists them with
/// their variables); [`Config::from_env`] reads the variables alone. Secrets are held as [`SecretString`]: they
/// never print (`Debug` redacts them, clap shows no value of theirs) and are exposed only to make the [`Config`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// Address to listen on; port 0 picks a free port [default: 127.0.0.1:8080].
    #[arg(long, env = "EAI_LISTEN", value_name = "ADDR", value_parser = address)]
    pub listen: Option<SocketAddr>,
    /// Folder of the embedded store and the generated bootstrap key file [default: ./eai-gpu-data].
    #[arg(long, env = "EAI_DATA_DIR", value_name = "DIR", value_parser = path)]
    pub data_dir: Option<PathBuf>,
    /// Store URL: sqlite://PATH or postgres://… [default: sqlite://DATA_DIR/eai-gpu.db]. Secret (a password).
    #[arg(long, env = "EAI_DATABASE_URL", value_name = "URL", value_parser = secret, hide_env_values = true)]
    pub database_url: Option<SecretString>,
    /// The first platform_admin key when the store has none (else one is generated into DATA_DIR). Secret.
    #[arg(long, env = "EAI_BOOTSTRAP_ADMIN_KEY", value_name = "KEY", value_parser = secret, hide_env_values = true)]
    pub bootstrap_admin_key: Option<SecretString>,
    /// Samples or usage events per request; beyond: 413 [default: 10000].
    #[arg(long, env = "EAI_MAX_BATCH", value_name = "N", value_parser = number::<usize>)]
    pub max_batch: Option<usize>,
    /// Request body limit in bytes; beyond: 413 [default: 16777216].
    #[arg(long, env = "EAI_MAX_BODY_BYTES", value_name = "BYTES", value_parser = number::<usize>)]
    pub max_body_bytes: Option<usize>,
    /// Raw samples older than this are pruned hourly (rollups are kept); 0 keeps them [default: 35].
    #[arg(long, env = "EAI_RAW_RETENTION_DAYS", value_name = "DAYS", value_parser = number::<u32>)]
    pub raw_retention_days: Option<u32>,
    /// Missing spans up to this long are interpolated, longer ones reported as gaps [default: 15].
    #[arg(long, env = "EAI_MAX_GAP_MINUTES", value_name = "MINUTES", value_parser = number::<u32>)]
    pub max_gap_minutes: Option<u32>,
    /// How long an Idempotency-Key is kept after its first request, at least 24h (`36h`, `7d`, `90000s`)
    /// [default: 24h].
    #[arg(long, env = "EAI_IDEMPOTENCY_RETENTION", value_name = "DURATION", value_parser = duration)]
    pub idempotency_retention: Option<std::time::Duration>,
    /// Group rollups and claims the allocation's read cache keeps decoded; 0 turns it off [default: 500000].
    #[arg(long, env = "EAI_READ_CACHE_ROWS", value_name = "ROWS", value_parser = number::<usize>)]
    pub read_cache_rows: Option<usize>,
    /// Shared deployment-buckets whose settled split the allocation keeps; 0 turns it off [default: 500000].
    #[arg(long, env = "EAI_SPLIT_CACHE_BUCKETS", value_name = "BUCKETS", value_parser = number::<usize>)]
    pub split_cache_buckets: Option<usize>,
    /// Per-GPU rollups the breakdown's read cache keeps decoded; 0 turns it off [default: 1000000].
    #[arg(long, env = "EAI_USAGE_CACHE_ROWS", value_name = "ROWS", value_parser = number::<usize>)]
    pub usage_cache_rows: Option<usize>,
    /// Shared deployments are split per bucket of this length, a whole number of hours [default: 60].
    #[arg(long, env = "EAI_ALLOCATION_BUCKET_MINUTES", value_name = "MINUTES", value_parser = number::<u32>)]
    pub allocation_bucket_minutes: Option<u32>,
    /// The ClickHouse replica, `http://[user[:pass]@]host:port[/database]`: the store writes the outbox and
    /// `serve` replicates it. Secret (a password).
    #[arg(long, env = "EAI_CLICKHOUSE_URL", value_name = "URL", value_parser = secret, hide_env_values = true)]
    pub clickhouse_url: Option<SecretString>,
    /// The ClickHouse cluster (in the servers' `remote_servers`) to create the replica's tables on: replicated
    /// tables behind `Distributed` ones [default: none, one server].
    #[arg(long, env = "EAI_CLICKHOUSE_CLUSTER", value_name = "NAME")]
    pub clickhouse_cluster: Option<String>,
    /// Where the allocation batch reads usage from: primary or clickhouse [default: primary].
    #[arg(long, env = "EAI_ALLOCATION_SOURCE", value_name = "SOURCE", value_parser = allocation_source)]
    pub allocation_source: Option<AllocationSource>,
    /// The hourly allocation batch in `serve`: on or off [default: on].
    #[arg(long, env = "EAI_ALLOCATION_BATCH", value_name = "ON|OFF", value_parser = switch)]
    pub allocation_batch: Option<bool>,
    /// Seconds between two runs of the allocation batch [default: 3600].
    #[arg(long, env = "EAI_ALLOCATION_BATCH_INTERVAL_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub allocation_batch_interval_seconds: Option<u32>,
    /// How often a replica checks or tries to take each one-replica job's lease, 1 to 60 [default: 15].
    #[arg(long, env = "EAI_LEADER_POLL_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub leader_poll_seconds: Option<u32>,
    /// How often the allocator's free pages go back to the system; 0: never [default: 60].
    #[arg(long, env = "EAI_MALLOC_TRIM_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub malloc_trim_seconds: Option<u32>,
    /// Requests per second one API key may make (bursts of twice that); 0: no limit [default: 50].
    #[arg(long, env = "EAI_RATE_LIMIT_PER_KEY", value_name = "N", value_parser = number::<u32>)]
    pub rate_limit_per_key: Option<u32>,
    /// Roles whose keys have a rate of their own, `role=N,…`; 0: no limit; roles not named keep their default
    /// [default: usage_reporter=5000].
    #[arg(long, env = "EAI_RATE_LIMIT_PER_KEY_BY_ROLE", value_name = "ROLE=N,…", value_parser = role_rates)]
    pub rate_limit_per_key_by_role: Option<RoleRates>,
    /// Requests per second one address may make without a valid key; 0: no limit [default: 20].
    #[arg(long, env = "EAI_RATE_LIMIT_PER_ADDRESS", value_name = "N", value_parser = number::<u32>)]
    pub rate_limit_per_address: Option<u32>,
    /// Allocation computations at once; beyond: 429 [default: the cores].
    #[arg(long, env = "EAI_MAX_CONCURRENT_ALLOCATIONS", value_name = "N", value_parser = number::<usize>)]
    pub max_concurrent_allocations: Option<usize>,
    /// A sample ending later than this after the server's clock is refused [default: 300].
    #[arg(long, env = "EAI_MAX_CLOCK_SKEW_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub max_clock_skew_seconds: Option<u32>,
    /// When set, /metrics asks for `Authorization: Bearer TOKEN` (16 characters at least). Secret.
    #[arg(long, env = "EAI_METRICS_TOKEN", value_name = "TOKEN", value_parser = secret, hide_env_values = true)]
    pub metrics_token: Option<SecretString>,
    /// The server's certificate chain (PEM); with --tls-key, the server speaks HTTPS only.
    #[arg(long, env = "EAI_TLS_CERT", value_name = "FILE", value_parser = path)]
    pub tls_cert: Option<PathBuf>,
    /// The server's private key (PEM); with --tls-cert, the server speaks HTTPS only.
    #[arg(long, env = "EAI_TLS_KEY", value_name = "FILE", value_parser = path)]
    pub tls_key: Option<PathBuf>,
    /// How often budgets' thresholds are checked, expired holds marked and webhooks delivered [default: 15].
    #[arg(long, env = "EAI_BUDGET_CHECK_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub budget_check_seconds: Option<u32>,
    /// How often the figures /metrics reads from the store are refreshed [default: 60].
    #[arg(long, env = "EAI_METRICS_REFRESH_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub metrics_refresh_seconds: Option<u32>,
    /// GPUs shown in the per-GPU series of /metrics [default: 10000].
    #[arg(long, env = "EAI_METRICS_MAX_GPU_SERIES", value_name = "N", value_parser = number::<u64>)]
    pub metrics_max_gpu_series: Option<u64>,
    /// The month to date's cost per tenant in /metrics (a series per tenant): on or off [default: off].
    #[arg(long, env = "EAI_METRICS_TENANT_COST", value_name = "ON|OFF", value_parser = switch)]
    pub metrics_tenant_cost: Option<bool>,
    /// Who issues the FOCUS export's charges (ProviderName, PublisherName, InvoiceIssuerName,
    /// BillingAccountName) [default: eai-gpu].
    #[arg(long, env = "EAI_FOCUS_PROVIDER_NAME", value_name = "NAME", value_parser = text)]
    pub focus_provider_name: Option<String>,
    /// The FOCUS export's BillingAccountId [default: eai-gpu].
    #[arg(long, env = "EAI_FOCUS_BILLING_ACCOUNT_ID", value_name = "ID", value_parser = text)]
    pub focus_billing_account_id: Option<String>,
    /// Recommendations: a GPU-hour busy at most this share of its time is idle, 0 to 1 [default: 0.05].
    #[arg(long, env = "EAI_RECOMMEND_IDLE_UTILIZATION", value_name = "SHARE", value_parser = threshold)]
    pub recommend_idle_utilization: Option<rust_decimal::Decimal>,
    /// Recommendations: a GPU idle for at least this share of the hours it ran could go, 0 to 1 [default: 0.5].
    #[arg(long, env = "EAI_RECOMMEND_IDLE_SHARE", value_name = "SHARE", value_parser = threshold)]
    pub recommend_idle_share: Option<rust_decimal::Decimal>,
    /// Recommendations: a deployment busy under this share of its GPU-hours is oversized, 0 to 1 [default: 0.3].
    #[arg(long, env = "EAI_RECOMMEND_LOW_UTILIZATION", value_name = "SHARE", value_parser = threshold)]
    pub recommend_low_utilization: Option<rust_decimal::Decimal>,
    /// How often settled hours are checked for spend anomalies [default: 3600].
    #[arg(long, env = "EAI_ANOMALY_CHECK_SECONDS", value_name = "SECONDS", value_parser = number::<u32>)]
    pub anomaly_check_seconds: Option<u32>,
    /// The trailing days an hour is compared with, 1 to 366 [default: 28].
    #[arg(long, env = "EAI_ANOMALY_BASELINE_DAYS", value_name = "DAYS", value_parser = number::<u32>)]
    pub anomaly_baseline_days: Option<u32>,
    /// How many scaled MADs from the baseline's median an anomaly is [default: 5].
    #[arg(long, env = "EAI_ANOMALY_THRESHOLD_MADS", value_name = "N", value_parser = decimal)]
    pub anomaly_threshold_mads: Option<rust_decimal::Decimal>,
    /// How far from the median, as a fraction of it, an anomaly is at least [default: 0.5].
    #[arg(long, env = "EAI_ANOMALY_MIN_RATIO", value_name = "RATIO", value_parser = decimal)]
    pub anomaly_min_ratio: Option<rust_decimal::Decimal>,
    /// Where each anomaly is posted once (`gpu.anomaly`); needs --anomaly-webhook-secret.
    #[arg(long, env = "EAI_ANOMALY_WEBHOOK_URL", value_name = "URL", value_parser = text)]
    pub anomaly_webhook_url: Option<String>,
    /// The key the anomaly webhooks are signed with (16 characters at least). Secret.
    #[arg(long, env = "EAI_ANOMALY_WEBHOOK_SECRET", value_name = "SECRET", value_parser = secret, hide_env_values = true)]
    pub anomaly_webhook_secret: Option<SecretString>,
}

/// `command` (and its subcommands) without the variables that are set but blank: a blank `EAI_*` variable is
/// an unset one (deployment files write `EAI_X=` for "not configured"), which clap would read as a value.
pub fn unset_blank_env(command: clap::Command) -> clap::Command {
    let command = command.mut_args(|arg| {
        let blank = arg
            .get_env()
            .and_then(std::env::var_os)
            .is_some_and(|v| v.to_string_lossy().trim().is_empty());
        if blank {
            arg.env(None)
        } else {
            arg
        }
    });
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    names
        .into_iter()
        .fold(command, |c, name| c.mut_subcommand(name, unset_blank_env))
}

impl ConfigArgs {
    /// The settings of the `EAI_*` environment variables alone (no flag).
    pub fn from_env() -> anyhow::Result<ConfigArgs> {
        use clap::{Args, FromArgMatches};
        let command = ConfigArgs::augment_args(clap::Command::new("eai-gpu").no_binary_name(true));
        unset_blank_env(command)
            .try_get_matches_from(std::iter::empty::<String>())
            .and_then(|m| ConfigArgs::from_arg_matches(&m))
            .map_err(|e| anyhow::anyhow!("{}", clap_message(&e)))
    }

    /// The configuration: each setting given, the others their defaults; validated.
    pub fn into_config(self) -> anyhow::Result<Config> {
        let d = Config::default();
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(Tls { cert, key }),
            (None, None) => None,
            _ => bail!("EAI_TLS_CERT and EAI_TLS_KEY (--tls-cert, --tls-key) go together: set both (PEM files) or neither"),
        };
        let anomalies = {
            let da = &d.anomalies;
            let webhook = match (self.anomaly_webhook_url, self.anomaly_webhook_secret) {
                (Some(url), Some(secret)) => Some(eai_app::anomalies::Webhook {
                    url,
                    secret: secret.expose_secret().to_string(),
                }),
                (None, None) => None,
                (Some(_), None) => bail!("EAI_ANOMALY_WEBHOOK_URL needs EAI_ANOMALY_WEBHOOK_SECRET (the webhooks are signed)"),
                (None, Some(_)) => bail!("EAI_ANOMALY_WEBHOOK_SECRET is set without EAI_ANOMALY_WEBHOOK_URL"),
            };
            eai_app::anomalies::AnomalyConfig {
                every: self
                    .anomaly_check_seconds
                    .map_or(da.every, |s| std::time::Duration::from_secs(u64::from(s))),
                thresholds: eai_engine::anomaly::Thresholds {
                    baseline_days: self
                        .anomaly_baseline_days
                        .unwrap_or(da.thresholds.baseline_days),
                    threshold_mads: self
                        .anomaly_threshold_mads
                        .unwrap_or(da.thresholds.threshold_mads),
                    min_ratio: self.anomaly_min_ratio.unwrap_or(da.thresholds.min_ratio),
                },
                webhook,
            }
        };
        let c = Config {
            anomalies,
            listen: self.listen.unwrap_or(d.listen),
            data_dir: self.data_dir.unwrap_or(d.data_dir),
            database_url: self.database_url,
            bootstrap_admin_key: self.bootstrap_admin_key,
            max_batch: self.max_batch.unwrap_or(d.max_batch),
            max_body_bytes: self.max_body_bytes.unwrap_or(d.max_body_bytes),
            raw_retention_days: self.raw_retention_days.unwrap_or(d.raw_retention_days),
            max_gap_minutes: self.max_gap_minutes.unwrap_or(d.max_gap_minutes),
            idempotency_retention: self
                .idempotency_retention
                .unwrap_or(d.idempotency_retention),
            read_cache_rows: self.read_cache_rows.unwrap_or(d.read_cache_rows),
            split_cache_buckets: self.split_cache_buckets.unwrap_or(d.split_cache_buckets),
            usage_cache_rows: self.usage_cache_rows.unwrap_or(d.usage_cache_rows),
            allocation_bucket_minutes: self
                .allocation_bucket_minutes
                .unwrap_or(d.allocation_bucket_minutes),
            clickhouse_url: self.clickhouse_url,
            clickhouse_cluster: self.clickhouse_cluster.filter(|c| !c.trim().is_empty()),
            allocation_source: self.allocation_source.unwrap_or(d.allocation_source),
            allocation_batch: self.allocation_batch.unwrap_or(d.allocation_batch),
            allocation_batch_interval_seconds: self
                .allocation_batch_interval_seconds
                .unwrap_or(d.allocation_batch_interval_seconds),
            leader_poll_seconds: self.leader_poll_seconds.unwrap_or(d.leader_poll_seconds),
            malloc_trim_seconds: self.malloc_trim_seconds.unwrap_or(d.malloc_trim_seconds),
            rate_limit_per_key: self.rate_limit_per_key.unwrap_or(d.rate_limit_per_key),
            rate_limit_per_key_by_role: d
                .rate_limit_per_key_by_role
                .into_iter()
                .chain(
                    self.rate_limit_per_key_by_role
                        .map(|r| r.0)
                        .unwrap_or_default(),
                )
                .collect(),
            rate_limit_per_address: self
                .rate_limit_per_address
                .unwrap_or(d.rate_limit_per_address),
            max_concurrent_allocations: self
                .max_concurrent_allocations
                .unwrap_or(d.max_concurrent_allocations),
            max_clock_skew_seconds: self
                .max_clock_skew_seconds
                .unwrap_or(d.max_clock_skew_seconds),
            metrics_token: self.metrics_token,
            tls,
            budget_check_seconds: self
                .budget_check_seconds
                .unwrap_or(d.budget_check_seconds)
                .max(1),
            metrics_refresh_seconds: self
                .metrics_refresh_seconds
                .unwrap_or(d.metrics_refresh_seconds),
            metrics_max_gpu_series: self
                .metrics_max_gpu_series
                .unwrap_or(d.metrics_max_gpu_series),
            metrics_tenant_cost: self.metrics_tenant_cost.unwrap_or(d.metrics_tenant_cost),
            focus_issuer: eai_engine::focus::Issuer {
                name: self.focus_provider_name.unwrap_or(d.focus_issuer.name),
                billing_account_id: self
                    .focus_billing_account_id
                    .unwrap_or(d.focus_issuer.billing_account_id),
            },
            recommend: eai_engine::recommend::Thresholds {
                idle_utilization: self
                    .recommend_idle_utilization
                    .unwrap_or(d.recommend.idle_utilization),
                idle_share: self.recommend_idle_share.unwrap_or(d.recommend.idle_share),
                low_utilization: self
                    .recommend_low_utilization
                    .unwrap_or(d.recommend.low_utilization),
            },
        };
        c.validate()?;
        Ok(c)
    }
}

/// A clap error as one line for `error: …` (the command-line parse renders its own, with the usage).
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// A value as given, less the blanks around it (a variable written with a trailing newline still reads).
fn trimmed(v: &str) -> Result<&str, String> {
    match v.trim() {
        "" => Err("empty: give a value or leave the setting unset".into()),
        t => Ok(t),
    }
}

fn text(v: &str) -> Result<String, String> {
    trimmed(v).map(str::to_owned)
}

fn path(v: &str) -> Result<PathBuf, String> {
    trimmed(v).map(PathBuf::from)
}

/// A secret: its value is never shown, not even in a refusal.
fn secret(v: &str) -> Result<SecretString, String> {
    match v.trim() {
        "" => Err("empty: give a value or leave the setting unset".into()),
        t => Ok(SecretString::from(t)),
    }
}

fn address(v: &str) -> Result<SocketAddr, String> {
    trimmed(v)?
        .parse()
        .map_err(|_| format!("not an address like {DEFAULT_LISTEN}"))
}

/// A recommendations' threshold: a decimal from 0 to 1, 6 places at most.
fn threshold(v: &str) -> Result<rust_decimal::Decimal, String> {
    eai_engine::recommend::parse_threshold("threshold", trimmed(v)?).map_err(|e| e.reason)
}

fn number<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    trimmed(v)?
        .parse()
        .map_err(|_| "not a whole number".to_string())
}

/// A duration: a whole number with its unit, `s`, `m`, `h` or `d` (`24h`, `90m`, `7d`).
fn duration(v: &str) -> Result<std::time::Duration, String> {
    let v = trimmed(v)?;
    let bad = || format!("not a duration like 24h, 90m or 7d: `{v}`");
    let unit = v.chars().last().ok_or_else(bad)?;
    let seconds: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    let n: u64 = v[..v.len() - 1].parse().map_err(|_| bad())?;
    n.checked_mul(seconds)
        .map(std::time::Duration::from_secs)
        .ok_or_else(bad)
}

/// An on/off setting: `on`, `true`, `1` or `off`, `false`, `0`.
/// An exact decimal number (`5`, `0.5`).
fn decimal(v: &str) -> Result<rust_decimal::Decimal, String> {
    trimmed(v)?
        .parse()
        .map_err(|_| "not a decimal number like 0.5".to_string())
}

fn switch(v: &str) -> Result<bool, String> {
    match trimmed(v)?.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err("must be `on` or `off`".into()),
    }
}

/// `EAI_RATE_LIMIT_PER_KEY_BY_ROLE`'s value: `role=N` pairs (clap wants one type per setting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRates(pub Vec<(eai_store::Role, u32)>);

/// `role=N,role=N` (spaces around the parts allowed), each role one of [`eai_store::Role`]'s names.
fn role_rates(v: &str) -> Result<RoleRates, String> {
    trimmed(v)?
        .split(',')
        .map(|pair| {
            let (role, n) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{}` is not role=N", pair.trim()))?;
            let role = eai_store::Role::parse(role.trim()).ok_or_else(|| {
                let names: Vec<&str> = eai_store::Role::ALL.iter().map(|r| r.as_str()).collect();
                format!("no role `{}` (roles: {})", role.trim(), names.join(", "))
            })?;
            Ok((role, number::<u32>(n)?))
        })
        .collect::<Result<_, String>>()
        .map(RoleRates)
}

fn allocation_source(v: &str) -> Result<AllocationSource, String> {
    AllocationSource::parse(trimmed(v)?).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, FromArgMatches};

    /// The settings of `pairs` (variable, value), given as the flags of those variables: clap reads a variable
    /// into the same setting as its flag, and the machine's own variables stay out of the test.
    fn from(pairs: &[(&str, &str)]) -> anyhow::Result<Config> {
        let command = ConfigArgs::augment_args(clap::Command::new("test").no_binary_name(true));
        let argv: Vec<String> = pairs
            .iter()
            .map(|(var, value)| {
                let arg = command
                    .get_arguments()
                    .find(|a| a.get_env() == Some(std::ffi::OsStr::new(var)))
                    .unwrap_or_else(|| panic!("no setting reads {var}"));
                format!("--{}={value}", arg.get_long().expect("a flag"))
            })
            .collect();
        let matches = command
            .mut_args(|a| a.env(None))
            .try_get_matches_from(argv)
            .map_err(|e| anyhow::anyhow!("{}", clap_message(&e)))?;
        ConfigArgs::from_arg_matches(&matches)?.into_config()
    }

    #[test]
    fn every_setting_has_its_variable_and_secrets_hide_their_values() {
        let command = ConfigArgs::augment_args(clap::Command::new("test"));
        for arg in command.get_arguments().filter(|a| a.get_long().is_some()) {
            let long = arg.get_long().expect("long");
            let var = arg.get_env().map(|v| v.to_string_lossy().into_owned());
            let want = format!("EAI_{}", long.to_ascii_uppercase().replace('-', "_"));
            assert_eq!(var.as_deref(), Some(want.as_str()), "--{long}");
        }
        for secret in [
            "database-url",
            "bootstrap-admin-key",
            "clickhouse-url",
            "metrics-token",
            "anomaly-webhook-secret",
        ] {
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(secret))
                .expect("a secret's flag");
            assert!(arg.is_hide_env_values_set(), "--{secret}");
        }
    }

    #[test]
    fn blanks_around_a_value_are_dropped_and_a_blank_value_is_refused() {
        let c = from(&[("EAI_MAX_BATCH", " 7\n"), ("EAI_DATA_DIR", " /d ")]).expect("valid");
        assert_eq!((c.max_batch, c.data_dir), (7, PathBuf::from("/d")));
        let e = from(&[("EAI_MAX_BATCH", "  ")]).expect_err("blank");
        assert!(e.to_string().contains("--max-batch"), "{e}");
    }

    #[test]
    fn rate_limits_per_role_replace_only_the_roles_named() {
        use eai_store::Role;
        let c = from(&[]).expect("default");
        let r = c.key_rates();
        assert_eq!((r.of(Role::UsageReporter), r.of(Role::Viewer)), (5_000, 50));
        let c = from(&[
            ("EAI_RATE_LIMIT_PER_KEY", "30"),
            (
                "EAI_RATE_LIMIT_PER_KEY_BY_ROLE",
                " sampler = 200 , viewer=0",
            ),
        ])
        .expect("valid");
        let r = c.key_rates();
        assert_eq!(r.of(Role::Sampler), 200);
        assert_eq!(r.of(Role::Viewer), 0, "0: no limit");
        assert_eq!(r.of(Role::UsageReporter), 5_000, "not named: its default");
        assert_eq!(r.of(Role::Finops), 30, "EAI_RATE_LIMIT_PER_KEY");
        let c = from(&[("EAI_RATE_LIMIT_PER_KEY_BY_ROLE", "usage_reporter=800")]).expect("valid");
        assert_eq!(c.key_rates().of(Role::UsageReporter), 800);
        let e =
            from(&[("EAI_RATE_LIMIT_PER_KEY_BY_ROLE", "gateway=10")]).expect_err("no such role");
        assert!(
            e.to_string().contains("usage_reporter"),
            "names the roles: {e}"
        );
        let e = from(&[("EAI_RATE_LIMIT_PER_KEY_BY_ROLE", "viewer:10")]).expect_err("no =");
        assert!(e.to_string().contains("role=N"), "{e}");
        let e = from(&[("EAI_RATE_LIMIT_PER_KEY_BY_ROLE", "viewer=-1")]).expect_err("negative");
        assert!(e.to_string().contains("whole number"), "{e}");
    }

    #[test]
    fn the_idempotency_retention_is_a_duration_of_a_day_at_least() {
        let hours = |c: Config| c.idempotency_retention.as_secs() / 3600;
        assert_eq!(hours(from(&[]).expect("default")), 24);
        let c = from(&[("EAI_IDEMPOTENCY_RETENTION", "7d")]).expect("a week");
        assert_eq!(hours(c), 168);
        let c = from(&[("EAI_IDEMPOTENCY_RETENTION", "1800m")]).expect("30 hours");
        assert_eq!(hours(c), 30);
        let e = from(&[("EAI_IDEMPOTENCY_RETENTION", "23h")]).expect_err("less than a day");
        assert!(e.to_string().contains("at least 24h"), "{e}");
        let e = from(&[("EAI_IDEMPOTENCY_RETENTION", "24")]).expect_err("no unit");
        assert!(e.to_string().contains("--idempotency-retention"), "{e}");
    }

    #[test]
    fn defaults() {
        let c = from(&[]).expect("defaults are valid");
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.max_batch, 10_000);
        assert_eq!(c.max_body_bytes, 16 * 1024 * 1024);
        assert_eq!(c.raw_retention_days, 35);
        assert_eq!(
            c.database().expect("db"),
            Database::Sqlite(PathBuf::from("./eai-gpu-data/eai-gpu.db"))
        );
    }

    #[test]
    fn database_urls() {
        assert_eq!(
            Database::parse("sqlite://./x/y.db").expect("ok"),
            Database::Sqlite("./x/y.db".into())
        );
        assert_eq!(
            Database::parse("sqlite:data.db").expect("ok"),
            Database::Sqlite("data.db".into())
        );
        assert_eq!(
            Database::parse("sqlite:///var/lib/eai.db").expect("ok"),
            Database::Sqlite("/var/lib/eai.db".into())
        );
        assert!(matches!(
            Database::parse("postgres://u:p@h/db").expect("ok"),
            Database::Postgres(_)
        ));
        assert!(Database::parse("mysql://h/db").is_err());
        assert!(Database::parse("sqlite://").is_err());
    }

    #[test]
    fn secrets_are_never_printed() {
        let c = from(&[
            (
                "EAI_BOOTSTRAP_ADMIN_KEY",
                "eai_live_0123456789abcdef0123456789abcdef",
            ),
            ("EAI_DATABASE_URL", "postgres://eai:hunter2@db:5432/eai"),
        ])
        .expect("valid");
        let text = format!("{c:?} {:?}", c.database().expect("a database"));
        assert!(!text.contains("0123456789abcdef"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("postgres://eai:***@db:5432/eai"), "{text}");
        let args = ConfigArgs {
            database_url: Some("postgres://eai:hunter2@db/eai".into()),
            metrics_token: Some("metrics-token-0123456789".into()),
            ..ConfigArgs::default()
        };
        let text = format!("{args:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("0123456789"),
            "{text}"
        );
    }

    #[test]
    fn the_replica_is_configured_and_its_password_never_printed() {
        let c = from(&[
            ("EAI_CLICKHOUSE_URL", "http://eai:s3cret@ch:8123/analytics"),
            ("EAI_ALLOCATION_SOURCE", "clickhouse"),
            ("EAI_ALLOCATION_BATCH", "off"),
        ])
        .expect("valid");
        assert_eq!(c.allocation_source, AllocationSource::ClickHouse);
        assert!(!c.allocation_batch);
        assert_eq!(
            c.clickhouse().expect("url").expect("set").database(),
            "analytics"
        );
        let text = format!("{c:?}");
        assert!(!text.contains("s3cret"), "{text}");
        let d = from(&[]).expect("defaults");
        assert_eq!(
            (
                d.allocation_source,
                d.allocation_batch,
                d.clickhouse_url.is_none()
            ),
            (AllocationSource::Primary, true, true)
        );
        let e = from(&[("EAI_ALLOCATION_SOURCE", "clickhouse")]).expect_err("no url");
        assert!(e.to_string().contains("EAI_CLICKHOUSE_URL"), "{e}");
        let c = from(&[
            ("EAI_CLICKHOUSE_URL", "http://ch:8123/eai"),
            ("EAI_CLICKHOUSE_CLUSTER", "eai_cluster"),
        ])
        .expect("a cluster");
        let ch = c.clickhouse().expect("url").expect("set");
        assert_eq!(ch.cluster(), Some("eai_cluster"));
        assert!(d.clickhouse().expect("none").is_none());
        let e = from(&[("EAI_CLICKHOUSE_CLUSTER", "eai_cluster")]).expect_err("no url");
        assert!(e.to_string().contains("EAI_CLICKHOUSE_URL"), "{e}");
        let e = from(&[
            ("EAI_CLICKHOUSE_URL", "http://ch:8123/eai"),
            ("EAI_CLICKHOUSE_CLUSTER", "a;b"),
        ])
        .expect_err("not a name");
        assert!(e.to_string().contains("EAI_CLICKHOUSE_CLUSTER"), "{e}");
        let e = from(&[("EAI_CLICKHOUSE_URL", "tcp://u:pw@h:9000")]).expect_err("bad url");
        assert!(!format!("{e:#}").contains("pw@"), "{e:#}");
    }

    #[test]
    fn the_metrics_settings_are_read_and_checked() {
        let d = from(&[]).expect("defaults");
        assert_eq!(
            (
                d.metrics_refresh_seconds,
                d.metrics_max_gpu_series,
                d.metrics_tenant_cost
            ),
            (60, 10_000, false)
        );
        let c = from(&[
            ("EAI_METRICS_REFRESH_SECONDS", "5"),
            ("EAI_METRICS_MAX_GPU_SERIES", "200"),
            ("EAI_METRICS_TENANT_COST", "true"),
        ])
        .expect("valid");
        assert_eq!(
            (
                c.metrics_refresh_seconds,
                c.metrics_max_gpu_series,
                c.metrics_tenant_cost
            ),
            (5, 200, true)
        );
        let e = from(&[("EAI_METRICS_REFRESH_SECONDS", "0")]).expect_err("zero");
        assert!(e.to_string().contains("EAI_METRICS_REFRESH_SECONDS"), "{e}");
        let e = from(&[("EAI_METRICS_TENANT_COST", "maybe")]).expect_err("bad switch");
        assert!(e.to_string().contains("--metrics-tenant-cost"), "{e}");
    }

    #[test]
    fn the_recommendations_thresholds_are_read_and_checked() {
        let d = from(&[]).expect("defaults");
        assert_eq!(d.recommend, eai_engine::recommend::Thresholds::default());
        let c = from(&[
            ("EAI_RECOMMEND_IDLE_UTILIZATION", "0.1"),
            ("EAI_RECOMMEND_IDLE_SHARE", "0.75"),
            ("EAI_RECOMMEND_LOW_UTILIZATION", "1"),
        ])
        .expect("valid");
        let t = c.recommend;
        assert_eq!(
            (t.idle_utilization, t.idle_share, t.low_utilization),
            (
                rust_decimal::Decimal::new(1, 1),
                rust_decimal::Decimal::new(75, 2),
                rust_decimal::Decimal::ONE
            )
        );
        for bad in ["1.5", "-0.1", "0.1234567", "half"] {
            let e = from(&[("EAI_RECOMMEND_IDLE_SHARE", bad)]).expect_err(bad);
            assert!(e.to_string().contains("--recommend-idle-share"), "{e}");
        }
        let mut c = Config::default();
        c.recommend.low_utilization = rust_decimal::Decimal::TWO;
        let e = c.validate().expect_err("beyond 1");
        assert!(
            e.to_string().contains("EAI_RECOMMEND_LOW_UTILIZATION"),
            "{e}"
        );
    }

    #[test]
    fn the_anomaly_settings_are_read_and_checked() {
        let d = from(&[]).expect("defaults").anomalies;
        assert_eq!(d, eai_app::anomalies::AnomalyConfig::default());
        assert_eq!(
            (
                d.every.as_secs(),
                d.thresholds.baseline_days,
                d.thresholds.threshold_mads.to_string(),
                d.thresholds.min_ratio.to_string(),
                d.webhook.is_none()
            ),
            (3600, 28, "5".to_string(), "0.5".to_string(), true)
        );
        let c = from(&[
            ("EAI_ANOMALY_CHECK_SECONDS", "60"),
            ("EAI_ANOMALY_BASELINE_DAYS", "14"),
            ("EAI_ANOMALY_THRESHOLD_MADS", "3.5"),
            ("EAI_ANOMALY_MIN_RATIO", "0.25"),
            ("EAI_ANOMALY_WEBHOOK_URL", "https://hooks.example.com/eai"),
            ("EAI_ANOMALY_WEBHOOK_SECRET", "whsec_0123456789abcdef"),
        ])
        .expect("valid")
        .anomalies;
        assert_eq!(c.every.as_secs(), 60);
        assert_eq!(c.thresholds.baseline_days, 14);
        assert_eq!(c.thresholds.threshold_mads.to_string(), "3.5");
        assert_eq!(c.thresholds.min_ratio.to_string(), "0.25");
        let w = c.webhook.expect("a webhook");
        assert_eq!(w.url, "https://hooks.example.com/eai");
        assert!(
            !format!("{w:?}").contains("whsec_"),
            "the secret is never printed"
        );
        for (pairs, named) in [
            (
                vec![("EAI_ANOMALY_CHECK_SECONDS", "0")],
                "EAI_ANOMALY_CHECK_SECONDS",
            ),
            (
                vec![("EAI_ANOMALY_BASELINE_DAYS", "0")],
                "EAI_ANOMALY_BASELINE_DAYS",
            ),
            (
                vec![("EAI_ANOMALY_THRESHOLD_MADS", "0")],
                "EAI_ANOMALY_THRESHOLD_MADS",
            ),
            (
                vec![("EAI_ANOMALY_MIN_RATIO", "-1")],
                "EAI_ANOMALY_MIN_RATIO",
            ),
            (
                vec![("EAI_ANOMALY_MIN_RATIO", "half")],
                "--anomaly-min-ratio",
            ),
            (
                vec![("EAI_ANOMALY_WEBHOOK_URL", "https://hooks.example.com/eai")],
                "EAI_ANOMALY_WEBHOOK_SECRET",
            ),
            (
                vec![
                    ("EAI_ANOMALY_WEBHOOK_URL", "ftp://hooks.example.com/eai"),
                    ("EAI_ANOMALY_WEBHOOK_SECRET", "whsec_0123456789abcdef"),
                ],
                "EAI_ANOMALY_WEBHOOK_URL",
            ),
            (
                vec![
                    ("EAI_ANOMALY_WEBHOOK_URL", "https://hooks.example.com/eai"),
                    ("EAI_ANOMALY_WEBHOOK_SECRET", "short"),
                ],
                "EAI_ANOMALY_WEBHOOK_SECRET",
            ),
        ] {
            let e = from(&pairs).expect_err(named);
            assert!(e.to_string().contains(named), "{named}: {e}");
            assert!(!e.to_string().contains("whsec_"), "{e}");
        }
    }

    #[test]
    fn bad_values_are_named() {
        let e = from(&[("EAI_LISTEN", "nowhere")]).expect_err("bad listen");
        assert!(e.to_string().contains("--listen"), "{e}");
        let e = from(&[("EAI_MAX_BATCH", "many")]).expect_err("bad number");
        assert!(e.to_string().contains("--max-batch"), "{e}");
        let e = from(&[("EAI_TLS_CERT", "/c.pem")]).expect_err("a certificate without its key");
        assert!(e.to_string().contains("EAI_TLS_KEY"), "{e}");
        let e = from(&[("EAI_ALLOCATION_BUCKET_MINUTES", "15")]).expect_err("bad bucket");
        assert!(e.to_string().contains("EAI_ALLOCATION_BUCKET_MINUTES"));
        let e = from(&[("EAI_BOOTSTRAP_ADMIN_KEY", "short")]).expect_err("bad key");
        assert!(e.to_string().contains("EAI_BOOTSTRAP_ADMIN_KEY"));
        assert!(
            !e.to_string().contains("short"),
            "the key itself is not echoed"
        );
    }
}
