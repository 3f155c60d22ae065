//! Reuse: match a request to an existing tool plus pre-filled arguments.
//!
//! Scoring reads each tool's name, description and parameter schema (not just substrings of
//! names, as the reference did):
//! - action (0.4): a synonym of the requested verb among the name's words (1.0) or the
//!   description's (0.5);
//! - target (0.35): the target is what the tool is about (its words are in the name, 1.0), or a
//!   value for one of its string parameters: an enum member (1.0), a property whose name is a
//!   slot word such as category/module/class/pattern (0.8), or whose description mentions one
//!   (0.6);
//! - intent (0.25): the share of the name's other words that the intent mentions (a tool
//!   about code is a poor reuse for an intent about recipes);
//! - minus 0.05 per required parameter still left open.
//!
//! A match needs both an action and a target hit and a total of at least [`REUSE_THRESHOLD`].
//! The result registers as an alias tool whose handler merges the preset arguments with the
//! call's (the call's win) and calls the original through the pipeline, so the original's
//! schema still validates every call.

use std::collections::BTreeSet;

use alembic_tools::{Allowlist, ToolDefinition, ToolRegistry, handler_fn};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::nested::outcome_to_result;

/// Lowest score accepted as a reuse.
pub const REUSE_THRESHOLD: f64 = 0.7;

/// What the agent asks the forge for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ForgeRequest {
    /// Free text, e.g. "search Network category recipes".
    pub intent: String,
    /// A verb: read, search, analyze, list, ...
    pub action: String,
    /// A noun or a value: "recipe", "NetworkKit", "Network".
    pub target: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
}

impl ForgeRequest {
    pub fn new(
        intent: impl Into<String>,
        action: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        ForgeRequest {
            intent: intent.into(),
            action: action.into(),
            target: target.into(),
            constraints: Vec::new(),
        }
    }
}

/// A tool and the arguments to pre-fill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReuseMatch {
    pub tool: String,
    pub preset_args: Map<String, Value>,
    pub score: f64,
    pub reasoning: String,
}

const SYNONYMS: &[(&str, &[&str])] = &[
    ("read", &["read", "get", "fetch", "load", "show", "open"]),
    (
        "search",
        &["search", "find", "query", "lookup", "grep", "locate"],
    ),
    (
        "write",
        &["write", "save", "create", "update", "set", "submit"],
    ),
    ("delete", &["delete", "remove", "clear"]),
    ("transform", &["transform", "convert", "parse", "format"]),
    (
        "validate",
        &["validate", "check", "guard", "lint", "verify"],
    ),
    (
        "analyze",
        &[
            "analyze",
            "analyse",
            "inspect",
            "stats",
            "detect",
            "summary",
            "summarize",
        ],
    ),
    ("list", &["list", "browse", "enumerate", "overview"]),
    ("execute", &["execute", "run", "invoke", "call"]),
];

/// Words that mark a string parameter as a slot for a named thing.
const SLOT_WORDS: &[&str] = &[
    "category",
    "module",
    "class",
    "pattern",
    "name",
    "kind",
    "type",
    "language",
    "tag",
    "target",
    "symbol",
    "topic",
    "dimension",
    "scope",
    "package",
    "component",
];

/// Chinese slot words that an intent may use for the same slots.
const SLOT_WORDS_ZH: &[(&str, &str)] = &[
    ("分类", "category"),
    ("模块", "module"),
    ("类", "class"),
    ("模式", "pattern"),
    ("语言", "language"),
    ("标签", "tag"),
];

/// Lower-case words of an identifier or text: splits on non-alphanumerics, underscores and
/// camelCase ([`alembic_tokens::text::Tokenizer::FORGE`]), and drops a plural `s`.
pub fn words(text: &str) -> Vec<String> {
    alembic_tokens::text::Tokenizer::FORGE
        .tokens(text)
        .into_iter()
        .map(singular)
        .collect()
}

fn singular(w: String) -> String {
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w[..w.len() - 1].to_string()
    } else {
        w
    }
}

fn synonyms(action: &str) -> Vec<String> {
    let a = action.trim().to_ascii_lowercase();
    SYNONYMS
        .iter()
        .find(|(k, list)| *k == a || list.contains(&a.as_str()))
        .map(|(_, list)| list.iter().map(|s| (*s).to_string()).collect())
        .unwrap_or_else(|| vec![a])
}

/// Finds the best reuse for `request` among the tools `allowlist` allows.
pub fn find_reuse(
    registry: &ToolRegistry,
    allowlist: &Allowlist,
    request: &ForgeRequest,
) -> Option<ReuseMatch> {
    best_reuse(registry, allowlist, request).filter(|m| m.score >= REUSE_THRESHOLD)
}

/// The best-scoring candidate, whatever its score (for reporting near misses).
pub fn best_reuse(
    registry: &ToolRegistry,
    allowlist: &Allowlist,
    request: &ForgeRequest,
) -> Option<ReuseMatch> {
    let actions = synonyms(&request.action);
    let intent: BTreeSet<String> = words(&request.intent).into_iter().collect();
    let intent_slots: BTreeSet<&str> = SLOT_WORDS_ZH
        .iter()
        .filter(|(zh, _)| request.intent.contains(zh))
        .map(|(_, en)| *en)
        .collect();
    let ctx = Wanted {
        actions: &actions,
        intent: &intent,
        intent_slots: &intent_slots,
        target: request.target.trim(),
    };
    registry
        .definitions(allowlist)
        .iter()
        .filter_map(|d| score_tool(d, &ctx))
        .max_by(|a, b| {
            a.score
                .total_cmp(&b.score)
                .then_with(|| b.tool.cmp(&a.tool))
        })
}

struct Wanted<'a> {
    actions: &'a [String],
    intent: &'a BTreeSet<String>,
    intent_slots: &'a BTreeSet<&'a str>,
    target: &'a str,
}

fn score_tool(def: &ToolDefinition, want: &Wanted<'_>) -> Option<ReuseMatch> {
    let name_words = words(&def.name);
    let desc_words: BTreeSet<String> = words(&def.description).into_iter().collect();
    let action = if name_words.iter().any(|w| want.actions.contains(w)) {
        1.0
    } else if desc_words.iter().any(|w| want.actions.contains(w)) {
        0.5
    } else {
        return None;
    };
    let target_words = words(want.target);
    let about_target =
        !target_words.is_empty() && target_words.iter().all(|w| name_words.contains(w));
    let slot = if about_target {
        None
    } else {
        best_slot(def, want)
    };
    let (target, preset, why) = match (&slot, about_target) {
        (_, true) => (
            1.0,
            Map::new(),
            format!("the tool is about \"{}\"", want.target),
        ),
        (Some((prop, value, s, why)), false) => {
            let mut m = Map::new();
            m.insert(prop.clone(), value.clone());
            (*s, m, why.clone())
        }
        (None, false) => return None,
    };
    let others: Vec<&String> = name_words
        .iter()
        .filter(|w| !want.actions.contains(w))
        .collect();
    let intent = if others.is_empty() {
        0.0
    } else {
        others
            .iter()
            .filter(|w| want.intent.contains(w.as_str()))
            .count() as f64
            / others.len() as f64
    };
    let open_required = required(def)
        .iter()
        .filter(|r| !preset.contains_key(r.as_str()))
        .count();
    let score = 0.4 * action + 0.35 * target + 0.25 * intent - 0.05 * open_required as f64;
    Some(ReuseMatch {
        tool: def.name.clone(),
        preset_args: preset,
        score,
        reasoning: format!(
            "action \"{}\" matches ({action:.1}); {why}; intent overlap {intent:.2}; {open_required} required argument(s) left open",
            want.actions.first().map(String::as_str).unwrap_or("")
        ),
    })
}

fn required(def: &ToolDefinition) -> Vec<String> {
    def.parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The string property that the target best fills: (property, value, score, reason).
fn best_slot(def: &ToolDefinition, want: &Wanted<'_>) -> Option<(String, Value, f64, String)> {
    let props = def.parameters.get("properties")?.as_object()?;
    let mut best: Option<(String, Value, f64, String)> = None;
    for (prop, schema) in props {
        let Some(candidate) = slot_score(prop, schema, want) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| candidate.2 > b.2) {
            best = Some(candidate);
        }
    }
    best
}

fn slot_score(
    prop: &str,
    schema: &Value,
    want: &Wanted<'_>,
) -> Option<(String, Value, f64, String)> {
    if want.target.is_empty() {
        return None;
    }
    if let Some(members) = schema.get("enum").and_then(Value::as_array) {
        let hit = members.iter().find(|m| {
            m.as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case(want.target))
        })?;
        return Some((
            prop.into(),
            hit.clone(),
            1.0,
            format!("\"{}\" is a value of {prop}'s enum", want.target),
        ));
    }
    if schema.get("type").and_then(Value::as_str) != Some("string") {
        return None;
    }
    let prop_words = words(prop);
    let desc = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let desc_words = words(desc);
    let in_name = prop_words.iter().find(|w| SLOT_WORDS.contains(&w.as_str()));
    let in_desc = desc_words.iter().find(|w| SLOT_WORDS.contains(&w.as_str()));
    let (base, word) = match (in_name, in_desc) {
        (Some(w), _) => (0.8, w.clone()),
        (None, Some(w)) => (0.6, w.clone()),
        (None, None) => return None,
    };
    // The intent naming the slot ("... in the Network category") makes the reading certain.
    let named = want.intent.contains(&word) || want.intent_slots.contains(word.as_str());
    let score = if named {
        (base + 0.2_f64).min(1.0)
    } else {
        base
    };
    Some((
        prop.into(),
        json!(want.target),
        score,
        format!("\"{}\" fills the {word} slot \"{prop}\"", want.target),
    ))
}

/// Name of the alias tool for a match: `<tool>_<target words>`, at most 64 characters.
pub fn alias_name(tool: &str, target: &str) -> String {
    let mut name = tool.to_string();
    for w in words(target) {
        name.push('_');
        name.push_str(&w);
    }
    name.truncate(64);
    name.trim_end_matches('_').to_string()
}

/// The saved form of an alias tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasSpec {
    pub name: String,
    pub tool: String,
    pub preset_args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Builds the alias tool: the original's schema with the preset arguments made optional (and
/// shown as defaults); the handler merges and calls the original through the pipeline.
pub fn alias_tool(spec: &AliasSpec, registry: &ToolRegistry) -> Option<ToolDefinition> {
    let original = registry.get(&spec.tool)?.definition.clone();
    let mut schema = original.parameters.clone();
    if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| r.as_str().is_none_or(|r| !spec.preset_args.contains_key(r)));
    }
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (k, v) in &spec.preset_args {
            if let Some(p) = props.get_mut(k).and_then(Value::as_object_mut) {
                p.insert("default".into(), v.clone());
            }
        }
    }
    let presets = spec.preset_args.clone();
    let shown = serde_json::to_string(&presets).unwrap_or_default();
    let description = spec.description.clone().unwrap_or_else(|| {
        format!(
            "{} (alias of {} with {shown} pre-filled)",
            original.description, spec.tool
        )
    });
    let target = spec.tool.clone();
    let handler = handler_fn(move |args: Value, ctx| {
        let mut merged = presets.clone();
        if let Value::Object(given) = args {
            merged.extend(given);
        }
        let target = target.clone();
        async move { outcome_to_result(ctx.call_tool(&target, Value::Object(merged)).await) }
    });
    Some(ToolDefinition {
        name: spec.name.clone(),
        description,
        parameters: schema,
        module: original.module,
        effect: original.effect,
        timeout: original.timeout,
        handler,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn words_split_identifiers_and_text() {
        assert_eq!(words("search_recipes"), vec!["search", "recipe"]);
        assert_eq!(words("NetworkKit"), vec!["network", "kit"]);
        assert_eq!(words("getHTTPClass"), vec!["get", "httpclass"]);
        assert_eq!(
            words("搜索 Network 分类的 Recipe"),
            vec!["network", "recipe"]
        );
        assert_eq!(
            alias_name("search_recipes", "Network"),
            "search_recipes_network"
        );
    }
}
