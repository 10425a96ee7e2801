//! Local inference providers: `Provider` and its `ProviderPricing` (the catalog is [`super::Items`]).

use serde::Serialize;

/// What a provider's tokens cost over the last closed month, per million tokens (allocation basis).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProviderPricing {
    pub per_mtok: Option<String>,
    pub input_per_mtok: Option<String>,
    pub output_per_mtok: Option<String>,
    pub currency: String,
    /// The month, `YYYY-MM`.
    pub period: String,
    pub basis: &'static str,
    pub allocation_method: &'static str,
}

/// One deployment's OpenAI-compatible endpoint, shaped as in the seed (`id: "vllm"`, `local: true`).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Provider {
    pub id: &'static str,
    pub label: String,
    pub local: bool,
    pub base_url: String,
    /// uuid v5 of the deployment id (`routes::catalog::provider_id`).
    pub provider_id: String,
    pub enabled: bool,
    /// `api`, `config` or `samples`.
    pub discovery: &'static str,
    pub deployment_id: String,
    pub model: Option<String>,
    pub models: Vec<String>,
    pub pricing: Option<ProviderPricing>,
}
