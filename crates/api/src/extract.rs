//! Extractors whose rejections come out in the error envelope: the request body (413 beyond the limit, 422 when
//! it is not the expected JSON) and the query string (422).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// The raw request body, read within the body limit.
#[derive(Debug, Clone)]
pub struct Body(pub Bytes);

impl FromRequest<AppState> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
            let mime = ct.split(';').next().unwrap_or_default().trim();
            if !(mime == "application/json" || mime.ends_with("+json")) {
                return Err(ApiError::bad_json(format!(
                    "Content-Type is `{mime}`, send application/json"
                )));
            }
        }
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(Body(b)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::body_too_large(state.settings.max_body_bytes))
            }
            Err(rejection) => Err(ApiError::bad_json(rejection.body_text())),
        }
    }
}

impl Body {
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(u8::is_ascii_whitespace)
    }

    /// The body as `T`, or a validation error that says where the JSON went wrong.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if self.is_empty() {
            return Err(ApiError::bad_json("the body is empty, send a JSON object"));
        }
        serde_json::from_slice(&self.0).map_err(ApiError::bad_json)
    }

    /// Like [`Body::json`], but an empty body is `T::default()` (for endpoints whose body is optional).
    pub fn json_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, ApiError> {
        if self.is_empty() {
            Ok(T::default())
        } else {
            self.json()
        }
    }
}

/// `Query<T>` with its rejection in the envelope.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(ApiQuery(v)),
            Err(rejection) => Err(ApiError::new(
                crate::error::ErrorCode::ValidationError,
                format!("The query string is invalid: {}.", rejection.body_text()),
                format!(
                    "La chaîne de requête est invalide : {}.",
                    rejection.body_text()
                ),
            )
            .with_details(
                serde_json::json!([{ "field": "query", "reason": rejection.body_text() }]),
            )),
        }
    }
}
