//! DynamicComposer: finds a composition for a request by itself, from templates that are data.
//!
//! A [`CompositionTemplate`] names the keywords of the intents it serves, the parameter the
//! request's target fills, and the steps over real tools. [`DynamicComposer::plan`] picks the
//! template whose keywords the intent names most, binds the target, and checks the plan against
//! the registry: every step's tool must exist and be allowed to the caller, every argument must
//! be a property of the tool's schema and every required property must be given. A plan that
//! fails a check is refused with the reason, so nothing half-valid is ever registered.
//!
//! Shipped templates are `data/compose_templates.toml`; a project adds its own in
//! `.alembic/forge/templates/*.toml` (same format; a project template replaces a shipped one of
//! the same name).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use alembic_tools::{Allowlist, ToolRegistry, is_snake_case};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::spec::{CompositionSpec, CompositionStep, MergeStrategy};
use crate::error::ForgeError;
use crate::reuse::{ForgeRequest, alias_name, words};

/// The templates shipped in the crate.
pub const SHIPPED_TEMPLATES: &str = include_str!("../../data/compose_templates.toml");

/// Where a project keeps its own templates, relative to the project root.
pub const PROJECT_TEMPLATES_DIR: &str = ".alembic/forge/templates";

/// One composition template.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositionTemplate {
    pub name: String,
    /// `{target}` is replaced by the target.
    pub description: String,
    pub keywords: Vec<String>,
    #[serde(default = "one")]
    pub min_keywords: usize,
    /// The parameter the request's target fills.
    pub target: String,
    #[serde(default)]
    pub target_description: Option<String>,
    pub steps: Vec<CompositionStep>,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateFile {
    #[serde(default)]
    template: Vec<CompositionTemplate>,
}

/// A template chosen for a request, with how well it matched.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateMatch<'a> {
    pub template: &'a CompositionTemplate,
    /// The template's keywords the intent names.
    pub hits: Vec<String>,
}

/// Parses a template file.
pub fn parse_templates(text: &str) -> Result<Vec<CompositionTemplate>, String> {
    let file: TemplateFile = toml::from_str(text).map_err(|e| e.to_string())?;
    for t in &file.template {
        if !is_snake_case(&t.name) {
            return Err(format!(
                "template \"{}\": the name must be snake_case",
                t.name
            ));
        }
        if t.keywords.is_empty() || t.min_keywords == 0 {
            return Err(format!(
                "template \"{}\": give at least one keyword and min_keywords >= 1",
                t.name
            ));
        }
    }
    Ok(file.template)
}

/// Templates in the order they are tried: the project's, then the shipped ones.
#[derive(Debug, Clone, Default)]
pub struct DynamicComposer {
    templates: Vec<CompositionTemplate>,
    /// Files that could not be read or parsed (they are left out).
    pub problems: Vec<String>,
}

impl DynamicComposer {
    /// The shipped templates only.
    pub fn shipped() -> Self {
        let mut composer = DynamicComposer::default();
        composer.add_text(SHIPPED_TEMPLATES, Path::new("compose_templates.toml"));
        composer
    }

    /// The project's templates under `root`, then the shipped ones.
    pub fn for_project(root: &Path) -> Self {
        let mut composer = DynamicComposer::default();
        for path in template_files(&root.join(PROJECT_TEMPLATES_DIR)) {
            match crate::store::read_project_text(root, &path) {
                Ok(text) => composer.add_text(&text, &path),
                Err(e) => composer
                    .problems
                    .push(format!("cannot read {}: {e}", path.display())),
            }
        }
        composer.add_text(SHIPPED_TEMPLATES, Path::new("compose_templates.toml"));
        composer
    }

    /// Adds the templates of one file; a name seen before keeps the earlier template.
    pub fn add_text(&mut self, text: &str, path: &Path) {
        match parse_templates(text) {
            Ok(list) => {
                for t in list {
                    if !self.templates.iter().any(|known| known.name == t.name) {
                        self.templates.push(t);
                    }
                }
            }
            Err(e) => self
                .problems
                .push(format!("template file {}: {e}", path.display())),
        }
    }

    pub fn templates(&self) -> &[CompositionTemplate] {
        &self.templates
    }

    /// The template whose keywords the request names most (at least its `min_keywords`).
    pub fn find(&self, request: &ForgeRequest) -> Option<TemplateMatch<'_>> {
        let said: BTreeSet<String> = words(&format!("{} {}", request.intent, request.action))
            .into_iter()
            .collect();
        let mut best: Option<TemplateMatch<'_>> = None;
        for template in &self.templates {
            let hits: Vec<String> = template
                .keywords
                .iter()
                .filter(|k| words(k).iter().all(|w| said.contains(w)))
                .cloned()
                .collect();
            let better = best.as_ref().is_none_or(|b| hits.len() > b.hits.len());
            if hits.len() >= template.min_keywords && better {
                best = Some(TemplateMatch { template, hits });
            }
        }
        best
    }

    /// Plans a composition for `request`: the best template with its target bound, checked
    /// against `registry` and `allowlist`.
    pub fn plan(
        &self,
        request: &ForgeRequest,
        registry: &ToolRegistry,
        allowlist: &Allowlist,
    ) -> Result<CompositionSpec, ForgeError> {
        let Some(found) = self.find(request) else {
            return Err(ForgeError::NoTemplate {
                known: self.names(),
            });
        };
        let spec = instantiate(found.template, request.target.trim())?;
        spec.validate(&|n| registry.contains(n), &BTreeMap::new())?;
        check_against_schemas(&spec, registry, allowlist)?;
        Ok(spec)
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.templates.iter().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }
}

fn template_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The composition of `template` with `target` bound to its target parameter.
pub fn instantiate(
    template: &CompositionTemplate,
    target: &str,
) -> Result<CompositionSpec, ForgeError> {
    if target.is_empty() {
        return Err(ForgeError::InvalidSpec {
            name: template.name.clone(),
            reason: format!(
                "the template needs a target for \"{}\"; give \"target\"",
                template.target
            ),
        });
    }
    let mut property = json!({"type": "string"});
    if let Some(d) = &template.target_description {
        property["description"] = json!(d);
    }
    let mut properties = Map::new();
    properties.insert(template.target.clone(), property);
    let mut bound = Map::new();
    bound.insert(template.target.clone(), json!(target));
    Ok(CompositionSpec {
        name: alias_name(&template.name, target),
        description: template.description.replace("{target}", target),
        merge_strategy: MergeStrategy::Sequential,
        parameters: json!({"type": "object", "properties": properties}),
        steps: template.steps.clone(),
        bound_params: bound,
        examples: Vec::new(),
    })
}

/// Every step's tool exists and is allowed, its arguments are properties of the tool's schema
/// and its required properties are given.
pub fn check_against_schemas(
    spec: &CompositionSpec,
    registry: &ToolRegistry,
    allowlist: &Allowlist,
) -> Result<(), ForgeError> {
    for (i, step) in spec.steps.iter().enumerate() {
        let invalid = |reason: String| ForgeError::InvalidSpec {
            name: spec.name.clone(),
            reason: format!("step {i} ({}): {reason}", step.tool),
        };
        let Some(tool) = registry.get(&step.tool) else {
            return Err(invalid(
                "unknown tool; steps may call registered tools only".into(),
            ));
        };
        if !allowlist.allows(&step.tool) {
            return Err(invalid("the caller may not use this tool".into()));
        }
        let schema = &tool.definition.parameters;
        let properties = schema.get("properties").and_then(Value::as_object);
        let given: Vec<&String> = step
            .args
            .as_object()
            .map(|a| a.keys().collect())
            .unwrap_or_default();
        if let Some(unknown) = given
            .iter()
            .find(|k| properties.is_none_or(|p| !p.contains_key(k.as_str())))
        {
            let accepted: Vec<&String> = properties.map(|p| p.keys().collect()).unwrap_or_default();
            return Err(invalid(format!(
                "the tool takes no argument \"{unknown}\"; it accepts {}",
                join_names(&accepted)
            )));
        }
        let required = schema.get("required").and_then(Value::as_array);
        for r in required.into_iter().flatten().filter_map(Value::as_str) {
            if !given.iter().any(|g| g.as_str() == r) {
                return Err(invalid(format!("required argument \"{r}\" is not given")));
            }
        }
    }
    Ok(())
}

fn join_names(names: &[&String]) -> String {
    if names.is_empty() {
        return "no arguments".into();
    }
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_shipped_templates_parse_and_match_their_intents() {
        let composer = DynamicComposer::shipped();
        assert_eq!(composer.problems, Vec::<String>::new());
        let pick = |intent: &str| {
            composer
                .find(&ForgeRequest::new(intent, "analyze", "X"))
                .map(|m| m.template.name.clone())
        };
        assert_eq!(
            pick("analyse the architecture of class NetworkClient").as_deref(),
            Some("class_architecture")
        );
        assert_eq!(
            pick("recipes of category Network and their guard rules").as_deref(),
            Some("recipes_with_guard_rules")
        );
        // one keyword of a template that needs two is not enough
        assert_eq!(pick("list the recipes").as_deref(), None);
    }

    #[test]
    fn a_target_is_bound_and_named() {
        let composer = DynamicComposer::shipped();
        let t = &composer.templates()[0];
        let spec = instantiate(t, "NetworkClient").unwrap();
        assert_eq!(spec.name, "class_architecture_network_client");
        assert_eq!(spec.bound_params["className"], json!("NetworkClient"));
        assert!(spec.description.contains("NetworkClient"));
        let err = instantiate(t, "").unwrap_err().to_string();
        assert_eq!(
            err,
            "composition \"class_architecture\" is invalid: the template needs a target for \"className\"; give \"target\""
        );
    }

    #[test]
    fn broken_files_are_reported_and_left_out() {
        let mut composer = DynamicComposer::default();
        composer.add_text("[[template]]\nname = \"Bad Name\"\n", Path::new("a.toml"));
        composer.add_text(
            "[[template]]\nname = \"x\"\ndescription = \"d\"\nkeywords = []\ntarget = \"t\"\nsteps = []\n",
            Path::new("b.toml"),
        );
        assert!(composer.templates().is_empty());
        assert_eq!(composer.problems.len(), 2);
        assert!(
            composer.problems[0].starts_with("template file a.toml: "),
            "{:?}",
            composer.problems
        );
        assert_eq!(
            composer.problems[1],
            "template file b.toml: template \"x\": give at least one keyword and min_keywords >= 1"
        );
    }
}
