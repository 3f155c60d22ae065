//! Skills: markdown documents that teach an agent (or a person) how to do one thing in this
//! project, shared with the team through version control.
//!
//! There is one format ([`format`]: `SKILL.md` with a front matter block) and one reader and
//! writer ([`library`]), used by `alembic forge promote` (a forged tool becomes a skill),
//! `create_skill`, `load_skill` and the MCP server (skills as resources and prompts).
//!
//! Public API (stable; the MCP server builds on it):
//! - [`list_skills`]`(root)`: every project skill (`.alembic/skills/<name>/SKILL.md`) and
//!   built-in skill, sorted by name, plus the project skills that could not be read;
//! - [`read_skill`]`(root, name)`: one skill, the project's first, then the built-in one;
//! - [`write_skill`]`(root, &skill, mode)`: checked, atomic, refuses built-in names and (with
//!   [`WriteMode::CreateNew`]) existing skills;
//! - [`Skill`]: name, description, source, tool, created_by, arguments (JSON Schema), body;
//!   [`Skill::prompt_arguments`] gives the arguments as MCP prompt arguments and
//!   [`FoundSkill::text`] the file as stored.
//!
//! [`tools`] registers `load_skill` and `create_skill` (module infrastructure), and
//! [`suggest`] `suggest_skills`, which reads the guard checks, memory preferences, knowledge
//! gaps and the candidate backlog.
//!
//! ```
//! use alembic_skills::{Skill, WriteMode, read_skill, write_skill};
//! let dir = tempfile::tempdir().unwrap();
//! let mut skill = Skill::new("retry-with-backoff", "Wrap network calls in retry()", "# Retry\n");
//! skill.arguments = Some(serde_json::json!({
//!     "type": "object",
//!     "properties": {"call": {"type": "string", "description": "the call to wrap"}},
//!     "required": ["call"]
//! }));
//! write_skill(dir.path(), &skill, WriteMode::CreateNew).unwrap();
//! let found = read_skill(dir.path(), "retry-with-backoff").unwrap();
//! assert_eq!(found.skill, skill);
//! assert_eq!(found.skill.prompt_arguments()[0].name, "call");
//! // names are kebab-case words, never paths
//! assert!(read_skill(dir.path(), "../secrets").is_err());
//! ```

pub mod error;
pub mod format;
pub mod library;

pub use error::SkillError;
pub use format::{Skill, SkillArgument, SkillSource, skill_name_for_tool, validate_name};
pub use library::{
    FoundSkill, SKILL_FILE, SKILLS_DIR, SkillListing, SkillLocation, WriteMode, builtin_skills,
    is_builtin, list_skills, read_skill, skill_path, skills_dir, write_skill,
};
pub mod suggest;
pub mod tools;

pub use suggest::Suggestion;
pub use tools::{SkillService, register_tools};
