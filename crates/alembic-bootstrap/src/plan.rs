//! Which dimensions are active for a project, and the tier plan that runs them.

use serde::Serialize;

use crate::detect::ProjectProfile;
use crate::dimensions::{Dimension, Layer};

/// Dimensions run at once in tiers 1, 2 and 3.
pub const TIER_CONCURRENCY: [usize; 3] = [3, 2, 1];

/// One tier: its dimensions run concurrently (up to `concurrency`), tiers run in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tier {
    /// 1, 2 or 3.
    pub number: u8,
    pub concurrency: usize,
    pub dimensions: Vec<Dimension>,
}

/// Whether `dim` applies to the project: universal always; language dimensions when a
/// project language matches; framework dimensions when a language and a framework match.
pub fn is_active(dim: &Dimension, profile: &ProjectProfile) -> bool {
    let cond = dim.conditions.clone().unwrap_or_default();
    let lang = cond.languages.is_empty()
        || cond
            .languages
            .iter()
            .any(|l| profile.languages.iter().any(|p| p == l));
    let framework = cond.frameworks.is_empty()
        || cond
            .frameworks
            .iter()
            .any(|f| profile.frameworks.iter().any(|p| p == f));
    match dim.layer {
        Layer::Universal => lang && framework,
        Layer::Language => lang,
        Layer::Framework => lang && framework,
    }
}

/// Tier 1 = tier hint 1, tier 2 = hint 2, tier 3 = the rest; empty tiers are dropped.
pub fn tiers(dims: &[Dimension]) -> Vec<Tier> {
    (1u8..=3)
        .map(|number| Tier {
            number,
            concurrency: TIER_CONCURRENCY[usize::from(number - 1)],
            dimensions: dims
                .iter()
                .filter(|d| d.tier_hint.clamp(1, 3) == number)
                .cloned()
                .collect(),
        })
        .filter(|t| !t.dimensions.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimensions::builtin;

    fn profile(langs: &[&str], fws: &[&str]) -> ProjectProfile {
        ProjectProfile {
            languages: langs.iter().map(|s| s.to_string()).collect(),
            frameworks: fws.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn activation_follows_language_and_framework() {
        let dims = builtin().unwrap();
        let active = |p: &ProjectProfile| -> Vec<String> {
            dims.iter()
                .filter(|d| is_active(d, p))
                .map(|d| d.id.clone())
                .collect()
        };
        let rust = active(&profile(&["rust"], &[]));
        assert_eq!(rust.len(), 14);
        assert!(rust.contains(&"rust-ownership".to_string()));
        let ts = active(&profile(&["typescript"], &["react"]));
        assert!(ts.contains(&"react-patterns".to_string()));
        assert!(!ts.contains(&"vue-patterns".to_string()));
        // a framework without its language does not activate the framework dimension
        let py = active(&profile(&["python"], &["react"]));
        assert!(!py.contains(&"react-patterns".to_string()));
    }

    #[test]
    fn tiers_run_3_2_1_and_drop_empty_ones() {
        let dims = builtin().unwrap();
        let active: Vec<Dimension> = dims
            .into_iter()
            .filter(|d| is_active(d, &profile(&["swift"], &["swiftui"])))
            .collect();
        let plan = tiers(&active);
        let ids = |t: &Tier| {
            t.dimensions
                .iter()
                .map(|d| d.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(plan.len(), 3);
        assert_eq!(
            ids(&plan[0]),
            ["architecture", "swift-objc-idiom", "swiftui-patterns"]
        );
        assert_eq!(ids(&plan[1]), ["coding-standards", "design-patterns"]);
        assert_eq!(
            plan.iter().map(|t| t.concurrency).collect::<Vec<_>>(),
            [3, 2, 1]
        );
        let only_tier3: Vec<Dimension> = plan[2].dimensions.clone();
        let plan = tiers(&only_tier3);
        assert_eq!((plan.len(), plan[0].number, plan[0].concurrency), (1, 3, 1));
    }
}
