//! Idempotency keys (`Idempotency-Key` on a `POST` or `DELETE`): what both backends keep of each, and how a
//! stored row answers a new claim ([`decide`]). The HTTP side is `eai_api::idempotency`.
//!
//! One row per (caller, key): the caller is the authenticated identity (an API key's id), so two callers never
//! share keys. A row is claimed atomically (insert if absent) before the request runs, completed with the
//! answer when it was a success, or deleted (released) when it was not, so that a retry runs again. A claim
//! still in flight past its lease (a crashed server) may be taken over by the same request; rows are pruned
//! once older than the retention.

use eai_engine::domain::TenantId;
use eai_engine::time::Timestamp;
use uuid::Uuid;

/// A claim of an idempotency key by a request about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Who sent it: the API key's id (`key_3`).
    pub caller: String,
    /// The caller's own tenant (`None`: a platform identity): whose row it is (row level security).
    pub tenant: Option<TenantId>,
    /// The `Idempotency-Key` as sent.
    pub key: String,
    /// Hex SHA-256 of the request (method, path and query, tenant header, body).
    pub fingerprint: String,
    /// This claim's own token: only its holder completes or releases the row.
    pub token: Uuid,
    /// When it was claimed.
    pub at: Timestamp,
    /// A claim still in flight that was made before this instant is abandoned (its server crashed): the same
    /// request may take it over.
    pub stale_before: Timestamp,
}

/// The answer a completed request gave, replayed as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    /// The HTTP status (always a 2xx: only successes are stored).
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub body: Vec<u8>,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The key is this request's now: run it, then complete or release the claim.
    Run,
    /// The same request completed before: its answer.
    Replay(StoredAnswer),
    /// The key was used for another request.
    Reused,
    /// The same request is still running (its claim is within its lease).
    InFlight,
}

/// A stored row of a key, as a new claim reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub fingerprint: String,
    pub claimed_at: Timestamp,
    /// `Some` once completed.
    pub answer: Option<StoredAnswer>,
}

/// What a new claim gets from the row already stored for its key: `None` when it may take the row over (an
/// abandoned claim of the same request).
pub fn decide(claim: &Claim, stored: Stored) -> Option<Claimed> {
    if stored.fingerprint != claim.fingerprint {
        return Some(Claimed::Reused);
    }
    match stored.answer {
        Some(answer) => Some(Claimed::Replay(answer)),
        None if stored.claimed_at < claim.stale_before => None,
        None => Some(Claimed::InFlight),
    }
}

/// A stored status back (a column of either backend).
pub fn status_of(v: i64) -> crate::Result<u16> {
    u16::try_from(v)
        .map_err(|_| crate::StoreError::Internal(format!("corrupt idempotency status {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(fp: &str) -> Claim {
        Claim {
            caller: "key_1".into(),
            tenant: None,
            key: "k".into(),
            fingerprint: fp.into(),
            token: Uuid::nil(),
            at: Timestamp(1_000_000),
            stale_before: Timestamp(700_000),
        }
    }

    #[test]
    fn a_stored_row_answers_by_request_and_state() {
        let answer = StoredAnswer {
            status: 201,
            content_type: Some("application/json".into()),
            location: None,
            body: b"{}".to_vec(),
        };
        let row = |fp: &str, at: i64, answer: Option<StoredAnswer>| Stored {
            fingerprint: fp.into(),
            claimed_at: Timestamp(at),
            answer,
        };
        let c = claim("a");
        assert_eq!(
            decide(&c, row("b", 900_000, Some(answer.clone()))),
            Some(Claimed::Reused)
        );
        assert_eq!(decide(&c, row("b", 1, None)), Some(Claimed::Reused));
        assert_eq!(
            decide(&c, row("a", 1, Some(answer.clone()))),
            Some(Claimed::Replay(answer))
        );
        assert_eq!(decide(&c, row("a", 700_000, None)), Some(Claimed::InFlight));
        assert_eq!(decide(&c, row("a", 699_999, None)), None, "abandoned");
    }
}
