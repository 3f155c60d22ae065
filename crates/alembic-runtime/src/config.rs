//! The project configuration file, `.alembic/config.toml`.

use std::path::{Path, PathBuf};

use alembic_tools::PresetCatalog;
use serde::Deserialize;

/// The project config file, relative to the root.
const CONFIG_FILE: &str = ".alembic/config.toml";

/// The commented file `alembic init` writes. Every setting is optional.
pub const DEFAULT_CONFIG: &str = r#"# Alembic project configuration. Every setting is optional; the values shown are the defaults.

[tools]
# Preset used when a command does not name one (chat, insight, bootstrap-analyst,
# bootstrap-producer, ide, all).
# default_preset = "chat"
# Time limit of one tool call, in seconds.
# timeout_secs = 60

[safety]
# Extra programs allowed in run_safe_command, beyond the built-in read-only list.
# Programs that can execute other code (sh, bash, python, node, env, sudo, xargs, ...) are refused.
# extra_safe_commands = []
# Extra paths (relative to the project root) that write_project_file must never touch.
# extra_protected_paths = []

[memory]
# Maximum number of current persistent memories per scope (project, user, team); adding one
# more evicts the least used (access count x importance), then the oldest. Whole number >= 1.
# max_memories = 500
# Days without access before a memory is archived (leaves retrieval, recoverable), and before
# it is forgotten (deleted by gc). Numbers > 0; forget_days must not be below archive_days.
# archive_days = 30
# forget_days = 90
# Retrieval score = weight_recency*recency + weight_importance*importance
# + weight_relevance*relevance; each weight from 0 to 1.
# weight_recency = 0.2
# weight_importance = 0.3
# weight_relevance = 0.5
# Days after which recency counts half. Number > 0.
# recency_half_life_days = 7
# "banded": relevance decides, recency and importance re-rank near-equally relevant memories;
# "weighted": the formula above over every candidate; "relevance_only".
# ranking = "banded"
# Embeddings for memory and semantic code search: "none", "local" (all-MiniLM-L6-v2, installed
# by scripts/fetch-models) or "openai" (any OpenAI-compatible endpoint; key from OPENAI_API_KEY).
# Without this key memory (its tools, `alembic memory`, the agent) uses the local model when it
# is installed and code search is lexical. For memory, ALEMBIC_EMBEDDINGS=none|local|openai
# overrides this key.
# embedder = "none"
# Model directory for "local" (default: where scripts/fetch-models installs it).
# embedder_model_dir = "/path/to/all-MiniLM-L6-v2"
# embedder_url = "https://api.openai.com/v1"
# embedder_model = "text-embedding-3-small"
# The agent gives memory 12.5 % of the model's context (125,000 tokens on a 1M model); this
# caps it (tokens).
# max_budget_tokens = 32000
# At the end of `alembic ask` and `alembic chat` (and on /remember), the run's noted findings
# and the preferences you state become candidate memories.
# extract_from_conversations = true

[team]
# A team store on PostgreSQL (an existing server): team-scoped memories live there, shared by
# every checkout and CI job of the team; project and user memories stay in .alembic/alembic.db.
# Without this section (and without ALEMBIC_TEAM_URL) nothing changes.
# A URL with a password is refused in a file others can read: set ALEMBIC_TEAM_URL instead, or
# name a file with mode 0600 in url_file. sslmode (disable, prefer, require, verify-ca,
# verify-full) is passed to the client as written.
# url = "postgres://me@db.example:5432/alembic?sslmode=verify-full"
# url_file = "team-url"
# team = "platform"
# Recorded on every team write; default: the OS user ($USER, $LOGNAME).
# author = "me"
# Seconds to wait for the server before a team call fails (1..120).
# connect_timeout_secs = 5

[forge]
# Let `alembic forge generate` run LLM-written tools in the QuickJS sandbox (also turned on by
# ALEMBIC_ENABLE_FORGE_GENERATE=true). Off by default; reuse and compose are always available.
# generate = false

[index]
# Source files larger than this many bytes are not parsed by the code index (listed as
# skipped). Whole number >= 1.
# max_file_bytes = 1048576
# A query about one type's descendants and conformers (hierarchy, protocol, impact) reads at
# most this many files; a type implemented more widely is answered from counts, or refused
# with the first names to ask about instead. Whole number >= 1.
# max_query_files = 2000

[bootstrap]
# Dimensions `alembic bootstrap` leaves out (ids as listed by the summary table).
# disable = ["ui-interaction"]
# Override fields of a built-in dimension, or add one (a new dimension needs label,
# extraction_guide, allowed_knowledge_types and tier_hint 1..3):
# [[bootstrap.dimension]]
# id = "architecture"
# tier_hint = 1

[mcp.http]
# Limits of `alembic mcp --http` (see README, "Serving a team over HTTP").
# Largest request body in bytes (413 past it).
# max_body_bytes = 4194304
# Requests per minute per token, and the burst above that rate (429 with Retry-After past it).
# rate_per_minute = 600
# rate_burst = 60
# Concurrent sessions (503 past it), and seconds without a request before a session closes.
# max_sessions = 64
# idle_timeout_secs = 1800
# Concurrent sessions of one token or OAuth subject (of one IP without authentication; 429 past it).
# max_sessions_per_caller = 16
# Open connections before authentication, in all and from one IP (idle ones are closed to make room).
# max_connections = 512
# max_connections_per_ip = 256
# Seconds a connection may take to finish its TLS handshake and request headers (new or kept alive).
# header_timeout_secs = 10
# Seconds a client may take to send its request body.
# read_timeout_secs = 30
# Browser origins allowed to call the server (403 for any other Origin; no Origin is allowed).
# allowed_origins = ["https://app.example.com:443", "http://localhost:*"]
# OAuth 2.1: accept JWTs of this authorization server (RFC 9728 metadata is served).
# [mcp.http.oauth]
# issuer = "https://auth.example.com"
# resource = "https://alembic.example.com/mcp"
# audience = "https://alembic.example.com/mcp"   # default: resource
# jwks_uri = "https://auth.example.com/jwks.json" # default: from the issuer's metadata
# preset = "ide"                                  # default: the server's --preset

# Override or add capabilities and presets:
# [capabilities.my_review]
# description = "review changes"
# tools = ["read_project_file", "search_project_code"]
#
# [presets.review]
# description = "code review"
# capabilities = ["my_review"]
# add_tools = ["get_file_summary"]
"#;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: alembic_safety::PathError,
    },
    #[error("{path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    pub default_preset: Option<String>,
    pub timeout_secs: Option<u64>,
}

/// `[index]`: the code index.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IndexSection {
    /// Files larger than this many bytes are listed as skipped, not parsed (default 1 MiB).
    pub max_file_bytes: Option<u64>,
    /// Most files a query about one type's descendants reads (default 2,000).
    pub max_query_files: Option<usize>,
}

impl IndexSection {
    /// The largest file the code index parses.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
            .unwrap_or(alembic_code::index::DEFAULT_MAX_FILE_BYTES)
    }

    /// The most files a query about one type's descendants and conformers reads.
    pub fn max_query_files(&self) -> usize {
        self.max_query_files
            .unwrap_or(alembic_code::index::DEFAULT_MAX_QUERY_FILES)
    }
}

/// The parsed file: typed sections this crate reads, and the raw table for the others.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    pub path: Option<PathBuf>,
    pub tools: ToolsSection,
    pub presets: PresetCatalog,
    /// `[bootstrap]`: dimensions to disable, override or add.
    pub bootstrap: alembic_bootstrap::BootstrapConfig,
    /// `[mcp.http]`: limits and OAuth of `alembic mcp --http`.
    pub mcp: crate::mcp_config::McpSection,
    /// `[index]`: code index limits.
    pub index: IndexSection,
    pub raw: toml::Table,
}

impl ProjectConfig {
    /// Path of the config file of a project.
    pub fn path_for(root: &Path) -> PathBuf {
        root.join(CONFIG_FILE)
    }

    /// Loads the project's config; a missing file means all defaults.
    pub fn load(root: &Path) -> Result<Self, ConfigError> {
        let path = Self::path_for(root);
        // Through the guard: a config linked out of the project is refused, never read (its
        // text would show in parse errors).
        let read = alembic_safety::PathGuard::new(root)
            .and_then(|guard| guard.read_text_if_exists(CONFIG_FILE));
        let text = match read {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Ok(ProjectConfig {
                    presets: PresetCatalog::builtin(),
                    ..Default::default()
                });
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&text, Some(path))
    }

    pub fn parse(text: &str, path: Option<PathBuf>) -> Result<Self, ConfigError> {
        let shown = path.clone().unwrap_or_else(|| PathBuf::from("config.toml"));
        let invalid = |message: String| ConfigError::Invalid {
            path: shown.clone(),
            message,
        };
        let raw: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let tools: ToolsSection = match raw.get("tools") {
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| invalid(format!("[tools]: {e}")))?,
            None => ToolsSection::default(),
        };
        let index: IndexSection = match raw.get("index") {
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| invalid(format!("[index]: {e}")))?,
            None => IndexSection::default(),
        };
        for (field, zero) in [
            ("max_file_bytes", index.max_file_bytes == Some(0)),
            ("max_query_files", index.max_query_files == Some(0)),
        ] {
            if zero {
                return Err(invalid(format!(
                    "[index]: {field} must be a whole number >= 1, got 0"
                )));
            }
        }
        let bootstrap: alembic_bootstrap::BootstrapConfig = match raw.get("bootstrap") {
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| invalid(format!("[bootstrap]: {e}")))?,
            None => Default::default(),
        };
        alembic_bootstrap::dimensions::catalogue(&bootstrap)
            .map_err(|e| invalid(format!("[bootstrap]: {e}")))?;
        let mcp: crate::mcp_config::McpSection = match raw.get("mcp") {
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| invalid(format!("[mcp]: {e}")))?,
            None => Default::default(),
        };
        mcp.http.validate().map_err(invalid)?;
        let mut presets = PresetCatalog::builtin();
        let mut overrides = toml::Table::new();
        for key in ["presets", "capabilities"] {
            if let Some(v) = raw.get(key) {
                overrides.insert(key.to_string(), v.clone());
            }
        }
        if !overrides.is_empty() {
            let text = toml::to_string(&overrides).map_err(|e| invalid(e.to_string()))?;
            presets
                .apply_toml(&text)
                .map_err(|e| invalid(e.to_string()))?;
        }
        Ok(ProjectConfig {
            path,
            tools,
            presets,
            bootstrap,
            mcp,
            index,
            raw,
        })
    }

    /// A section other crates interpret (e.g. `safety`, `memory`).
    pub fn section(&self, name: &str) -> Option<&toml::Value> {
        self.raw.get(name)
    }

    pub fn default_preset(&self) -> &str {
        self.tools.default_preset.as_deref().unwrap_or("chat")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_default_file_parses_to_the_defaults() {
        let c = ProjectConfig::parse(DEFAULT_CONFIG, None).unwrap();
        assert_eq!(c.tools, ToolsSection::default());
        assert_eq!(c.presets, PresetCatalog::builtin());
        assert_eq!(c.default_preset(), "chat");
    }

    #[test]
    fn preset_overrides_apply() {
        let c = ProjectConfig::parse(
            "[tools]\ndefault_preset = \"review\"\n[capabilities.r]\ntools = [\"read_project_file\"]\n[presets.review]\ncapabilities = [\"r\"]\n",
            None,
        )
        .unwrap();
        assert_eq!(c.default_preset(), "review");
        assert!(
            c.presets
                .allowlist("review")
                .unwrap()
                .allows("read_project_file")
        );
    }

    #[test]
    fn bootstrap_section_overrides_dimensions_and_bad_ones_are_refused() {
        let c = ProjectConfig::parse(
            "[bootstrap]\ndisable = [\"ui-interaction\"]\n[[bootstrap.dimension]]\nid = \"architecture\"\ntier_hint = 2\n",
            None,
        )
        .unwrap();
        assert_eq!(c.bootstrap.disable, ["ui-interaction"]);
        let dims = alembic_bootstrap::dimensions::catalogue(&c.bootstrap).unwrap();
        assert_eq!(
            dims.iter()
                .find(|d| d.id == "architecture")
                .unwrap()
                .tier_hint,
            2
        );
        let err = ProjectConfig::parse("[bootstrap]\ndisable = [\"nope\"]\n", None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[bootstrap]: unknown dimension \"nope\""),
            "{err}"
        );
        let err = ProjectConfig::parse("[bootstrap]\nskip = 1\n", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("[bootstrap]: unknown field `skip`"), "{err}");
    }

    #[test]
    fn index_section_sets_the_file_size_limit_and_refuses_bad_values() {
        let c = ProjectConfig::parse(
            "[index]\nmax_file_bytes = 4096\nmax_query_files = 50\n",
            None,
        )
        .unwrap();
        assert_eq!(c.index.max_file_bytes(), 4096);
        assert_eq!(c.index.max_query_files(), 50);
        let c = ProjectConfig::parse("", None).unwrap();
        assert_eq!(c.index.max_file_bytes(), 1024 * 1024);
        assert_eq!(c.index.max_query_files(), 2_000);
        for (text, expected) in [
            (
                "[index]\nmax_file_bytes = 0\n",
                "[index]: max_file_bytes must be a whole number >= 1, got 0",
            ),
            ("[index]\nmax_file_bytes = -5\n", "[index]: invalid value"),
            (
                "[index]\nmax_query_files = 0\n",
                "[index]: max_query_files must be a whole number >= 1, got 0",
            ),
            (
                "[index]\nmax_bytes = 5\n",
                "[index]: unknown field `max_bytes`",
            ),
        ] {
            let err = ProjectConfig::parse(text, None).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let err = ProjectConfig::parse(
            "[tools]\ntimeout = 3\n",
            Some("/p/.alembic/config.toml".into()),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "/p/.alembic/config.toml is not valid: [tools]: unknown field `timeout`"
            ),
            "{msg}"
        );
        let err =
            ProjectConfig::parse("[presets.x]\ncapabilities = [\"nope\"]\n", None).unwrap_err();
        assert!(
            err.to_string().contains("unknown capability \"nope\""),
            "{err}"
        );
    }
}
