//! Token counting shared by the memory coordinator, context window and persistent memory, and
//! the search-text primitives ([`text`]: tokenizer, CJK splitting, FTS5 query building).
//!
//! Two ways to count:
//! - [`estimate_tokens`]: the seed's CJK-aware estimate (a CJK character counts 1/2 token,
//!   any other character 1/4, rounded up). It needs no tables and costs one pass over the text.
//! - [`TokenCounter`]: built from a model name with [`TokenCounter::for_model`]. When the
//!   model's encoding is known to tiktoken (OpenAI models: `o200k_base`, `cl100k_base`, …)
//!   counts are exact; for any other model it falls back to the estimate, and
//!   [`TokenCounter::is_exact`] says which one you got.
//!
//! ```
//! use alembic_tokens::{TokenCounter, estimate_tokens};
//! assert_eq!(estimate_tokens("abcd"), 1);
//! assert_eq!(estimate_tokens("中文"), 1);
//! let exact = TokenCounter::for_model("gpt-4o");
//! assert!(exact.is_exact());
//! assert_eq!(exact.count("hello world"), 2);
//! let rough = TokenCounter::for_model("claude-sonnet-4");
//! assert!(!rough.is_exact());
//! assert_eq!(rough.count("hello world"), 3);
//! ```

pub mod text;

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::Tokenizer;

/// Whether a character counts as CJK for the estimate.
///
/// The reference coordinator (ref-memory §6.6) counted only U+4E00–U+9FFF and the CJK
/// punctuation block U+3000–U+303F. Text in Ext-A, kana, Hangul or full-width forms costs
/// about as much per character in BPE vocabularies, so those ranges are included as well.
pub fn is_cjk(c: char) -> bool {
    is_cjk_letter(c)
        || matches!(c as u32,
            0x3000..=0x303F   // CJK symbols and punctuation
            | 0xFF00..=0xFFEF) // half-width and full-width forms
}

/// Whether a character is a letter of a CJK script, written without spaces between words.
///
/// Full-text indexes (memory, knowledge) split runs of these into unigrams and bigrams,
/// because FTS5's unicode61 tokenizer would keep a whole run as one word. Punctuation and
/// full-width forms are not letters and are left out, unlike in [`is_cjk`].
pub fn is_cjk_letter(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // hiragana, katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B..F and supplement
}

/// The seed's estimate: `ceil(cjk / 2 + other / 4)`, counting Unicode scalar values.
pub fn estimate_tokens(text: &str) -> usize {
    let (cjk, other) = text.chars().fold((0usize, 0usize), |(cjk, other), c| {
        if is_cjk(c) {
            (cjk + 1, other)
        } else {
            (cjk, other + 1)
        }
    });
    // In quarter tokens: each CJK char is 2 quarters, anything else 1 quarter.
    (cjk * 2 + other).div_ceil(4)
}

/// Counts tokens for one model: exactly when its tokenizer is known, by estimate otherwise.
#[derive(Clone)]
pub struct TokenCounter {
    bpe: Option<&'static CoreBPE>,
    encoding: Option<&'static str>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding.unwrap_or("estimate"))
            .finish()
    }
}

impl TokenCounter {
    /// A counter for `model`. A provider prefix such as `openai/` or `azure/` is ignored.
    /// Unknown models (Claude, Gemini, DeepSeek, local models) get the CJK-aware estimate.
    pub fn for_model(model: &str) -> TokenCounter {
        let name = model
            .trim()
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_lowercase();
        match tiktoken_rs::tokenizer::get_tokenizer(&name) {
            Some(tokenizer) => Self::from_tokenizer(tokenizer),
            None => Self::estimate(),
        }
    }

    /// A counter that always uses [`estimate_tokens`].
    pub fn estimate() -> TokenCounter {
        TokenCounter {
            bpe: None,
            encoding: None,
        }
    }

    /// An exact counter for the `o200k_base` encoding (GPT-4o, GPT-4.1, GPT-5, o-series).
    pub fn o200k_base() -> TokenCounter {
        TokenCounter {
            bpe: Some(tiktoken_rs::o200k_base_singleton()),
            encoding: Some("o200k_base"),
        }
    }

    /// An exact counter for the `cl100k_base` encoding (GPT-4, GPT-3.5, ada-002 embeddings).
    pub fn cl100k_base() -> TokenCounter {
        TokenCounter {
            bpe: Some(tiktoken_rs::cl100k_base_singleton()),
            encoding: Some("cl100k_base"),
        }
    }

    fn from_tokenizer(tokenizer: Tokenizer) -> TokenCounter {
        let (bpe, encoding) = match tokenizer {
            Tokenizer::O200kBase => (tiktoken_rs::o200k_base_singleton(), "o200k_base"),
            Tokenizer::O200kHarmony => (tiktoken_rs::o200k_harmony_singleton(), "o200k_harmony"),
            Tokenizer::Cl100kBase => (tiktoken_rs::cl100k_base_singleton(), "cl100k_base"),
            Tokenizer::P50kBase => (tiktoken_rs::p50k_base_singleton(), "p50k_base"),
            Tokenizer::P50kEdit => (tiktoken_rs::p50k_edit_singleton(), "p50k_edit"),
            Tokenizer::R50kBase | Tokenizer::Gpt2 => {
                (tiktoken_rs::r50k_base_singleton(), "r50k_base")
            }
        };
        TokenCounter {
            bpe: Some(bpe),
            encoding: Some(encoding),
        }
    }

    /// Number of tokens in `text` (special-token text is counted as ordinary text).
    pub fn count(&self, text: &str) -> usize {
        match self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => estimate_tokens(text),
        }
    }

    /// True when [`TokenCounter::count`] is exact for the model.
    pub fn is_exact(&self) -> bool {
        self.bpe.is_some()
    }

    /// The tiktoken encoding name, or `None` when counts are estimated.
    pub fn encoding(&self) -> Option<&'static str> {
        self.encoding
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn letters_are_the_cjk_characters_without_punctuation() {
        for c in ['中', 'か', '한', '𠀀'] {
            assert!(is_cjk_letter(c) && is_cjk(c), "{c}");
        }
        for c in ['。', '，', 'Ａ'] {
            assert!(is_cjk(c) && !is_cjk_letter(c), "{c}");
        }
        assert!(!is_cjk('a') && !is_cjk_letter('a'));
    }

    #[test]
    fn estimate_counts_cjk_as_half_and_others_as_quarter() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("abcdefghi"), 3);
        assert_eq!(estimate_tokens("中文字符"), 2);
        // 3 CJK (1.5) + 2 ASCII (0.5) = 2
        assert_eq!(estimate_tokens("中文字ab"), 2);
        // full-width punctuation counts as CJK
        assert_eq!(estimate_tokens("，。"), 1);
    }

    #[test]
    fn known_models_are_exact_and_others_estimated() {
        let cases = [
            ("gpt-4o", Some("o200k_base")),
            ("gpt-4o-mini-2024-07-18", Some("o200k_base")),
            ("openai/gpt-4.1", Some("o200k_base")),
            ("gpt-5", Some("o200k_base")),
            ("gpt-4", Some("cl100k_base")),
            ("gpt-3.5-turbo", Some("cl100k_base")),
            ("claude-sonnet-4-5", None),
            ("gemini-2.5-pro", None),
            ("deepseek-chat", None),
            ("", None),
        ];
        for (model, encoding) in cases {
            let counter = TokenCounter::for_model(model);
            assert_eq!(counter.encoding(), encoding, "model {model}");
            assert_eq!(counter.is_exact(), encoding.is_some(), "model {model}");
        }
    }

    #[test]
    fn exact_counts_match_the_encodings() {
        assert_eq!(TokenCounter::o200k_base().count("hello world"), 2);
        assert_eq!(TokenCounter::cl100k_base().count("hello world"), 2);
        assert_eq!(TokenCounter::estimate().count("hello world"), 3);
        // special-token text is ordinary text and does not panic
        assert!(TokenCounter::o200k_base().count("<|endoftext|>") > 1);
    }

    const MIXED_SAMPLE: &str = r#"# Payment module
The Payment module uses the Coordinator + Repository pattern. PaymentCoordinator owns the flow
and delegates persistence to PaymentRepository, which wraps the SQLite store.

支付模块采用协调器加仓储模式。协调器负责整个支付流程，仓储层封装了数据库访问，
所有网络请求都经过统一的重试与熔断策略，失败时会记录审计日志并通知用户。

```rust
pub fn retry<F, T>(mut op: F, attempts: u32) -> Result<T, Error>
where
    F: FnMut() -> Result<T, Error>,
{
    for i in 0..attempts {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) if i + 1 < attempts => tracing::warn!(?e, "retrying"),
            Err(e) => return Err(e),
        }
    }
    unreachable!("attempts must be > 0")
}
```
"#;

    /// Reports how far the seed's estimate is from o200k_base on mixed text. The estimate is
    /// used only when the model is unknown, so a loose bound is enough; the figure is printed
    /// for the closing note (`cargo test -p alembic-tokens -- --nocapture`).
    #[test]
    fn estimate_error_against_o200k_on_mixed_sample() {
        let exact = TokenCounter::o200k_base().count(MIXED_SAMPLE);
        let estimate = estimate_tokens(MIXED_SAMPLE);
        let error = (estimate as f64 - exact as f64) / exact as f64;
        println!(
            "estimate {estimate} vs o200k_base {exact}: relative error {:+.1}%",
            error * 100.0
        );
        assert!(error.abs() <= 0.15, "relative error {error:.3} above 15%");
        for part in MIXED_SAMPLE.split("\n\n") {
            let exact = TokenCounter::o200k_base().count(part) as f64;
            let err = (estimate_tokens(part) as f64 - exact) / exact;
            let head: String = part.chars().take(20).collect();
            println!("  part error {:+.1}% on {head:?}", err * 100.0);
            assert!(err.abs() <= 0.5, "part error {err:.3} above 50%");
        }
    }
}
