//! `semantic_search_code` through the built-in registry and the pipeline, with the memory
//! crate's embedder adapted by `alembic_runtime::code_embedder`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alembic_code::CodeEmbedder;
use alembic_memory::{EmbedError, Embedder};
use alembic_runtime::code_embedder::{MemoryCodeEmbedder, code_service, configured_embedder};
use alembic_runtime::{ProjectConfig, ProjectServices, register_builtin_tools};
use alembic_tools::{Allowlist, Caller, Pipeline, ToolCall, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Deterministic embedder: one dimension per concept word, so "geometry" is close to code
/// about circles and radii even though no chunk contains the word "geometry".
struct ConceptEmbedder {
    failing: AtomicBool,
}

const CONCEPTS: [&[&str]; 3] = [
    &["geometry", "circle", "radius", "area"],
    &["network", "socket", "fetch"],
    &["storage", "disk", "save"],
];

impl Embedder for ConceptEmbedder {
    fn model_id(&self) -> &str {
        "concept-test"
    }
    fn dimension(&self) -> usize {
        CONCEPTS.len()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(EmbedError::Inference("test embedder is down".to_string()));
        }
        Ok(texts
            .iter()
            .map(|t| {
                let t = t.to_lowercase();
                CONCEPTS
                    .iter()
                    .map(|words| words.iter().filter(|w| t.contains(*w)).count() as f32)
                    .collect()
            })
            .collect())
    }
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("shapes.py"),
        "class Circle:\n    def area(self):\n        return 3.14 * self.radius ** 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("net.py"),
        "def fetch(url):\n    return socket.connect(url)\n",
    )
    .unwrap();
    dir
}

fn search(embedder: Option<Arc<ConceptEmbedder>>, query: &str) -> Value {
    let dir = project();
    let root = std::path::absolute(dir.path()).unwrap();
    let code_embedder =
        embedder.map(|e| Arc::new(MemoryCodeEmbedder::new(e)) as Arc<dyn CodeEmbedder>);
    let mut services =
        ProjectServices::for_project(&root, &ProjectConfig::load(&root).unwrap()).unwrap();
    services.code = Arc::new(code_service(&root, code_embedder, &Default::default()).unwrap());
    let registry = Arc::new(ToolRegistry::new());
    register_builtin_tools(&registry, &services).unwrap();
    let pipeline = Pipeline::builder(registry, &root).build();
    let caller = Caller::new("test", Allowlist::only(["semantic_search_code"]));
    let call = ToolCall::new("semantic_search_code", json!({"query": query}), caller);
    let outcome = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(pipeline.execute(call));
    assert!(outcome.is_ok(), "{}", outcome.text_for_model());
    let output = outcome.output.unwrap();
    let mut data = output.data;
    data["text"] = Value::String(output.text.lines().next().unwrap_or("").to_string());
    data
}

fn symbols(data: &Value) -> Vec<&str> {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["symbol"].as_str().unwrap())
        .collect()
}

#[test]
fn configured_embedder_makes_search_hybrid() {
    let embedder = Arc::new(ConceptEmbedder {
        failing: AtomicBool::new(false),
    });
    let data = search(Some(embedder), "geometry");
    assert_eq!(data["mode"], json!("hybrid"));
    assert_eq!(data["embedder"], json!("concept-test"));
    assert_eq!(data["fallback"], Value::Null);
    assert_eq!(
        data["text"],
        json!("2 results for \"geometry\" (hybrid over 3 code chunks, embedder concept-test)")
    );
    // No chunk has the word: only the embeddings can rank the circle code.
    assert_eq!(symbols(&data), ["Circle", "Circle.area"]);
    assert_eq!(data["results"][0]["lexical"], json!(0.0));
}

#[test]
fn failing_embedder_falls_back_to_lexical() {
    let embedder = Arc::new(ConceptEmbedder {
        failing: AtomicBool::new(true),
    });
    let data = search(Some(embedder), "radius area");
    assert_eq!(data["mode"], json!("lexical"));
    assert_eq!(data["degraded"], json!(true));
    assert_eq!(
        data["fallback"],
        json!("embedder concept-test failed: embedding failed: test embedder is down")
    );
    assert_eq!(symbols(&data), ["Circle.area", "Circle"]);
    assert!(
        data["text"]
            .as_str()
            .unwrap()
            .ends_with("fell back to lexical)"),
        "{}",
        data["text"]
    );
}

#[test]
fn without_an_embedder_search_is_lexical() {
    let data = search(None, "geometry");
    assert_eq!(data["mode"], json!("lexical"));
    assert_eq!(data["embedder"], Value::Null);
    assert_eq!(data["fallback"], Value::Null);
    assert_eq!(symbols(&data), Vec::<&str>::new());
}

#[test]
fn the_memory_section_chooses_the_embedder() {
    let parse = |text: &str| ProjectConfig::parse(text, None).unwrap();
    assert!(configured_embedder(&parse("")).unwrap().is_none());
    assert!(
        configured_embedder(&parse("[memory]\nembedder = \"none\"\n"))
            .unwrap()
            .is_none()
    );
    let openai = configured_embedder(&parse(
        "[memory]\nembedder = \"openai\"\nembedder_model = \"m-small\"\n",
    ))
    .unwrap()
    .unwrap();
    assert_eq!(openai.model_id(), "m-small");
    let err = configured_embedder(&parse("[memory]\nembedder = \"magic\"\n"))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "config.toml is not valid: [memory] embedder = \"magic\": accepted \"none\", \"local\" or \"openai\""
    );
}
