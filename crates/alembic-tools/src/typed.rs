//! The one way to define a built-in tool: its arguments are a struct that derives
//! `serde::Deserialize` and `schemars::JsonSchema`, so the contract is written once. The JSON
//! Schema the model sees is derived from the struct (doc comments become descriptions,
//! `#[schemars(range(..))]` gives bounds, `#[serde(default = ..)]` gives defaults), and the
//! handler receives the struct, deserialised after the pipeline normalised and validated the
//! raw arguments. The handler also receives the state it was registered with (a service
//! handle), so a missing service is a registration error, never a lookup that fails at call
//! time.
//!
//! ```
//! use std::sync::Arc;
//! use alembic_tools::*;
//!
//! /// Arguments of `greet_person`.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct GreetArgs {
//!     /// who to greet
//!     name: String,
//! }
//!
//! let greeting = Arc::new(String::from("hello"));
//! let tool = ToolDefinition::typed::<GreetArgs>(
//!     "greet_person", "Greet somebody.", ToolModule::Composite, EffectClass::ReadOnly,
//! )
//! .handler(greeting, |greeting, args, _ctx| async move {
//!     Ok(ToolOutput::new(serde_json::Value::Null, format!("{greeting}, {}", args.name)))
//! });
//! assert_eq!(tool.parameters["required"], serde_json::json!(["name"]));
//! assert_eq!(tool.parameters["properties"]["name"]["description"], "who to greet");
//! ```
//!
//! Tools whose schema is data (forged tools) still use [`ToolDefinition::new`].

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::definition::{
    EffectClass, HandlerFuture, ToolDefinition, ToolError, ToolHandler, ToolModule, ToolOutput,
};

/// What a typed tool's argument struct must be.
pub trait ToolArgs: DeserializeOwned + JsonSchema + Send + 'static {}
impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArgs for T {}

/// A tool being defined: name, description, module and effect, before its handler is bound.
#[must_use = "a tool is defined only once its handler is bound"]
pub struct TypedTool<A> {
    name: String,
    description: String,
    module: ToolModule,
    effect: EffectClass,
    timeout: Option<Duration>,
    args: PhantomData<fn() -> A>,
}

impl<A> std::fmt::Debug for TypedTool<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    /// Starts a tool whose arguments are `A`. Bind the handler with [`TypedTool::handler`]
    /// (async) or [`TypedTool::blocking`] (synchronous work on the blocking pool).
    pub fn typed<A: ToolArgs>(
        name: impl Into<String>,
        description: impl Into<String>,
        module: ToolModule,
        effect: EffectClass,
    ) -> TypedTool<A> {
        TypedTool {
            name: name.into(),
            description: description.into(),
            module,
            effect,
            timeout: None,
            args: PhantomData,
        }
    }
}

impl<A: ToolArgs> TypedTool<A> {
    /// A time limit of this tool's own instead of the pipeline's default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Binds an async handler. It receives a clone of `state`, the typed arguments and the
    /// call's context.
    pub fn handler<S, F, Fut>(self, state: S, run: F) -> ToolDefinition
    where
        S: Clone + Send + Sync + 'static,
        F: Fn(S, A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let handler = AsyncHandler {
            state,
            run,
            args: PhantomData,
        };
        self.finish(Arc::new(handler))
    }

    /// Binds a synchronous handler that runs on tokio's blocking pool (file walks, parsing,
    /// SQLite), so it never stalls the executor.
    pub fn blocking<S, F>(self, state: S, run: F) -> ToolDefinition
    where
        S: Send + Sync + 'static,
        F: Fn(&S, A) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    {
        let handler = BlockingHandler {
            inner: Arc::new((state, run)),
            args: PhantomData,
        };
        self.finish(Arc::new(handler))
    }

    fn finish(self, handler: Arc<dyn ToolHandler>) -> ToolDefinition {
        let mut def = ToolDefinition::new(
            self.name,
            self.description,
            args_schema::<A>(),
            self.module,
            self.effect,
            handler,
        );
        def.timeout = self.timeout;
        def
    }
}

/// Turns validated arguments into `A`. The schema already checked types and bounds, so this
/// fails only where serde is stricter (say, a custom deserializer); the error still names the
/// argument and what was wrong.
pub fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ToolError::Invalid(format!("argument \"{path}\": {}", e.inner()))
    })
}

struct AsyncHandler<A, S, F> {
    state: S,
    run: F,
    args: PhantomData<fn() -> A>,
}

impl<A, S, F, Fut> ToolHandler for AsyncHandler<A, S, F>
where
    A: ToolArgs,
    S: Clone + Send + Sync + 'static,
    F: Fn(S, A, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture {
        match parse_args::<A>(args) {
            Ok(args) => Box::pin((self.run)(self.state.clone(), args, ctx)),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

struct BlockingHandler<A, S, F> {
    inner: Arc<(S, F)>,
    args: PhantomData<fn() -> A>,
}

impl<A, S, F> ToolHandler for BlockingHandler<A, S, F>
where
    A: ToolArgs,
    S: Send + Sync + 'static,
    F: Fn(&S, A) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
{
    fn call(&self, args: Value, _ctx: ToolContext) -> HandlerFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let args = parse_args::<A>(args)?;
            tokio::task::spawn_blocking(move || (inner.1)(&inner.0, args))
                .await
                .map_err(|e| ToolError::failed(format!("tool worker failed: {e}")))?
        })
    }
}

/// The JSON Schema of `A` as a tool's `parameters`: an object schema with subschemas inlined,
/// no `$schema`/`title` noise, optional fields without a `null` branch (absent means default)
/// and no Rust-only `format` names (`uint`, `double`…) that JSON Schema validators ignore.
pub fn args_schema<A: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("description");
        map.remove("$defs");
        map.remove("definitions");
        map.entry("type").or_insert_with(|| Value::from("object"));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    strip_rust_formats(&mut value);
    strip_null_branches(&mut value);
    value
}

/// Drops the `null` alternative schemars gives `Option<T>`: an optional argument is one that
/// may be left out, and `null` stays refused as before.
fn strip_null_branches(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(branches)) = map.get("anyOf") {
                let non_null: Vec<Value> = branches
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                    .cloned()
                    .collect();
                if non_null.len() == 1 && branches.len() == 2 {
                    map.remove("anyOf");
                    if let Some(Value::Object(inner)) = non_null.into_iter().next() {
                        for (k, v) in inner {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            map.values_mut().for_each(strip_null_branches);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null_branches),
        _ => {}
    }
}

/// Removes the `format` values schemars adds for Rust number types, recursively.
fn strip_rust_formats(value: &mut Value) {
    const RUST_FORMATS: [&str; 14] = [
        "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
        "uint64", "uint128", "float", "double",
    ];
    match value {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| RUST_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(strip_rust_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rust_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Allowlist, Caller, Pipeline, ToolCall, ToolRegistry};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn default_limit() -> i64 {
        5
    }

    /// Not shown: the struct's own doc comment is dropped from the schema.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct SearchArgs {
        /// text to find
        pattern: String,
        /// matches shown
        #[serde(default = "default_limit")]
        #[schemars(range(min = 1, max = 200))]
        max_results: i64,
        #[serde(default)]
        is_regex: bool,
        kind: Option<Kind>,
        file_paths: Option<Vec<String>>,
        ratio: Option<f64>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Fact,
        BestPractice,
    }

    #[test]
    fn schema_comes_from_the_struct() {
        let schema = args_schema::<SearchArgs>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "text to find"},
                    "maxResults": {"type": "integer", "description": "matches shown",
                                   "default": 5, "minimum": 1, "maximum": 200},
                    "isRegex": {"type": "boolean", "default": false},
                    "kind": {"type": "string", "enum": ["fact", "best_practice"]},
                    "filePaths": {"type": "array", "items": {"type": "string"}},
                    "ratio": {"type": "number"}
                },
                "required": ["pattern"]
            })
        );
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    #[test]
    fn a_tool_without_arguments_has_an_empty_object_schema() {
        assert_eq!(
            args_schema::<NoArgs>(),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_deserialisation_error_names_the_argument() {
        let err = parse_args::<SearchArgs>(json!({"pattern": "x", "kind": "opinion"}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("invalid arguments: argument \"kind\": unknown variant `opinion`"));
        assert!(err.contains("expected `fact` or `best_practice`"), "{err}");
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct ReadArgs {
        file_path: String,
        #[serde(default = "default_limit")]
        max_lines: i64,
    }

    fn pipeline_with(def: ToolDefinition) -> Arc<Pipeline> {
        let registry = Arc::new(ToolRegistry::new());
        registry.register(def).unwrap();
        Pipeline::builder(registry, ".").build()
    }

    #[tokio::test]
    async fn handlers_get_their_state_and_normalised_typed_arguments() {
        let prefix = Arc::new(String::from("read"));
        let def = ToolDefinition::typed::<ReadArgs>(
            "read_thing",
            "Read.",
            ToolModule::ProjectAccess,
            EffectClass::ReadOnly,
        )
        .handler(prefix, |prefix, args, _ctx| async move {
            let text = format!("{prefix} {} {}", args.file_path, args.max_lines);
            Ok(ToolOutput::new(Value::Null, text))
        });
        let pipeline = pipeline_with(def);
        let caller = Caller::new("test", Allowlist::only(["read_thing"]));
        // `file_path` is a vendor spelling: normalisation maps it before deserialisation.
        let outcome = pipeline
            .execute(ToolCall::new(
                "read_thing",
                json!({"file_path": "a.rs", "max_lines": "7"}),
                caller,
            ))
            .await;
        assert_eq!(outcome.text_for_model(), "read a.rs 7");
    }

    #[tokio::test]
    async fn blocking_handlers_run_with_their_state() {
        let def = ToolDefinition::typed::<ReadArgs>(
            "read_blocking",
            "Read.",
            ToolModule::ProjectAccess,
            EffectClass::ReadOnly,
        )
        .timeout(Duration::from_secs(3))
        .blocking(40_i64, |base, args| {
            Ok(ToolOutput::new(
                Value::Null,
                (base + args.max_lines).to_string(),
            ))
        });
        assert_eq!(def.timeout, Some(Duration::from_secs(3)));
        let pipeline = pipeline_with(def);
        let caller = Caller::new("test", Allowlist::only(["read_blocking"]));
        let outcome = pipeline
            .execute(ToolCall::new(
                "read_blocking",
                json!({"filePath": "a.rs"}),
                caller,
            ))
            .await;
        assert_eq!(outcome.text_for_model(), "45");
    }
}
