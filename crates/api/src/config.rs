//! The control plane's configuration: one typed `Config`, read from `EAI_*` environment variables and validated
//! once. Secrets (the bootstrap key, database passwords) are never printed: `Debug` redacts them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
pub const DEFAULT_DATA_DIR: &str = "./eai-gpu-data";
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./eai-gpu-data/eai-gpu.db";
pub const DEFAULT_MAX_BATCH: usize = 10_000;
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
pub const DEFAULT_RAW_RETENTION_DAYS: u32 = 35;
pub const DEFAULT_MAX_GAP_MINUTES: u32 = 15;
pub const DEFAULT_ALLOCATION_BUCKET_MINUTES: u32 = 60;
pub const DEFAULT_RATE_LIMIT_PER_KEY: u32 = 50;
pub const DEFAULT_RATE_LIMIT_PER_ADDRESS: u32 = 20;
pub const DEFAULT_MAX_CLOCK_SKEW_SECONDS: u32 = 300;
pub const DEFAULT_METRICS_REFRESH_SECONDS: u32 = 60;
pub const DEFAULT_METRICS_MAX_GPU_SERIES: u64 = 10_000;

/// Where the data lives, parsed from `EAI_DATABASE_URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// The embedded default: one SQLite file.
    Sqlite(PathBuf),
    /// PostgreSQL (schema `eai`, row level security). The URL may hold a password: never print it.
    Postgres(String),
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
    /// `EAI_DATABASE_URL`; `None`: the SQLite file `<data_dir>/eai-gpu.db`.
    pub database_url: Option<String>,
    /// `EAI_BOOTSTRAP_ADMIN_KEY`: the first platform_admin key when the store has none. Secret.
    pub bootstrap_admin_key: Option<String>,
    /// `EAI_MAX_BATCH`: samples or usage events per request (beyond: 413).
    pub max_batch: usize,
    /// `EAI_MAX_BODY_BYTES`: request body limit (beyond: 413).
    pub max_body_bytes: usize,
    /// `EAI_RAW_RETENTION_DAYS`: raw samples older than this are pruned hourly (rollups are kept); 0 keeps them.
    pub raw_retention_days: u32,
    /// `EAI_MAX_GAP_MINUTES`: missing spans up to this long are interpolated, longer ones reported as gaps.
    pub max_gap_minutes: u32,
    /// `EAI_READ_CACHE_ROWS`: group rollups and claims the allocation's read cache keeps decoded (buckets
    /// unchanged since are not read again; 0 turns it off). Default 500,000 (about 100 MiB).
    pub read_cache_rows: usize,
    /// `EAI_USAGE_CACHE_ROWS`: per-GPU rollups the breakdown's read cache keeps decoded (SQLite; buckets
    /// unchanged since are not read again; 0 turns it off). Default 1,000,000 (at most about 150 MiB, filled
    /// only by breakdowns).
    pub usage_cache_rows: usize,
    /// `EAI_ALLOCATION_BUCKET_MINUTES`: shared deployments are split per bucket of this length (a whole number of
    /// hours, since rollups are hourly). Default 60.
    pub allocation_bucket_minutes: u32,
    /// `EAI_CLICKHOUSE_URL` (`http://[user[:pass]@]host:port[/database]`): the analytics replica. When set, the
    /// store writes the outbox and `serve` replicates it. May hold a password: never print it.
    pub clickhouse_url: Option<String>,
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
    pub rate_limit_per_key: u32,
    /// `EAI_RATE_LIMIT_PER_ADDRESS`: requests per second one client address may make without a valid key
    /// (probes, metrics, the portal's files, failed sign-ins; bursts of twice that); 0: no limit.
    pub rate_limit_per_address: u32,
    /// `EAI_MAX_CONCURRENT_ALLOCATIONS`: allocation computations at once (beyond: 429). Default: the cores.
    pub max_concurrent_allocations: usize,
    /// `EAI_MAX_CLOCK_SKEW_SECONDS`: a sample ending later than this after the server's clock is refused.
    pub max_clock_skew_seconds: u32,
    /// `EAI_METRICS_TOKEN`: when set, `/metrics` asks for `Authorization: Bearer <token>`. Secret.
    pub metrics_token: Option<String>,
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
            read_cache_rows: eai_store::read_cache::DEFAULT_ROWS,
            usage_cache_rows: eai_store::usage_cache::DEFAULT_ROWS,
            allocation_bucket_minutes: DEFAULT_ALLOCATION_BUCKET_MINUTES,
            clickhouse_url: None,
            allocation_source: AllocationSource::Primary,
            allocation_batch: true,
            allocation_batch_interval_seconds: 3600,
            leader_poll_seconds: 15,
            malloc_trim_seconds: 60,
            rate_limit_per_key: DEFAULT_RATE_LIMIT_PER_KEY,
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
                &self.database_url.as_deref().map(redact_url),
            )
            .field(
                "bootstrap_admin_key",
                &self.bootstrap_admin_key.as_ref().map(|_| "<redacted>"),
            )
            .field("max_batch", &self.max_batch)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("raw_retention_days", &self.raw_retention_days)
            .field("max_gap_minutes", &self.max_gap_minutes)
            .field("read_cache_rows", &self.read_cache_rows)
            .field("usage_cache_rows", &self.usage_cache_rows)
            .field("allocation_bucket_minutes", &self.allocation_bucket_minutes)
            .field(
                "clickhouse_url",
                &self.clickhouse_url.as_deref().map(redact_url),
            )
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
            .finish()
    }
}

impl Config {
    /// Reads the `EAI_*` environment variables (unset ones take their defaults) and validates the result.
    pub fn from_env() -> anyhow::Result<Config> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Like [`Config::from_env`], from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> anyhow::Result<Config> {
        let get = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut c = Config::default();
        if let Some(v) = get("EAI_LISTEN") {
            c.listen = v.parse().with_context(|| {
                format!("EAI_LISTEN `{v}` is not an address like {DEFAULT_LISTEN}")
            })?;
        }
        if let Some(v) = get("EAI_DATA_DIR") {
            c.data_dir = PathBuf::from(v);
        }
        c.database_url = get("EAI_DATABASE_URL");
        c.bootstrap_admin_key = get("EAI_BOOTSTRAP_ADMIN_KEY");
        c.max_batch = number(&get, "EAI_MAX_BATCH", c.max_batch)?;
        c.max_body_bytes = number(&get, "EAI_MAX_BODY_BYTES", c.max_body_bytes)?;
        c.raw_retention_days = number(&get, "EAI_RAW_RETENTION_DAYS", c.raw_retention_days)?;
        c.max_gap_minutes = number(&get, "EAI_MAX_GAP_MINUTES", c.max_gap_minutes)?;
        c.read_cache_rows = number(&get, "EAI_READ_CACHE_ROWS", c.read_cache_rows)?;
        c.usage_cache_rows = number(&get, "EAI_USAGE_CACHE_ROWS", c.usage_cache_rows)?;
        c.allocation_bucket_minutes = number(
            &get,
            "EAI_ALLOCATION_BUCKET_MINUTES",
            c.allocation_bucket_minutes,
        )?;
        c.clickhouse_url = get("EAI_CLICKHOUSE_URL");
        if let Some(v) = get("EAI_ALLOCATION_SOURCE") {
            c.allocation_source = AllocationSource::parse(&v)?;
        }
        if let Some(v) = get("EAI_ALLOCATION_BATCH") {
            c.allocation_batch = switch("EAI_ALLOCATION_BATCH", &v)?;
        }
        c.metrics_refresh_seconds = number(
            &get,
            "EAI_METRICS_REFRESH_SECONDS",
            c.metrics_refresh_seconds,
        )?;
        c.metrics_max_gpu_series =
            number(&get, "EAI_METRICS_MAX_GPU_SERIES", c.metrics_max_gpu_series)?;
        if let Some(v) = get("EAI_METRICS_TENANT_COST") {
            c.metrics_tenant_cost = switch("EAI_METRICS_TENANT_COST", &v)?;
        }
        c.allocation_batch_interval_seconds = number(
            &get,
            "EAI_ALLOCATION_BATCH_INTERVAL_SECONDS",
            c.allocation_batch_interval_seconds,
        )?;
        c.leader_poll_seconds = number(&get, "EAI_LEADER_POLL_SECONDS", c.leader_poll_seconds)?;
        c.malloc_trim_seconds = number(&get, "EAI_MALLOC_TRIM_SECONDS", c.malloc_trim_seconds)?;
        c.rate_limit_per_key = number(&get, "EAI_RATE_LIMIT_PER_KEY", c.rate_limit_per_key)?;
        c.rate_limit_per_address =
            number(&get, "EAI_RATE_LIMIT_PER_ADDRESS", c.rate_limit_per_address)?;
        c.max_concurrent_allocations = number(
            &get,
            "EAI_MAX_CONCURRENT_ALLOCATIONS",
            c.max_concurrent_allocations,
        )?;
        c.max_clock_skew_seconds =
            number(&get, "EAI_MAX_CLOCK_SKEW_SECONDS", c.max_clock_skew_seconds)?;
        c.metrics_token = get("EAI_METRICS_TOKEN");
        if let Some(v) = get("EAI_FOCUS_PROVIDER_NAME") {
            c.focus_issuer.name = v;
        }
        if let Some(v) = get("EAI_FOCUS_BILLING_ACCOUNT_ID") {
            c.focus_issuer.billing_account_id = v;
        }
        c.budget_check_seconds =
            number(&get, "EAI_BUDGET_CHECK_SECONDS", c.budget_check_seconds)?.max(1);
        c.tls = match (get("EAI_TLS_CERT"), get("EAI_TLS_KEY")) {
            (Some(cert), Some(key)) => Some(Tls {
                cert: PathBuf::from(cert),
                key: PathBuf::from(key),
            }),
            (None, None) => None,
            _ => bail!("EAI_TLS_CERT and EAI_TLS_KEY go together: set both (PEM files) or neither"),
        };
        c.validate()?;
        Ok(c)
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
        if self.metrics_refresh_seconds == 0 {
            bail!("EAI_METRICS_REFRESH_SECONDS must be at least 1");
        }
        if self.max_concurrent_allocations == 0 {
            bail!("EAI_MAX_CONCURRENT_ALLOCATIONS must be at least 1");
        }
        if let Some(t) = &self.metrics_token {
            if t.len() < 16 {
                bail!("EAI_METRICS_TOKEN must have at least 16 characters");
            }
        }
        if let Some(k) = &self.bootstrap_admin_key {
            crate::key_format::check_key_format(k)
                .map_err(|why| anyhow::anyhow!("EAI_BOOTSTRAP_ADMIN_KEY is not usable: {why}"))?;
        }
        self.database()?;
        self.clickhouse()?;
        if self.allocation_source == AllocationSource::ClickHouse && self.clickhouse_url.is_none() {
            bail!("EAI_ALLOCATION_SOURCE=clickhouse needs EAI_CLICKHOUSE_URL");
        }
        Ok(())
    }

    /// The ClickHouse replica, when `EAI_CLICKHOUSE_URL` is set.
    pub fn clickhouse(&self) -> anyhow::Result<Option<eai_store::clickhouse::ClickHouse>> {
        self.clickhouse_url
            .as_deref()
            .map(eai_store::clickhouse::ClickHouse::from_url)
            .transpose()
            .map_err(anyhow::Error::from)
    }

    /// The database to open: `EAI_DATABASE_URL`, or the SQLite file in the data directory.
    pub fn database(&self) -> anyhow::Result<Database> {
        match &self.database_url {
            Some(url) => Database::parse(url),
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

/// An on/off setting: `on`, `true`, `1` or `off`, `false`, `0`.
fn switch(key: &str, v: &str) -> anyhow::Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => bail!("{key} must be `on` or `off`, not `{v}`"),
    }
}

fn number<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    key: &str,
    default: T,
) -> anyhow::Result<T> {
    match get(key) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{key} `{v}` is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(pairs: &[(&str, &str)]) -> anyhow::Result<Config> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
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
        let text = format!("{c:?}");
        assert!(!text.contains("0123456789abcdef"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("postgres://eai:***@db:5432/eai"), "{text}");
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
            (d.allocation_source, d.allocation_batch, d.clickhouse_url),
            (AllocationSource::Primary, true, None)
        );
        let e = from(&[("EAI_ALLOCATION_SOURCE", "clickhouse")]).expect_err("no url");
        assert!(e.to_string().contains("EAI_CLICKHOUSE_URL"), "{e}");
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
        assert!(e.to_string().contains("EAI_METRICS_TENANT_COST"), "{e}");
    }

    #[test]
    fn bad_values_are_named() {
        let e = from(&[("EAI_LISTEN", "nowhere")]).expect_err("bad listen");
        assert!(e.to_string().contains("EAI_LISTEN"));
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
