//! Which provider to use, from the user config file (`$XDG_CONFIG_HOME/alembic/config.toml`,
//! section `[llm]`) and the environment. Keys are only ever read from environment variables and
//! are never printed.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::anthropic::AnthropicWire;
use crate::breaker::BreakerPolicy;
use crate::gemini::GeminiWire;
use crate::openai::{MaxTokensField, OpenAiWire};
use crate::retry::RetryPolicy;
use crate::wire::WireFormat;

/// The vendors (and wire formats) Alembic can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
    Gemini,
    DeepSeek,
    /// Any other server speaking OpenAI Chat Completions (vLLM, Ollama, llama.cpp): needs a base
    /// URL and a model; the key is optional.
    OpenAiCompatible,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 5] = [
        Self::OpenAi,
        Self::Anthropic,
        Self::Gemini,
        Self::DeepSeek,
        Self::OpenAiCompatible,
    ];

    /// The name used in config files, `--provider` and errors.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::DeepSeek => "deepseek",
            Self::OpenAiCompatible => "openai-compatible",
        }
    }

    /// The environment variable holding the key, unless the config names another.
    pub fn key_env(self) -> &'static str {
        match self {
            Self::OpenAi | Self::OpenAiCompatible => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::Gemini => "GEMINI_API_KEY",
            Self::DeepSeek => "DEEPSEEK_API_KEY",
        }
    }

    /// The environment variable that overrides the base URL.
    pub fn base_url_env(self) -> &'static str {
        match self {
            Self::OpenAi | Self::OpenAiCompatible => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::Gemini => "GEMINI_BASE_URL",
            Self::DeepSeek => "DEEPSEEK_BASE_URL",
        }
    }

    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("https://api.openai.com/v1"),
            Self::Anthropic => Some("https://api.anthropic.com"),
            Self::Gemini => Some("https://generativelanguage.googleapis.com"),
            Self::DeepSeek => Some("https://api.deepseek.com"),
            Self::OpenAiCompatible => None,
        }
    }

    /// The model used when none is configured.
    pub fn default_model(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("gpt-5.4-mini"),
            Self::Anthropic => Some("claude-sonnet-4-20250514"),
            Self::Gemini => Some("gemini-3-flash-preview"),
            Self::DeepSeek => Some("deepseek-chat"),
            Self::OpenAiCompatible => None,
        }
    }

    pub(crate) fn wire_format(self) -> Arc<dyn WireFormat> {
        match self {
            Self::OpenAi => Arc::new(OpenAiWire {
                max_tokens_field: MaxTokensField::MaxCompletionTokens,
            }),
            Self::DeepSeek | Self::OpenAiCompatible => Arc::new(OpenAiWire {
                max_tokens_field: MaxTokensField::MaxTokens,
            }),
            Self::Anthropic => Arc::new(AnthropicWire),
            Self::Gemini => Arc::new(GeminiWire::default()),
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProviderKind {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let normalised = value.trim().to_ascii_lowercase();
        match normalised.as_str() {
            "openai" => Ok(Self::OpenAi),
            "anthropic" | "claude" => Ok(Self::Anthropic),
            "gemini" | "google" => Ok(Self::Gemini),
            "deepseek" => Ok(Self::DeepSeek),
            "openai-compatible" | "compatible" | "ollama" | "vllm" | "llama.cpp" | "llamacpp" => {
                Ok(Self::OpenAiCompatible)
            }
            _ => Err(ConfigError::UnknownProvider {
                value: value.to_owned(),
            }),
        }
    }
}

/// An API key. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that puts it in a header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Everything needed to build a provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Whole request for non-streamed calls; until the response headers for streamed ones.
    pub request_timeout: Duration,
    /// Longest silence between two chunks of a stream.
    pub stream_idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
    pub breaker: BreakerPolicy,
    /// Requests of this provider in flight at once; more wait their turn.
    pub max_concurrency: usize,
}

impl ProviderConfig {
    /// A config with default timeouts, retries and breaker.
    pub fn new(
        kind: ProviderKind,
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<ApiKey>,
    ) -> Self {
        Self {
            kind,
            model: model.into(),
            base_url: base_url.into(),
            api_key,
            request_timeout: Duration::from_secs(300),
            stream_idle_timeout: Duration::from_secs(90),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            breaker: BreakerPolicy::default(),
            max_concurrency: 4,
        }
    }
}

impl ProviderConfig {
    /// One line for traces and `--verbose` output: provider, model, endpoint, whether a key is
    /// set. Never the key.
    pub fn summary(&self) -> String {
        let key = if self.api_key.is_some() {
            "key set"
        } else {
            "no key"
        };
        format!("{} {} at {} ({key})", self.kind, self.model, self.base_url)
    }
}

/// The `[llm]` section of the user config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmFileSettings {
    /// openai | anthropic | gemini | deepseek | openai-compatible
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key (the key itself never goes in the file).
    pub api_key_env: Option<String>,
    pub timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
    pub max_concurrency: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct UserConfigFile {
    #[serde(default)]
    llm: Option<LlmFileSettings>,
}

/// Reads environment variables; tests pass a map instead of touching the process environment.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl EnvSource for std::collections::HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// Choices made on the command line, which win over the file and the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigOverrides {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
}

/// Why no provider could be configured.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", nothing_configured_text(config_path.as_deref()))]
    NothingConfigured { config_path: Option<PathBuf> },
    #[error(
        "provider {provider} needs an api key: set {env_var}{}",
        config_path.as_ref().map(|p| format!(" (or name another variable with api_key_env in the [llm] section of {})", p.display())).unwrap_or_default()
    )]
    MissingKey {
        provider: ProviderKind,
        env_var: String,
        config_path: Option<PathBuf>,
    },
    #[error("provider {provider} needs {what}: set {how}")]
    MissingSetting {
        provider: ProviderKind,
        what: &'static str,
        how: String,
    },
    #[error(
        "unknown llm provider \"{value}\": expected openai, anthropic, gemini, deepseek or openai-compatible"
    )]
    UnknownProvider { value: String },
    #[error("could not read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not parse {}: {source}", path.display())]
    ParseFile {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
}

fn nothing_configured_text(config_path: Option<&Path>) -> String {
    let path = config_path.map_or_else(
        || "$XDG_CONFIG_HOME/alembic/config.toml".to_owned(),
        |p| p.display().to_string(),
    );
    format!(
        "no llm provider is configured; set one of these environment variables:\n\
         \x20 OPENAI_API_KEY     (OPENAI_BASE_URL for another server speaking the OpenAI API: vLLM, Ollama, llama.cpp)\n\
         \x20 ANTHROPIC_API_KEY  (optional ANTHROPIC_BASE_URL)\n\
         \x20 GEMINI_API_KEY     (optional GEMINI_BASE_URL)\n\
         \x20 DEEPSEEK_API_KEY\n\
         or add an [llm] section to {path}:\n\
         \x20 [llm]\n\
         \x20 provider = \"openai\"            # openai | anthropic | gemini | deepseek | openai-compatible\n\
         \x20 model = \"gpt-5.4-mini\"\n\
         \x20 api_key_env = \"OPENAI_API_KEY\"  # the variable holding the key; never the key itself"
    )
}

/// `$XDG_CONFIG_HOME/alembic/config.toml` (`~/.config/alembic/config.toml` on Linux).
pub fn user_config_path() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|dirs| dirs.config_dir().join("alembic").join("config.toml"))
}

/// Reads the `[llm]` section of a config file; a missing file or section is `None`. Other
/// sections belong to other parts of Alembic and are ignored here.
pub fn read_llm_settings(path: &Path) -> Result<Option<LlmFileSettings>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::ReadFile {
                path: path.to_owned(),
                source,
            });
        }
    };
    let file: UserConfigFile = toml::from_str(&text).map_err(|source| ConfigError::ParseFile {
        path: path.to_owned(),
        source: Box::new(source),
    })?;
    Ok(file.llm)
}

/// Resolves the provider from the user config file and the process environment.
pub fn load_provider_config(overrides: &ConfigOverrides) -> Result<ProviderConfig, ConfigError> {
    let path = user_config_path();
    let settings = match &path {
        Some(path) => read_llm_settings(path)?,
        None => None,
    };
    resolve_provider_config(settings.as_ref(), path.as_deref(), &ProcessEnv, overrides)
}

/// Resolves the provider: command line, then the `[llm]` file section, then the environment.
///
/// Without an explicit provider, the first key found among `OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `DEEPSEEK_API_KEY` picks it (`OPENAI_BASE_URL` alone
/// picks a keyless OpenAI-compatible server). File settings apply only when the file names the
/// same provider (or none).
pub fn resolve_provider_config(
    file: Option<&LlmFileSettings>,
    file_path: Option<&Path>,
    env: &dyn EnvSource,
    overrides: &ConfigOverrides,
) -> Result<ProviderConfig, ConfigError> {
    let env_value = |name: &str| {
        env.var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let file_kind = file
        .and_then(|f| f.provider.as_deref())
        .map(ProviderKind::from_str)
        .transpose()?;
    let kind = match overrides.provider.or(file_kind) {
        Some(kind) => kind,
        None => detect_from_env(&env_value).ok_or_else(|| ConfigError::NothingConfigured {
            config_path: file_path.map(Path::to_owned),
        })?,
    };
    let file = file.filter(|_| file_kind.is_none() || file_kind == Some(kind));
    let key_env = file
        .and_then(|f| f.api_key_env.clone())
        .unwrap_or_else(|| kind.key_env().to_owned());
    let explicit_base = file
        .and_then(|f| f.base_url.clone())
        .or_else(|| env_value(kind.base_url_env()));
    let api_key = env_value(&key_env).map(ApiKey::new);
    // A server at an explicit address (local vLLM/Ollama, a proxy) may not want a key.
    if api_key.is_none() && explicit_base.is_none() {
        return Err(ConfigError::MissingKey {
            provider: kind,
            env_var: key_env,
            config_path: file_path.map(Path::to_owned),
        });
    }
    let base_url = base_url_for(kind, explicit_base)?;
    let model = model_for(kind, overrides, file)?;
    let mut config = ProviderConfig::new(kind, model, base_url, api_key);
    apply_file_tuning(&mut config, file);
    Ok(config)
}

fn base_url_for(kind: ProviderKind, explicit: Option<String>) -> Result<String, ConfigError> {
    explicit
        .or_else(|| kind.default_base_url().map(str::to_owned))
        .ok_or_else(|| ConfigError::MissingSetting {
            provider: kind,
            what: "a base url",
            how: format!("{} or base_url in [llm]", kind.base_url_env()),
        })
}

fn model_for(
    kind: ProviderKind,
    overrides: &ConfigOverrides,
    file: Option<&LlmFileSettings>,
) -> Result<String, ConfigError> {
    overrides
        .model
        .clone()
        .or_else(|| file.and_then(|f| f.model.clone()))
        .or_else(|| kind.default_model().map(str::to_owned))
        .ok_or_else(|| ConfigError::MissingSetting {
            provider: kind,
            what: "a model",
            how: "--model or model in [llm]".into(),
        })
}

/// Timeout, retries and concurrency from the file, when set there.
fn apply_file_tuning(config: &mut ProviderConfig, file: Option<&LlmFileSettings>) {
    let Some(file) = file else { return };
    if let Some(secs) = file.timeout_secs {
        config.request_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(retries) = file.max_retries {
        config.retry.max_retries = retries;
    }
    if let Some(slots) = file.max_concurrency {
        config.max_concurrency = slots.max(1);
    }
}

fn detect_from_env(env_value: &dyn Fn(&str) -> Option<String>) -> Option<ProviderKind> {
    let by_key = [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::DeepSeek,
    ]
    .into_iter()
    .find(|kind| env_value(kind.key_env()).is_some());
    by_key.or_else(|| env_value("OPENAI_BASE_URL").map(|_| ProviderKind::OpenAiCompatible))
}
