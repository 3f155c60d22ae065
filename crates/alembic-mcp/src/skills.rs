//! The skills the server publishes as resources (`alembic://skill/{name}`) and prompts.
//!
//! [`SkillSource`] is the one seam between the server and the skill format: the server asks
//! for the list and for one skill by name and never parses a skill file itself. [`SkillDir`]
//! reads today's format (`.alembic/skills/NAME/SKILL.md` plus `schema.json` with
//! `{name, description, parameters}`, as `alembic forge promote` writes it).

use std::path::{Path, PathBuf};

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

/// Where skills come from.
pub trait SkillSource: Send + Sync {
    /// Every readable skill, sorted by name.
    fn list(&self) -> Vec<Skill>;
    /// One skill; `None` for an unknown or invalid name.
    fn read(&self, name: &str) -> Option<Skill>;
}

/// Skills under a directory, one folder per skill.
#[derive(Debug, Clone)]
pub struct SkillDir {
    dir: PathBuf,
}

impl SkillDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SkillDir { dir: dir.into() }
    }

    /// The project's skills: `ROOT/.alembic/skills`.
    pub fn for_project(root: &Path) -> Self {
        Self::new(root.join(".alembic").join("skills"))
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
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names.iter().filter_map(|n| self.read(n)).collect()
    }

    fn read(&self, name: &str) -> Option<Skill> {
        if !is_skill_name(name) {
            return None;
        }
        let dir = self.dir.join(name);
        let markdown = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
        let schema: Value = std::fs::read_to_string(dir.join("schema.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
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
        Some(Skill {
            name: name.to_string(),
            description,
            markdown,
            parameters,
        })
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
        let skill = skills.read("count-lines").unwrap();
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
            assert_eq!(skills.read(bad), None, "{bad}");
        }
    }
}
