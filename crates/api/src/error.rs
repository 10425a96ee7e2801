//! The one error envelope of the API and the one table that maps each error code to its HTTP status.
//!
//! Every error leaves as `{"error": {"code", "message", "message_i18n": {"en", "fr"}, "details", "request_id"}}`.
//! Internal errors carry their cause for the log only: the body says nothing about it.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use eai_engine::FieldError;
use eai_store::StoreError;
use serde_json::{json, Value};

use crate::request_context::{self, Locale};

/// Every error code of the API. [`ErrorCode::status`] is the one table of code -> HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Unauthorized,
    Forbidden,
    TenantRequired,
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    Conflict,
    ValidationError,
    RateLimited,
    Internal,
    Unavailable,
    BudgetExceeded,
    IdempotencyKeyReused,
    IdempotencyKeyInFlight,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::TenantRequired,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::Conflict,
        ErrorCode::ValidationError,
        ErrorCode::RateLimited,
        ErrorCode::Internal,
        ErrorCode::Unavailable,
        ErrorCode::BudgetExceeded,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInFlight,
    ];

    /// The table: code, HTTP status.
    pub const fn status(self) -> StatusCode {
        match self {
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::TenantRequired => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::ValidationError => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::BudgetExceeded => StatusCode::PAYMENT_REQUIRED,
            ErrorCode::IdempotencyKeyReused => StatusCode::CONFLICT,
            ErrorCode::IdempotencyKeyInFlight => StatusCode::CONFLICT,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::TenantRequired => "tenant_required",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::Conflict => "conflict",
            ErrorCode::ValidationError => "validation_error",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Internal => "internal",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::BudgetExceeded => "budget_exceeded",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::IdempotencyKeyInFlight => "idempotency_key_in_flight",
        }
    }
}

/// An error on its way to the client: a code, a message in English and French, `details` (the bad fields of a
/// validation error, else null), and, for internal errors only, a cause that goes to the log, never to the body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub en: String,
    pub fr: String,
    pub details: Value,
    internal: Option<String>,
    /// Seconds, for `Retry-After` (rate limits).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(code: ErrorCode, en: impl Into<String>, fr: impl Into<String>) -> Self {
        ApiError {
            code,
            en: en.into(),
            fr: fr.into(),
            details: Value::Null,
            internal: None,
            retry_after: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn unauthorized() -> Self {
        Self::new(
            ErrorCode::Unauthorized,
            "Missing, unknown or revoked API key: send `Authorization: Bearer eai_live_…`.",
            "Clé d'API absente, inconnue ou révoquée : envoyez `Authorization: Bearer eai_live_…`.",
        )
    }

    /// A key past its `expires_at`, or a rotated key's old secret past its grace period.
    pub fn key_expired() -> Self {
        Self::new(
            ErrorCode::Unauthorized,
            "This API key has expired: ask an administrator for a new one.",
            "Cette clé d'API a expiré : demandez-en une nouvelle à un administrateur.",
        )
    }

    /// A conflict with stored state. The message names only what the caller sent.
    pub fn conflict(en: impl Into<String>) -> Self {
        let en = en.into();
        let fr = format!("Conflit avec l'état enregistré : {en}");
        Self::new(
            ErrorCode::Conflict,
            format!("Conflict with the stored state: {en}"),
            fr,
        )
    }

    /// A conflict with stored state on one field of the request: `details` names it (`[{field, reason}]`, the
    /// shape of a validation error's fields).
    pub fn conflict_on(field: &str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let details =
            serde_json::to_value([FieldError::new(field, reason.clone())]).unwrap_or(Value::Null);
        Self::conflict(reason).with_details(details)
    }

    /// What the caller may not do, with the reason in English (stored data the caller may not touch).
    pub fn forbidden_because(en: impl Into<String>, fr: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, en, fr)
    }

    pub fn forbidden(role: &str, action: &str) -> Self {
        Self::new(
            ErrorCode::Forbidden,
            format!("The role `{role}` may not perform `{action}`."),
            format!("Le rôle `{role}` ne permet pas l'action `{action}`."),
        )
    }

    pub fn tenant_required() -> Self {
        Self::new(
            ErrorCode::TenantRequired,
            "This API key is bound to no tenant: only a platform administrator may act without one. Use a key of your tenant.",
            "Cette clé d'API n'est rattachée à aucun tenant : seul un administrateur de la plateforme peut agir sans tenant. Utilisez une clé de votre tenant.",
        )
    }

    pub fn route_not_found(method: &str, path: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("No route for {method} {path}."),
            format!("Aucune route pour {method} {path}."),
        )
    }

    pub fn tenant_not_found(key: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("The tenant `{key}` does not exist."),
            format!("Le tenant `{key}` n'existe pas."),
        )
    }

    /// Nothing of deployment `id` to explain in the period: no GPU time, or (to a tenant) no charge of its own.
    pub fn nothing_to_explain(id: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("The deployment `{id}` has no GPU time charged to you in this period: there is nothing to explain."),
            format!("Le déploiement `{id}` n'a aucun temps GPU qui vous soit imputé sur cette période : il n'y a rien à expliquer."),
        )
    }

    /// `what` (`budget`, `reservation`) `id` does not exist, or is another tenant's.
    pub fn not_found_named(what: &str, id: &str) -> Self {
        let fr = match what {
            "budget" => "Le budget",
            "reservation" => "La réservation",
            "statement" => "Le relevé",
            _ => "L'objet",
        };
        Self::new(
            ErrorCode::NotFound,
            format!("The {what} `{id}` does not exist."),
            format!("{fr} `{id}` n'existe pas."),
        )
    }

    pub fn policy_not_found(id: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("The allocation policy `{id}` does not exist."),
            format!("La politique d'allocation `{id}` n'existe pas."),
        )
    }

    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotAllowed,
            format!("The method {method} is not allowed on {path}."),
            format!("La méthode {method} n'est pas autorisée sur {path}."),
        )
    }

    pub fn body_too_large(max_bytes: usize) -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            format!("The request body is larger than {max_bytes} bytes: split the batch."),
            format!("Le corps de la requête dépasse {max_bytes} octets : découpez le lot."),
        )
    }

    pub fn batch_too_large(what_en: &str, what_fr: &str, count: usize, max: usize) -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            format!("The batch holds {count} {what_en}; at most {max} are accepted per request: split the batch."),
            format!("Le lot contient {count} {what_fr} ; au plus {max} sont acceptés par requête : découpez le lot."),
        )
    }

    /// Rejected fields, each named in `details` (`index` for a record of a batch, `field`, `reason`).
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let n = errors.len();
        let summary = errors
            .iter()
            .take(3)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        let more = if n > 3 {
            format!(" (and {} more)", n - 3)
        } else {
            String::new()
        };
        let details = serde_json::to_value(&errors).unwrap_or(Value::Null);
        Self::new(
            ErrorCode::ValidationError,
            format!("{n} invalid field(s): {summary}{more}."),
            format!("{n} champ(s) invalide(s) : voir `details` ({summary}{more})."),
        )
        .with_details(details)
    }

    /// One rejected field.
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, reason)])
    }

    /// A body that is not the expected JSON.
    pub fn bad_json(reason: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::ValidationError,
            format!("The request body is not the expected JSON: {reason}."),
            format!("Le corps de la requête n'est pas le JSON attendu : {reason}."),
        )
        .with_details(json!([{ "field": "body", "reason": reason.to_string() }]))
    }

    /// Too many requests: retry after `seconds` (also in `Retry-After`).
    pub fn rate_limited(seconds: u32) -> Self {
        let mut e = Self::new(
            ErrorCode::RateLimited,
            format!("Too many requests: retry in {seconds} s."),
            format!("Trop de requêtes : réessayez dans {seconds} s."),
        );
        e.retry_after = Some(seconds);
        e
    }

    /// Every allocation slot is busy.
    pub fn allocations_busy() -> Self {
        let mut e = Self::new(
            ErrorCode::RateLimited,
            "Every allocation slot of the server is busy: retry in 1 s.",
            "Tous les calculs d'allocation du serveur sont occupés : réessayez dans 1 s.",
        );
        e.retry_after = Some(1);
        e
    }

    /// The `Idempotency-Key` was used before for another request (the message names the key, never that
    /// request).
    pub fn idempotency_key_reused(key: &str) -> Self {
        Self::new(
            ErrorCode::IdempotencyKeyReused,
            format!("The Idempotency-Key `{key}` was already used for another request: send a new key with a new request."),
            format!("La clé d'idempotence `{key}` a déjà servi pour une autre requête : envoyez une nouvelle clé avec une nouvelle requête."),
        )
    }

    /// The first request with this `Idempotency-Key` is still running: retry in 1 s (also in `Retry-After`).
    pub fn idempotency_key_in_flight(key: &str) -> Self {
        let mut e = Self::new(
            ErrorCode::IdempotencyKeyInFlight,
            format!("A request with the Idempotency-Key `{key}` is still running: retry in 1 s."),
            format!("Une requête avec la clé d'idempotence `{key}` est encore en cours : réessayez dans 1 s."),
        );
        e.retry_after = Some(1);
        e
    }

    /// An internal failure. `cause` is logged with the request id and never shown.
    pub fn internal(cause: impl Into<String>) -> Self {
        let mut e = Self::new(
            ErrorCode::Internal,
            "An internal error occurred. Quote the request id to your operators.",
            "Une erreur interne s'est produite. Communiquez l'identifiant de requête à vos exploitants.",
        );
        e.internal = Some(cause.into());
        e
    }

    pub fn unavailable(cause: impl Into<String>) -> Self {
        let mut e = Self::new(
            ErrorCode::Unavailable,
            "The service is not ready: its storage cannot be reached.",
            "Le service n'est pas prêt : son stockage est injoignable.",
        );
        e.internal = Some(cause.into());
        e
    }

    /// The same error, logged with `cause` instead of its own (never shown).
    pub fn logged_as(mut self, cause: impl Into<String>) -> Self {
        self.internal = Some(cause.into());
        self
    }

    /// The store's disk is full: 503 `unavailable`, retry in 30 s. Nothing of the request was stored.
    pub fn storage_full(cause: impl Into<String>) -> Self {
        let mut e = Self::new(
            ErrorCode::Unavailable,
            "The service cannot store data now: its disk is full. Nothing of this request was stored; send it again later.",
            "Le service ne peut rien enregistrer pour l'instant : son disque est plein. Rien de cette requête n'a été enregistré ; renvoyez-la plus tard.",
        );
        e.retry_after = Some(30);
        e.internal = Some(cause.into());
        e
    }

    /// The envelope, for a request id and a locale.
    pub fn envelope(&self, request_id: &str, locale: Locale) -> Value {
        let message = match locale {
            Locale::En => &self.en,
            Locale::Fr => &self.fr,
        };
        json!({
            "error": {
                "code": self.code.as_str(),
                "message": message,
                "message_i18n": { "en": self.en, "fr": self.fr },
                "details": self.details,
                "request_id": request_id,
            }
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.en)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let ctx = request_context::current();
        let request_id = ctx.as_ref().map_or("unknown", |c| c.request_id.as_str());
        let locale = ctx.as_ref().map_or(Locale::En, |c| c.locale);
        if let Some(cause) = &self.internal {
            tracing::error!(code = self.code.as_str(), request_id, cause = %cause, "request failed");
        }
        let mut response =
            (self.code.status(), Json(self.envelope(request_id, locale))).into_response();
        if self.code == ErrorCode::Unauthorized {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(s) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::new(
                ErrorCode::NotFound,
                format!("Not found: {what}."),
                format!("Introuvable : {what}."),
            ),
            StoreError::Conflict { field, reason } => ApiError::conflict_on(&field, reason),
            StoreError::Forbidden(what) => ApiError::forbidden_because(
                format!("Forbidden: {what}."),
                format!("Interdit : {what}."),
            ),
            StoreError::Refused(errors) => ApiError::validation(errors),
            StoreError::Internal(cause) => ApiError::internal(format!("store: {cause}")),
            StoreError::Full(cause) => ApiError::storage_full(format!("store: {cause}")),
            StoreError::Unavailable(cause) => {
                let mut e = ApiError::unavailable(format!("store: {cause}"));
                e.retry_after = Some(1);
                e
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_status_and_a_distinct_name() {
        let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        assert_eq!(ErrorCode::TenantRequired.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            ErrorCode::ValidationError.status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            ErrorCode::MethodNotAllowed.status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }

    #[test]
    fn internal_errors_hide_their_cause() {
        let e = ApiError::internal("disk I/O error at /var/lib/secret.db");
        let text = e.envelope("req-1", Locale::En).to_string();
        assert!(!text.contains("secret.db"), "{text}");
        assert!(text.contains("\"code\":\"internal\""));
        assert!(text.contains("\"request_id\":\"req-1\""));
    }

    #[test]
    fn validation_details_name_each_field() {
        let e = ApiError::validation(vec![FieldError::new("pue", "must be at least 1").at(2)]);
        let v = e.envelope("r", Locale::Fr);
        assert_eq!(v["error"]["details"][0]["field"], "pue");
        assert_eq!(v["error"]["details"][0]["index"], 2);
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("invalide")));
    }
}
