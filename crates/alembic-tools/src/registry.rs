//! The tool registry: registration with checks, lookup, schemas for an allowlist, "did you mean".

use alembic_base::{read, write};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::capability::Allowlist;
use crate::definition::{ToolDefinition, ToolSchema};

/// Why a registration was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegistryError {
    #[error("tool \"{0}\" is already registered")]
    Duplicate(String),
    #[error(
        "tool name \"{0}\" is not snake_case: use lower-case letters, digits and single underscores, starting with a letter (at most 64 characters)"
    )]
    BadName(String),
    #[error("tool \"{name}\" has an invalid parameter schema: {reason}")]
    BadSchema { name: String, reason: String },
    #[error("tool \"{0}\" needs a description")]
    MissingDescription(String),
}

/// A definition plus its compiled validator.
pub struct RegisteredTool {
    pub definition: Arc<ToolDefinition>,
    pub(crate) validator: jsonschema::Validator,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.definition.fmt(f)
    }
}

/// All tools known to a process. Thread-safe; forged tools are added and removed at run time.
///
/// Every change (a registration, a removal) bumps a generation published on a
/// [`tokio::sync::watch`] channel, so a front end can tell its clients that the tool list
/// changed (MCP `notifications/tools/list_changed`) without polling the map.
#[derive(Debug)]
pub struct ToolRegistry {
    tools: RwLock<BTreeMap<String, Arc<RegisteredTool>>>,
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        ToolRegistry {
            tools: RwLock::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// `^[a-z][a-z0-9]*(_[a-z0-9]+)*$`, at most 64 characters.
pub fn is_snake_case(name: &str) -> bool {
    if name.is_empty() || name.len() > 64 || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return false;
    }
    name.split('_').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    })
}

fn check_schema(name: &str, schema: &Value) -> Result<jsonschema::Validator, RegistryError> {
    let bad = |reason: String| RegistryError::BadSchema {
        name: name.to_string(),
        reason,
    };
    let obj = schema
        .as_object()
        .ok_or_else(|| bad("expected a JSON object".into()))?;
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return Err(bad("expected \"type\": \"object\" at the top level".into()));
    }
    if let Some(props) = obj.get("properties")
        && !props.is_object()
    {
        return Err(bad("\"properties\" must be an object".into()));
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(bad(e.to_string()));
    }
    jsonschema::validator_for(schema).map_err(|e| bad(e.to_string()))
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool, refusing duplicates, non-snake_case names and invalid schemas.
    pub fn register(&self, definition: ToolDefinition) -> Result<(), RegistryError> {
        if !is_snake_case(&definition.name) {
            return Err(RegistryError::BadName(definition.name));
        }
        if definition.description.trim().is_empty() {
            return Err(RegistryError::MissingDescription(definition.name));
        }
        let validator = check_schema(&definition.name, &definition.parameters)?;
        let mut tools = write(&self.tools);
        if tools.contains_key(&definition.name) {
            return Err(RegistryError::Duplicate(definition.name));
        }
        let name = definition.name.clone();
        tools.insert(
            name,
            Arc::new(RegisteredTool {
                definition: Arc::new(definition),
                validator,
            }),
        );
        drop(tools);
        self.changed();
        Ok(())
    }

    /// Registers several tools; stops at the first refusal.
    pub fn register_all(
        &self,
        defs: impl IntoIterator<Item = ToolDefinition>,
    ) -> Result<(), RegistryError> {
        defs.into_iter().try_for_each(|d| self.register(d))
    }

    /// Removes a tool (used when a forged tool expires). Returns whether it existed.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = write(&self.tools).remove(name).is_some();
        if removed {
            self.changed();
        }
        removed
    }

    /// A receiver of the registry's generation: it is marked changed after every registration
    /// or removal that happens from now on (several quick changes may be seen as one). Each
    /// receiver sees changes independently; the registry never waits for them.
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// How many registrations and removals this registry has seen.
    pub fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    fn changed(&self) {
        // `send_modify` updates the value even when nobody listens.
        self.changes.send_modify(|g| *g = g.wrapping_add(1));
    }

    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        read(&self.tools).get(name).cloned()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn len(&self) -> usize {
        read(&self.tools).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Names in stable (sorted) order.
    pub fn names(&self) -> Vec<String> {
        read(&self.tools).keys().cloned().collect()
    }

    /// Definitions allowed by `allowlist`, sorted by name.
    pub fn definitions(&self, allowlist: &Allowlist) -> Vec<ToolDefinition> {
        read(&self.tools)
            .values()
            .filter(|t| allowlist.allows(&t.definition.name))
            .map(|t| ToolDefinition::clone(&t.definition))
            .collect()
    }

    /// Name, description and parameters of the allowed tools, sorted by name.
    pub fn schemas(&self, allowlist: &Allowlist) -> Vec<ToolSchema> {
        self.definitions(allowlist)
            .iter()
            .map(ToolDefinition::schema)
            .collect()
    }

    /// Up to three registered names close to `name`, best first, among `allowlist`.
    pub fn suggest(&self, name: &str, allowlist: &Allowlist) -> Vec<String> {
        let wanted = name.to_ascii_lowercase();
        let mut scored: Vec<(f64, String)> = self
            .names()
            .into_iter()
            .filter(|n| allowlist.allows(n))
            .map(|n| {
                // Past MAX_FUZZY the similarity to a name of at most 64 characters is below
                // 0.4 anyway, and the quadratic distance of a megabyte-long name would stall
                // the caller's thread for a minute (found by the MCP fuzz test).
                let mut score = if wanted.len() <= MAX_FUZZY {
                    strsim::normalized_damerau_levenshtein(&wanted, &n)
                } else {
                    0.0
                };
                if n.contains(&wanted) || wanted.contains(n.as_str()) {
                    score = score.max(0.7);
                }
                (score, n)
            })
            .filter(|(s, _)| *s >= 0.6)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        // Only names about as close as the best one: a clear winner is suggested alone.
        let best = scored.first().map_or(0.0, |s| s.0);
        scored
            .into_iter()
            .filter(|(s, _)| *s >= best - 0.2)
            .take(3)
            .map(|(_, n)| n)
            .collect()
    }
}

/// The longest name compared by edit distance in [`ToolRegistry::suggest`].
const MAX_FUZZY: usize = 160;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{EffectClass, ToolModule, ToolOutput, handler_fn};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> ToolDefinition {
        ToolDefinition::new(
            name,
            "test tool",
            schema,
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Ok(ToolOutput::json(json!({}))) }),
        )
    }

    fn obj() -> Value {
        json!({"type": "object", "properties": {}})
    }

    #[test]
    fn registrations_and_removals_are_signalled() {
        let reg = ToolRegistry::new();
        let mut changes = reg.subscribe_changes();
        assert!(!changes.has_changed().unwrap());
        reg.register(tool("a", obj())).unwrap();
        assert!(changes.has_changed().unwrap());
        assert_eq!(*changes.borrow_and_update(), 1);
        // A refused registration and removing an unknown name change nothing.
        assert!(reg.register(tool("a", obj())).is_err());
        assert!(!reg.unregister("missing"));
        assert!(!changes.has_changed().unwrap());
        assert!(reg.unregister("a"));
        assert!(changes.has_changed().unwrap());
        assert_eq!(reg.generation(), 2);
    }

    #[test]
    fn snake_case_names() {
        for ok in ["a", "search_project_code", "get_v2_info", "x1"] {
            assert!(is_snake_case(ok), "{ok}");
        }
        for bad in [
            "",
            "Search",
            "searchCode",
            "_a",
            "a_",
            "a__b",
            "a-b",
            "1a",
            "a b",
            "ä",
        ] {
            assert!(!is_snake_case(bad), "{bad}");
        }
    }

    #[test]
    fn registration_refusals_say_which() {
        let r = ToolRegistry::new();
        r.register(tool("read_file", obj())).unwrap();
        assert_eq!(
            r.register(tool("read_file", obj())).unwrap_err(),
            RegistryError::Duplicate("read_file".into())
        );
        assert_eq!(
            r.register(tool("readFile", obj())).unwrap_err(),
            RegistryError::BadName("readFile".into())
        );
        let err = r.register(tool("x", json!({"type": "array"}))).unwrap_err();
        assert!(matches!(err, RegistryError::BadSchema { .. }), "{err}");
        let err = r
            .register(tool(
                "y",
                json!({"type": "object", "properties": {"a": {"type": "nope"}}}),
            ))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("tool \"y\" has an invalid parameter schema"),
            "{err}"
        );
        let err = r.register(tool("z", json!("object"))).unwrap_err();
        assert!(matches!(err, RegistryError::BadSchema { .. }));
        assert_eq!(r.names(), vec!["read_file".to_string()]);
    }

    #[test]
    fn schemas_follow_the_allowlist_in_stable_order() {
        let r = ToolRegistry::new();
        for n in ["zeta", "alpha", "mid"] {
            r.register(tool(n, obj())).unwrap();
        }
        let names = |l: &Allowlist| r.schemas(l).into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(names(&Allowlist::All), vec!["alpha", "mid", "zeta"]);
        assert_eq!(
            names(&Allowlist::only(["zeta", "alpha", "absent"])),
            vec!["alpha", "zeta"]
        );
        assert_eq!(
            names(&Allowlist::only(Vec::<String>::new())),
            Vec::<String>::new()
        );
    }

    #[test]
    fn suggestions_are_close_names_only() {
        let r = ToolRegistry::new();
        for n in [
            "search_project_code",
            "semantic_search_code",
            "read_project_file",
            "plan_task",
        ] {
            r.register(tool(n, obj())).unwrap();
        }
        let s = r.suggest("search_code", &Allowlist::All);
        assert_eq!(s.first().map(String::as_str), Some("semantic_search_code"));
        assert!(s.len() <= 3);
        assert_eq!(
            r.suggest("read_projct_file", &Allowlist::All),
            vec!["read_project_file"]
        );
        assert!(r.suggest("zzzzzz", &Allowlist::All).is_empty());
        // a tool outside the allowlist is never suggested
        assert!(
            r.suggest("plan_tsk", &Allowlist::only(["read_project_file"]))
                .is_empty()
        );
    }

    #[test]
    fn a_huge_name_is_answered_at_once_by_containment_only() {
        let r = ToolRegistry::new();
        r.register(tool("read_project_file", obj())).unwrap();
        let huge = format!("{}read_project_file", "x".repeat(1_000_000));
        let started = std::time::Instant::now();
        assert_eq!(r.suggest(&huge, &Allowlist::All), vec!["read_project_file"]);
        assert!(
            r.suggest(&"y".repeat(1_000_000), &Allowlist::All)
                .is_empty()
        );
        // Quadratic edit distance would take minutes here; containment takes milliseconds.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
