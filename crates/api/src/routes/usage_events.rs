//! `POST /v1/usage/events`: usage events, upserted by `(tenant_id, event_id)`. The tenant comes from the
//! credential; only a platform identity (platform_admin, usage_reporter) names it in the body. No caller may
//! write an event of `source: allocation`: those are the allocation batch's record of each tenant's charge (403,
//! audited; the store also refuses to let another source replace one). Events of `source: vllm` are a vLLM
//! server's own counters for a whole deployment (tokens, prefill and decode time): they name no tenant, only a
//! sampler or a platform admin posts them, and a sampler posts nothing else.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use eai_engine::domain::{is_platform_record, VLLM_SOURCE};
use eai_engine::wire::{parse_usage_events, Loose, TenantSource};
use eai_store::{Role, Scope};
use serde::Deserialize;
use serde_json::json;

use crate::auth::actions::IngestUsage;
use crate::auth::{Authorized, Done};
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::views::done;
use crate::views::ingest::UsageEventIngestResult;
use eai_app::metrics::Metrics;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsBody {
    events: Vec<Loose>,
}

/// Answers `{"accepted": N}`.
pub async fn ingest(
    State(st): State<AppState>,
    auth: Authorized<IngestUsage>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let source = match scope {
        Scope::Platform => TenantSource::Body,
        Scope::Tenant(t) => TenantSource::Credential(t),
    };
    let outcome = ingest_batch(&st, &auth, &body, source).await;
    Ok(auth.finish(&st, outcome).await)
}

async fn ingest_batch(
    st: &AppState,
    auth: &Authorized<IngestUsage>,
    body: &Body,
    source: TenantSource,
) -> Result<Done, ApiError> {
    let batch: EventsBody = body.json()?;
    let n = batch.events.len();
    if n > st.settings.max_batch {
        return Err(ApiError::batch_too_large(
            "events",
            "événements",
            n,
            st.settings.max_batch,
        ));
    }
    if n == 0 {
        return Err(ApiError::invalid("events", "must hold at least one event"));
    }
    // A vLLM server's counters (no tenant's) come from the sampler that reads them, or a platform admin; a
    // sampler posts nothing else. Decided on the sources as sent, before anything else is read: a service key
    // doing more than its job is refused whatever the rest of its body says.
    let role = auth.caller.role;
    let refused = |source: Option<&str>| {
        let measured = source == Some(VLLM_SOURCE);
        match role {
            Role::Sampler => !measured,
            Role::PlatformAdmin => false,
            _ => measured,
        }
    };
    let source_of = |v: &Loose| match v {
        Loose::Object(m) => match m.get("source") {
            Some(Loose::Str(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    if let Some((i, source)) = batch
        .events
        .iter()
        .map(source_of)
        .enumerate()
        .find(|(_, s)| refused(s.as_deref()))
    {
        let source = source.unwrap_or_else(|| "(none)".to_string());
        return Err(if role == Role::Sampler {
            ApiError::forbidden_because(
                format!("Event {i} has `source: {source}`: a sampler posts only its vLLM servers' counters (`source: vllm`)."),
                format!("L'événement {i} a `source: {source}` : un sampler n'envoie que les compteurs de ses serveurs vLLM (`source: vllm`)."),
            )
        } else {
            ApiError::forbidden_because(
                format!("Event {i} has `source: vllm`: only a sampler (or a platform admin) posts a vLLM server's counters."),
                format!("L'événement {i} a `source: vllm` : seul un sampler (ou un administrateur de la plateforme) envoie les compteurs d'un serveur vLLM."),
            )
        });
    }
    let events = parse_usage_events(&batch.events, source).map_err(ApiError::validation)?;
    if let Some((i, e)) = events
        .iter()
        .enumerate()
        .find(|(_, e)| is_platform_record(&e.source))
    {
        let source = &e.source;
        return Err(ApiError::forbidden_because(
            format!("Event {i} has `source: {source}`: only the platform records allocated charges and committed reservations."),
            format!("L'événement {i} a `source: {source}` : seule la plateforme enregistre les coûts alloués et les réservations engagées."),
        ));
    }
    let audit = auth.draft(None, json!({ "events": n }));
    st.store.upsert_usage_events(&events, &audit).await?;
    Metrics::add(&st.metrics.usage_events_ingested, n as u64);
    done(StatusCode::OK, &UsageEventIngestResult { accepted: n })
}
