//! What every handler shares: the store behind its trait, the request limits, the metrics, the clock.

use std::sync::Arc;

use eai_store::Store;

use crate::config::Config;
use crate::limits::Limits;
use eai_app::metrics::Metrics;

/// Limits and knobs the handlers read.
#[derive(Debug, Clone)]
pub struct Settings {
    pub max_batch: usize,
    pub max_body_bytes: usize,
    /// Shared deployments are split per bucket of this many milliseconds.
    pub allocation_bucket_ms: i64,
    /// Longest allocation period a request may ask for.
    pub max_range_days: i64,
    /// A sample ending later than this after the server's clock is refused.
    pub max_clock_skew_ms: i64,
    /// When set, `/metrics` asks for `Authorization: Bearer <token>`.
    pub metrics_token: Option<secrecy::SecretString>,
    /// How the store-derived figures of `/metrics` are refreshed.
    pub store_metrics: eai_app::store_metrics::Options,
    /// Who issues the FOCUS export's charges.
    pub focus_issuer: eai_engine::focus::Issuer,
    /// The recommendations' thresholds when a request gives none.
    pub recommend: eai_engine::recommend::Thresholds,
}

impl Settings {
    pub fn from_config(c: &Config) -> Self {
        Settings {
            max_batch: c.max_batch,
            max_body_bytes: c.max_body_bytes,
            allocation_bucket_ms: i64::from(c.allocation_bucket_minutes) * 60_000,
            max_range_days: 366,
            max_clock_skew_ms: i64::from(c.max_clock_skew_seconds) * 1000,
            metrics_token: c.metrics_token.clone(),
            store_metrics: eai_app::store_metrics::Options {
                every: std::time::Duration::from_secs(u64::from(c.metrics_refresh_seconds)),
                max_gpu_series: c.metrics_max_gpu_series,
                tenant_cost: c.metrics_tenant_cost,
            },
            focus_issuer: c.focus_issuer.clone(),
            recommend: c.recommend,
        }
    }
}

/// The state of the router: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub settings: Arc<Settings>,
    pub metrics: Arc<Metrics>,
    /// Where `GET /v1/finops/gpu/allocation` reads rollups, gaps and usage (`EAI_ALLOCATION_SOURCE`).
    pub source: Arc<eai_app::allocation::Source>,
    /// Rate limits and allocation slots.
    pub limits: Arc<Limits>,
    /// The catalog's prices: the last closed month (`YYYY-MM`), when they were computed, and the cost per
    /// million tokens per deployment.
    pub catalog_prices: Arc<tokio::sync::Mutex<Option<CatalogPrices>>>,
    /// The time every handler reads ([`AppState::now`]): the wall clock, or a stepped one in tests.
    pub clock: Arc<dyn Clock>,
}

/// The last closed month's cost per token per deployment, as the catalog caches it.
pub type CatalogPrices = (
    String,
    eai_engine::time::Timestamp,
    std::collections::HashMap<String, eai_engine::tokens::TokenCost>,
);

impl AppState {
    pub fn new(store: Arc<dyn Store>, settings: Settings, limits: Limits) -> Self {
        AppState {
            store,
            settings: Arc::new(settings),
            metrics: Arc::new(Metrics::new()),
            source: Arc::new(eai_app::allocation::Source::Primary),
            limits: Arc::new(limits),
            catalog_prices: Arc::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same state, reading the time from `clock`: its limits start afresh on it (full buckets).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.limits = Arc::new(self.limits.on_clock(clock.clone()));
        self.clock = clock;
        self
    }

    /// Now, as this state's clock says.
    pub fn now(&self) -> eai_engine::time::Timestamp {
        self.clock.now()
    }

    /// The allocation's settings on this server (its bucket, `EAI_ALLOCATION_BUCKET_MINUTES`), as every
    /// reader of the allocation computes with them.
    pub fn allocation_config(&self) -> eai_engine::allocate::AllocationConfig {
        eai_engine::allocate::AllocationConfig {
            bucket_ms: self.settings.allocation_bucket_ms,
            ..eai_engine::allocate::AllocationConfig::default()
        }
    }

    /// The period a request's `from` and `to` ask for, at this state's now and within its longest range
    /// ([`eai_app::params::requested_period`]).
    pub fn requested_period(
        &self,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<
        (eai_engine::time::Timestamp, eai_engine::time::Timestamp),
        eai_engine::error::FieldError,
    > {
        eai_app::params::requested_period(from, to, self.now(), self.settings.max_range_days)
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store.backend())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

pub use eai_app::clock::now;
use eai_app::clock::{Clock, SystemClock};
