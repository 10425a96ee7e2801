//! A local inference provider as a platform admin registers it (`POST /v1/providers`): the deployment it
//! serves, its OpenAI-compatible base URL (which the control plane confirms by listing its models), a label.

use crate::error::FieldError;
use crate::wire::{http_url, Loose, Record, MAX_NAME};

/// What a registration says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSpec {
    pub deployment_id: String,
    /// The OpenAI-compatible endpoint, e.g. `http://vllm-llama-70b.ai.svc:8000/v1` (no trailing slash).
    pub base_url: String,
    pub label: Option<String>,
    pub enabled: bool,
    /// Whether the control plane confirms the URL by calling `GET {base_url}/models` (default true). Without,
    /// the provider is listed as configured (`discovery: config`).
    pub verify: bool,
}

const FIELDS: &[&str] = &["deployment_id", "base_url", "label", "enabled", "verify"];

/// Parses a registration, every bad field reported.
pub fn parse_provider(v: &Loose) -> Result<ProviderSpec, Vec<FieldError>> {
    let mut r = Record::new(v, "provider").map_err(|e| vec![e])?;
    r.deny_unknown(FIELDS);
    let deployment_id = r.req_str("deployment_id", MAX_NAME);
    let base_url = r.opt_parsed("base_url", |s| http_url("base_url", s));
    if r.get("base_url").is_none() {
        r.fail("base_url", "is required");
    }
    let label = r.opt_str("label", 200);
    let enabled = r.opt_bool("enabled").unwrap_or(true);
    let verify = r.opt_bool("verify").unwrap_or(true);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(deployment_id), Some(base_url)) = (deployment_id, base_url) else {
        return Err(vec![FieldError::new("provider", "is incomplete")]);
    };
    Ok(ProviderSpec {
        deployment_id,
        base_url: base_url.trim_end_matches('/').to_string(),
        label,
        enabled,
        verify,
    })
}

/// The model list of an OpenAI-compatible base URL.
pub fn models_url(base_url: &str) -> String {
    format!("{}/models", base_url.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::{models_url, parse_provider, ProviderSpec};
    use crate::error::FieldError;
    use crate::wire::Loose;

    fn parse(json: &str) -> Result<ProviderSpec, Vec<FieldError>> {
        parse_provider(&serde_json::from_str::<Loose>(json).expect("json"))
    }

    #[test]
    fn a_registration_is_read_and_its_url_checked() {
        let p = parse(
            r#"{"deployment_id":"vllm-llama-70b","base_url":"http://vllm-llama-70b.ai:8000/v1/"}"#,
        )
        .expect("valid");
        assert_eq!(p.base_url, "http://vllm-llama-70b.ai:8000/v1");
        assert!(p.enabled && p.verify);
        assert_eq!(
            models_url(&p.base_url),
            "http://vllm-llama-70b.ai:8000/v1/models"
        );
        let e = parse(r#"{"base_url":"ftp://x","color":"red"}"#).expect_err("invalid");
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["color", "deployment_id", "base_url"]);
    }
}
