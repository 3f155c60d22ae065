//! Provider resolution from the `[llm]` file section, the environment and command-line overrides.

use std::collections::HashMap;
use std::path::Path;

use alembic_llm::{
    ConfigError, ConfigOverrides, LlmFileSettings, ProviderConfig, ProviderKind, read_llm_settings,
    resolve_provider_config,
};
use pretty_assertions::assert_eq;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const PATH: &str = "/home/dev/.config/alembic/config.toml";

fn resolve(
    file: Option<&LlmFileSettings>,
    pairs: &[(&str, &str)],
    overrides: &ConfigOverrides,
) -> Result<ProviderConfig, ConfigError> {
    resolve_provider_config(file, Some(Path::new(PATH)), &env(pairs), overrides)
}

/// (provider, model, base url, key present)
fn summary(config: &ProviderConfig) -> (ProviderKind, String, String, bool) {
    (
        config.kind,
        config.model.clone(),
        config.base_url.clone(),
        config.api_key.is_some(),
    )
}

#[test]
fn nothing_configured_says_exactly_what_to_set() {
    let error = resolve(
        None,
        &[("OPENAI_API_KEY", "  ")],
        &ConfigOverrides::default(),
    )
    .unwrap_err();
    insta::assert_snapshot!("nothing_configured", error.to_string());
}

#[test]
fn the_first_key_in_the_environment_picks_the_provider() {
    let config = resolve(
        None,
        &[("GEMINI_API_KEY", "g"), ("ANTHROPIC_API_KEY", "a")],
        &ConfigOverrides::default(),
    )
    .unwrap();
    assert_eq!(
        summary(&config),
        (
            ProviderKind::Anthropic,
            "claude-sonnet-4-20250514".into(),
            "https://api.anthropic.com".into(),
            true
        )
    );
    let config = resolve(
        None,
        &[("DEEPSEEK_API_KEY", "d")],
        &ConfigOverrides::default(),
    )
    .unwrap();
    assert_eq!(
        summary(&config),
        (
            ProviderKind::DeepSeek,
            "deepseek-chat".into(),
            "https://api.deepseek.com".into(),
            true
        )
    );
}

#[test]
fn base_url_variables_redirect_the_provider() {
    let pairs = [
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
    ];
    let config = resolve(None, &pairs, &ConfigOverrides::default()).unwrap();
    assert_eq!(
        summary(&config),
        (
            ProviderKind::OpenAi,
            "gpt-5.4-mini".into(),
            "http://127.0.0.1:8000/v1".into(),
            true
        )
    );
}

#[test]
fn a_keyless_local_server_needs_only_its_url_and_a_model() {
    let pairs = [("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")];
    let error = resolve(None, &pairs, &ConfigOverrides::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider openai-compatible needs a model: set --model or model in [llm]"
    );
    let overrides = ConfigOverrides {
        provider: None,
        model: Some("qwen3:8b".into()),
    };
    let config = resolve(None, &pairs, &overrides).unwrap();
    assert_eq!(
        summary(&config),
        (
            ProviderKind::OpenAiCompatible,
            "qwen3:8b".into(),
            "http://127.0.0.1:11434/v1".into(),
            false
        )
    );
}

#[test]
fn a_chosen_provider_without_its_key_names_the_variable() {
    let overrides = ConfigOverrides {
        provider: Some(ProviderKind::Gemini),
        model: None,
    };
    let error = resolve(None, &[("OPENAI_API_KEY", "k")], &overrides).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "provider gemini needs an api key: set GEMINI_API_KEY (or name another variable with api_key_env in the [llm] section of {PATH})"
        )
    );
}

#[test]
fn file_settings_choose_provider_model_and_key_variable() {
    let file = LlmFileSettings {
        provider: Some("deepseek".into()),
        model: Some("deepseek-reasoner".into()),
        api_key_env: Some("WORK_DEEPSEEK_KEY".into()),
        timeout_secs: Some(60),
        max_retries: Some(1),
        ..LlmFileSettings::default()
    };
    let config = resolve(
        Some(&file),
        &[("WORK_DEEPSEEK_KEY", "sk-secret-value")],
        &ConfigOverrides::default(),
    )
    .unwrap();
    assert_eq!(
        summary(&config),
        (
            ProviderKind::DeepSeek,
            "deepseek-reasoner".into(),
            "https://api.deepseek.com".into(),
            true
        )
    );
    assert_eq!(
        (config.request_timeout.as_secs(), config.retry.max_retries),
        (60, 1)
    );
    assert!(!format!("{config:?}").contains("sk-secret-value"));
}

#[test]
fn command_line_wins_and_ignores_file_settings_for_another_provider() {
    let file = LlmFileSettings {
        provider: Some("openai".into()),
        model: Some("gpt-x".into()),
        ..LlmFileSettings::default()
    };
    let overrides = ConfigOverrides {
        provider: Some(ProviderKind::Anthropic),
        model: None,
    };
    let config = resolve(
        Some(&file),
        &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")],
        &overrides,
    )
    .unwrap();
    assert_eq!(config.model, "claude-sonnet-4-20250514");
}

#[test]
fn unknown_provider_names_are_refused_with_the_accepted_ones() {
    let file = LlmFileSettings {
        provider: Some("mistral".into()),
        ..LlmFileSettings::default()
    };
    let error = resolve(Some(&file), &[], &ConfigOverrides::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown llm provider \"mistral\": expected openai, anthropic, gemini, deepseek or openai-compatible"
    );
    assert_eq!(
        "Ollama".parse::<ProviderKind>().unwrap(),
        ProviderKind::OpenAiCompatible
    );
}

#[test]
fn the_llm_section_is_read_from_the_user_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    assert_eq!(
        read_llm_settings(&path).unwrap(),
        None,
        "a missing file is no settings"
    );
    std::fs::write(
        &path,
        "[ui]\ncolor = true\n\n[llm]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\n",
    )
    .unwrap();
    let settings = read_llm_settings(&path).unwrap().unwrap();
    assert_eq!(
        (settings.provider.as_deref(), settings.model.as_deref()),
        (Some("anthropic"), Some("claude-x"))
    );

    std::fs::write(&path, "[llm]\napi_key = \"sk-oops\"\n").unwrap();
    let error = read_llm_settings(&path).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("could not parse {}", path.display())),
        "{error}"
    );
    assert!(error.contains("unknown field `api_key`"), "{error}");
}

#[test]
fn the_summary_line_never_shows_the_key() {
    let config = resolve(
        None,
        &[("ANTHROPIC_API_KEY", "sk-ant-secret")],
        &ConfigOverrides::default(),
    )
    .unwrap();
    assert_eq!(
        config.summary(),
        "anthropic claude-sonnet-4-20250514 at https://api.anthropic.com (key set)"
    );
}
