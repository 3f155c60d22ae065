//! Saved forged tools under `.alembic/tools/`, their loading at start, and promotion to skills.
//!
//! Layout:
//! - `.alembic/tools/NAME.json` (or a hand-written `NAME.toml`): a permanent tool, a
//!   [`SavedTool`] tagged by `kind` (`composed`, `generated`, `alias`; a file without `kind` is a
//!   composition spec);
//! - `.alembic/tools/.temporary/NAME.json`: a forged tool that is not saved yet, with its expiry,
//!   so that short-lived processes (each CLI command) share the TTL registry;
//! - `.alembic/skills/<kebab-name>/SKILL.md`: a promoted tool, in the one skill format of
//!   `alembic-skills`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alembic_tools::{RegistryError, ToolDefinition, ToolRegistry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::compose::{CompositionSpec, composed_tool};
use crate::error::ForgeError;
use crate::generate::{GeneratedTool, generated_tool_definition};
use crate::reuse::{AliasSpec, alias_tool};
use crate::sandbox::SandboxLimits;
use crate::temporary::{ForgeMode, TemporaryToolRegistry};

/// A forged tool as stored on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SavedTool {
    Composed(CompositionSpec),
    Generated(GeneratedTool),
    Alias(AliasSpec),
}

impl SavedTool {
    pub fn name(&self) -> &str {
        match self {
            SavedTool::Composed(s) => &s.name,
            SavedTool::Generated(g) => &g.name,
            SavedTool::Alias(a) => &a.name,
        }
    }

    pub fn mode(&self) -> ForgeMode {
        match self {
            SavedTool::Composed(_) => ForgeMode::Compose,
            SavedTool::Generated(_) => ForgeMode::Generate,
            SavedTool::Alias(_) => ForgeMode::Reuse,
        }
    }

    /// Parses JSON or TOML text (by `path`'s extension); a spec without `kind` is composed.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ForgeError> {
        let parse_err = |reason: String| ForgeError::Parse {
            path: path.to_path_buf(),
            reason,
        };
        let mut value: Value = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(text).map_err(|e| parse_err(e.to_string()))?
        } else {
            serde_json::from_str(text).map_err(|e| parse_err(e.to_string()))?
        };
        if let Some(obj) = value.as_object_mut() {
            obj.entry("kind").or_insert_with(|| json!("composed"));
        }
        serde_json::from_value(value).map_err(|e| parse_err(e.to_string()))
    }

    /// Builds the tool definition, checking the spec against `registry` and the other
    /// compositions. Generated tools need generate mode to be on.
    pub fn definition(
        &self,
        registry: &ToolRegistry,
        compositions: &BTreeMap<String, CompositionSpec>,
        generate_allowed: bool,
    ) -> Result<ToolDefinition, ForgeError> {
        match self {
            SavedTool::Composed(spec) => {
                spec.validate(&|n| registry.contains(n), compositions)?;
                // A step may name another saved composition; it must be registered first.
                if let Some(missing) = spec
                    .step_tools()
                    .into_iter()
                    .find(|t| !registry.contains(t))
                {
                    return Err(ForgeError::InvalidSpec {
                        name: spec.name.clone(),
                        reason: format!("step tool \"{missing}\" is not registered"),
                    });
                }
                Ok(composed_tool(spec.clone(), registry))
            }
            SavedTool::Generated(tool) if generate_allowed => {
                tool.check()?;
                Ok(generated_tool_definition(tool, SandboxLimits::default()))
            }
            SavedTool::Generated(_) => Err(ForgeError::GenerateDisabled),
            SavedTool::Alias(alias) => {
                alias_tool(alias, registry).ok_or_else(|| ForgeError::InvalidSpec {
                    name: alias.name.clone(),
                    reason: format!("the aliased tool \"{}\" is not registered", alias.tool),
                })
            }
        }
    }
}

/// A temporary tool on disk: the tool and when it expires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemporaryRecord {
    pub expires_at_ms: Option<u64>,
    pub tool: SavedTool,
}

/// Where a stored tool lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifetime {
    Saved,
    Temporary,
}

/// The `.alembic/tools/` directory of one project.
#[derive(Debug, Clone)]
pub struct ToolStore {
    root: PathBuf,
}

impl ToolStore {
    pub fn new(project_root: &Path) -> Self {
        ToolStore {
            root: project_root.to_path_buf(),
        }
    }

    pub fn dir(&self) -> PathBuf {
        self.root.join(alembic_store::STATE_DIR).join("tools")
    }

    pub fn temporary_dir(&self) -> PathBuf {
        self.dir().join(".temporary")
    }

    /// The project root whose `.alembic/` this store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn skills_dir(&self) -> PathBuf {
        alembic_skills::skills_dir(&self.root)
    }

    fn saved_paths(&self) -> Vec<PathBuf> {
        // `is_file` follows links; the read below refuses those that leave the root.
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir())
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        paths.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "json" || e == "toml"));
        paths.sort();
        paths
    }

    /// Every permanent tool file, parsed (or the reason it cannot be).
    pub fn load_saved(&self) -> Vec<(PathBuf, Result<SavedTool, ForgeError>)> {
        self.saved_paths()
            .into_iter()
            .map(|p| {
                let parsed = read_project_text(&self.root, &p)
                    .map_err(|e| ForgeError::Io {
                        action: "read",
                        path: p.clone(),
                        source: e,
                    })
                    .and_then(|text| SavedTool::parse(&text, &p));
                (p, parsed)
            })
            .collect()
    }

    /// Temporary tools still alive at `now_ms`; expired or unreadable files are deleted.
    pub fn load_temporary(&self, now_ms: u64) -> Vec<TemporaryRecord> {
        let Ok(rd) = std::fs::read_dir(self.temporary_dir()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for path in rd.filter_map(Result::ok).map(|e| e.path()) {
            let record = read_project_text(&self.root, &path)
                .ok()
                .and_then(|t| serde_json::from_str::<TemporaryRecord>(&t).ok());
            match record {
                Some(r) if r.expires_at_ms.is_none_or(|t| t > now_ms) => out.push(r),
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        out.sort_by(|a, b| a.tool.name().cmp(b.tool.name()));
        out
    }

    /// Finds a stored tool by name: permanent first, then temporary.
    pub fn find(&self, name: &str, now_ms: u64) -> Option<(Lifetime, SavedTool, PathBuf)> {
        for (path, parsed) in self.load_saved() {
            if let Ok(tool) = parsed
                && tool.name() == name
            {
                return Some((Lifetime::Saved, tool, path));
            }
        }
        self.load_temporary(now_ms)
            .into_iter()
            .find(|r| r.tool.name() == name)
            .map(|r| (Lifetime::Temporary, r.tool, self.temporary_path(name)))
    }

    fn saved_path(&self, name: &str) -> PathBuf {
        self.dir().join(format!("{name}.json"))
    }

    fn temporary_path(&self, name: &str) -> PathBuf {
        self.temporary_dir().join(format!("{name}.json"))
    }

    /// Writes a permanent tool as `NAME.json`, replacing a file of that name.
    pub fn save(&self, tool: &SavedTool) -> Result<PathBuf, ForgeError> {
        let path = self.saved_path(tool.name());
        write_json(&path, &serde_json::to_value(tool).unwrap_or(Value::Null))?;
        let _ = std::fs::remove_file(self.temporary_path(tool.name()));
        Ok(path)
    }

    /// Writes a temporary tool with its expiry.
    pub fn save_temporary(
        &self,
        tool: &SavedTool,
        expires_at_ms: Option<u64>,
    ) -> Result<PathBuf, ForgeError> {
        let path = self.temporary_path(tool.name());
        let record = TemporaryRecord {
            expires_at_ms,
            tool: tool.clone(),
        };
        write_json(&path, &serde_json::to_value(&record).unwrap_or(Value::Null))?;
        Ok(path)
    }

    /// Deletes a stored tool (permanent or temporary). Returns the files removed.
    pub fn remove(&self, name: &str) -> Result<Vec<PathBuf>, ForgeError> {
        let mut removed = Vec::new();
        let mut candidates = vec![self.temporary_path(name)];
        candidates.extend(self.load_saved().into_iter().filter_map(|(p, t)| {
            let by_stem = p.file_stem().is_some_and(|s| s == name);
            (by_stem || t.is_ok_and(|t| t.name() == name)).then_some(p)
        }));
        for path in candidates {
            match std::fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(ForgeError::Io {
                        action: "remove",
                        path,
                        source: e,
                    });
                }
            }
        }
        Ok(removed)
    }
}

/// Writes pretty JSON through a temporary file and a rename, so a crash leaves the old file.
fn write_json(path: &Path, value: &Value) -> Result<(), ForgeError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| ForgeError::Io {
        action: "create",
        path: dir.to_path_buf(),
        source: e,
    })?;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    std::fs::write(&tmp, text).map_err(|e| ForgeError::Io {
        action: "write",
        path: tmp.clone(),
        source: e,
    })?;
    std::fs::rename(&tmp, path).map_err(|e| ForgeError::Io {
        action: "write",
        path: path.to_path_buf(),
        source: e,
    })
}

/// What loading at start did.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub saved: Vec<String>,
    pub temporary: Vec<String>,
    /// One line per tool that could not be loaded.
    pub errors: Vec<String>,
}

/// Registers every saved tool of the project in `registry` (permanent ones directly, temporary
/// ones through `temporary` with their remaining TTL). Tools are registered in dependency
/// order (a composition after the tools it calls); a broken file is reported, not fatal.
pub fn load_into(
    registry: &ToolRegistry,
    temporary: &TemporaryToolRegistry,
    project_root: &Path,
    generate_allowed: bool,
) -> LoadReport {
    let store = ToolStore::new(project_root);
    let mut report = LoadReport::default();
    let mut pending: Vec<(String, Lifetime, SavedTool, Option<u64>)> = Vec::new();
    for (path, parsed) in store.load_saved() {
        match parsed {
            Ok(t) => pending.push((path.display().to_string(), Lifetime::Saved, t, None)),
            Err(e) => report.errors.push(e.to_string()),
        }
    }
    for r in store.load_temporary(temporary.now_ms()) {
        pending.push((
            r.tool.name().to_string(),
            Lifetime::Temporary,
            r.tool,
            r.expires_at_ms,
        ));
    }
    let compositions: BTreeMap<String, CompositionSpec> = pending
        .iter()
        .filter_map(|(_, _, t, _)| match t {
            SavedTool::Composed(s) => Some((s.name.clone(), s.clone())),
            _ => None,
        })
        .collect();
    // Each pass registers what it can; a pass without progress leaves only real errors.
    loop {
        let before = pending.len();
        let mut failed = Vec::new();
        for (origin, lifetime, tool, expires) in pending {
            match register_one(
                registry,
                temporary,
                &tool,
                lifetime,
                expires,
                &compositions,
                generate_allowed,
            ) {
                Ok(()) => match lifetime {
                    Lifetime::Saved => report.saved.push(tool.name().to_string()),
                    Lifetime::Temporary => report.temporary.push(tool.name().to_string()),
                },
                Err(e) => failed.push((origin, lifetime, tool, expires, e)),
            }
        }
        let progress = failed.len() < before;
        if !progress || failed.is_empty() {
            report.errors.extend(
                failed
                    .into_iter()
                    .map(|(origin, _, _, _, e)| format!("{origin}: {e}")),
            );
            break;
        }
        pending = failed
            .into_iter()
            .map(|(o, l, t, x, _)| (o, l, t, x))
            .collect();
    }
    report
}

fn register_one(
    registry: &ToolRegistry,
    temporary: &TemporaryToolRegistry,
    tool: &SavedTool,
    lifetime: Lifetime,
    expires: Option<u64>,
    compositions: &BTreeMap<String, CompositionSpec>,
    generate_allowed: bool,
) -> Result<(), ForgeError> {
    let definition = tool.definition(registry, compositions, generate_allowed)?;
    match lifetime {
        Lifetime::Saved => registry.register(definition).map_err(|e| match e {
            RegistryError::Duplicate(name) => ForgeError::NameTaken { name },
            other => ForgeError::Registry(other),
        }),
        Lifetime::Temporary => temporary
            .register_until(definition, tool.mode(), expires)
            .map(|_| ()),
    }
}

/// The text of `path` (absolute, beneath `root`), read through the project's `PathGuard`: a
/// saved tool, temporary record or template that is a link out of the project is refused,
/// never read (its text would show in parse errors).
pub(crate) fn read_project_text(root: &Path, path: &Path) -> std::io::Result<String> {
    let rel = path.strip_prefix(root).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not inside the project", path.display()),
        )
    })?;
    let rel = rel.to_string_lossy();
    alembic_safety::PathGuard::new(root)
        .and_then(|guard| guard.read_to_string(&rel))
        .map_err(|e| match e {
            alembic_safety::PathError::NotFound { .. } => {
                std::io::Error::new(std::io::ErrorKind::NotFound, e)
            }
            e => std::io::Error::other(e),
        })
}
