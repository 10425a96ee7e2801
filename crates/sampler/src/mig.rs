//! MIG: which share of a physical GPU a MIG instance is, from its GPU instance profile name.
//!
//! A profile is `<g>g.<mem>gb`, optionally with a compute-instance prefix (`1c.3g.40gb`) or a suffix
//! (`1g.10gb+me`, `1g.24gb+gfx`). `<g>` is the number of compute slices the instance holds. Its share of the GPU
//! (`gpu_fraction`) is `<g> / <slices of the GPU>`, rounded half-up to 6 places (the API's precision):
//!
//! | GPU (model name contains)                               | slices | examples                                   |
//! |---------------------------------------------------------|-------:|--------------------------------------------|
//! | A100, A800, H100, H800, H20, H200, GH200, B200, GB200… | 7      | `1g.10gb` 0.142857, `2g.20gb` 0.285714, `3g.40gb` 0.428571, `4g.40gb` 0.571429, `7g.80gb` 1 |
//! | A30                                                     | 4      | `1g.6gb` 0.25, `2g.12gb` 0.5, `4g.24gb` 1  |
//! | RTX PRO 6000 (Blackwell)                                | 4      | `1g.24gb` 0.25, `2g.48gb` 0.5, `4g.96gb` 1 |
//!
//! Any other GPU counts 7 slices (every MIG-capable data-centre GPU but the A30 has 7). When the model name is
//! missing (older exporters), profiles only an A30 has (`1g.6gb`, `2g.12gb`, `4g.24gb`) or only an RTX PRO 6000
//! has (`2g.48gb`, `4g.96gb`) still give 4. The config file's `[mig_slices]` (model glob -> slices) overrides
//! this table. A profile whose name cannot be read is never guessed: its instance is skipped and counted.

use eai_engine::policy::Glob;
use rust_decimal::Decimal;

/// Slices of most MIG-capable GPUs (A100, H100, H200, B200, …).
pub const DEFAULT_GPU_SLICES: u32 = 7;

/// The compute slices a profile holds: `1g.10gb` -> 1, `3g.40gb` -> 3, `1c.3g.40gb` -> 3, `7g.80gb+me` -> 7.
pub fn profile_slices(profile: &str) -> Option<u32> {
    let base = profile.split('+').next().unwrap_or(profile);
    base.split('.').find_map(|part| {
        let n = part.strip_suffix('g')?;
        let v: u32 = n.parse().ok()?;
        (1..=8).contains(&v).then_some(v)
    })
}

/// The compute slices of the GPU that holds an instance of `profile`.
pub fn gpu_slices(model: Option<&str>, profile: &str, overrides: &[(Glob, u32)]) -> u32 {
    if let Some(m) = model {
        if let Some((_, n)) = overrides.iter().find(|(g, _)| g.matches(m)) {
            return *n;
        }
        let m = m.to_ascii_uppercase();
        if m.contains("A30") || m.contains("RTX PRO 6000") {
            return 4;
        }
        return DEFAULT_GPU_SLICES;
    }
    let base = profile.split('+').next().unwrap_or(profile);
    let base = base.rsplit_once("c.").map_or(base, |(_, rest)| rest);
    match base {
        "1g.6gb" | "2g.12gb" | "4g.24gb" | "2g.48gb" | "4g.96gb" => 4,
        _ => DEFAULT_GPU_SLICES,
    }
}

/// `slices / total`, rounded half-up to 6 places; `None` when it is not in (0, 1].
pub fn fraction(slices: u32, total: u32) -> Option<Decimal> {
    if slices == 0 || total == 0 || slices > total {
        return None;
    }
    Some(
        (Decimal::from(slices) / Decimal::from(total))
            .round_dp_with_strategy(6, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
            .normalize(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use eai_engine::policy::Glob;

    use super::{fraction, gpu_slices, profile_slices};

    fn share(model: Option<&str>, profile: &str) -> String {
        let total = gpu_slices(model, profile, &[]);
        fraction(profile_slices(profile).unwrap(), total)
            .unwrap()
            .to_string()
    }

    #[test]
    fn the_documented_table() {
        let h100 = Some("NVIDIA H100 80GB HBM3");
        assert_eq!(share(h100, "1g.10gb"), "0.142857");
        assert_eq!(share(h100, "2g.20gb"), "0.285714");
        assert_eq!(share(h100, "3g.40gb"), "0.428571");
        assert_eq!(share(h100, "4g.40gb"), "0.571429");
        assert_eq!(share(h100, "7g.80gb"), "1");
        assert_eq!(share(h100, "1g.20gb"), "0.142857");
        assert_eq!(share(h100, "1g.10gb+me"), "0.142857");
        assert_eq!(share(h100, "1c.3g.40gb"), "0.428571");
        assert_eq!(share(None, "1g.5gb"), "0.142857");
        assert_eq!(share(Some("NVIDIA A30"), "1g.6gb"), "0.25");
        assert_eq!(share(Some("NVIDIA A30"), "2g.12gb"), "0.5");
        assert_eq!(share(None, "4g.24gb"), "1");
        assert_eq!(share(None, "2g.48gb"), "0.5");
        assert_eq!(
            share(
                Some("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
                "1g.24gb"
            ),
            "0.25"
        );
        assert_eq!(share(Some("NVIDIA H100 NVL"), "1g.24gb"), "0.142857");
    }

    #[test]
    fn unreadable_profiles_are_not_guessed() {
        assert_eq!(profile_slices("weird"), None);
        assert_eq!(profile_slices(""), None);
        assert_eq!(profile_slices("0g.5gb"), None);
        assert_eq!(profile_slices("g.5gb"), None);
        assert_eq!(fraction(5, 4), None);
    }

    #[test]
    fn overrides_win() {
        let o = vec![(Glob::new("*Custom*").unwrap(), 2)];
        assert_eq!(gpu_slices(Some("Custom GPU"), "1g.5gb", &o), 2);
    }
}
