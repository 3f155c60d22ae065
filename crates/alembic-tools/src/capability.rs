//! Capabilities and presets as data, and the allowlist they produce.
//!
//! A capability names a set of tools; a preset combines capabilities (plus or minus single
//! tools). The defaults ship in `presets.toml`; a project's `config.toml` can override them.
//! The resulting [`Allowlist`] is *enforced* by the AllowlistGate, not just advertised (the
//! reference let any registered tool through).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Deserialize;

const BUILTIN_PRESETS: &str = include_str!("presets.toml");

/// The set of tools a caller may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowlist {
    /// Every registered tool.
    All,
    /// Only these names (shared: callers are cloned on every call).
    Only(Arc<BTreeSet<String>>),
}

impl Allowlist {
    pub fn only<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Allowlist::Only(Arc::new(names.into_iter().map(Into::into).collect()))
    }

    pub fn allows(&self, name: &str) -> bool {
        match self {
            Allowlist::All => true,
            Allowlist::Only(set) => set.contains(name),
        }
    }

    /// Adds a single tool (for example a tool forged for this loop).
    pub fn insert(&mut self, name: impl Into<String>) {
        if let Allowlist::Only(set) = self {
            Arc::make_mut(set).insert(name.into());
        }
    }
}

/// Errors in preset data or overrides.
#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    #[error("unknown preset \"{name}\"; available: {available}")]
    UnknownPreset { name: String, available: String },
    #[error(
        "preset \"{preset}\" names unknown capability \"{capability}\"; available: {available}"
    )]
    UnknownCapability {
        preset: String,
        capability: String,
        available: String,
    },
    #[error("invalid preset configuration: {0}")]
    Parse(String),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CapabilitySpec {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tools: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PresetSpec {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub capabilities: Vec<String>,
    #[serde(default)]
    pub add_tools: Vec<String>,
    #[serde(default)]
    pub remove_tools: Vec<String>,
    /// Expose every registered tool.
    #[serde(default)]
    pub all: bool,
}

/// Capabilities and presets, the shipped ones plus any project overrides.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PresetCatalog {
    #[serde(default)]
    pub capabilities: BTreeMap<String, CapabilitySpec>,
    #[serde(default)]
    pub presets: BTreeMap<String, PresetSpec>,
}

impl PresetCatalog {
    /// The catalog shipped with Alembic.
    pub fn builtin() -> Self {
        // The embedded file is checked by a unit test, so a parse failure here is a build bug;
        // fall back to an empty catalog rather than panicking in a library.
        toml::from_str(BUILTIN_PRESETS).unwrap_or_default()
    }

    /// Merges overrides (the `[capabilities.*]` and `[presets.*]` tables of a config file).
    /// A table given in the override replaces the shipped one of the same name wholesale.
    pub fn apply_overrides(&mut self, overrides: PresetCatalog) -> Result<(), PresetError> {
        self.capabilities.extend(overrides.capabilities);
        self.presets.extend(overrides.presets);
        self.check()
    }

    /// Parses overrides from TOML text and merges them.
    pub fn apply_toml(&mut self, text: &str) -> Result<(), PresetError> {
        let overrides: PresetCatalog =
            toml::from_str(text).map_err(|e| PresetError::Parse(e.to_string()))?;
        self.apply_overrides(overrides)
    }

    fn check(&self) -> Result<(), PresetError> {
        for (name, preset) in &self.presets {
            for cap in &preset.capabilities {
                if !self.capabilities.contains_key(cap) {
                    return Err(PresetError::UnknownCapability {
                        preset: name.clone(),
                        capability: cap.clone(),
                        available: self.capability_names().join(", "),
                    });
                }
            }
        }
        Ok(())
    }

    pub fn preset_names(&self) -> Vec<String> {
        self.presets.keys().cloned().collect()
    }

    pub fn capability_names(&self) -> Vec<String> {
        self.capabilities.keys().cloned().collect()
    }

    /// The allowlist of a preset (before intersecting with what is registered).
    pub fn allowlist(&self, preset: &str) -> Result<Allowlist, PresetError> {
        let spec = self
            .presets
            .get(preset)
            .ok_or_else(|| PresetError::UnknownPreset {
                name: preset.to_string(),
                available: self.preset_names().join(", "),
            })?;
        if spec.all {
            return Ok(Allowlist::All);
        }
        let mut tools = BTreeSet::new();
        for cap in &spec.capabilities {
            let cap_spec =
                self.capabilities
                    .get(cap)
                    .ok_or_else(|| PresetError::UnknownCapability {
                        preset: preset.to_string(),
                        capability: cap.clone(),
                        available: self.capability_names().join(", "),
                    })?;
            tools.extend(cap_spec.tools.iter().cloned());
        }
        tools.extend(spec.add_tools.iter().cloned());
        for t in &spec.remove_tools {
            tools.remove(t);
        }
        Ok(Allowlist::Only(Arc::new(tools)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn shipped_catalog_parses_and_is_consistent() {
        let parsed: PresetCatalog = toml::from_str(BUILTIN_PRESETS).unwrap();
        parsed.check().unwrap();
        for p in [
            "chat",
            "insight",
            "bootstrap-analyst",
            "bootstrap-producer",
            "all",
            "ide",
        ] {
            assert!(parsed.presets.contains_key(p), "missing preset {p}");
        }
    }

    #[test]
    fn chat_is_conversation_plus_code_analysis_plus_meta() {
        let cat = PresetCatalog::builtin();
        let Allowlist::Only(tools) = cat.allowlist("chat").unwrap() else {
            panic!("chat must be restricted");
        };
        assert!(tools.contains("search_project_code"));
        assert!(tools.contains("search_knowledge"));
        assert!(tools.contains("plan_task"));
        assert!(tools.contains("forge_tool"));
        assert!(!tools.contains("run_safe_command"));
        assert!(!tools.contains("write_project_file"));
        // Trimmed to the seed's "about 20": no bootstrap-session tools (a chat has no
        // session), no get_tool_details, not the two narrowest AST queries.
        for gone in [
            "get_previous_analysis",
            "get_tool_details",
            "get_category_map",
        ] {
            assert!(!tools.contains(gone), "{gone}");
        }
        assert_eq!(tools.len(), 21);
    }

    #[test]
    fn insight_is_analysis_plus_production_trimmed_to_about_fifteen() {
        let cat = PresetCatalog::builtin();
        let Allowlist::Only(tools) = cat.allowlist("insight").unwrap() else {
            panic!("insight must be restricted");
        };
        let names: Vec<&str> = tools.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "forge_tool",
                "get_class_hierarchy",
                "get_class_info",
                "get_file_summary",
                "get_project_overview",
                "get_protocol_info",
                "list_project_structure",
                "note_finding",
                "query_call_graph",
                "query_code_graph",
                "read_project_file",
                "search_project_code",
                "semantic_search_code",
                "submit_knowledge",
                "submit_with_check",
            ]
        );
    }

    #[test]
    fn unknown_preset_lists_the_available_ones() {
        let err = PresetCatalog::builtin().allowlist("chatt").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown preset \"chatt\"; available: all, bootstrap-analyst, bootstrap-producer, chat, ide, insight"
        );
    }

    #[test]
    fn config_can_override_a_preset_and_add_tools() {
        let mut cat = PresetCatalog::builtin();
        cat.apply_toml(
            r#"
            [presets.chat]
            capabilities = ["code_analysis"]
            add_tools = ["run_safe_command"]
            remove_tools = ["read_project_file"]
            "#,
        )
        .unwrap();
        let list = cat.allowlist("chat").unwrap();
        assert!(list.allows("run_safe_command"));
        assert!(!list.allows("read_project_file"));
        assert!(!list.allows("search_knowledge"));
    }

    #[test]
    fn override_with_unknown_capability_is_refused() {
        let mut cat = PresetCatalog::builtin();
        let err = cat
            .apply_toml("[presets.x]\ncapabilities = [\"nope\"]\n")
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown capability \"nope\""),
            "{err}"
        );
    }

    #[test]
    fn all_preset_allows_everything() {
        assert_eq!(
            PresetCatalog::builtin().allowlist("all").unwrap(),
            Allowlist::All
        );
    }
}
