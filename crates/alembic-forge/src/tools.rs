//! Operator tools over the project's forged tools: `forge_save` (keep a temporary tool for
//! good), `forge_remove` (delete one) and `forge_promote` (turn one into a skill). The CLI's
//! `alembic forge save|remove|promote` call them through the pipeline as caller `cli`, so every
//! change to `.alembic/tools/` and `.alembic/skills/` is validated, policy-checked and audited.
//!
//! They are in no preset but `all`: keeping or promoting a forged tool is the operator's
//! business, not an agent's. `forge_tool` (in [`crate::forge_tool`]) is the agent's: it forges a
//! tool for the calling session only.
//!
//! State: a [`ForgeService`] (the project's [`ToolStore`] and the clock that decides which
//! temporary tools are still alive), bound at registration. The registry a forged tool is
//! loaded in is the one of the pipeline the call runs in, so the tools hold no reference to
//! the registry they are registered in (no reference cycle), and example calls of
//! `forge_promote` are nested pipeline calls, gated and audited under the promote call.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use alembic_tools::{
    EffectClass, RegistryError, SessionGrants, ToolContext, ToolDefinition, ToolError, ToolModule,
    ToolOutput, ToolRegistry, is_snake_case,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::clock::{Clock, SystemClock};
use crate::generate::CodeGenerator;
use alembic_skills::skill_name_for_tool;

use crate::skill::{SkillExample, built_in_examples, write_skill};
use crate::store::{Lifetime, ToolStore};
use crate::temporary::TemporaryToolRegistry;

/// What the forge tools work on: the `.alembic/tools/` and `.alembic/skills/` of one project,
/// and, for `forge_tool`, the session tools forged in its registry.
#[derive(Clone)]
pub struct ForgeService {
    store: ToolStore,
    root: PathBuf,
    clock: Arc<dyn Clock>,
    /// The TTL registry over the project's tool registry, bound once by the runtime.
    temporary: Arc<OnceLock<TemporaryToolRegistry>>,
    /// Which caller may call which forged tool (read by the agent loop each round).
    grants: Arc<SessionGrants>,
    /// `[forge] generate` / `ALEMBIC_ENABLE_FORGE_GENERATE`.
    generate_allowed: bool,
    /// The model that writes generated tools, when a provider is configured.
    generator: Arc<RwLock<Option<Arc<dyn CodeGenerator>>>>,
}

impl std::fmt::Debug for ForgeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgeService")
            .field("root", &self.root)
            .field("generate_allowed", &self.generate_allowed)
            .finish_non_exhaustive()
    }
}

impl ForgeService {
    /// The forge store of the project at `root`, with the system clock.
    pub fn for_project(root: &Path) -> Self {
        Self::with_clock(root, Arc::new(SystemClock))
    }

    /// As [`ForgeService::for_project`] with a clock of the caller's (tests).
    pub fn with_clock(root: &Path, clock: Arc<dyn Clock>) -> Self {
        ForgeService {
            store: ToolStore::new(root),
            root: root.to_path_buf(),
            clock,
            temporary: Arc::default(),
            grants: Arc::default(),
            generate_allowed: false,
            generator: Arc::default(),
        }
    }

    /// Lets `forge_tool` generate code (when a generator is also set).
    pub fn with_generate(mut self, allowed: bool) -> Self {
        self.generate_allowed = allowed;
        self
    }

    pub fn store(&self) -> &ToolStore {
        &self.store
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn generate_allowed(&self) -> bool {
        self.generate_allowed
    }

    /// Binds the service to the project's registry (first call wins) and returns the TTL
    /// registry over it.
    pub fn bind_registry(&self, registry: &Arc<ToolRegistry>) -> TemporaryToolRegistry {
        self.temporary
            .get_or_init(|| {
                TemporaryToolRegistry::with_clock(Arc::clone(registry), Arc::clone(&self.clock))
            })
            .clone()
    }

    /// The TTL registry, once bound.
    pub fn temporary(&self) -> Option<TemporaryToolRegistry> {
        self.temporary.get().cloned()
    }

    /// The grants of forged tools to the sessions that forged them.
    pub fn grants(&self) -> Arc<SessionGrants> {
        Arc::clone(&self.grants)
    }

    /// Sets the model that writes generated tools (the project's provider).
    pub fn set_generator(&self, generator: Arc<dyn CodeGenerator>) {
        *alembic_base::write(&self.generator) = Some(generator);
    }

    pub fn generator(&self) -> Option<Arc<dyn CodeGenerator>> {
        alembic_base::read(&self.generator).clone()
    }
}

/// Registers `forge_tool`, `forge_save`, `forge_remove` and `forge_promote`, bound to `forge`.
pub fn register_tools(
    registry: &ToolRegistry,
    forge: Arc<ForgeService>,
) -> Result<(), RegistryError> {
    registry.register(crate::forge_tool::forge_tool(Arc::clone(&forge)))?;
    registry.register(forge_save(Arc::clone(&forge)))?;
    registry.register(forge_remove(Arc::clone(&forge)))?;
    registry.register(forge_promote(forge))
}

/// Arguments of `forge_save` and `forge_remove`.
#[derive(Deserialize, schemars::JsonSchema)]
struct NameArgs {
    /// name of the forged tool (snake_case)
    name: String,
}

/// Arguments of `forge_promote`.
#[derive(Deserialize, schemars::JsonSchema)]
struct PromoteArgs {
    /// name of the forged tool (snake_case)
    name: String,
    /// arguments of example calls; each is run and its result recorded in the skill
    examples: Option<Vec<Map<String, Value>>>,
}

fn forge_save(forge: Arc<ForgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NameArgs>(
        "forge_save",
        "Keep a temporary forged tool for good: it moves from .alembic/tools/.temporary/ to .alembic/tools/NAME.json and is loaded at every start.",
        ToolModule::Infrastructure,
        EffectClass::WritesProjectFiles,
    )
    .blocking(forge, |forge, args| save(forge, &args.name))
}

fn forge_remove(forge: Arc<ForgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NameArgs>(
        "forge_remove",
        "Delete a forged tool, saved or temporary, from .alembic/tools/.",
        ToolModule::Infrastructure,
        EffectClass::WritesProjectFiles,
    )
    .blocking(forge, |forge, args| remove(forge, &args.name))
}

fn forge_promote(forge: Arc<ForgeService>) -> ToolDefinition {
    ToolDefinition::typed::<PromoteArgs>(
        "forge_promote",
        "Turn a forged tool into a skill: .alembic/skills/NAME-IN-KEBAB-CASE/SKILL.md (description, parameter schema as its arguments, how it works, examples). Each example call is run as a nested call and its result recorded.",
        ToolModule::Infrastructure,
        EffectClass::WritesProjectFiles,
    )
    .handler(forge, promote)
}

/// `name` when it can name a forged tool (and so a file under `.alembic/`).
fn checked_name(name: &str) -> Result<&str, ToolError> {
    if is_snake_case(name) {
        return Ok(name);
    }
    Err(ToolError::Invalid(format!(
        "argument \"name\": \"{name}\" is not a forged tool name; expected snake_case (lower-case letters, digits, single underscores, at most 64 characters)"
    )))
}

fn failed(e: crate::ForgeError) -> ToolError {
    ToolError::Failed(e.to_string())
}

fn save(forge: &ForgeService, name: &str) -> Result<ToolOutput, ToolError> {
    let name = checked_name(name)?;
    match forge
        .store
        .find(name, crate::temporary::now_ms(forge.clock.as_ref()))
    {
        Some((Lifetime::Temporary, tool, _)) => {
            let path = forge.store.save(&tool).map_err(failed)?;
            let text = format!("saved \"{name}\" to {}", path.display());
            let data = json!({"name": name, "path": path, "alreadySaved": false});
            Ok(ToolOutput::new(data, text))
        }
        Some((Lifetime::Saved, _, path)) => {
            let text = format!("\"{name}\" is already saved in {}", path.display());
            let data = json!({"name": name, "path": path, "alreadySaved": true});
            Ok(ToolOutput::new(data, text))
        }
        None => Err(ToolError::Invalid(format!(
            "no temporary forged tool named \"{name}\" (it may have expired); see `alembic forge list`"
        ))),
    }
}

fn remove(forge: &ForgeService, name: &str) -> Result<ToolOutput, ToolError> {
    let name = checked_name(name)?;
    let removed = forge.store.remove(name).map_err(failed)?;
    if removed.is_empty() {
        return Err(unknown_tool(name));
    }
    let text = format!("removed \"{name}\" ({} file(s))", removed.len());
    Ok(ToolOutput::new(
        json!({"name": name, "removed": removed}),
        text,
    ))
}

fn unknown_tool(name: &str) -> ToolError {
    ToolError::Invalid(format!(
        "no forged tool named \"{name}\"; see `alembic forge list`"
    ))
}

async fn promote(
    forge: Arc<ForgeService>,
    args: PromoteArgs,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let name = checked_name(&args.name)?;
    let Some((_, tool, _)) = forge
        .store
        .find(name, crate::temporary::now_ms(forge.clock.as_ref()))
    else {
        return Err(unknown_tool(name));
    };
    let pipeline = ctx
        .pipeline()
        .ok_or_else(|| ToolError::failed("forge_promote runs only inside a pipeline"))?;
    let Some(registered) = pipeline.registry().get(name) else {
        return Err(ToolError::Invalid(format!(
            "forged tool \"{name}\" is stored but could not be loaded; see `alembic forge show {name}`"
        )));
    };
    let mut examples = built_in_examples(&tool);
    examples.extend(run_examples(&ctx, name, args.examples.unwrap_or_default()).await?);
    let path = write_skill(
        forge.store.root(),
        &tool,
        &registered.definition.parameters,
        &examples,
    )
    .map_err(failed)?;
    let skill = skill_name_for_tool(name);
    let text = format!(
        "promoted \"{name}\" to the skill \"{skill}\" in {} ({} example(s))",
        path.display(),
        examples.len()
    );
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let data =
        json!({"name": name, "skill": skill, "dir": dir, "path": path, "examples": examples.len()});
    Ok(ToolOutput::new(data, text))
}

/// Runs each example as a nested call of the promote call and records its result.
async fn run_examples(
    ctx: &ToolContext,
    name: &str,
    examples: Vec<Map<String, Value>>,
) -> Result<Vec<SkillExample>, ToolError> {
    let mut out = Vec::new();
    for args in examples {
        let args = Value::Object(args);
        let outcome = ctx.call_tool(name, args.clone()).await;
        if !outcome.is_ok() {
            return Err(ToolError::Invalid(format!(
                "example {args} failed: {}",
                outcome.text_for_model()
            )));
        }
        out.push(SkillExample {
            description: format!("example call {}", out.len() + 1),
            args,
            result: outcome.output.map(|o| o.data),
        });
    }
    Ok(out)
}
