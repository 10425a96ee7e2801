//! Which policy prices a sample: glob on the deployment id, optional GPU model, effective dates, precedence.

use crate::domain::Policy;
use crate::time::Timestamp;

// The deployment pattern is a domain type (a policy spec's field); its path here stays.
pub use crate::domain::Glob;

/// A policy's `gpu_model` matches a sample's model by equality or prefix, case-insensitive. A leading
/// vendor word (`NVIDIA H100 80GB HBM3`, as DCGM's `modelName` has it) is ignored, so `H100` matches it.
pub fn model_matches(policy_model: &str, sample_model: &str) -> bool {
    let p = policy_model.to_ascii_lowercase();
    let s = sample_model.to_ascii_lowercase();
    s.starts_with(&p)
        || s.strip_prefix("nvidia ")
            .is_some_and(|rest| rest.starts_with(&p))
}

/// The policies that could price a (deployment, model) pair, most specific first. Effective dates are
/// checked per instant by [`Candidates::pick`], so one list serves a whole period.
#[derive(Debug, Clone, Default)]
pub struct Candidates(Vec<usize>);

impl Candidates {
    pub fn for_key(policies: &[Policy], deployment_id: &str, model: &str) -> Self {
        let mut c: Vec<usize> = policies
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                p.spec.enabled
                    && p.spec.deployment_pattern.matches(deployment_id)
                    && p.spec
                        .gpu_model
                        .as_deref()
                        .is_none_or(|m| model_matches(m, model))
            })
            .map(|(i, _)| i)
            .collect();
        // Precedence: a gpu_model beats none, then more literal characters, then the newest.
        c.sort_by(|&a, &b| {
            let (pa, pb) = (&policies[a], &policies[b]);
            let key = |p: &Policy| {
                (
                    p.spec.gpu_model.is_some(),
                    p.spec.deployment_pattern.literal_chars(),
                    p.spec.effective_from,
                    p.seq,
                )
            };
            key(pb).cmp(&key(pa))
        });
        Candidates(c)
    }

    /// The index of the policy that prices a window starting at `t`, if any.
    pub fn pick(&self, policies: &[Policy], t: Timestamp) -> Option<usize> {
        self.0
            .iter()
            .copied()
            .find(|&i| policies[i].in_effect_at(t))
    }

    /// True when a policy of this list starts or ends strictly inside `(from, to]`, so that windows starting
    /// in that span are not all priced alike (a rollup spanning it cannot be priced exactly).
    pub fn boundary_within(&self, policies: &[Policy], from: Timestamp, to: Timestamp) -> bool {
        self.0.iter().any(|&i| {
            let s = &policies[i].spec;
            (from < s.effective_from && s.effective_from <= to)
                || s.effective_to.is_some_and(|e| from < e && e <= to)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::model_matches;

    #[test]
    fn model_matches_by_prefix_case_insensitive() {
        assert!(model_matches("L40S", "l40s-48gb"));
        assert!(model_matches("H100", "NVIDIA H100 80GB HBM3"));
        assert!(model_matches("H100-80GB", "H100-80GB"));
        assert!(!model_matches("H100", "A100-SXM4-80GB"));
    }
}
