//! `Idempotency-Key`: one layer around every `POST` and `DELETE` under `/v1`, after sign-in and before the
//! handlers, so that a request retried after a lost answer is answered again instead of run again.
//!
//! A request that sends the header is signed in here (the handler reuses that sign-in: one rate-limit token,
//! one failure count), its body read within the body limit, and its key claimed in the store for its caller
//! (the API key's id: two callers never share keys) with a SHA-256 of the request (method, path and query,
//! `X-EAI-Tenant`, body), atomically, before the handler runs ([`eai_store::IdempotencyStore`]). Then:
//! - a new key runs the handler; a 2xx answer is stored (status, body, `Content-Type`, `Location`), any other
//!   answer releases the key, so that a fixed retry runs again;
//! - the same request again gets the stored answer, with `Idempotent-Replayed: true` (not run, not audited);
//! - another request with the key gets 409 `idempotency_key_reused`;
//! - the same request while the first still runs gets 409 `idempotency_key_in_flight` with `Retry-After: 1`.
//!
//! A stored answer is sealed (ChaCha20-Poly1305) with a key derived (HKDF-SHA256) from the caller's own bearer
//! secret and the idempotency key: the database keeps no readable answer (a key's create or rotation answers
//! hold its new secret), and only a request carrying the same secret opens it again. One that cannot (the
//! same key id signing in with its previous secret during a rotation's grace) is answered 409
//! `idempotency_key_reused`, never run twice.
//!
//! A claim still in flight after [`LEASE_MS`] (longer than any request) was left by a crashed server: the same
//! request takes it over. Keys are kept for `EAI_IDEMPOTENCY_RETENTION` (24 h at least) and pruned by the
//! pruner job. A request without the header is passed through untouched.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use eai_engine::time::Timestamp;
use eai_store::idempotency::{Claim, Claimed, StoredAnswer};
use eai_store::{Store, StoreError};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};
use std::sync::Arc;

use crate::auth::{bearer, Caller, SignedIn, TENANT_HEADER};
use crate::error::ApiError;
use crate::state::AppState;

/// The request header.
pub const HEADER: HeaderName = HeaderName::from_static("idempotency-key");
/// The response header of a replayed answer.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
/// The longest a key may be.
pub const MAX_KEY_LEN: usize = 255;
/// A claim in flight for longer than this (no request runs so long) was abandoned by a crashed server.
pub const LEASE_MS: i64 = 5 * 60_000;

/// The key as sent: 1 to 255 printable ASCII characters (space to `~`).
pub fn parse_key(v: &HeaderValue) -> Result<String, ApiError> {
    let bytes = v.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_KEY_LEN
        && bytes.iter().all(|b| (b' '..=b'~').contains(b));
    match std::str::from_utf8(bytes) {
        Ok(s) if ok => Ok(s.to_string()),
        _ => Err(ApiError::invalid(
            "Idempotency-Key",
            format!("must be 1 to {MAX_KEY_LEN} printable ASCII characters"),
        )),
    }
}

/// Hex SHA-256 of what makes a request the same request: method, path and query, the tenant header, body
/// (each length-prefixed, so that no two requests hash alike by moving bytes across parts).
pub fn fingerprint(method: &Method, path_and_query: &str, tenant: &[u8], body: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [
        method.as_str().as_bytes(),
        path_and_query.as_bytes(),
        tenant,
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    h.update(body);
    hex::encode(h.finalize())
}

/// The sealing key of one caller's answers under one idempotency key: HKDF-SHA256 of the bearer secret the
/// request carried (never stored: the database holds only its hash), bound to the caller and the key.
struct Seal(LessSafeKey);

impl Seal {
    const SALT: &'static [u8] = b"eai-gpu idempotent answer v1";

    fn new(secret: &[u8], caller: &str, key: &str) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, Self::SALT).extract(secret);
        let info = [caller.as_bytes(), &[0], key.as_bytes()];
        let mut bytes = [0u8; 32];
        prk.expand(&info, hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut bytes))
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        let unbound =
            UnboundKey::new(&CHACHA20_POLY1305, &bytes).expect("a 32-byte ChaCha20-Poly1305 key");
        Seal(LessSafeKey::new(unbound))
    }

    /// `nonce || ciphertext || tag`.
    fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, ApiError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| ApiError::internal("no randomness for an idempotency seal".to_string()))?;
        let mut out = plain.to_vec();
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut out)
            .map_err(|_| ApiError::internal("cannot seal an idempotent answer".to_string()))?;
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&out);
        Ok(sealed)
    }

    /// The answer, or `None` when it was sealed under another secret (or altered).
    fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = rest.to_vec();
        let plain = self.0.open_in_place(nonce, Aad::empty(), &mut buf).ok()?;
        Some(plain.to_vec())
    }
}

/// Whether a request is one this layer answers for: a `POST` or `DELETE` of a route under `/v1` (not the
/// fallback's 404 or 405) with the header.
fn concerned(req: &Request) -> bool {
    matches!(*req.method(), Method::POST | Method::DELETE)
        && req.uri().path().starts_with("/v1/")
        && req.extensions().get::<MatchedPath>().is_some()
        && req.headers().contains_key(HEADER)
}

/// The layer (`axum::middleware::from_fn_with_state`).
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !concerned(&req) {
        return next.run(req).await;
    }
    match claimed(&state, req, next).await {
        Ok(r) | Err(r) => r,
    }
}

async fn claimed(state: &AppState, req: Request, next: Next) -> Result<Response, Response> {
    let key = req
        .headers()
        .get(HEADER)
        .map(parse_key)
        .transpose()
        .map_err(IntoResponse::into_response)?
        .unwrap_or_default();
    let (mut parts, body) = req.into_parts();
    // The token sign-in reads (not the header as sent: `bearer` and `Bearer` are one secret).
    let secret = bearer(&parts).unwrap_or_default().as_bytes().to_vec();
    let caller = Caller::from_request_parts(&mut parts, state)
        .await
        .map_err(IntoResponse::into_response)?;
    parts.extensions.insert(SignedIn(caller.clone()));
    let method = parts.method.clone();
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let tenant = parts
        .headers
        .get(TENANT_HEADER)
        .map(|v| v.as_bytes().to_vec())
        .unwrap_or_default();
    // Read within the body limit (the `DefaultBodyLimit` outside this layer), as the handler would.
    let bytes = match Bytes::from_request(Request::from_parts(parts.clone(), body), state).await {
        Ok(b) => b,
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Err(ApiError::body_too_large(state.settings.max_body_bytes).into_response())
        }
        Err(r) => return Err(ApiError::bad_json(r.body_text()).into_response()),
    };
    let now = state.now();
    let claim = Claim {
        caller: caller.key_id.clone(),
        tenant: caller.tenant,
        fingerprint: fingerprint(&method, &target, &tenant, &bytes),
        key,
        token: uuid::Uuid::new_v4(),
        at: now,
        stale_before: Timestamp(now.0 - LEASE_MS),
    };
    let seal = Seal::new(&secret, &claim.caller, &claim.key);
    match state.store.claim_idempotency_key(&claim).await {
        Err(e) => return Err(ApiError::from(e).into_response()),
        Ok(Claimed::Replay(mut answer)) => {
            let Some(body) = seal.open(&answer.body) else {
                tracing::warn!(caller = %claim.caller, "an idempotent answer sealed under another secret");
                return Err(ApiError::idempotency_key_reused(&claim.key).into_response());
            };
            tracing::info!(caller = %claim.caller, status = answer.status, "idempotent replay");
            answer.body = body;
            return Ok(replay(answer));
        }
        Ok(Claimed::Reused) => {
            return Err(ApiError::idempotency_key_reused(&claim.key).into_response())
        }
        Ok(Claimed::InFlight) => {
            return Err(ApiError::idempotency_key_in_flight(&claim.key).into_response())
        }
        Ok(Claimed::Run) => {}
    }
    let held = Held {
        store: Some(state.store.clone()),
        claim,
        seal,
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    Ok(held.finish(response).await)
}

/// The stored answer, again.
fn replay(a: StoredAnswer) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
    let mut r = (status, a.body).into_response();
    let h = r.headers_mut();
    h.remove(header::CONTENT_TYPE);
    for (name, value) in [
        (header::CONTENT_TYPE, a.content_type),
        (header::LOCATION, a.location),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            h.insert(name, v);
        }
    }
    h.insert(REPLAYED, HeaderValue::from_static("true"));
    r
}

/// A claim the running request holds: completed or released by [`Held::finish`]; released if the request is
/// dropped before (the client went away, the handler panicked), so that a retry does not wait for the lease.
struct Held {
    store: Option<Arc<dyn Store>>,
    claim: Claim,
    seal: Seal,
}

impl Held {
    async fn finish(mut self, response: Response) -> Response {
        let Some(store) = self.store.take() else {
            return response;
        };
        if !response.status().is_success() {
            match store.release_idempotency_key(&self.claim).await {
                Ok(_) => {}
                // The database is away (a 503 answer usually says so: the primary was lost): released in the
                // background once it is back (a failover takes seconds), rather than leaving the key in flight
                // for its whole lease, answering the client's retries 409 `idempotency_key_in_flight`.
                Err(StoreError::Unavailable(e)) => release_later(store, self.claim.clone(), e),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot release an idempotency key; it frees itself after its lease")
                }
            }
            return response;
        }
        let (parts, body) = response.into_parts();
        let bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => b,
            Err(e) => {
                // The answer could not be read whole: nothing to replay, the request may run again.
                if let Err(e) = store.release_idempotency_key(&self.claim).await {
                    tracing::warn!(error = %e, "cannot release an idempotency key");
                }
                return ApiError::internal(format!("read an answer to store it: {e}"))
                    .into_response();
            }
        };
        let text = |name: header::HeaderName| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let sealed = match self.seal.seal(&bytes) {
            Ok(b) => b,
            Err(e) => {
                if let Err(e) = store.release_idempotency_key(&self.claim).await {
                    tracing::warn!(error = %e, "cannot release an idempotency key");
                }
                return e.into_response();
            }
        };
        let answer = StoredAnswer {
            status: parts.status.as_u16(),
            content_type: text(header::CONTENT_TYPE),
            location: text(header::LOCATION),
            body: sealed,
        };
        match store.complete_idempotency_key(&self.claim, &answer).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(caller = %self.claim.caller, "an idempotency claim was taken over before its request ended")
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot store an idempotent answer; a retry waits for the lease")
            }
        }
        Response::from_parts(parts, Body::from(bytes))
    }
}

/// How long a release that met an unreachable database is retried, once a second: longer than a failover
/// takes, much shorter than the claim's lease ([`LEASE_MS`]).
const RELEASE_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// Releases `claim` in the background, retrying while the store is unavailable (at most
/// [`RELEASE_RETRY_FOR`]); the key frees itself after its lease otherwise. Releasing late is safe: the claim is
/// released only if it is still this request's (its token), and a retry of the request that arrives before
/// is answered 409 `idempotency_key_in_flight` with `Retry-After: 1`.
fn release_later(store: Arc<dyn Store>, claim: Claim, first_error: String) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    tracing::info!(error = %first_error, "cannot release an idempotency key now; retrying while the database is away");
    rt.spawn(async move {
        let started = std::time::Instant::now();
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            match store.release_idempotency_key(&claim).await {
                Ok(_) => return,
                Err(StoreError::Unavailable(_)) if started.elapsed() < RELEASE_RETRY_FOR => {}
                Err(e) => {
                    tracing::warn!(error = %e, "cannot release an idempotency key; it frees itself after its lease");
                    return;
                }
            }
        }
    });
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let claim = self.claim.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = store.release_idempotency_key(&claim).await {
                    tracing::warn!(error = %e, "cannot release an abandoned idempotency key");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_1_to_255_printable_ascii_characters() {
        let ok = |s: &str| parse_key(&HeaderValue::from_str(s).expect("a header value")).is_ok();
        assert!(ok("a"));
        assert!(ok("order 42/retry:1~"));
        assert!(ok(&"k".repeat(255)));
        assert!(!ok(&"k".repeat(256)));
        assert!(!ok(""));
        assert!(!ok("tab\there"));
        let latin = HeaderValue::from_bytes("clé".as_bytes()).expect("obs-text");
        let e = parse_key(&latin).expect_err("not ASCII");
        assert_eq!(e.details[0]["field"], "Idempotency-Key");
    }

    #[test]
    fn an_answer_opens_only_with_the_secret_caller_and_key_that_sealed_it() {
        let plain = br#"{"key":"eai_live_secret"}"#;
        let sealed = Seal::new(b"Bearer eai_live_a", "key_3", "k1")
            .seal(plain)
            .expect("sealed");
        assert!(
            !sealed.windows(plain.len()).any(|w| w == plain),
            "stored in clear"
        );
        let again = Seal::new(b"Bearer eai_live_a", "key_3", "k1");
        assert_eq!(again.open(&sealed).as_deref(), Some(&plain[..]));
        for other in [
            Seal::new(b"Bearer eai_live_b", "key_3", "k1"),
            Seal::new(b"Bearer eai_live_a", "key_4", "k1"),
            Seal::new(b"Bearer eai_live_a", "key_3", "k2"),
        ] {
            assert_eq!(other.open(&sealed), None);
        }
        let mut altered = sealed.clone();
        *altered.last_mut().expect("a tag") ^= 1;
        assert_eq!(again.open(&altered), None);
        assert_eq!(again.open(&sealed[..5]), None);
    }

    #[test]
    fn a_fingerprint_covers_every_part_of_the_request() {
        let base = fingerprint(&Method::POST, "/v1/x?a=1", b"acme", b"{}");
        assert_eq!(
            base,
            fingerprint(&Method::POST, "/v1/x?a=1", b"acme", b"{}")
        );
        for other in [
            fingerprint(&Method::DELETE, "/v1/x?a=1", b"acme", b"{}"),
            fingerprint(&Method::POST, "/v1/x?a=2", b"acme", b"{}"),
            fingerprint(&Method::POST, "/v1/x?a=1", b"", b"{}"),
            fingerprint(&Method::POST, "/v1/x?a=1", b"acme", b"{ }"),
            fingerprint(&Method::POST, "/v1/x?a=1acme", b"", b"{}"),
        ] {
            assert_ne!(base, other);
        }
    }
}
