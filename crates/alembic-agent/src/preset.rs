//! Agent presets: which stages a run has, and for each stage its tools, memory profile,
//! exploration strategy and limits.

use alembic_context::{BudgetProfile, Strategy};

/// Catalog preset whose tools the insight analyst stage gets (the code_analysis capability).
pub const ANALYST_TOOLS_PRESET: &str = "bootstrap-analyst";
/// Catalog preset whose tools the insight producer stage gets (knowledge_production).
pub const PRODUCER_TOOLS_PRESET: &str = "bootstrap-producer";

/// How a run is organised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentPreset {
    /// One loop with the tools of catalog preset `tools` and the user memory profile
    /// (`chat`, or any other catalog preset used for questions).
    Single { tools: String },
    /// An analyst stage (code_analysis tools), then a producer stage (knowledge_production
    /// tools) that starts from the analyst's distilled findings.
    Insight,
    /// One stage under the seed's Bootstrap strategy (EXPLORE → PRODUCE → SUMMARIZE) with the
    /// `insight` tools: explore, submit knowledge candidates, summarise. The exploration
    /// tracker decides when exploring has converged (seed scenario 3).
    Bootstrap,
}

/// Catalog preset whose tools a [`AgentPreset::Bootstrap`] stage gets (explore and submit).
pub const BOOTSTRAP_TOOLS_PRESET: &str = "insight";

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
                tools_preset: tools.clone(),
                profile: BudgetProfile::User,
                strategy: Some(Strategy::Chat),
                max_iterations: limits.chat_iterations,
                temperature: 0.7,
            }],
            AgentPreset::Insight => vec![
                StageSpec {
                    name: "analyst".into(),
                    tools_preset: ANALYST_TOOLS_PRESET.into(),
                    profile: BudgetProfile::Analyst,
                    strategy: Some(Strategy::Analyst),
                    max_iterations: limits.analyst_iterations,
                    temperature: 0.4,
                },
                StageSpec {
                    name: "producer".into(),
                    tools_preset: PRODUCER_TOOLS_PRESET.into(),
                    profile: BudgetProfile::Producer,
                    strategy: Some(Strategy::Producer),
                    max_iterations: limits.producer_iterations,
                    temperature: 0.3,
                },
            ],
            AgentPreset::Bootstrap => vec![StageSpec {
                name: "bootstrap".into(),
                tools_preset: BOOTSTRAP_TOOLS_PRESET.into(),
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
    /// Catalog preset whose allowlist this stage's caller gets.
    pub tools_preset: String,
    pub profile: BudgetProfile,
    /// Exploration control: nudges and phase-driven tool_choice (`Chat` for the chat loop,
    /// where any text reply is the answer and the round limit ends the loop); `None` runs the
    /// loop without a tracker.
    pub strategy: Option<Strategy>,
    pub max_iterations: u32,
    pub temperature: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn insight_has_an_analyst_then_a_producer_stage() {
        let stages = AgentPreset::from_name("insight").stages(&StageLimits::default());
        let names: Vec<(&str, &str)> = stages
            .iter()
            .map(|s| (s.name.as_str(), s.tools_preset.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("analyst", ANALYST_TOOLS_PRESET),
                ("producer", PRODUCER_TOOLS_PRESET)
            ]
        );
        let bootstrap = AgentPreset::from_name("bootstrap").stages(&StageLimits::default());
        assert_eq!(bootstrap.len(), 1);
        assert_eq!(bootstrap[0].strategy, Some(Strategy::Bootstrap));
        assert_eq!(bootstrap[0].tools_preset, BOOTSTRAP_TOOLS_PRESET);
        let chat = AgentPreset::from_name("chat").stages(&StageLimits::default());
        assert_eq!(chat.len(), 1);
        assert_eq!(chat[0].strategy, Some(Strategy::Chat));
        assert_eq!(chat[0].max_iterations, 8);
    }
}
