//! What tokens cost: `TokenCost` (recursive: a total lists its deployments) and `TokenCostList`.

use eai_engine::tokens::TokenCost as Row;
use eai_engine::view::{quantity, Quantity};
use rust_decimal::Decimal;
use serde::Serialize;

/// One row of `GET /v1/finops/gpu/token-costs`: amounts with the currency's minor digits, rates per million
/// tokens as computed, token counts as exact numbers.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenCost {
    pub deployment_id: Option<String>,
    pub tenant_id: Option<String>,
    pub model: Option<String>,
    pub currency: String,
    pub cost: String,
    pub input_cost: Option<String>,
    pub output_cost: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_out: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub cached_tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub effective_tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens: Quantity,
    pub token_source: &'static str,
    pub allocation_method: &'static str,
    pub output_token_weight: Option<String>,
    pub cost_per_mtok: Option<String>,
    pub input_cost_per_mtok: Option<String>,
    pub output_cost_per_mtok: Option<String>,
    /// A total's deployments; absent on a deployment's row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<TokenCost>,
}

impl TokenCost {
    pub fn of(r: &Row) -> Self {
        let c = r.currency;
        let amount = |d: Option<Decimal>| d.map(|d| c.amount_text(d));
        let rate = |d: Option<Decimal>| d.map(|d| d.to_string());
        TokenCost {
            deployment_id: r.deployment_id.clone(),
            tenant_id: r.tenant_id.map(|t| t.to_string()),
            model: r.model.clone(),
            currency: c.as_str().to_string(),
            cost: c.amount_text(r.cost),
            input_cost: amount(r.input_cost),
            output_cost: amount(r.output_cost),
            tokens_in: quantity(r.tokens.input, 4),
            tokens_out: quantity(r.tokens.output, 4),
            cached_tokens_in: quantity(r.tokens.cached_input, 4),
            effective_tokens_in: quantity(r.tokens.effective_input, 4),
            tokens: quantity(r.tokens.total(), 4),
            token_source: r.token_source.as_str(),
            allocation_method: r.method.as_str(),
            output_token_weight: r
                .output_token_weight
                .map(|w| w.round_dp(6).normalize().to_string()),
            cost_per_mtok: rate(r.per_mtok),
            input_cost_per_mtok: rate(r.input_per_mtok),
            output_cost_per_mtok: rate(r.output_per_mtok),
            deployments: r.parts.iter().map(TokenCost::of).collect(),
        }
    }
}

/// `GET /v1/finops/gpu/token-costs`: the period, how costs were counted, the rows.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenCostList {
    pub from: String,
    pub to: String,
    pub basis: &'static str,
    pub aggregate: &'static str,
    pub items: Vec<TokenCost>,
}
