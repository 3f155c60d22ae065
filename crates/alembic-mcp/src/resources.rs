//! MCP resources: what Alembic knows, readable without a tool call.
//!
//! | URI | what | MIME |
//! | --- | --- | --- |
//! | `alembic://overview` | the project overview (the `get_project_overview` tool's text, run through the pipeline, so allowlisted and audited) | text/plain |
//! | `alembic://recipe/{id}` | one published recipe, as the knowledge store holds it | application/json |
//! | `alembic://skill/{name}` | a skill's SKILL.md | text/markdown |
//! | `alembic://memories/{scope}` | the active memories of `project`, `user` or `team` (read-only; with a team configured, `team` includes the server's, each with its `store`: `local` or `team`) | application/json |
//!
//! The parameterised ones are also resource templates, and their variables are completed
//! (`completion/complete`) from the stores. Reads of the stores are synchronous (SQLite), so
//! callers run them on the blocking pool.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use alembic_runtime::knowledge::model::Status;
use alembic_runtime::knowledge::store::Filter;
use alembic_runtime::knowledge::{KnowledgeError, KnowledgeService};
use alembic_runtime::memory::{ListFilter, MemoryService, Scope};
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

use crate::skills::SkillSource;

pub const OVERVIEW_URI: &str = "alembic://overview";
const RECIPE: &str = "alembic://recipe/";
const SKILL: &str = "alembic://skill/";
const MEMORIES: &str = "alembic://memories/";
const SCOPES: [&str; 3] = ["project", "user", "team"];
/// Published recipes listed at most (the newest first).
const MAX_RECIPES: usize = 500;

/// A resource URI, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceUri {
    Overview,
    Recipe(String),
    Skill(String),
    Memories(Scope),
}

impl ResourceUri {
    /// Parses `uri`; the error says which URIs exist.
    pub fn parse(uri: &str) -> Result<Self, String> {
        let unknown = || {
            format!(
                "unknown resource \"{uri}\": expected {OVERVIEW_URI}, {RECIPE}{{id}}, {SKILL}{{name}} or {MEMORIES}{{project|user|team}}"
            )
        };
        if uri == OVERVIEW_URI {
            return Ok(ResourceUri::Overview);
        }
        if let Some(id) = uri.strip_prefix(RECIPE).filter(|s| !s.is_empty()) {
            return Ok(ResourceUri::Recipe(id.to_string()));
        }
        if let Some(name) = uri.strip_prefix(SKILL).filter(|s| !s.is_empty()) {
            return Ok(ResourceUri::Skill(name.to_string()));
        }
        if let Some(scope) = uri.strip_prefix(MEMORIES) {
            return scope
                .parse()
                .map(ResourceUri::Memories)
                .map_err(|_| unknown());
        }
        Err(unknown())
    }
}

/// The project's stores the resources read. A store that is `None` publishes nothing.
#[derive(Clone)]
pub struct ProjectContent {
    pub knowledge: Option<Arc<KnowledgeService>>,
    pub memory: Option<Arc<MemoryService>>,
    pub skills: Arc<dyn SkillSource>,
}

impl std::fmt::Debug for ProjectContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectContent").finish_non_exhaustive()
    }
}

/// A text resource's body.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub mime: &'static str,
    pub text: String,
}

impl Body {
    pub fn contents(self, uri: &str) -> ResourceContents {
        ResourceContents::text(self.text, uri).with_mime_type(self.mime)
    }
}

impl ProjectContent {
    /// Every direct resource: the overview, published recipes, skills, memory scopes.
    pub fn list(&self) -> Vec<Resource> {
        let mut out = vec![
            Resource::new(OVERVIEW_URI, "project-overview")
                .with_title("Project overview")
                .with_description("Files, types, languages and modules of the project's code index")
                .with_mime_type("text/plain"),
        ];
        for (id, title) in self.recipe_ids() {
            out.push(
                Resource::new(format!("{RECIPE}{id}"), format!("recipe-{id}"))
                    .with_title(title.clone())
                    .with_description(format!("Published recipe: {title}"))
                    .with_mime_type("application/json"),
            );
        }
        for skill in self.skills.list() {
            out.push(
                Resource::new(
                    format!("{SKILL}{}", skill.name),
                    format!("skill-{}", skill.name),
                )
                .with_description(skill.description)
                .with_mime_type("text/markdown"),
            );
        }
        if self.memory.is_some() {
            for scope in SCOPES {
                out.push(
                    Resource::new(format!("{MEMORIES}{scope}"), format!("memories-{scope}"))
                        .with_description(format!("Active {scope}-scope memories (read-only)"))
                        .with_mime_type("application/json"),
                );
            }
        }
        out
    }

    /// The parameterised resources.
    pub fn templates() -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new(format!("{RECIPE}{{id}}"), "recipe")
                .with_description("A published recipe by id")
                .with_mime_type("application/json"),
            ResourceTemplate::new(format!("{SKILL}{{name}}"), "skill")
                .with_description("A skill's SKILL.md by name")
                .with_mime_type("text/markdown"),
            ResourceTemplate::new(format!("{MEMORIES}{{scope}}"), "memories")
                .with_description("Active memories of one scope: project, user or team")
                .with_mime_type("application/json"),
        ]
    }

    /// A fingerprint of [`ProjectContent::list`]'s URIs: it changes when a resource appears
    /// or goes away.
    pub fn list_fingerprint(&self) -> u64 {
        let mut h = DefaultHasher::new();
        for r in self.list() {
            r.uri.hash(&mut h);
        }
        h.finish()
    }

    /// The body of a store-backed resource; `Ok(None)` when it does not exist. The overview
    /// is not store-backed (the server runs its tool).
    pub fn read(&self, uri: &ResourceUri) -> Result<Option<Body>, String> {
        match uri {
            ResourceUri::Overview => Ok(None),
            ResourceUri::Recipe(id) => self.recipe(id),
            ResourceUri::Skill(name) => match self.skills.read(name) {
                Ok(skill) => Ok(skill.map(|s| Body {
                    mime: "text/markdown",
                    text: s.markdown,
                })),
                Err(e) => Err(e.to_string()),
            },
            ResourceUri::Memories(scope) => self.memories(*scope),
        }
    }

    /// A fingerprint of a store-backed resource's body (`None`: it does not exist or cannot
    /// be read now).
    pub fn body_fingerprint(&self, uri: &ResourceUri) -> Option<u64> {
        let body = self.read(uri).ok()??;
        let mut h = DefaultHasher::new();
        body.text.hash(&mut h);
        Some(h.finish())
    }

    /// Values for a template variable that start with `prefix`.
    pub fn complete_variable(&self, template: &str, variable: &str, prefix: &str) -> Vec<String> {
        let all: Vec<String> = match (template, variable) {
            (t, "id") if t.starts_with(RECIPE) => {
                self.recipe_ids().into_iter().map(|(id, _)| id).collect()
            }
            (t, "name") if t.starts_with(SKILL) => {
                self.skills.list().into_iter().map(|s| s.name).collect()
            }
            (t, "scope") if t.starts_with(MEMORIES) => SCOPES.map(String::from).to_vec(),
            _ => Vec::new(),
        };
        all.into_iter().filter(|v| v.starts_with(prefix)).collect()
    }

    fn published(&self) -> Vec<alembic_runtime::knowledge::model::Entry> {
        let Some(kb) = &self.knowledge else {
            return Vec::new();
        };
        let filter = Filter {
            statuses: vec![Status::Published],
            limit: MAX_RECIPES,
            ..Filter::default()
        };
        kb.with(|store| store.list(&filter)).unwrap_or_else(|e| {
            tracing::warn!("cannot list published recipes: {e}");
            Vec::new()
        })
    }

    fn recipe_ids(&self) -> Vec<(String, String)> {
        self.published()
            .into_iter()
            .map(|e| (e.id, e.title))
            .collect()
    }

    fn recipe(&self, id: &str) -> Result<Option<Body>, String> {
        let Some(kb) = &self.knowledge else {
            return Ok(None);
        };
        // the knowledge service reads the team's store when a team is configured
        let found = kb
            .with(|store| match store.get(id) {
                Ok(entry) => Ok(Some(entry)),
                Err(KnowledgeError::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .map_err(|e| e.to_string())?;
        let Some(entry) = found else {
            return Ok(None);
        };
        // Only published recipes are resources; drafts and candidates stay behind the tools.
        if entry.status != Status::Published {
            return Ok(None);
        }
        let text = serde_json::to_string_pretty(&entry).map_err(|e| e.to_string())?;
        Ok(Some(Body {
            mime: "application/json",
            text,
        }))
    }

    /// The active memories of `scope`; with a team configured, the team scope's come from
    /// the server as well, each with its `store` (`local` or `team`). If the team store
    /// cannot be read, the team resource fails naming the server and the cause rather than
    /// pass the local part off as the team's memories.
    fn memories(&self, scope: Scope) -> Result<Option<Body>, String> {
        let Some(memory) = &self.memory else {
            return Ok(None);
        };
        let filter = ListFilter {
            scope: Some(scope),
            ..ListFilter::default()
        };
        let found = memory.list_everywhere(&filter).map_err(|e| e.to_string())?;
        if let Some(e) = found.team_error {
            return Err(format!("team memories unavailable: {e}"));
        }
        let now = memory.read(|m| m.now_ms()).map_err(|e| e.to_string())?;
        let active: Vec<_> = found
            .items
            .into_iter()
            .filter(|x| x.item.is_active(now))
            .collect();
        let text = serde_json::to_string_pretty(&active).map_err(|e| e.to_string())?;
        Ok(Some(Body {
            mime: "application/json",
            text,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn uris_parse_or_say_what_exists() {
        assert_eq!(ResourceUri::parse(OVERVIEW_URI), Ok(ResourceUri::Overview));
        assert_eq!(
            ResourceUri::parse("alembic://recipe/r-1"),
            Ok(ResourceUri::Recipe("r-1".into()))
        );
        assert_eq!(
            ResourceUri::parse("alembic://memories/team"),
            Ok(ResourceUri::Memories(Scope::Team))
        );
        let err = ResourceUri::parse("alembic://memories/galaxy").unwrap_err();
        assert!(
            err.contains("alembic://memories/{project|user|team}"),
            "{err}"
        );
        assert!(ResourceUri::parse("file:///etc/passwd").is_err());
        assert!(ResourceUri::parse("alembic://recipe/").is_err());
    }
}
