//! The history cap: the seed's model-aware limit on the messages of a run.
//!
//! The seed sizes the ContextWindow from the model name (ref-memory §8.2, here
//! [`super::budget_for_context`]) and counts only the messages against it. This window also
//! counts the system prompt and the tool schemas, against the budget the model's context
//! leaves; the cap keeps the seed's meaning on top of that. Without it a 1M-token model's
//! window would be context − 3,000 tokens and compaction would practically never run; with it
//! a system run there compacts once its messages pass 60 % of 96k.

use super::ContextWindow;

impl ContextWindow {
    /// Limits the messages (task prompt and record included) to `cap` tokens, besides the
    /// budget of the whole request.
    pub fn with_history_cap(mut self, cap: usize) -> ContextWindow {
        self.history_cap = Some(cap);
        self
    }

    /// The cap on the messages, if one was set.
    pub fn history_cap(&self) -> Option<usize> {
        self.history_cap
    }

    /// Tokens of the messages alone (no system prompt, no tool schemas).
    pub fn history_tokens(&self) -> usize {
        self.costs.iter().sum()
    }

    /// Whether the request is over its budget or the messages over their cap.
    pub(super) fn over_limit(&self) -> bool {
        self.usage_tokens() > self.budget
            || self
                .history_cap
                .is_some_and(|cap| self.history_tokens() > cap)
    }
}
