//! `load_skill` and `create_skill` (module infrastructure) over the project's skills, and the
//! registration of all three skill tools.
//!
//! Both go through [`crate::library`], the one reader and writer: `load_skill` finds the
//! project's skills under `<root>/.alembic/skills/` (the reference looked under its own
//! package root, so it never found them) and the built-in ones; `create_skill` checks the name
//! (kebab-case, never a path), refuses built-in names and existing skills unless `overwrite`,
//! and writes atomically.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alembic_knowledge::KnowledgeService;
use alembic_memory::tools::MemoryService;
use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::SkillError;
use crate::format::Skill;
use crate::library::{self, FoundSkill, WriteMode};

/// The skills of one project: the root whose `.alembic/skills/` they live in.
#[derive(Debug, Clone)]
pub struct SkillService {
    root: PathBuf,
}

impl SkillService {
    pub fn for_project(root: &Path) -> Self {
        SkillService {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Registers `load_skill`, `create_skill` and `suggest_skills`. The suggestions read the
/// knowledge base (guard checks, gaps, backlog) and the persistent memory (preferences).
pub fn register_tools(
    registry: &ToolRegistry,
    skills: Arc<SkillService>,
    knowledge: Arc<KnowledgeService>,
    memory: Arc<MemoryService>,
) -> Result<(), RegistryError> {
    registry.register(load_skill(Arc::clone(&skills)))?;
    registry.register(create_skill(Arc::clone(&skills)))?;
    registry.register(crate::suggest::suggest_skills(skills, knowledge, memory))
}

/// Arguments of `load_skill`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct LoadArgs {
    /// kebab-case name of the skill; leave out to list the available skills
    skill_name: Option<String>,
}

/// Arguments of `create_skill`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CreateArgs {
    /// kebab-case name, 3-64 characters: lower-case letters, digits, single hyphens, starting with a letter
    #[schemars(length(min = 3, max = 64))]
    name: String,
    /// one line: what the skill is for
    #[schemars(length(min = 1, max = 300))]
    description: String,
    /// the skill's markdown body, without front matter
    #[schemars(length(min = 1, max = 65536))]
    content: String,
    /// JSON Schema object of the skill's arguments (they become the arguments of its MCP prompt)
    arguments: Option<serde_json::Map<String, Value>>,
    /// replace an existing project skill of this name
    #[serde(default)]
    overwrite: bool,
}

fn load_skill(skills: Arc<SkillService>) -> ToolDefinition {
    ToolDefinition::typed::<LoadArgs>(
        "load_skill",
        "Load a skill (a SKILL.md guide) by name: the project's own from .alembic/skills/, else a built-in one. Without a name, list the available skills.",
        ToolModule::Infrastructure,
        EffectClass::ReadOnly,
    )
    .blocking(skills, |skills, args| match args.skill_name {
        Some(name) => load(skills, &name),
        None => Ok(listing(skills)),
    })
}

fn load(skills: &SkillService, name: &str) -> Result<ToolOutput, ToolError> {
    let found = library::read_skill(&skills.root, name).map_err(|e| tool_error(e, "skillName"))?;
    let text = format!(
        "skill \"{}\" ({}): {}\n\n{}",
        found.skill.name,
        found.location.as_str(),
        found.skill.description,
        found.skill.body
    );
    Ok(ToolOutput::new(found_json(&found, true), text))
}

fn found_json(found: &FoundSkill, with_content: bool) -> Value {
    let mut data = json!({
        "skillName": found.skill.name,
        "location": found.location,
        "source": found.skill.source,
        "description": found.skill.description,
    });
    if let Some(tool) = &found.skill.tool {
        data["tool"] = json!(tool);
    }
    if let Some(args) = &found.skill.arguments {
        data["arguments"] = args.clone();
    }
    if with_content {
        data["content"] = json!(found.skill.body);
    }
    data
}

fn listing(skills: &SkillService) -> ToolOutput {
    let listing = library::list_skills(&skills.root);
    let mut text = format!("{} skill(s):\n", listing.skills.len());
    for s in &listing.skills {
        text.push_str(&format!(
            "- {} ({}): {}\n",
            s.skill.name,
            s.location.as_str(),
            s.skill.description
        ));
    }
    let errors: Vec<String> = listing.errors.iter().map(ToString::to_string).collect();
    for e in &errors {
        text.push_str(&format!("unreadable: {e}\n"));
    }
    let skills: Vec<Value> = listing
        .skills
        .iter()
        .map(|s| found_json(s, false))
        .collect();
    ToolOutput::new(json!({"skills": skills, "errors": errors}), text)
}

fn create_skill(skills: Arc<SkillService>) -> ToolDefinition {
    ToolDefinition::typed::<CreateArgs>(
        "create_skill",
        "Write a project skill: .alembic/skills/NAME/SKILL.md with front matter (name, description, arguments, who wrote it) and your markdown. The directory is shared through version control. Refuses built-in names, and existing skills unless overwrite is true.",
        ToolModule::Infrastructure,
        EffectClass::WritesProjectFiles,
    )
    .handler(skills, create)
}

async fn create(
    skills: Arc<SkillService>,
    args: CreateArgs,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut skill = new_skill(args.name, args.description, args.content, args.arguments)?;
    skill.created_by = Some(ctx.caller.id.clone());
    let mode = if args.overwrite {
        WriteMode::Overwrite
    } else {
        WriteMode::CreateNew
    };
    let existed = library::skill_path(&skills.root, &skill.name)
        .map(|p| p.exists())
        .unwrap_or(false);
    let written = tokio::task::spawn_blocking(move || {
        library::write_skill(&skills.root, &skill, mode).map(|path| (skill.name, path))
    })
    .await
    .map_err(|e| ToolError::failed(format!("create_skill did not finish: {e}")))?;
    let (name, path) = written.map_err(|e| tool_error(e, "name"))?;
    let verb = if existed { "replaced" } else { "created" };
    let text = format!("{verb} skill \"{name}\" in {}", path.display());
    Ok(ToolOutput::new(
        json!({"name": name, "path": path, "replaced": existed}),
        text,
    ))
}

fn new_skill(
    name: String,
    description: String,
    content: String,
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<Skill, ToolError> {
    if content.trim_start().starts_with("---") {
        return Err(ToolError::Invalid(
            "argument \"content\": starts with a front matter block (`---`); give the markdown body only, name and description are arguments of their own".into(),
        ));
    }
    let mut skill = Skill::new(&name, description.trim(), &content);
    skill.arguments = arguments.map(Value::Object);
    skill.check().map_err(|e| tool_error(e, "name"))?;
    Ok(skill)
}

/// Maps a skill error to the tool error a model should see; `key` is the name argument.
fn tool_error(e: SkillError, key: &str) -> ToolError {
    match e {
        SkillError::BadName { .. } => ToolError::Invalid(format!("argument \"{key}\": {e}")),
        SkillError::NotFound { name, available } => {
            ToolError::NotFound(format!("skill \"{name}\" (available skills: {available})"))
        }
        e @ (SkillError::Exists { .. }
        | SkillError::Reserved { .. }
        | SkillError::Invalid { .. }) => ToolError::Invalid(e.to_string()),
        e @ SkillError::Symlink { .. } => ToolError::refused("skill-path", e.to_string()),
        SkillError::Confined { ref source, .. } if source.is_confinement() => {
            ToolError::refused(source.rule(), e.to_string())
        }
        e @ SkillError::Confined { .. } => ToolError::failed(e.to_string()),
        e @ (SkillError::Parse { .. } | SkillError::Io { .. }) => ToolError::failed(e.to_string()),
    }
}
