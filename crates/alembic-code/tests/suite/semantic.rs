//! Hybrid semantic search keeps the embeddings of unchanged code across edits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use alembic_code::{CodeEmbedder, CodeService};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::direct::run_tool;

/// Embeds by text length and counts the texts it was asked for.
#[derive(Default)]
struct CountingEmbedder {
    texts: AtomicUsize,
}

impl CodeEmbedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        "counting"
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts.iter().map(|t| vec![1.0, t.len() as f32]).collect())
    }
}

#[test]
fn an_edit_re_embeds_only_the_changed_chunks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.py"),
        "class Meter:\n    def read(self):\n        return 1\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.py"), "def total():\n    return 2\n").unwrap();
    let embedder = Arc::new(CountingEmbedder::default());
    let service = Arc::new(
        CodeService::new(dir.path())
            .unwrap()
            .with_embedder(Arc::clone(&embedder) as Arc<dyn CodeEmbedder>),
    );
    let search = || {
        run_tool(
            &service,
            "semantic_search_code",
            &json!({"query": "meter read"}),
        )
        .unwrap()
        .data
    };
    let first = search();
    assert_eq!(first["mode"], json!("hybrid"));
    // Meter, Meter.read, b.py::total, and the query.
    assert_eq!(embedder.texts.load(Ordering::SeqCst), 4);

    let b = dir.path().join("b.py");
    std::fs::write(
        &b,
        "def total():\n    return 2\n\ndef average():\n    return 1\n",
    )
    .unwrap();
    let file = std::fs::File::options().write(true).open(&b).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(10))
        .unwrap();
    let second = search();
    assert_eq!(second["mode"], json!("hybrid"));
    // Only the new function and the query.
    assert_eq!(embedder.texts.load(Ordering::SeqCst), 6);
}

/// Vectors of chunks that no longer exist are dropped once they outnumber the live ones.
#[test]
fn vectors_of_edited_chunks_do_not_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.py");
    let service = Arc::new(
        CodeService::new(dir.path())
            .unwrap()
            .with_embedder(Arc::new(CountingEmbedder::default()) as Arc<dyn CodeEmbedder>),
    );
    let stored = || {
        let conn = alembic_store::open_project(dir.path()).unwrap();
        conn.query_row("select count(*) from code_chunk_vectors", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
    };
    let mut most = 0;
    for round in 0..6u64 {
        std::fs::write(
            &a,
            format!("class Meter:\n    def read(self):\n        return {round}\n"),
        )
        .unwrap();
        let file = std::fs::File::options().write(true).open(&a).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(10 + round))
            .unwrap();
        let data = run_tool(
            &service,
            "semantic_search_code",
            &json!({"query": "meter read"}),
        )
        .unwrap()
        .data;
        assert_eq!(data["mode"], json!("hybrid"));
        most = most.max(stored());
    }
    // Two live chunks (Meter, Meter.read), each edit makes two new vectors.
    assert!(most <= 4, "{most}");
    assert!(stored() >= 2);
}
