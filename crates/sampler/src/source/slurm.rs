//! Slurm beside a device source (`--slurm-jobs`, SPEC §12): each window, the devices read are given to the Slurm
//! jobs holding them ([`crate::slurm::assign`]). What runs is asked of Slurm itself and kept between windows
//! (`--slurm-refresh`):
//!
//! - `squeue` (the default): `squeue --json`, Slurm's own command on the node (it reads `SLURM_CONF` or
//!   `/etc/slurm/slurm.conf`, and needs munge, as any Slurm client);
//! - `scontrol`: `scontrol show job -d` (text; Slurm 22.05 has no `--json` there);
//! - `http(s)://…`: slurmrestd's jobs (`http://slurmctld:6820/slurm/v0.0.38/jobs`), with the token of
//!   `SLURM_JWT` (and the user of `SLURM_USER_NAME`, if set) as slurmrestd asks;
//! - `file://<path>`: a capture of either output (tests, a dry run).
//!
//! A read that fails keeps the jobs read last for up to `--slurm-stale` (five minutes), then none: the GPUs then
//! go to the jobs of their `hpc_job` labels, or are idle. Every failure is logged and counted.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use eai_engine::Timestamp;

use crate::error::{Result, SamplerError};
use crate::metrics::Metrics;
use crate::readings::Readings;
use crate::slurm::{self, Jobs};
use crate::source::{check_http_url, http_client, Source};

/// Where running jobs are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobsFrom {
    Squeue(PathBuf),
    Scontrol(PathBuf),
    Rest(String),
    File(PathBuf),
}

impl JobsFrom {
    /// `squeue`, `scontrol` (or a path to either program: its file name says which), an `http(s)://` URL of
    /// slurmrestd's jobs, or a `file://` capture.
    pub fn parse(s: &str) -> Result<JobsFrom> {
        if let Some(p) = s.strip_prefix("file://") {
            return Ok(JobsFrom::File(PathBuf::from(p)));
        }
        if s.starts_with("http://") || s.starts_with("https://") {
            check_http_url("--slurm-jobs", s)?;
            return Ok(JobsFrom::Rest(s.to_string()));
        }
        let path = PathBuf::from(s);
        match path.file_name().and_then(|n| n.to_str()) {
            Some("squeue") => Ok(JobsFrom::Squeue(path)),
            Some("scontrol") => Ok(JobsFrom::Scontrol(path)),
            _ => Err(SamplerError::config(format!(
                "--slurm-jobs `{s}` must be squeue, scontrol (or a path to one), an http(s):// URL of \
                 slurmrestd's jobs, or a file:// capture"
            ))),
        }
    }
}

/// A device source with Slurm's running jobs read beside it.
pub struct WithSlurm {
    inner: Box<dyn Source>,
    from: JobsFrom,
    node: String,
    refresh: Duration,
    stale: Duration,
    timeout: Duration,
    http: reqwest::Client,
    metrics: Option<Arc<Metrics>>,
    /// The jobs read last, and when.
    last: Option<(Instant, Jobs)>,
}

impl std::fmt::Debug for WithSlurm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithSlurm")
            .field("inner", &self.inner.name())
            .field("from", &self.from)
            .field("node", &self.node)
            .finish()
    }
}

impl WithSlurm {
    /// `inner`'s devices given to the jobs `from` says hold them on node `node` (Slurm's name for this node),
    /// read again when older than `refresh`.
    pub fn new(
        inner: Box<dyn Source>,
        from: JobsFrom,
        node: &str,
        refresh: Duration,
        stale: Duration,
        timeout: Duration,
    ) -> Result<Self> {
        if node.is_empty() {
            return Err(SamplerError::config(
                "--slurm-node must name this node as Slurm does",
            ));
        }
        Ok(WithSlurm {
            inner,
            from,
            node: node.to_string(),
            refresh,
            stale,
            timeout,
            http: http_client(timeout)?,
            metrics: None,
            last: None,
        })
    }

    /// Counts reads and failures in the sampler's metrics.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The running jobs: those read last if fresh, else read again (the last ones kept, while not stale, when
    /// that fails).
    async fn jobs(&mut self) -> Option<&Jobs> {
        let fresh = self
            .last
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < self.refresh);
        if !fresh {
            match read(&self.from, &self.http, self.timeout)
                .await
                .map(|jobs| Jobs::new(jobs, &self.node))
            {
                Ok(jobs) => {
                    if let Some(m) = &self.metrics {
                        Metrics::set(&m.slurm_jobs, jobs.len() as u64);
                    }
                    self.last = Some((Instant::now(), jobs));
                }
                Err(e) => {
                    if let Some(m) = &self.metrics {
                        Metrics::add(&m.slurm_errors, 1);
                    }
                    let kept = self
                        .last
                        .as_ref()
                        .is_some_and(|(at, _)| at.elapsed() < self.stale);
                    tracing::warn!(error = %e, kept_last = kept,
                        "cannot read Slurm's running jobs: the jobs read last are kept while not stale, then GPUs without an hpc_job label are idle");
                    if !kept {
                        self.last = None;
                    }
                }
            }
        }
        self.last.as_ref().map(|(_, j)| j)
    }
}

/// Runs `program args…` with a timeout; its standard output.
async fn run(program: &PathBuf, args: &[&str], timeout: Duration) -> Result<String> {
    let what = format!("{} {}", program.display(), args.join(" "));
    let out = tokio::time::timeout(
        timeout,
        tokio::process::Command::new(program)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| SamplerError::source("slurm", format!("{what}: no answer in {timeout:?}")))?
    .map_err(|e| SamplerError::source("slurm", format!("{what}: {e}")))?;
    if !out.status.success() {
        return Err(SamplerError::source(
            "slurm",
            format!(
                "{what} exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| SamplerError::source("slurm", format!("{what}: output is not UTF-8")))
}

/// The running jobs, as `from` lists them.
pub async fn read(
    from: &JobsFrom,
    http: &reqwest::Client,
    timeout: Duration,
) -> Result<Vec<slurm::Job>> {
    let bad = |what: String, e: String| SamplerError::source("slurm", format!("{what}: {e}"));
    match from {
        JobsFrom::Squeue(p) => {
            let text = run(p, &["--json"], timeout).await?;
            slurm::parse_squeue_json(&text).map_err(|e| bad(format!("{} --json", p.display()), e))
        }
        JobsFrom::Scontrol(p) => {
            let text = run(p, &["show", "job", "-d"], timeout).await?;
            Ok(slurm::parse_scontrol(&text))
        }
        JobsFrom::File(p) => {
            let text = tokio::fs::read_to_string(p)
                .await
                .map_err(|e| bad(p.display().to_string(), e.to_string()))?;
            if text.trim_start().starts_with('{') {
                slurm::parse_squeue_json(&text).map_err(|e| bad(p.display().to_string(), e))
            } else {
                Ok(slurm::parse_scontrol(&text))
            }
        }
        JobsFrom::Rest(url) => {
            let mut req = http.get(url);
            if let Ok(token) = std::env::var("SLURM_JWT") {
                req = req.header("X-SLURM-USER-TOKEN", token);
            }
            if let Ok(user) = std::env::var("SLURM_USER_NAME") {
                req = req.header("X-SLURM-USER-NAME", user);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| bad(format!("GET {url}"), e.to_string()))?;
            let status = resp.status();
            let text = resp
                .text()
                .await
                .map_err(|e| bad(format!("GET {url}"), e.to_string()))?;
            if !status.is_success() {
                return Err(bad(format!("GET {url}"), format!("answered {status}")));
            }
            slurm::parse_squeue_json(&text).map_err(|e| bad(format!("GET {url}"), e))
        }
    }
}

#[async_trait]
impl Source for WithSlurm {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let mut readings = self.inner.scrape(at).await?;
        let empty = Jobs::default();
        let jobs = self.jobs().await.unwrap_or(&empty);
        let done = slurm::assign(&mut readings, jobs);
        if done.unknown_jobs > 0 {
            tracing::debug!(?done, "GPUs labelled with jobs Slurm did not list");
        }
        Ok(readings)
    }
}
