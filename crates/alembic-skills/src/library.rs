//! Where skills live and the one reader and writer of them.
//!
//! - Project skills: `<root>/.alembic/skills/<name>/SKILL.md`. This directory is shared
//!   through version control (see `alembic_store::layout`), so a skill one person writes is
//!   found in every clone.
//! - Built-in skills: shipped inside the binary (`crates/alembic-skills/skills/`).
//!
//! A project skill shadows a built-in of the same name when read or listed (someone may edit
//! one by hand), but [`write_skill`] refuses built-in names, so no tool creates the shadow.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::SkillError;
use crate::format::{Skill, validate_name};

/// Directory of the project's skills under the state directory.
pub const SKILLS_DIR: &str = "skills";
/// File name of a skill inside its directory.
pub const SKILL_FILE: &str = "SKILL.md";

/// The built-in skills: name and `SKILL.md` text.
const BUILTIN: &[(&str, &str)] = &[
    (
        "forge-a-tool",
        include_str!("../skills/forge-a-tool/SKILL.md"),
    ),
    (
        "write-a-recipe",
        include_str!("../skills/write-a-recipe/SKILL.md"),
    ),
];

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillLocation {
    /// `.alembic/skills/` of the project.
    Project,
    /// Shipped with Alembic.
    Builtin,
}

impl SkillLocation {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillLocation::Project => "project",
            SkillLocation::Builtin => "builtin",
        }
    }
}

/// A skill as found: parsed, where it is, and its file text as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundSkill {
    pub skill: Skill,
    pub location: SkillLocation,
    /// The `SKILL.md` path of a project skill; `None` for a built-in one.
    pub path: Option<PathBuf>,
    /// The `SKILL.md` text exactly as stored (what an MCP resource serves).
    pub text: String,
}

/// Every skill of a project, and the ones that could not be read.
#[derive(Debug, Default)]
pub struct SkillListing {
    /// Sorted by name; a project skill replaces a built-in of the same name.
    pub skills: Vec<FoundSkill>,
    /// One error per project skill directory that is not a valid skill.
    pub errors: Vec<SkillError>,
}

/// Whether to replace an existing project skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Refuse if the skill exists.
    CreateNew,
    /// Replace the skill's `SKILL.md` if it exists.
    Overwrite,
}

/// `<root>/.alembic/skills`.
pub fn skills_dir(root: &Path) -> PathBuf {
    root.join(alembic_store::STATE_DIR).join(SKILLS_DIR)
}

/// `<root>/.alembic/skills/<name>/SKILL.md`, after checking `name`.
pub fn skill_path(root: &Path, name: &str) -> Result<PathBuf, SkillError> {
    validate_name(name)?;
    Ok(skills_dir(root).join(name).join(SKILL_FILE))
}

/// Whether `name` is a built-in skill's.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _)| *n == name)
}

/// The built-in skills, parsed.
pub fn builtin_skills() -> Vec<FoundSkill> {
    BUILTIN
        .iter()
        .filter_map(|(name, text)| {
            let skill = Skill::parse(text, &format!("built-in skill {name}")).ok()?;
            Some(FoundSkill {
                skill,
                location: SkillLocation::Builtin,
                path: None,
                text: (*text).to_string(),
            })
        })
        .collect()
}

/// Every skill of the project at `root` plus the built-in ones.
pub fn list_skills(root: &Path) -> SkillListing {
    let mut listing = SkillListing::default();
    let mut names: Vec<String> = std::fs::read_dir(skills_dir(root))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        match read_project_skill(root, &name) {
            Ok(Some(found)) => listing.skills.push(found),
            Ok(None) => {}
            Err(e) => listing.errors.push(e),
        }
    }
    for builtin in builtin_skills() {
        if !listing
            .skills
            .iter()
            .any(|s| s.skill.name == builtin.skill.name)
        {
            listing.skills.push(builtin);
        }
    }
    listing
        .skills
        .sort_by(|a, b| a.skill.name.cmp(&b.skill.name));
    listing
}

/// The skill `name`: the project's if it has one, else the built-in one.
pub fn read_skill(root: &Path, name: &str) -> Result<FoundSkill, SkillError> {
    validate_name(name)?;
    if let Some(found) = read_project_skill(root, name)? {
        return Ok(found);
    }
    if let Some(found) = builtin_skills().into_iter().find(|s| s.skill.name == name) {
        return Ok(found);
    }
    let names: Vec<String> = list_skills(root)
        .skills
        .into_iter()
        .map(|s| s.skill.name)
        .collect();
    Err(SkillError::NotFound {
        name: name.to_string(),
        available: if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        },
    })
}

/// Reads `.alembic/skills/<name>/SKILL.md`; `Ok(None)` when there is no such file.
fn read_project_skill(root: &Path, name: &str) -> Result<Option<FoundSkill>, SkillError> {
    validate_name(name)?;
    let path = skills_dir(root).join(name).join(SKILL_FILE);
    // Through the guard: a SKILL.md (or skill directory) linked out of the project is
    // refused, never read, as the MCP resources and prompts read it.
    let rel = format!(
        "{}/{SKILLS_DIR}/{name}/{SKILL_FILE}",
        alembic_store::STATE_DIR
    );
    let read = alembic_safety::PathGuard::new(root).and_then(|g| g.read_text_if_exists(&rel));
    let text = match read {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(source) => return Err(SkillError::Confined { path: rel, source }),
    };
    let skill = Skill::parse(&text, &path.display().to_string())?;
    if skill.name != name {
        return Err(SkillError::Parse {
            origin: path.display().to_string(),
            reason: format!(
                "the front matter names the skill \"{}\" but its directory is \"{name}\"; they must be the same",
                skill.name
            ),
        });
    }
    Ok(Some(FoundSkill {
        skill,
        location: SkillLocation::Project,
        path: Some(path),
        text,
    }))
}

/// Writes `skill` as `<root>/.alembic/skills/<name>/SKILL.md` and returns that path.
///
/// The skill is checked first (name, description, arguments schema); built-in names are
/// refused. The file is written to a temporary file and moved into place, so a reader sees the
/// old skill or the new one, never a part. With [`WriteMode::CreateNew`] an existing skill is
/// refused, also when another writer creates it at the same moment (the move does not
/// replace). Symbolic links on the way are refused, so a checked-in link cannot redirect the
/// write out of the project.
pub fn write_skill(root: &Path, skill: &Skill, mode: WriteMode) -> Result<PathBuf, SkillError> {
    skill.check()?;
    if is_builtin(&skill.name) {
        return Err(SkillError::Reserved {
            name: skill.name.clone(),
        });
    }
    let dir = skills_dir(root).join(&skill.name);
    let path = dir.join(SKILL_FILE);
    if mode == WriteMode::CreateNew && path.exists() {
        return Err(exists(skill, &path));
    }
    let state = root.join(alembic_store::STATE_DIR);
    for p in [&state, &skills_dir(root), &dir, &path] {
        refuse_symlink(p)?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| SkillError::io("create", &dir, e))?;
    let tmp = dir.join(format!(".{SKILL_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, skill.render()).map_err(|e| SkillError::io("write", &tmp, e))?;
    let placed = match mode {
        // A hard link fails if the target exists: create-if-absent without a race.
        WriteMode::CreateNew => std::fs::hard_link(&tmp, &path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                exists(skill, &path)
            } else {
                SkillError::io("write", &path, e)
            }
        }),
        WriteMode::Overwrite => {
            std::fs::rename(&tmp, &path).map_err(|e| SkillError::io("write", &path, e))
        }
    };
    let _ = std::fs::remove_file(&tmp);
    placed.map(|()| path)
}

fn exists(skill: &Skill, path: &Path) -> SkillError {
    SkillError::Exists {
        name: skill.name.clone(),
        path: path.to_path_buf(),
    }
}

fn refuse_symlink(path: &Path) -> Result<(), SkillError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(SkillError::Symlink {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn builtin_skills_parse_and_are_reserved() {
        let builtins = builtin_skills();
        assert_eq!(builtins.len(), BUILTIN.len());
        let dir = tempfile::tempdir().unwrap();
        let skill = Skill::new("forge-a-tool", "mine", "body");
        let err = write_skill(dir.path(), &skill, WriteMode::Overwrite).unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"forge-a-tool\" is the name of a built-in skill; a project skill needs another name"
        );
    }

    #[test]
    fn create_new_refuses_an_existing_skill_and_overwrite_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let first = Skill::new("team-review", "Review checklist", "v1\n");
        let path = write_skill(root, &first, WriteMode::CreateNew).unwrap();
        assert_eq!(path, root.join(".alembic/skills/team-review/SKILL.md"));
        let second = Skill::new("team-review", "Review checklist", "v2\n");
        let err = write_skill(root, &second, WriteMode::CreateNew).unwrap_err();
        assert!(matches!(err, SkillError::Exists { .. }), "{err}");
        assert_eq!(read_skill(root, "team-review").unwrap().skill.body, "v1\n");
        write_skill(root, &second, WriteMode::Overwrite).unwrap();
        let found = read_skill(root, "team-review").unwrap();
        assert_eq!(
            (found.skill, found.location),
            (second, SkillLocation::Project)
        );
        // no temporary file is left behind
        let files: Vec<_> = std::fs::read_dir(root.join(".alembic/skills/team-review"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files, vec![std::ffi::OsString::from("SKILL.md")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_skills_directory_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".alembic/skills")).unwrap();
        let err = write_skill(
            dir.path(),
            &Skill::new("escape-hatch", "d", "b"),
            WriteMode::CreateNew,
        )
        .unwrap_err();
        assert!(matches!(err, SkillError::Symlink { .. }), "{err}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn listing_reports_broken_skills_and_project_skills_shadow_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let skills = skills_dir(root);
        std::fs::create_dir_all(skills.join("broken-one")).unwrap();
        std::fs::write(skills.join("broken-one/SKILL.md"), "no front matter").unwrap();
        std::fs::create_dir_all(skills.join("forge-a-tool")).unwrap();
        std::fs::write(
            skills.join("forge-a-tool/SKILL.md"),
            "---\nname: forge-a-tool\ndescription: our own\n---\nours\n",
        )
        .unwrap();
        std::fs::create_dir_all(skills.join("mismatch")).unwrap();
        std::fs::write(
            skills.join("mismatch/SKILL.md"),
            "---\nname: other\ndescription: d\n---\n",
        )
        .unwrap();
        let listing = list_skills(root);
        let names: Vec<(&str, SkillLocation)> = listing
            .skills
            .iter()
            .map(|s| (s.skill.name.as_str(), s.location))
            .collect();
        assert_eq!(
            names,
            vec![
                ("forge-a-tool", SkillLocation::Project),
                ("write-a-recipe", SkillLocation::Builtin)
            ]
        );
        let errors: Vec<String> = listing.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].ends_with("SKILL.md must start with a front matter block: a `---` line, `key: value` lines, a `---` line"), "{errors:?}");
        assert!(errors[1].ends_with("the front matter names the skill \"other\" but its directory is \"mismatch\"; they must be the same"), "{errors:?}");
        let err = read_skill(root, "nothing-here").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no skill named \"nothing-here\"; available skills: forge-a-tool, write-a-recipe"
        );
    }
}
