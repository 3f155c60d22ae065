//! Agent presets: which stages a run has, and for each stage its tools, memory profile,
//! exploration strategy and limits.

use alembic_context::{BudgetProfile, RunKind, Strategy};
use alembic_tools::{Allowlist, PresetCatalog, PresetError};

/// Catalog preset the cold start explores with (the code_analysis capability, with the
/// session tools `get_previous_analysis` / `get_previous_evidence`).
pub const ANALYST_TOOLS_PRESET: &str = "bootstrap-analyst";
/// Catalog preset of the submit tools (knowledge_production): the insight producer stage's
/// tools, and the cold start's besides [`ANALYST_TOOLS_PRESET`].
pub const PRODUCER_TOOLS_PRESET: &str = "bootstrap-producer";
/// Catalog preset of the seed's Insight mode (~15 tools, `forge_tool` among them: scenario
/// 2 forges a composed tool while analysing a module). The insight analyst stage offers it.
pub const INSIGHT_TOOLS_PRESET: &str = "insight";

/// How a run is organised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentPreset {
    /// One loop with the tools of catalog preset `tools` and the user memory profile
    /// (`chat`, or any other catalog preset used for questions).
    Single { tools: String },
    /// An analyst stage with the `insight` tools (analysis, submit, `forge_tool`), then a
    /// producer stage (knowledge_production tools) that starts from the analyst's distilled
    /// findings, each under its own budget profile.
    Insight,
    /// One stage under the seed's Bootstrap strategy (EXPLORE → PRODUCE → SUMMARIZE) with the
    /// `insight` tools: explore, submit knowledge candidates, summarise. The exploration
    /// tracker decides when exploring has converged (seed scenario 3).
    Bootstrap,
}

/// Catalog preset whose tools a [`AgentPreset::Bootstrap`] stage gets (explore and submit).
pub const BOOTSTRAP_TOOLS_PRESET: &str = INSIGHT_TOOLS_PRESET;

/// The one stage of a cold-start dimension (`alembic bootstrap` with an LLM): the seed's
/// Bootstrap strategy, EXPLORE → PRODUCE → SUMMARIZE, with the analysis tools (session tools
/// included) and the submit tools. EXPLORE runs under the analyst profile; entering PRODUCE
/// switches to the producer profile and hands over the distilled analysis (see `stage/`).
pub fn cold_start_stage(limits: &StageLimits) -> StageSpec {
    StageSpec {
        name: "bootstrap".into(),
        tools_presets: vec![ANALYST_TOOLS_PRESET.into(), PRODUCER_TOOLS_PRESET.into()],
        profile: BudgetProfile::Analyst,
        strategy: Some(Strategy::Bootstrap),
        max_iterations: limits.analyst_iterations,
        temperature: 0.4,
    }
}

impl AgentPreset {
    /// `insight` is the staged preset and `bootstrap` the one-stage Bootstrap run; any other
    /// name is a single loop over that preset's tools.
    pub fn from_name(name: &str) -> AgentPreset {
        match name {
            "insight" => AgentPreset::Insight,
            "bootstrap" => AgentPreset::Bootstrap,
            other => AgentPreset::Single {
                tools: other.to_string(),
            },
        }
    }

    pub fn name(&self) -> &str {
        match self {
            AgentPreset::Single { tools } => tools,
            AgentPreset::Insight => "insight",
            AgentPreset::Bootstrap => "bootstrap",
        }
    }

    /// The stages of a run with `limits`.
    pub fn stages(&self, limits: &StageLimits) -> Vec<StageSpec> {
        match self {
            AgentPreset::Single { tools } => vec![StageSpec {
                name: "chat".into(),
                tools_presets: vec![tools.clone()],
                profile: BudgetProfile::User,
                strategy: Some(Strategy::Chat),
                max_iterations: limits.chat_iterations,
                temperature: 0.7,
            }],
            AgentPreset::Insight => vec![
                StageSpec {
                    name: "analyst".into(),
                    tools_presets: vec![INSIGHT_TOOLS_PRESET.into()],
                    profile: BudgetProfile::Analyst,
                    strategy: Some(Strategy::Analyst),
                    max_iterations: limits.analyst_iterations,
                    temperature: 0.4,
                },
                StageSpec {
                    name: "producer".into(),
                    tools_presets: vec![PRODUCER_TOOLS_PRESET.into()],
                    profile: BudgetProfile::Producer,
                    strategy: Some(Strategy::Producer),
                    max_iterations: limits.producer_iterations,
                    temperature: 0.3,
                },
            ],
            AgentPreset::Bootstrap => vec![StageSpec {
                name: "bootstrap".into(),
                tools_presets: vec![BOOTSTRAP_TOOLS_PRESET.into()],
                profile: BudgetProfile::Analyst,
                strategy: Some(Strategy::Bootstrap),
                max_iterations: limits.analyst_iterations,
                temperature: 0.4,
            }],
        }
    }
}

/// Iteration limits per kind of stage. Defaults follow the reference: chat 8, analyst 24,
/// producer 10.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLimits {
    pub chat_iterations: u32,
    pub analyst_iterations: u32,
    pub producer_iterations: u32,
}

impl Default for StageLimits {
    fn default() -> Self {
        StageLimits {
            chat_iterations: 8,
            analyst_iterations: 24,
            producer_iterations: 10,
        }
    }
}

/// One stage of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct StageSpec {
    pub name: String,
    /// Catalog presets whose allowlists, together, this stage's caller gets.
    pub tools_presets: Vec<String>,
    pub profile: BudgetProfile,
    /// Exploration control: nudges and phase-driven tool_choice (`Chat` for the chat loop,
    /// where any text reply is the answer and the round limit ends the loop); `None` runs the
    /// loop without a tracker.
    pub strategy: Option<Strategy>,
    pub max_iterations: u32,
    pub temperature: f64,
}

impl StageSpec {
    /// Which history cap of the model table the stage gets: chat (the user profile) is a
    /// user run, the analyst and producer stages are system runs (ref-memory §8.2,
    /// `isSystem`), which get the larger cap.
    pub fn run_kind(&self) -> RunKind {
        match self.profile {
            BudgetProfile::User => RunKind::User,
            BudgetProfile::Analyst | BudgetProfile::Producer => RunKind::System,
        }
    }

    /// The union of the allowlists of [`StageSpec::tools_presets`].
    pub fn allowlist(&self, catalog: &PresetCatalog) -> Result<Allowlist, PresetError> {
        let mut names = std::collections::BTreeSet::new();
        for preset in &self.tools_presets {
            match catalog.allowlist(preset)? {
                Allowlist::All => return Ok(Allowlist::All),
                Allowlist::Only(set) => names.extend(set.iter().cloned()),
            }
        }
        Ok(Allowlist::only(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn insight_has_an_analyst_then_a_producer_stage() {
        let stages = AgentPreset::from_name("insight").stages(&StageLimits::default());
        let names: Vec<(&str, Vec<String>, BudgetProfile)> = stages
            .iter()
            .map(|s| (s.name.as_str(), s.tools_presets.clone(), s.profile))
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    "analyst",
                    vec![INSIGHT_TOOLS_PRESET.to_string()],
                    BudgetProfile::Analyst
                ),
                (
                    "producer",
                    vec![PRODUCER_TOOLS_PRESET.to_string()],
                    BudgetProfile::Producer
                )
            ]
        );
        let bootstrap = AgentPreset::from_name("bootstrap").stages(&StageLimits::default());
        assert_eq!(bootstrap.len(), 1);
        assert_eq!(bootstrap[0].strategy, Some(Strategy::Bootstrap));
        assert_eq!(bootstrap[0].tools_presets, [BOOTSTRAP_TOOLS_PRESET]);
        let cold = cold_start_stage(&StageLimits::default());
        assert_eq!(cold.strategy, Some(Strategy::Bootstrap));
        assert_eq!(
            cold.tools_presets,
            [ANALYST_TOOLS_PRESET, PRODUCER_TOOLS_PRESET]
        );
        let chat = AgentPreset::from_name("chat").stages(&StageLimits::default());
        assert_eq!(chat.len(), 1);
        let kinds: Vec<RunKind> = [&stages[..], &bootstrap, &chat, &[cold]]
            .concat()
            .iter()
            .map(StageSpec::run_kind)
            .collect();
        assert_eq!(
            kinds,
            [
                RunKind::System,
                RunKind::System,
                RunKind::System,
                RunKind::User,
                RunKind::System
            ]
        );
        assert_eq!(chat[0].strategy, Some(Strategy::Chat));
        assert_eq!(chat[0].max_iterations, 8);
    }

    #[test]
    fn a_stage_offers_the_union_of_its_presets() {
        let catalog = PresetCatalog::builtin();
        let cold = cold_start_stage(&StageLimits::default());
        let Allowlist::Only(tools) = cold.allowlist(&catalog).unwrap() else {
            panic!("the cold start must be restricted");
        };
        for tool in ["get_previous_analysis", "note_finding", "submit_knowledge"] {
            assert!(tools.contains(tool), "{tool} missing from {tools:?}");
        }
        assert!(!tools.contains("forge_tool"));
        let insight = AgentPreset::Insight.stages(&StageLimits::default());
        let Allowlist::Only(tools) = insight[0].allowlist(&catalog).unwrap() else {
            panic!("insight must be restricted");
        };
        assert!(tools.contains("forge_tool"), "{tools:?}");
        let unknown = StageSpec {
            tools_presets: vec!["chat".into(), "nope".into()],
            ..cold
        };
        assert!(unknown.allowlist(&catalog).is_err());
    }
}
