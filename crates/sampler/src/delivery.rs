//! Delivery: where batches go ([`Sink`]: the control plane through the Rust SDK, samples to
//! `POST /v1/finops/gpu/samples` and vLLM usage events to `POST /v1/usage/events`; or stdout for `--dry-run`),
//! which failures are worth retrying ([`classify`]), and how long to wait before the next try ([`Retries`]:
//! the shared exponential schedule with jitter, on the caller's clock so that tests can drive it).

use async_trait::async_trait;
use eai_client::{ClientError, EnterpriseAi, GpuSample, Ingested};
use eai_engine::backoff::{Backoff, Jitter, JitterRng};
use eai_engine::Timestamp;

use crate::vllm::UsageEvent;

/// Where batches are delivered.
#[async_trait]
pub trait Sink: Send + Sync {
    async fn send(&self, samples: &[GpuSample]) -> Result<Ingested, ClientError>;

    /// Usage events (vLLM's counters); returns how many were accepted.
    async fn send_events(&self, events: &[UsageEvent]) -> Result<u64, ClientError>;
}

#[async_trait]
impl Sink for EnterpriseAi {
    async fn send(&self, samples: &[GpuSample]) -> Result<Ingested, ClientError> {
        self.finops().gpu_samples(samples).await
    }

    async fn send_events(&self, events: &[UsageEvent]) -> Result<u64, ClientError> {
        let values = events
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ClientError::Decode(format!("cannot encode an event: {e}")))?;
        let answer = self.usage().events(&values).await?;
        Ok(answer["accepted"].as_u64().unwrap_or(events.len() as u64))
    }
}

/// What to do about a failed delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer, 429, 5xx: keep the batch, try again after a backoff (ingest is idempotent).
    Retry,
    /// 401/403: the key is wrong or lacks the right; no batch is at fault. Keep everything, back off, log.
    Credentials,
    /// Any other refusal (422 validation, 413, 400, an answer that is not the API's): the batch itself is at
    /// fault and will never be accepted. Move it to `rejected/` and go on; never retry it forever.
    Reject,
}

pub fn classify(e: &ClientError) -> Failure {
    match e {
        ClientError::Api { status, .. } if *status == 401 || *status == 403 => Failure::Credentials,
        e if e.is_retryable() => Failure::Retry,
        _ => Failure::Reject,
    }
}

/// The delivery's retries: failures in a row and when the next try is allowed, on the schedule of
/// [`eai_engine::backoff::Backoff`] with half jitter (after the n-th failure, a random wait in `[d/2, d]`,
/// `d = min(base * 2^(n-1), max)`).
#[derive(Debug, Clone)]
pub struct Retries {
    schedule: Backoff,
    failures: u32,
    next_at: Option<Timestamp>,
    rng: JitterRng,
}

impl Retries {
    pub fn new(base_ms: i64, max_ms: i64, seed: u64) -> Self {
        Retries {
            schedule: Backoff::new(base_ms, max_ms).with_jitter(Jitter::Half),
            failures: 0,
            next_at: None,
            rng: JitterRng::new(seed),
        }
    }

    /// Whether a try is allowed at `now`.
    pub fn ready(&self, now: Timestamp) -> bool {
        self.next_at.is_none_or(|t| now >= t)
    }

    /// When the next try is allowed (`None`: now).
    pub fn next_at(&self) -> Option<Timestamp> {
        self.next_at
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records a failure at `now`; returns the wait chosen (ms).
    pub fn failed(&mut self, now: Timestamp) -> i64 {
        self.failures = self.failures.saturating_add(1);
        let wait = self.schedule.delay(self.failures, self.rng.next_u64());
        self.next_at = Some(Timestamp(now.0 + wait));
        wait
    }

    /// Records a success: the next failure starts from the base again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.next_at = None;
    }
}

#[cfg(test)]
mod tests {
    use eai_client::ClientError;
    use eai_engine::Timestamp;
    use serde_json::Value;

    use super::{classify, Failure, Retries};

    fn api(status: u16) -> ClientError {
        ClientError::Api {
            status,
            code: "x".into(),
            message: "x".into(),
            details: Value::Null,
            request_id: None,
        }
    }

    #[test]
    fn what_is_retried() {
        assert_eq!(
            classify(&ClientError::Transport("refused".into())),
            Failure::Retry
        );
        assert_eq!(classify(&api(503)), Failure::Retry);
        assert_eq!(classify(&api(429)), Failure::Retry);
        assert_eq!(classify(&api(401)), Failure::Credentials);
        assert_eq!(classify(&api(403)), Failure::Credentials);
        assert_eq!(classify(&api(422)), Failure::Reject);
        assert_eq!(classify(&api(413)), Failure::Reject);
        assert_eq!(
            classify(&ClientError::Decode("html".into())),
            Failure::Reject
        );
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let mut b = Retries::new(1000, 60_000, 42);
        assert!(b.ready(Timestamp(0)));
        let mut waits = Vec::new();
        for _ in 0..10 {
            waits.push(b.failed(Timestamp(0)));
        }
        for (i, w) in waits.iter().enumerate() {
            let d = (1000i64 << i.min(30)).min(60_000);
            assert!(
                *w >= d / 2 && *w <= d,
                "try {i}: {w} not in [{}, {d}]",
                d / 2
            );
        }
        assert!(!b.ready(Timestamp(100)));
        assert!(b.ready(Timestamp(60_000)));
        b.succeeded();
        assert!(b.ready(Timestamp(0)));
        assert!(b.failed(Timestamp(0)) <= 1000);
    }
}
