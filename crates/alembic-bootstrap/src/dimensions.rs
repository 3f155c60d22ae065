//! The bootstrap dimensions as data (`data/dimensions.toml`, the 25 of ref-tools §2.9) and the
//! `[bootstrap]` overrides of `.alembic/config.toml` (add, disable, override).

use serde::{Deserialize, Serialize};

use crate::error::BootstrapError;

const BUILTIN: &str = include_str!("../data/dimensions.toml");

/// Which part of the catalogue a dimension belongs to; decides when it is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    // always active
    Universal,
    // active when the project's languages include one of `conditions.languages`
    Language,
    // active when a language and a framework of the conditions both match
    Framework,
}

/// When a language or framework dimension applies. Names are lower-case (`swift`,
/// `objectivec`, `typescript`, `react`, `spring-boot`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    #[serde(default)]
    pub languages: Vec<String>,
    #[serde(default)]
    pub frameworks: Vec<String>,
}

/// One dimension of the analysis, with every field of the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    pub id: String,
    pub label: String,
    pub layer: Layer,
    pub extraction_guide: String,
    pub allowed_knowledge_types: Vec<String>,
    pub output_mode: String,
    pub quality_description: String,
    pub match_topics: Vec<String>,
    pub match_categories: Vec<String>,
    pub weight: f64,
    pub suggested_topics: Vec<String>,
    pub related_roles: Vec<String>,
    #[serde(default)]
    pub conditions: Option<Conditions>,
    /// 1, 2 or 3.
    pub tier_hint: u8,
    /// architecture | best-practice | data-event-flow | deep-scan.
    pub display_group: String,
}

#[derive(Deserialize)]
struct Catalogue {
    dimension: Vec<Dimension>,
}

/// The `[bootstrap]` section of `.alembic/config.toml`.
///
/// ```toml
/// [bootstrap]
/// disable = ["ui-interaction"]
/// [[bootstrap.dimension]]          # override fields of a built-in dimension ...
/// id = "architecture"
/// tier_hint = 2
/// [[bootstrap.dimension]]          # ... or add one (label, extraction_guide,
/// id = "payments"                  # allowed_knowledge_types and tier_hint required)
/// label = "Payment flow"
/// extraction_guide = "How payments are authorised and captured."
/// allowed_knowledge_types = ["call-chain"]
/// tier_hint = 3
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootstrapConfig {
    #[serde(default)]
    pub disable: Vec<String>,
    #[serde(default)]
    pub dimension: Vec<DimensionOverride>,
}

/// Fields to set on a dimension; `id` picks it (or names a new one).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimensionOverride {
    pub id: String,
    pub label: Option<String>,
    pub layer: Option<Layer>,
    pub extraction_guide: Option<String>,
    pub allowed_knowledge_types: Option<Vec<String>>,
    pub quality_description: Option<String>,
    pub match_topics: Option<Vec<String>>,
    pub weight: Option<f64>,
    pub conditions: Option<Conditions>,
    pub tier_hint: Option<u8>,
    pub display_group: Option<String>,
}

/// The built-in catalogue (25 dimensions).
pub fn builtin() -> Result<Vec<Dimension>, BootstrapError> {
    let c: Catalogue = toml::from_str(BUILTIN)
        .map_err(|e| BootstrapError::Config(format!("built-in dimensions: {e}")))?;
    Ok(c.dimension)
}

/// The built-in catalogue with `config` applied: overrides, additions, then removals.
pub fn catalogue(config: &BootstrapConfig) -> Result<Vec<Dimension>, BootstrapError> {
    let mut dims = builtin()?;
    for o in &config.dimension {
        match dims.iter_mut().find(|d| d.id == o.id) {
            Some(d) => apply(d, o),
            None => dims.push(new_dimension(o)?),
        }
    }
    for id in &config.disable {
        if !dims.iter().any(|d| &d.id == id) {
            return Err(unknown(id, &dims));
        }
    }
    dims.retain(|d| !config.disable.contains(&d.id));
    for d in &dims {
        if !(1..=3).contains(&d.tier_hint) {
            return Err(BootstrapError::Config(format!(
                "[bootstrap] dimension {:?}: tier_hint {} is not 1, 2 or 3",
                d.id, d.tier_hint
            )));
        }
    }
    Ok(dims)
}

/// The error for a dimension id that is not in `dims`, listing the accepted ids.
pub fn unknown(id: &str, dims: &[Dimension]) -> BootstrapError {
    let ids: Vec<&str> = dims.iter().map(|d| d.id.as_str()).collect();
    BootstrapError::UnknownDimension {
        id: id.to_string(),
        accepted: ids.join(", "),
    }
}

fn apply(d: &mut Dimension, o: &DimensionOverride) {
    let set = |slot: &mut String, v: &Option<String>| {
        if let Some(v) = v {
            slot.clone_from(v);
        }
    };
    set(&mut d.label, &o.label);
    set(&mut d.extraction_guide, &o.extraction_guide);
    set(&mut d.quality_description, &o.quality_description);
    set(&mut d.display_group, &o.display_group);
    if let Some(v) = &o.allowed_knowledge_types {
        d.allowed_knowledge_types.clone_from(v);
    }
    if let Some(v) = &o.match_topics {
        d.match_topics.clone_from(v);
    }
    if let Some(v) = o.layer {
        d.layer = v;
    }
    if let Some(v) = o.weight {
        d.weight = v;
    }
    if let Some(v) = o.tier_hint {
        d.tier_hint = v;
    }
    if o.conditions.is_some() {
        d.conditions.clone_from(&o.conditions);
    }
}

fn new_dimension(o: &DimensionOverride) -> Result<Dimension, BootstrapError> {
    let missing = |field: &str| {
        BootstrapError::Config(format!(
            "[bootstrap] new dimension {:?} needs `{field}` (a new dimension needs label, \
             extraction_guide, allowed_knowledge_types and tier_hint)",
            o.id
        ))
    };
    Ok(Dimension {
        id: o.id.clone(),
        label: o.label.clone().ok_or_else(|| missing("label"))?,
        layer: o.layer.unwrap_or(Layer::Universal),
        extraction_guide: o
            .extraction_guide
            .clone()
            .ok_or_else(|| missing("extraction_guide"))?,
        allowed_knowledge_types: o
            .allowed_knowledge_types
            .clone()
            .ok_or_else(|| missing("allowed_knowledge_types"))?,
        output_mode: "candidate-only".into(),
        quality_description: o.quality_description.clone().unwrap_or_default(),
        match_topics: o.match_topics.clone().unwrap_or_default(),
        match_categories: Vec::new(),
        weight: o.weight.unwrap_or(0.5),
        suggested_topics: Vec::new(),
        related_roles: Vec::new(),
        conditions: o.conditions.clone(),
        tier_hint: o.tier_hint.ok_or_else(|| missing("tier_hint"))?,
        display_group: o
            .display_group
            .clone()
            .unwrap_or_else(|| "deep-scan".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_has_the_25_reference_dimensions_with_their_tiers() {
        let dims = builtin().unwrap();
        assert_eq!(dims.len(), 25);
        let tier = |id: &str| dims.iter().find(|d| d.id == id).unwrap().tier_hint;
        assert_eq!(tier("architecture"), 1);
        assert_eq!(tier("coding-standards"), 2);
        assert_eq!(tier("design-patterns"), 2);
        assert_eq!(tier("agent-guidelines"), 3);
        assert_eq!(tier("rust-ownership"), 1);
        let universal = dims.iter().filter(|d| d.layer == Layer::Universal).count();
        let language = dims.iter().filter(|d| d.layer == Layer::Language).count();
        assert_eq!((universal, language, 25 - universal - language), (13, 7, 5));
        for d in &dims {
            assert!(!d.allowed_knowledge_types.is_empty(), "{}", d.id);
            assert_eq!(
                d.layer == Layer::Universal,
                d.conditions.is_none(),
                "{}",
                d.id
            );
        }
    }

    #[test]
    fn config_overrides_adds_and_disables() {
        let cfg: BootstrapConfig = toml::from_str(
            "disable = [\"ui-interaction\"]\n\
             [[dimension]]\nid = \"architecture\"\ntier_hint = 2\n\
             [[dimension]]\nid = \"payments\"\nlabel = \"Payments\"\nextraction_guide = \"g\"\n\
             allowed_knowledge_types = [\"call-chain\"]\ntier_hint = 3\n",
        )
        .unwrap();
        let dims = catalogue(&cfg).unwrap();
        assert_eq!(dims.len(), 25);
        assert!(!dims.iter().any(|d| d.id == "ui-interaction"));
        assert_eq!(
            dims.iter()
                .find(|d| d.id == "architecture")
                .unwrap()
                .tier_hint,
            2
        );
        assert!(dims.iter().any(|d| d.id == "payments"));
    }

    #[test]
    fn bad_config_names_what_is_wrong() {
        let cfg = BootstrapConfig {
            disable: vec!["nope".into()],
            ..Default::default()
        };
        let err = catalogue(&cfg).unwrap_err().to_string();
        assert!(err.contains("unknown dimension \"nope\""), "{err}");
        assert!(err.contains("architecture, coding-standards"), "{err}");
        let cfg = BootstrapConfig {
            dimension: vec![DimensionOverride {
                id: "x".into(),
                label: Some("X".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = catalogue(&cfg).unwrap_err().to_string();
        assert!(err.contains("needs `extraction_guide`"), "{err}");
        let cfg = BootstrapConfig {
            dimension: vec![DimensionOverride {
                id: "architecture".into(),
                tier_hint: Some(7),
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = catalogue(&cfg).unwrap_err().to_string();
        assert!(err.contains("tier_hint 7 is not 1, 2 or 3"), "{err}");
    }
}
