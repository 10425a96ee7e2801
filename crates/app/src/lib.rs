//! eai-app: the control plane's application, below both front ends (the HTTP API, `eai-api`, and the CLI's report
//! commands, `eai-gpu`), above the pure engine and the store.
//!
//! Code map: [`allocation`] (the services: allocation, explanation, breakdown, token costs and the Slurm
//! reconciliation of a period, read from the primary or the ClickHouse replica), [`focus`] (the FOCUS export:
//! rows of a period, CSV or Parquet), [`forecast`] (the month's expected spend per tenant and deployment, and
//! when budgets run out), [`batch`] (the allocation batch: each tenant's month as `gpu_local` usage
//! events, and its schedule), [`budget_alerts`] (budget thresholds crossed, delivered to webhooks), [`anomalies`] (spend anomalies: recorded
//! once, posted to a webhook), [`jobs`] (the background jobs
//! on the clock: the pruner, the replicator, the audit anchor, and the others' wiring), [`store_metrics`]
//! (the figures `/metrics` reads from the store, refreshed in the background), [`leader`] (one replica runs each
//! job: a lease per job), [`metrics`] (the process's Prometheus registry), [`params`] (the parameters both front
//! ends read: periods, breakdown groupings and filters, thresholds), [`keys`] (an API key request validated, a
//! key as listed), [`recommend`] (the recommendations of a period: idle and oversized GPUs with their
//! savings), [`statements`] (a tenant's closed month issued once, read with its adjustments), [`clock`] (the
//! clock, read and waited on in one place).

pub mod allocation;
pub mod allocation_series;
pub mod anomalies;
pub mod batch;
pub mod budget_alerts;
pub mod clock;
pub mod focus;
pub mod forecast;
pub mod jobs;
pub mod keys;
pub mod leader;
pub mod metrics;
pub mod params;
pub mod recommend;
pub mod statements;
pub mod store_metrics;
