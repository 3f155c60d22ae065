//! Bounds on nested calls, decided before a call's name is even resolved.
//!
//! A handler can call tools ([`crate::ToolContext::call_tool`]), and a generated tool is code
//! the model wrote: it may call itself, or a partner that calls it back. Without a bound each
//! level holds a sandbox thread and a deeper poll stack until the process aborts (issue 36,
//! hole 2). Every call carries its [`CallChain`]; a call too deep, or one past the budget of its
//! top-level call, is refused here with a `Blocked` outcome, never a crash.

use crate::audit::bound::bound_str;
use crate::call::{CallChain, ToolCall};

/// Deepest a call may sit, the top-level call counting as 1. A forged tool calling a composed
/// tool calling a forged tool is 3; 8 leaves room for honest layering while bounding what a
/// runaway recursion holds at once (one sandbox thread per level).
pub const MAX_NESTING_DEPTH: usize = 8;

/// Nested calls allowed under one top-level call, refused ones included. Depth alone does not
/// bound a tree: a tool that calls itself twice per level makes 2^8 calls within the depth.
pub const MAX_NESTED_CALLS: u32 = 64;

/// The rule of a refusal for depth.
pub const RULE_DEPTH: &str = "nesting.depth";
/// The rule of a refusal for the budget of nested calls.
pub const RULE_BUDGET: &str = "nesting.budget";

/// Whether `rule` is one of the nesting rules (code that wraps nested calls, such as a
/// generated tool, passes such a refusal on as its own).
pub fn is_nesting_rule(rule: &str) -> bool {
    rule == RULE_DEPTH || rule == RULE_BUDGET
}

/// Longest tool name a chain rendering keeps whole.
const MAX_CHAIN_NAME_BYTES: usize = 64;

/// Counts `call` against its top-level call's budget and checks its depth; returns the rule
/// and the message of a refusal.
pub(super) fn check(call: &ToolCall) -> Option<(&'static str, String)> {
    let chain = &call.chain;
    if chain.is_top_level() {
        return None;
    }
    let used = chain.count_nested_call();
    let depth = chain.depth();
    if depth > MAX_NESTING_DEPTH {
        return Some((
            RULE_DEPTH,
            format!(
                "nested call refused: depth {depth} is over the limit of {MAX_NESTING_DEPTH} \
                 (a top-level call and {} levels of tools calling tools); chain: {}",
                MAX_NESTING_DEPTH - 1,
                render(chain, &call.name)
            ),
        ));
    }
    if used > MAX_NESTED_CALLS {
        return Some((
            RULE_BUDGET,
            format!(
                "nested call refused: call {used} is over the budget of {MAX_NESTED_CALLS} \
                 nested calls per top-level call; chain: {}",
                render(chain, &call.name)
            ),
        ));
    }
    None
}

/// `a → b → … → name`, each name bounded, at most the first three and the last four callers.
fn render(chain: &CallChain, name: &str) -> String {
    let names = chain.ancestors();
    let short = |n: &String| bound_str(n, MAX_CHAIN_NAME_BYTES);
    let mut parts: Vec<String> = if names.len() > 7 {
        let mut p: Vec<String> = names[..3].iter().map(short).collect();
        p.push(format!("…({} more)…", names.len() - 7));
        p.extend(names[names.len() - 4..].iter().map(short));
        p
    } else {
        names.iter().map(short).collect()
    };
    parts.push(bound_str(name, MAX_CHAIN_NAME_BYTES));
    parts.join(" → ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Caller;
    use crate::capability::Allowlist;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn nested(chain: &CallChain, name: &str) -> ToolCall {
        ToolCall::new(name, json!({}), Caller::new("t", Allowlist::All)).with_chain(chain.clone())
    }

    #[test]
    fn depth_is_refused_past_the_limit_and_the_chain_is_named() {
        let mut chain = CallChain::top_level();
        assert_eq!(check(&nested(&chain, "a")), None);
        for depth in 2..=MAX_NESTING_DEPTH {
            chain = chain.below("a");
            assert_eq!(check(&nested(&chain, "a")), None, "depth {depth}");
        }
        chain = chain.below("b");
        let (rule, message) = check(&nested(&chain, "a")).unwrap();
        assert_eq!(rule, RULE_DEPTH);
        assert_eq!(
            message,
            "nested call refused: depth 9 is over the limit of 8 (a top-level call and 7 levels \
             of tools calling tools); chain: a → a → a → …(1 more)… → a → a → a → b → a"
        );
    }

    #[test]
    fn the_budget_is_shared_by_the_whole_tree_and_counts_refusals() {
        let top = CallChain::top_level();
        let left = top.below("fan");
        let right = left.below("leaf");
        for i in 0..MAX_NESTED_CALLS {
            let chain = if i % 2 == 0 { &left } else { &right };
            assert_eq!(check(&nested(chain, "leaf")), None, "call {i}");
        }
        let (rule, message) = check(&nested(&right, "leaf")).unwrap();
        assert_eq!(rule, RULE_BUDGET);
        assert_eq!(
            message,
            "nested call refused: call 65 is over the budget of 64 nested calls per top-level \
             call; chain: fan → leaf → leaf"
        );
        assert_eq!(check(&nested(&left, "x")).map(|r| r.0), Some(RULE_BUDGET));
        assert_eq!(top.nested_calls(), 66);
        // A new top-level call starts a new budget.
        assert_eq!(
            check(&nested(&CallChain::top_level().below("fan"), "leaf")),
            None
        );
    }

    #[test]
    fn long_names_are_cut_in_the_message() {
        let long = "n".repeat(10_000);
        let mut chain = CallChain::top_level();
        for _ in 0..MAX_NESTING_DEPTH {
            chain = chain.below(&long);
        }
        let (_, message) = check(&nested(&chain, &long)).unwrap();
        assert!(message.len() < 2_000, "{}", message.len());
    }
}
