//! The project's LLM provider for tools registered at start-up (`enrich_candidate`,
//! `refine_bootstrap_candidates`). It is resolved the way `alembic ask` resolves it
//! (`alembic_llm::load_provider_config`: the `[llm]` section of the user config, else the first
//! API key in the environment). A project without a provider still opens: the tools that need
//! one then fail with the text that says how to configure it.

use alembic_knowledge::tools::ProviderSlot;
use alembic_llm::{ConfigOverrides, build_provider, load_provider_config};

/// The configured provider, or why there is none (shown by the tools that need one).
pub fn provider_slot() -> ProviderSlot {
    let config = load_provider_config(&ConfigOverrides::default()).map_err(|e| e.to_string())?;
    build_provider(config).map_err(|e| format!("the configured provider cannot be built: {e}"))
}
