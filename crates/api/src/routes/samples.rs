//! `POST /v1/finops/gpu/samples`: a batch of GPU samples, all or nothing, idempotent on (gpu_uuid, timestamp).
//! Refused sample by sample (422, each index in `details`): a sample ending more than `EAI_MAX_CLOCK_SKEW_SECONDS`
//! after the server's clock (it would block the real window, first received winning), and, for a sampler key
//! bound to nodes, a sample of another node.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use eai_engine::error::FieldError;
use eai_engine::time::Timestamp;
use eai_engine::wire::{parse_flat_samples, parse_samples, FlatObject, Loose};
use serde::Deserialize;
use serde_json::json;

use crate::auth::actions::IngestSamples;
use crate::auth::{Authorized, Done};
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::views::done;
use crate::views::ingest::GpuSampleIngestResult;
use eai_app::metrics::Metrics;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SamplesBody {
    samples: Vec<Loose>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlatSamplesBody<'a> {
    #[serde(borrow)]
    samples: Vec<FlatObject<'a>>,
}

enum Batch<'a> {
    Flat(Vec<FlatObject<'a>>),
    Tree(Vec<Loose>),
}

/// Answers `{"accepted": N, "duplicates": K}`: N counts the whole batch, re-sent samples included.
pub async fn ingest(
    State(st): State<AppState>,
    auth: Authorized<IngestSamples>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = ingest_batch(&st, &auth, &body).await;
    Ok(auth.finish(&st, outcome).await)
}

/// What the parser leaves to the server: the clock, and the caller's nodes.
fn check_samples(
    samples: &[eai_engine::domain::Sample],
    now: Timestamp,
    max_skew_ms: i64,
    nodes: &[String],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        if s.end.0 > now.0.saturating_add(max_skew_ms) {
            errors.push(
                FieldError::new(
                    "timestamp",
                    format!(
                        "ends at {}, more than {} s after the server's clock ({now}): check the sender's clock",
                        s.end,
                        max_skew_ms / 1000
                    ),
                )
                .at(i),
            );
        }
        if !nodes.is_empty() && !nodes.contains(&s.node) {
            errors.push(
                FieldError::new(
                    "node",
                    format!(
                        "this sampler key may only post samples of the nodes {}",
                        nodes.join(", ")
                    ),
                )
                .at(i),
            );
        }
    }
    errors
}

async fn ingest_batch(
    st: &AppState,
    auth: &Authorized<IngestSamples>,
    body: &Body,
) -> Result<Done, ApiError> {
    // Samples as samplers send them (flat objects) are read without a tree of each; anything else is read as
    // `Loose` values, for its precise errors. Both give the same answer for the same text.
    let batch = match serde_json::from_slice::<FlatSamplesBody<'_>>(&body.0) {
        Ok(flat) => Batch::Flat(flat.samples),
        Err(_) => Batch::Tree(body.json::<SamplesBody>()?.samples),
    };
    let n = match &batch {
        Batch::Flat(v) => v.len(),
        Batch::Tree(v) => v.len(),
    };
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
    let at = st.now();
    let parsed = match &batch {
        Batch::Flat(v) => parse_flat_samples(v, at),
        Batch::Tree(v) => parse_samples(v, at),
    };
    let samples = parsed.map_err(|errors| {
        rejected(st);
        ApiError::validation(errors)
    })?;
    let refused = check_samples(
        &samples,
        at,
        st.settings.max_clock_skew_ms,
        &auth.caller.nodes,
    );
    if !refused.is_empty() {
        rejected(st);
        return Err(ApiError::validation(refused));
    }
    let audit = auth.draft(None, json!({ "samples": n }));
    let out = st
        .store
        .insert_samples(samples, &audit)
        .await
        .map_err(|e| {
            if matches!(e, eai_store::StoreError::Refused(_)) {
                rejected(st);
            }
            e
        })?;
    Metrics::add(&st.metrics.samples_ingested, out.inserted);
    Metrics::add(&st.metrics.samples_duplicates, out.duplicates);
    done(
        StatusCode::OK,
        &GpuSampleIngestResult {
            accepted: n,
            duplicates: out.duplicates,
        },
    )
}
