//! Small text helpers shared by the renderers: char-safe cutting and token counting.

use alembic_tokens::TokenCounter;

/// Cuts `text` to at most `max_chars` characters (never inside a UTF-8 sequence).
pub(crate) fn cut_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

/// Cuts `text` to `max_chars` characters and appends `marker` when something was removed.
pub(crate) fn cut_with_marker(text: &str, max_chars: usize, marker: &str) -> String {
    let cut = cut_chars(text, max_chars);
    if cut.len() == text.len() {
        text.to_string()
    } else {
        format!("{cut}{marker}")
    }
}

/// The first line of `text`, cut to `max_chars` characters with an ellipsis.
pub(crate) fn first_line(text: &str, max_chars: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    cut_with_marker(line.trim(), max_chars, "…")
}

/// Counts tokens with the model's counter (exact for known models, estimated otherwise).
#[derive(Debug, Clone)]
pub struct TokenMeter {
    counter: TokenCounter,
}

impl Default for TokenMeter {
    fn default() -> Self {
        TokenMeter {
            counter: TokenCounter::estimate(),
        }
    }
}

impl TokenMeter {
    /// A meter for `model`; exact when the model's tokenizer is known.
    pub fn for_model(model: &str) -> TokenMeter {
        TokenMeter {
            counter: TokenCounter::for_model(model),
        }
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        self.counter.count(text)
    }

    /// True when counts are exact for the model.
    pub fn is_exact(&self) -> bool {
        self.counter.is_exact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn cutting_respects_char_boundaries() {
        assert_eq!(cut_chars("日本語テキスト", 3), "日本語");
        assert_eq!(cut_with_marker("abcdef", 3, "…"), "abc…");
        assert_eq!(cut_with_marker("abc", 3, "…"), "abc");
        assert_eq!(first_line("\n  hello world\nnext", 5), "hello…");
    }
}
