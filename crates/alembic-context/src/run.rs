//! What one agent run produced: the submissions it made (every accepted submit, recorded by
//! SubmitDedup) and the recipes a scan collected (`collect_scan_recipe`). It lives in the
//! run's [`crate::LoopMemory`], so two runs never see each other's results and nothing is
//! global. `review_my_output` reads the submissions; a scan harvests the recipes.

use std::sync::Mutex;

use alembic_base::lock;
use serde_json::Value;

use crate::observation::ToolObservation;

/// Submissions and collected recipes of one run.
#[derive(Debug, Default)]
pub struct RunResults {
    submissions: Mutex<Vec<ToolObservation>>,
    recipes: Mutex<Vec<CollectedRecipe>>,
}

/// A recipe `collect_scan_recipe` accepted, with the keys its duplicates are found by.
#[derive(Debug, Clone)]
struct CollectedRecipe {
    title_key: String,
    trigger: String,
    recipe: Value,
}

/// Why a recipe was not collected: it repeats one collected earlier in the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a recipe with the same {what} (\"{earlier}\") was already collected in this run")]
pub struct DuplicateRecipe {
    /// "title" or "trigger".
    pub what: &'static str,
    /// The title of the recipe collected first.
    pub earlier: String,
}

/// Title compared case- and whitespace-insensitively.
fn title_key(title: &str) -> String {
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl RunResults {
    /// Records an accepted submission (its arguments and result).
    pub fn record_submission(&self, submission: ToolObservation) {
        lock(&self.submissions).push(submission);
    }

    /// The run's accepted submissions, oldest first.
    pub fn submissions(&self) -> Vec<ToolObservation> {
        lock(&self.submissions).clone()
    }

    /// Adds `recipe` (titled `title`, triggered by `trigger`) unless one with the same title
    /// or trigger was collected before; returns how many the run has collected.
    pub fn collect_recipe(
        &self,
        title: &str,
        trigger: &str,
        recipe: Value,
    ) -> Result<usize, DuplicateRecipe> {
        let mut recipes = lock(&self.recipes);
        let key = title_key(title);
        let earlier_title = |r: &CollectedRecipe| {
            r.recipe["title"]
                .as_str()
                .unwrap_or(&r.title_key)
                .to_string()
        };
        if let Some(r) = recipes.iter().find(|r| r.title_key == key) {
            return Err(DuplicateRecipe {
                what: "title",
                earlier: earlier_title(r),
            });
        }
        if let Some(r) = recipes.iter().find(|r| r.trigger == trigger) {
            return Err(DuplicateRecipe {
                what: "trigger",
                earlier: earlier_title(r),
            });
        }
        recipes.push(CollectedRecipe {
            title_key: key,
            trigger: trigger.to_string(),
            recipe,
        });
        Ok(recipes.len())
    }

    /// The recipes collected in this run, in order.
    pub fn recipes(&self) -> Vec<Value> {
        lock(&self.recipes)
            .iter()
            .map(|r| r.recipe.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn duplicates_by_title_or_trigger_are_refused() {
        let run = RunResults::default();
        let r = |t: &str| json!({"title": t});
        assert_eq!(
            run.collect_recipe("Retry  Policy", "@retry", r("Retry  Policy")),
            Ok(1)
        );
        let err = run
            .collect_recipe("retry policy", "@other", r("retry policy"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "a recipe with the same title (\"Retry  Policy\") was already collected in this run"
        );
        let err = run
            .collect_recipe("Backoff", "@retry", r("Backoff"))
            .unwrap_err();
        assert_eq!(err.what, "trigger");
        assert_eq!(
            run.collect_recipe("Backoff", "@backoff", r("Backoff")),
            Ok(2)
        );
        assert_eq!(run.recipes().len(), 2);
    }
}
