//! The `[memory]` section of `.alembic/config.toml`, read into the memory crate's
//! [`MemoryConfig`] and, when the section chooses one, an [`EmbedderConfig`];
//! [`memory_embedder`] then settles the embedder of the project's one memory service.
//!
//! The embedder is resolved in one place for every front door (the memory tools over MCP,
//! `alembic memory`, the agent): `ALEMBIC_EMBEDDINGS` if set, else the section's `embedder`
//! key, else the local all-MiniLM-L6-v2 when `scripts/fetch-models` has installed it (or
//! `ALEMBIC_MINILM_DIR` points at it), else none. `ALEMBIC_EMBEDDINGS=none` turns embeddings
//! off, `local` uses the local model, `auto` is the default choice above, and `openai` uses
//! `OPENAI_BASE_URL` (default https://api.openai.com/v1), `OPENAI_API_KEY` and
//! `ALEMBIC_EMBEDDING_MODEL` (default text-embedding-3-small).
//!
//! Every key is optional; a missing key keeps the default. An unknown key or a value of the
//! wrong kind is an error that names the key and what it accepts, so a typo never silently
//! falls back to a default. Parsed by hand rather than through serde so each message can
//! say which key was wrong and which values are accepted.
//!
//! ```
//! use alembic_runtime::{ProjectConfig, memory_config::memory_settings};
//! let config = ProjectConfig::parse("[memory]\nmax_memories = 50\n", None).unwrap();
//! assert_eq!(memory_settings(&config).unwrap().memory.max_per_scope, 50);
//! ```

use std::path::{Path, PathBuf};

use alembic_memory::{EmbedderConfig, MemoryConfig, Ranking};

use crate::config::{ConfigError, ProjectConfig};

/// The environment variable that overrides the `embedder` key.
pub const EMBEDDINGS_VAR: &str = "ALEMBIC_EMBEDDINGS";

/// Keys of `[memory]`, as listed in error messages.
pub const KEYS: &[&str] = &[
    "max_memories",
    "archive_days",
    "forget_days",
    "weight_recency",
    "weight_importance",
    "weight_relevance",
    "recency_half_life_days",
    "ranking",
    "embedder",
    "embedder_model_dir",
    "embedder_url",
    "embedder_model",
    "max_budget_tokens",
    "extract_from_conversations",
];

/// Default OpenAI-compatible endpoint and model for `embedder = "openai"`.
const OPENAI_URL: &str = "https://api.openai.com/v1";
const OPENAI_MODEL: &str = "text-embedding-3-small";

/// What `[memory]` says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemorySettings {
    pub memory: MemoryConfig,
    /// The embedder the section chooses; `None` when it has no `embedder` key (callers
    /// then apply their own default, e.g. the local model when it is installed).
    pub embedder: Option<EmbedderConfig>,
    /// How the agent uses memory.
    pub agent: AgentMemorySettings,
}

/// The agent's side of `[memory]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMemorySettings {
    /// `max_budget_tokens`: caps the memory budget a run takes from the model's context
    /// (12.5 % of it); `None` keeps the 12.5 %.
    pub max_budget_tokens: Option<usize>,
    /// `extract_from_conversations` (default true): at the end of `ask` and `chat` runs,
    /// findings and stated preferences become candidate memories.
    pub extract_from_conversations: bool,
}

impl Default for AgentMemorySettings {
    fn default() -> Self {
        AgentMemorySettings {
            max_budget_tokens: None,
            extract_from_conversations: true,
        }
    }
}

/// Reads the `[memory]` section of `config` (defaults when there is none).
pub fn memory_settings(config: &ProjectConfig) -> Result<MemorySettings, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: config
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("config.toml")),
        message,
    };
    let Some(section) = config.section("memory") else {
        return Ok(MemorySettings::default());
    };
    let table = section
        .as_table()
        .ok_or_else(|| invalid("[memory] must be a table of settings".to_string()))?;
    parse_table(table).map_err(invalid)
}

fn parse_table(table: &toml::Table) -> Result<MemorySettings, String> {
    let mut m = MemoryConfig::default();
    let mut agent = AgentMemorySettings::default();
    for (key, value) in table {
        let v = Value { key, value };
        match key.as_str() {
            "max_memories" => m.max_per_scope = v.count()?,
            "archive_days" => m.archive_after_days = v.positive()?,
            "forget_days" => m.forget_after_days = v.positive()?,
            "weight_recency" => m.retrieval.weight_recency = v.weight()?,
            "weight_importance" => m.retrieval.weight_importance = v.weight()?,
            "weight_relevance" => m.retrieval.weight_relevance = v.weight()?,
            "recency_half_life_days" => m.retrieval.recency_half_life_days = v.positive()?,
            "ranking" => m.retrieval.ranking = v.ranking()?,
            "max_budget_tokens" => agent.max_budget_tokens = Some(v.count()?),
            "extract_from_conversations" => agent.extract_from_conversations = v.flag()?,
            "embedder" | "embedder_model_dir" | "embedder_url" | "embedder_model" => {}
            other => {
                return Err(format!(
                    "[memory] has no setting {other:?}; accepted: {}",
                    KEYS.join(", ")
                ));
            }
        }
    }
    if m.forget_after_days < m.archive_after_days {
        return Err(format!(
            "[memory] forget_days ({}) is shorter than archive_days ({}); a memory is archived first, then forgotten",
            m.forget_after_days, m.archive_after_days
        ));
    }
    let r = &m.retrieval;
    if r.weight_recency + r.weight_importance + r.weight_relevance <= 0.0 {
        return Err(
            "[memory] weight_recency, weight_importance and weight_relevance are all 0; at least one must be positive"
                .to_string(),
        );
    }
    Ok(MemorySettings {
        memory: m,
        embedder: embedder(table)?,
        agent,
    })
}

/// One key and its value, for typed reads with messages that name the key.
struct Value<'a> {
    key: &'a str,
    value: &'a toml::Value,
}

impl<'a> Value<'a> {
    fn bad(&self, accepted: &str) -> String {
        format!(
            "[memory] {} = {}: accepted {accepted}",
            self.key, self.value
        )
    }

    fn number(&self) -> Option<f64> {
        match self.value {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) if f.is_finite() => Some(*f),
            _ => None,
        }
    }

    /// A whole number ≥ 1.
    fn count(&self) -> Result<usize, String> {
        match self.value {
            toml::Value::Integer(i) if *i >= 1 => Ok(*i as usize),
            _ => Err(self.bad("a whole number of at least 1")),
        }
    }

    fn flag(&self) -> Result<bool, String> {
        self.value
            .as_bool()
            .ok_or_else(|| self.bad("true or false"))
    }

    /// A number > 0 (days).
    fn positive(&self) -> Result<f64, String> {
        self.number()
            .filter(|n| *n > 0.0)
            .ok_or_else(|| self.bad("a number of days greater than 0"))
    }

    /// A number in 0..=1 (score weights).
    fn weight(&self) -> Result<f64, String> {
        self.number()
            .filter(|n| (0.0..=1.0).contains(n))
            .ok_or_else(|| self.bad("a number from 0 to 1"))
    }

    fn ranking(&self) -> Result<Ranking, String> {
        match self.value.as_str() {
            Some("banded") => Ok(Ranking::Banded),
            Some("weighted") => Ok(Ranking::Weighted),
            Some("relevance_only") => Ok(Ranking::RelevanceOnly),
            _ => Err(self.bad("\"banded\", \"weighted\" or \"relevance_only\"")),
        }
    }

    fn text(&self) -> Result<&'a str, String> {
        self.value.as_str().ok_or_else(|| self.bad("a string"))
    }
}

/// The embedder keys: `embedder = "none" | "local" | "openai"`, `embedder_model_dir` for
/// local (default: where `scripts/fetch-models` installs the model), `embedder_url` and
/// `embedder_model` for openai (the key comes from `OPENAI_API_KEY`, never from the file).
fn embedder(table: &toml::Table) -> Result<Option<EmbedderConfig>, String> {
    let get = |key: &'static str| -> Result<Option<&str>, String> {
        table
            .get(key)
            .map(|value| Value { key, value }.text())
            .transpose()
    };
    let (dir, url, model) = (
        get("embedder_model_dir")?,
        get("embedder_url")?,
        get("embedder_model")?,
    );
    let Some(choice) = table.get("embedder") else {
        return Ok(None);
    };
    let choice = Value {
        key: "embedder",
        value: choice,
    };
    let accepted = "\"none\", \"local\" or \"openai\"";
    Ok(Some(match choice.value.as_str() {
        Some("none") => EmbedderConfig::None,
        Some("local") => EmbedderConfig::Local {
            dir: dir
                .map(PathBuf::from)
                .or_else(alembic_memory::default_model_dir)
                .ok_or_else(|| {
                    "[memory] embedder = \"local\": no model directory; set embedder_model_dir or ALEMBIC_MINILM_DIR"
                        .to_string()
                })?,
        },
        Some("openai") => EmbedderConfig::OpenAi {
            base_url: url.unwrap_or(OPENAI_URL).to_string(),
            api_key: std::env::var("OPENAI_API_KEY").ok(),
            model: model.unwrap_or(OPENAI_MODEL).to_string(),
        },
        _ => return Err(choice.bad(accepted)),
    }))
}

/// The embedder of the project's memory: `ALEMBIC_EMBEDDINGS`, else `configured` (the
/// section's `embedder` key), else the local model when it is installed (see the module docs).
/// An unsupported `ALEMBIC_EMBEDDINGS` value is a configuration error, never a silent default.
pub fn memory_embedder(configured: Option<EmbedderConfig>) -> Result<EmbedderConfig, ConfigError> {
    let env = |name: &str| std::env::var(name).ok();
    resolve_embedder(configured, &env, alembic_memory::default_model_dir())
}

/// [`memory_embedder`] with the environment and the local model directory given.
fn resolve_embedder(
    configured: Option<EmbedderConfig>,
    env: &dyn Fn(&str) -> Option<String>,
    model_dir: Option<PathBuf>,
) -> Result<EmbedderConfig, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: PathBuf::from(EMBEDDINGS_VAR),
        message,
    };
    let choice = match (env(EMBEDDINGS_VAR), configured) {
        (Some(choice), _) => choice,
        (None, Some(configured)) => return Ok(configured),
        (None, None) => "auto".into(),
    };
    Ok(match choice.as_str() {
        "none" => EmbedderConfig::None,
        "auto" => model_dir
            .filter(|d| installed(d))
            .map_or(EmbedderConfig::None, |dir| EmbedderConfig::Local { dir }),
        "local" => EmbedderConfig::Local {
            dir: model_dir.ok_or_else(|| {
                invalid("cannot locate the local model directory; set ALEMBIC_MINILM_DIR".into())
            })?,
        },
        "openai" => EmbedderConfig::OpenAi {
            base_url: env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_URL.into()),
            api_key: env("OPENAI_API_KEY"),
            model: env("ALEMBIC_EMBEDDING_MODEL").unwrap_or_else(|| OPENAI_MODEL.into()),
        },
        other => {
            return Err(invalid(format!(
                "{other:?} is not supported; accepted: auto, none, local, openai"
            )));
        }
    })
}

/// True when `scripts/fetch-models` has installed the local model in `dir`.
fn installed(dir: &Path) -> bool {
    dir.join("model.safetensors").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<MemorySettings, String> {
        let config = ProjectConfig::parse(text, Some("/p/.alembic/config.toml".into()))
            .map_err(|e| e.to_string())?;
        memory_settings(&config).map_err(|e| e.to_string())
    }

    #[test]
    fn no_section_and_the_template_mean_the_defaults() {
        assert_eq!(parse("").unwrap(), MemorySettings::default());
        assert_eq!(
            parse(crate::DEFAULT_CONFIG).unwrap(),
            MemorySettings::default()
        );
    }

    #[test]
    fn every_key_is_read() {
        let s = parse(
            "[memory]\nmax_memories = 50\narchive_days = 10\nforget_days = 20.5\n\
             weight_recency = 0\nweight_importance = 0.25\nweight_relevance = 0.75\n\
             recency_half_life_days = 3\nranking = \"weighted\"\n\
             embedder = \"openai\"\nembedder_url = \"http://localhost:9/v1\"\nembedder_model = \"e5\"\n",
        )
        .unwrap();
        let m = &s.memory;
        assert_eq!(
            (m.max_per_scope, m.archive_after_days, m.forget_after_days),
            (50, 10.0, 20.5)
        );
        let r = &m.retrieval;
        assert_eq!(
            (
                r.weight_recency,
                r.weight_importance,
                r.weight_relevance,
                r.recency_half_life_days,
                r.ranking
            ),
            (0.0, 0.25, 0.75, 3.0, Ranking::Weighted)
        );
        match s.embedder {
            Some(EmbedderConfig::OpenAi {
                base_url, model, ..
            }) => {
                assert_eq!(
                    (base_url.as_str(), model.as_str()),
                    ("http://localhost:9/v1", "e5")
                )
            }
            other => panic!("expected openai, got {other:?}"),
        }
        let local = parse("[memory]\nembedder = \"local\"\nembedder_model_dir = \"/m\"\n").unwrap();
        assert_eq!(
            local.embedder,
            Some(EmbedderConfig::Local { dir: "/m".into() })
        );
        assert_eq!(
            parse("[memory]\nembedder = \"none\"\n").unwrap().embedder,
            Some(EmbedderConfig::None)
        );
    }

    #[test]
    fn the_agent_keys_are_read() {
        let s = parse("[memory]\nmax_budget_tokens = 32000\nextract_from_conversations = false\n")
            .unwrap();
        assert_eq!(
            s.agent,
            AgentMemorySettings {
                max_budget_tokens: Some(32_000),
                extract_from_conversations: false
            }
        );
        assert_eq!(
            parse("[memory]\nextract_from_conversations = \"no\"\n").unwrap_err(),
            "/p/.alembic/config.toml is not valid: [memory] extract_from_conversations = \"no\": accepted true or false"
        );
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_accepted() {
        let cases = [
            (
                "[memory]\nmax_memories = \"lots\"\n",
                "/p/.alembic/config.toml is not valid: [memory] max_memories = \"lots\": accepted a whole number of at least 1",
            ),
            (
                "[memory]\nmax_memories = 0\n",
                "/p/.alembic/config.toml is not valid: [memory] max_memories = 0: accepted a whole number of at least 1",
            ),
            (
                "[memory]\narchive_days = -1\n",
                "/p/.alembic/config.toml is not valid: [memory] archive_days = -1: accepted a number of days greater than 0",
            ),
            (
                "[memory]\nweight_recency = 2\n",
                "/p/.alembic/config.toml is not valid: [memory] weight_recency = 2: accepted a number from 0 to 1",
            ),
            (
                "[memory]\nranking = \"best\"\n",
                "/p/.alembic/config.toml is not valid: [memory] ranking = \"best\": accepted \"banded\", \"weighted\" or \"relevance_only\"",
            ),
            (
                "[memory]\nembedder = \"bert\"\n",
                "/p/.alembic/config.toml is not valid: [memory] embedder = \"bert\": accepted \"none\", \"local\" or \"openai\"",
            ),
            (
                "[memory]\nforget_days = 10\n",
                "/p/.alembic/config.toml is not valid: [memory] forget_days (10) is shorter than archive_days (30); a memory is archived first, then forgotten",
            ),
            (
                "[memory]\nmemories_max = 10\n",
                "/p/.alembic/config.toml is not valid: [memory] has no setting \"memories_max\"; accepted: max_memories, archive_days, forget_days, weight_recency, weight_importance, weight_relevance, recency_half_life_days, ranking, embedder, embedder_model_dir, embedder_url, embedder_model, max_budget_tokens, extract_from_conversations",
            ),
            (
                "memory = 3\n",
                "/p/.alembic/config.toml is not valid: [memory] must be a table of settings",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).unwrap_err(), expected, "{text}");
        }
    }

    fn resolve(
        configured: Option<EmbedderConfig>,
        vars: &[(&str, &str)],
        model_dir: Option<PathBuf>,
    ) -> Result<EmbedderConfig, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        resolve_embedder(configured, &env, model_dir).map_err(|e| e.to_string())
    }

    #[test]
    fn the_embedder_follows_the_documented_precedence() {
        let installed = tempfile::tempdir().unwrap();
        std::fs::write(installed.path().join("model.safetensors"), b"").unwrap();
        let local = || EmbedderConfig::Local {
            dir: installed.path().to_path_buf(),
        };
        let configured = || {
            Some(EmbedderConfig::OpenAi {
                base_url: "http://x/v1".into(),
                api_key: None,
                model: "m".into(),
            })
        };
        let dir = || Some(installed.path().to_path_buf());
        // The variable wins over the key, the key over the installed model.
        assert_eq!(
            resolve(configured(), &[("ALEMBIC_EMBEDDINGS", "none")], dir()),
            Ok(EmbedderConfig::None)
        );
        assert_eq!(resolve(configured(), &[], dir()), Ok(configured().unwrap()));
        assert_eq!(resolve(None, &[], dir()), Ok(local()));
        assert_eq!(
            resolve(None, &[("ALEMBIC_EMBEDDINGS", "auto")], dir()),
            Ok(local())
        );
        // Without the installed model, the default is lexical.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            resolve(None, &[], Some(empty.path().to_path_buf())),
            Ok(EmbedderConfig::None)
        );
        assert_eq!(
            resolve(
                Some(EmbedderConfig::None),
                &[("ALEMBIC_EMBEDDINGS", "local")],
                dir()
            ),
            Ok(local())
        );
        let openai = resolve(
            None,
            &[
                ("ALEMBIC_EMBEDDINGS", "openai"),
                ("OPENAI_BASE_URL", "http://localhost:9/v1"),
                ("OPENAI_API_KEY", "k"),
            ],
            None,
        );
        assert_eq!(
            openai,
            Ok(EmbedderConfig::OpenAi {
                base_url: "http://localhost:9/v1".into(),
                api_key: Some("k".into()),
                model: "text-embedding-3-small".into(),
            })
        );
    }

    #[test]
    fn an_unsupported_embeddings_variable_is_an_error() {
        assert_eq!(
            resolve(None, &[("ALEMBIC_EMBEDDINGS", "bert")], None),
            Err("ALEMBIC_EMBEDDINGS is not valid: \"bert\" is not supported; accepted: auto, none, local, openai".into())
        );
        assert_eq!(
            resolve(None, &[("ALEMBIC_EMBEDDINGS", "local")], None),
            Err("ALEMBIC_EMBEDDINGS is not valid: cannot locate the local model directory; set ALEMBIC_MINILM_DIR".into())
        );
    }
}
