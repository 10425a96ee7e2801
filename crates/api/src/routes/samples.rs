//! `POST /v1/finops/gpu/samples`: a batch of GPU samples, all or nothing, idempotent on (gpu_uuid, timestamp).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use eai_engine::wire::{parse_samples, Loose};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{authorize, finish, Action, Caller, Done};
use crate::error::ApiError;
use crate::extract::Body;
use crate::metrics::Metrics;
use crate::state::{now, AppState};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SamplesBody {
    samples: Vec<Loose>,
}

/// Answers `{"accepted": N, "duplicates": K}`: N counts the whole batch, re-sent samples included.
pub async fn ingest(
    State(st): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<Response, ApiError> {
    authorize(&st, &caller, Action::IngestSamples).await?;
    let outcome = ingest_batch(&st, &body).await;
    Ok(finish(&st, &caller, Action::IngestSamples, outcome).await)
}

async fn ingest_batch(st: &AppState, body: &Body) -> Result<Done, ApiError> {
    let batch: SamplesBody = body.json()?;
    let n = batch.samples.len();
    let rejected = |st: &AppState| Metrics::add(&st.metrics.samples_rejected, n as u64);
    if n > st.settings.max_batch {
        rejected(st);
        return Err(ApiError::batch_too_large(
            "samples",
            "échantillons",
            n,
            st.settings.max_batch,
        ));
    }
    if n == 0 {
        return Err(ApiError::invalid(
            "samples",
            "must hold at least one sample",
        ));
    }
    let samples = parse_samples(&batch.samples, now()).map_err(|errors| {
        rejected(st);
        ApiError::validation(errors)
    })?;
    let out = st.store.insert_samples(&samples).await.map_err(|e| {
        if matches!(e, eai_store::StoreError::Refused(_)) {
            rejected(st);
        }
        e
    })?;
    Metrics::add(&st.metrics.samples_ingested, out.inserted);
    Metrics::add(&st.metrics.samples_duplicates, out.duplicates);
    Ok(Done {
        status: StatusCode::OK,
        body: json!({ "accepted": n, "duplicates": out.duplicates }),
        resource: None,
        details: json!({ "samples": n, "inserted": out.inserted, "duplicates": out.duplicates }),
    })
}
