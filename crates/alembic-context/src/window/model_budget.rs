//! Context sizes of known models and the token budget a run gets from them.
//!
//! The reference table (ref-memory §8.2) matched unanchored substrings (`o1|o3|o4` was checked
//! before every Claude, Llama or Qwen name) and gave every Gemini name 1M tokens. Here the
//! patterns use word boundaries, are ordered most specific first, and the table is brought up
//! to date (GPT-4.1, GPT-5.x, Claude 4.6, Gemini 3, Llama 4, gpt-oss, Qwen3-Coder).

use std::sync::LazyLock;

use regex::Regex;

/// Context size used when the model is unknown or not given.
pub const DEFAULT_CONTEXT: usize = 32_000;

/// Who the run is for: system runs (bootstrap, analysis) get a larger history budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    System,
    User,
}

const TABLE: &[(&str, usize)] = &[
    (r"\bgemini-1\.0\b|\bgemini-pro\b$", 32_000),
    (r"\bgemini\b", 1_000_000),
    (r"\bgpt-5\.[4-9]-(mini|nano)\b", 400_000),
    (r"\bgpt-5\.[4-9]\b", 1_000_000),
    (r"\bgpt-5\b", 400_000),
    (r"\bgpt-4\.1\b", 1_000_000),
    (r"\bgpt-4o\b", 128_000),
    (r"\bgpt-4-turbo\b", 128_000),
    (r"\bgpt-4\b", 8_192),
    (r"\bgpt-3\.5-turbo\b", 16_385),
    (r"\bgpt-oss\b", 131_072),
    (r"\bo[134](-mini|-pro)?\b", 200_000),
    (r"\bclaude-(opus|sonnet)-4[.-]6\b", 1_000_000),
    (r"\bclaude\b", 200_000),
    (r"\bdeepseek\b", 128_000),
    (r"\bllama-?4\b", 1_000_000),
    (r"\bllama-?3[.-]?[1-3]\b", 128_000),
    (r"\bllama-?3\b", 8_192),
    (r"\bllama\b", 4_096),
    (r"\b(codestral|devstral)\b", 256_000),
    (r"\bmistral-(large|medium)\b", 128_000),
    (r"\b(mistral|mixtral)\b", 32_000),
    (r"\bqwen3-coder\b", 256_000),
    (r"\bqwen", 128_000),
    (r"\bphi-?[34]", 128_000),
    (r"\bmock\b", 32_000),
];

static COMPILED: LazyLock<Vec<(Regex, usize)>> = LazyLock::new(|| {
    TABLE
        .iter()
        // The table is constant and every entry is covered by a test; a bad entry is skipped
        // rather than panicking in a library.
        .filter_map(|(p, n)| Regex::new(&format!("(?i){p}")).ok().map(|r| (r, *n)))
        .collect()
});

/// Context size in tokens of `model` (provider prefixes such as `openai/` are ignored).
pub fn context_size(model: &str) -> usize {
    let name = model.trim().rsplit('/').next().unwrap_or(model);
    if name.is_empty() {
        return DEFAULT_CONTEXT;
    }
    COMPILED
        .iter()
        .find(|(re, _)| re.is_match(name))
        .map_or(DEFAULT_CONTEXT, |(_, n)| *n)
}

/// History budget of a run on a model of `context` tokens.
///
/// Budgets are cost caps as much as capacity limits: a 1M-token model gets 96k for a system
/// run, not 1M (the reference capped every model at 48k; bigger windows now get more).
pub fn budget_for_context(context: usize, kind: RunKind) -> usize {
    let (system, user) = match context {
        c if c >= 1_000_000 => (96_000, 64_000),
        c if c >= 400_000 => (48_000, 36_000),
        c if c >= 200_000 => (32_000, 24_000),
        c if c >= 64_000 => (24_000, 20_000),
        c if c >= 16_000 => (14_000, 12_000),
        c => (c * 3 / 4, c * 13 / 20),
    };
    match kind {
        RunKind::System => system,
        RunKind::User => user,
    }
}

/// History budget of a run on `model`.
pub fn token_budget(model: &str, kind: RunKind) -> usize {
    budget_for_context(context_size(model), kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_table_entry_compiles() {
        assert_eq!(COMPILED.len(), TABLE.len());
    }

    #[test]
    fn known_models_get_their_context_size() {
        let cases = [
            ("claude-opus-4-6", 1_000_000),
            ("anthropic/claude-sonnet-4.6", 1_000_000),
            ("claude-haiku-4-5", 200_000),
            ("claude-3-5-sonnet-20241022", 200_000),
            ("gpt-5.4", 1_000_000),
            ("gpt-5.4-mini", 400_000),
            ("gpt-5", 400_000),
            ("gpt-4.1-mini", 1_000_000),
            ("openai/gpt-4o-2024-08-06", 128_000),
            ("gpt-4-turbo", 128_000),
            ("gpt-4-0613", 8_192),
            ("gpt-3.5-turbo", 16_385),
            ("o3-mini", 200_000),
            ("o1", 200_000),
            ("gemini-3.1-pro", 1_000_000),
            ("gemini-2.5-flash", 1_000_000),
            ("gemini-1.0-pro", 32_000),
            ("gemini-pro", 32_000),
            ("deepseek-chat", 128_000),
            ("llama3.1:8b", 128_000),
            ("llama3", 8_192),
            ("llama-4-maverick", 1_000_000),
            ("qwen2.5-coder", 128_000),
            ("qwen3-coder-plus", 256_000),
            ("mistral-large-latest", 128_000),
            ("mistral-small", 32_000),
            ("phi-4", 128_000),
            ("mock", 32_000),
            ("", DEFAULT_CONTEXT),
            ("some-local-model", DEFAULT_CONTEXT),
        ];
        for (model, size) in cases {
            assert_eq!((model, context_size(model)), (model, size));
        }
    }

    #[test]
    fn o_series_patterns_do_not_capture_other_names() {
        // The reference matched `o1|o3|o4` anywhere, so "claude-3-opus-4o..." style names and
        // "llama3-70b-o1" went to the o-series entry.
        assert_eq!(context_size("gpt-4o"), 128_000);
        assert_eq!(context_size("mistral-nemo-o1x"), 32_000);
    }

    #[test]
    fn budgets_follow_the_tiers() {
        assert_eq!(token_budget("claude-opus-4-6", RunKind::System), 96_000);
        assert_eq!(token_budget("gpt-5.4-mini", RunKind::User), 36_000);
        assert_eq!(token_budget("claude-haiku-4-5", RunKind::System), 32_000);
        assert_eq!(token_budget("gpt-4o", RunKind::System), 24_000);
        assert_eq!(token_budget("gpt-3.5-turbo", RunKind::User), 12_000);
        assert_eq!(token_budget("gpt-4", RunKind::System), 6_144);
        assert_eq!(budget_for_context(4_096, RunKind::User), 2_662);
    }
}
