//! The skills the server publishes as resources (`alembic://skill/{name}`) and prompts.
//!
//! [`SkillSource`] is the one seam between the server and the skill format: the server asks
//! for the list and for one skill by name and never parses a skill file itself. [`SkillDir`]
//! reads today's format (`.alembic/skills/NAME/SKILL.md` plus `schema.json` with
//! `{name, description, parameters}`, as `alembic forge promote` writes it).
//!
//! Invariant: these reads run in the server, outside any sandbox, for any client that may list
//! resources, so every file is opened through a [`PathGuard`] on the project root. A symbolic
//! link that stays inside the project is followed; one that leads out (the `SKILL.md`, the
//! skill's directory or `.alembic/skills` itself) is refused, and the skill is left out of the
//! listings with a warning. A hard link cannot be told from the file it names, so a hard link
//! to an outside file that someone placed in the tree is read like any file (git never checks
//! one out).

use std::path::Path;

use alembic_runtime::safety::{EntryKind, PathError, PathGuard};
use serde_json::Value;

/// One skill as the server shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The SKILL.md text.
    pub markdown: String,
    /// A JSON Schema object (`{"type":"object","properties":…}`); its properties become the
    /// prompt's arguments.
    pub parameters: Value,
}

/// Why a skill that exists could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SkillReadError {
    /// The file could not be opened beneath the project root (a link out of it, a special
    /// file, a read error).
    #[error("skill \"{name}\" cannot be read: {source}")]
    Refused {
        name: String,
        #[source]
        source: PathError,
    },
}

/// Where skills come from.
pub trait SkillSource: Send + Sync {
    /// Every readable skill, sorted by name; unreadable ones are left out (with a warning).
    fn list(&self) -> Vec<Skill>;
    /// One skill; `Ok(None)` for an unknown or invalid name.
    fn read(&self, name: &str) -> Result<Option<Skill>, SkillReadError>;
}

/// Skills under a directory, one folder per skill, read beneath a confining root.
#[derive(Debug, Clone)]
pub struct SkillDir {
    /// `None` when the root could not be opened: there are no skills then.
    guard: Option<PathGuard>,
    /// The skills directory relative to the guard's root.
    dir: String,
}

impl SkillDir {
    /// Skills directly under `dir`; nothing is read outside `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self::beneath(dir.as_ref(), ".")
    }

    /// The project's skills: `ROOT/.alembic/skills`, nothing read outside `ROOT`.
    pub fn for_project(root: &Path) -> Self {
        Self::beneath(root, &format!("{}/skills", alembic_store::STATE_DIR))
    }

    fn beneath(root: &Path, dir: &str) -> Self {
        let guard = PathGuard::new(root)
            .inspect_err(|e| tracing::warn!("skills are not published: {e}"))
            .ok();
        SkillDir {
            guard,
            dir: dir.to_string(),
        }
    }

    fn file(&self, name: &str, file: &str) -> String {
        format!("{}/{name}/{file}", self.dir)
    }
}

/// A skill name is one path segment of letters, digits, `-` and `_`: nothing that could
/// leave the skills directory.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl SkillSource for SkillDir {
    fn list(&self) -> Vec<Skill> {
        let Some(guard) = &self.guard else {
            return Vec::new();
        };
        let entries = match guard.read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(PathError::NotFound { .. }) => return Vec::new(),
            Err(e) => {
                tracing::warn!("skills are not published: {e}");
                return Vec::new();
            }
        };
        // Sorted by name already; a symlinked directory is resolved (and confined) by `read`.
        entries
            .into_iter()
            .filter(|e| matches!(e.kind, EntryKind::Dir | EntryKind::Symlink))
            .filter_map(|e| match self.read(&e.name) {
                Ok(skill) => skill,
                Err(e) => {
                    tracing::warn!("skill left out of the listings: {e}");
                    None
                }
            })
            .collect()
    }

    fn read(&self, name: &str) -> Result<Option<Skill>, SkillReadError> {
        let Some(guard) = self.guard.as_ref().filter(|_| is_skill_name(name)) else {
            return Ok(None);
        };
        let refused = |source| SkillReadError::Refused {
            name: name.to_string(),
            source,
        };
        let markdown = match guard.read_to_string(&self.file(name, "SKILL.md")) {
            Ok(text) => text,
            Err(PathError::NotFound { .. } | PathError::NotADirectory { .. }) => return Ok(None),
            Err(e) => return Err(refused(e)),
        };
        let schema: Value = match guard.read_to_string(&self.file(name, "schema.json")) {
            Ok(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
            Err(PathError::NotFound { .. }) => Value::Null,
            Err(e) => return Err(refused(e)),
        };
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|d| !d.trim().is_empty())
            .or_else(|| front_matter_description(&markdown))
            .unwrap_or_else(|| format!("the {name} skill"));
        let parameters = match schema.get("parameters") {
            Some(p) if p.is_object() => p.clone(),
            _ => serde_json::json!({"type": "object", "properties": {}}),
        };
        Ok(Some(Skill {
            name: name.to_string(),
            description,
            markdown,
            parameters,
        }))
    }
}

/// `description:` of the SKILL.md front matter (between the leading `---` lines).
fn front_matter_description(markdown: &str) -> Option<String> {
    let rest = markdown.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    rest[..end].lines().find_map(|line| {
        let value = line.strip_prefix("description:")?.trim();
        let value = value.trim_matches('"').trim();
        (!value.is_empty()).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn reads_skill_folders_and_refuses_path_segments() {
        let tmp = tempfile::tempdir().unwrap();
        let skills = SkillDir::new(tmp.path());
        let dir = tmp.path().join("count-lines");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: count-lines\ndescription: \"Counts lines\"\n---\n\nbody\n",
        )
        .unwrap();
        std::fs::create_dir_all(tmp.path().join("no-markdown")).unwrap();
        let skill = skills.read("count-lines").unwrap().unwrap();
        assert_eq!(skill.description, "Counts lines");
        assert_eq!(
            skill.parameters,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            skills
                .list()
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>(),
            ["count-lines"]
        );
        for bad in ["../count-lines", "a/b", "", ".."] {
            assert_eq!(skills.read(bad).unwrap(), None, "{bad}");
        }
    }
}
