use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use alembic_memory::{EmbedError, Embedder, NewMemory, OpenAiEmbedder, RetrieveOptions, cosine};
use pretty_assertions::assert_eq;

use super::memory;

/// The model directory: `ALEMBIC_MINILM_DIR` or the `scripts/fetch-models` location. A missing
/// model fails the test: these tests are part of the suite, not optional.
fn minilm_dir() -> PathBuf {
    let dir = alembic_memory::default_model_dir().expect("HOME or ALEMBIC_MINILM_DIR must be set");
    assert!(
        dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file(),
        "all-MiniLM-L6-v2 not found in {}: run scripts/fetch-models (or set ALEMBIC_MINILM_DIR)",
        dir.display()
    );
    dir
}

#[test]
fn minilm_matches_the_reference_model() {
    let model = alembic_memory::MiniLmEmbedder::load(&minilm_dir()).unwrap();
    assert_eq!(model.dimension(), 384);
    let v = model
        .embed(&[
            "The cat sits on the mat.",
            "A feline is resting on a rug.",
            "Rust borrow checker error E0502",
        ])
        .unwrap();
    let paraphrase = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    println!("cos(paraphrase) = {paraphrase:.4}, cos(unrelated) = {unrelated:.4}");
    assert!(
        (paraphrase - 0.5735).abs() <= 0.01,
        "paraphrase cosine {paraphrase}"
    );
    assert!(
        (unrelated + 0.064).abs() <= 0.02,
        "unrelated cosine {unrelated}"
    );
    // vectors are unit length; a batch gives the same vectors as single calls
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4);
    let single = model.embed(&["A feline is resting on a rug."]).unwrap();
    assert!(cosine(&single[0], &v[1]) > 0.9999);
}

#[test]
fn minilm_missing_model_says_how_to_fetch_it() {
    let empty = tempfile::tempdir().unwrap();
    let err = alembic_memory::MiniLmEmbedder::load(empty.path()).unwrap_err();
    assert!(matches!(
        err,
        EmbedError::ModelMissing {
            file: "model.safetensors",
            ..
        }
    ));
    assert!(
        err.to_string().contains("run scripts/fetch-models"),
        "{err}"
    );
}

#[test]
fn minilm_finds_paraphrases_in_retrieval() {
    let model = Arc::new(alembic_memory::MiniLmEmbedder::load(&minilm_dir()).unwrap());
    let (pm, _) = memory();
    let mut pm = pm.with_embedder(Some(model));
    pm.add(NewMemory::fact("The cat sits on the mat.")).unwrap();
    pm.add(NewMemory::fact("Rust borrow checker error E0502"))
        .unwrap();
    let hits = pm
        .retrieve("A feline is resting on a rug.", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].memory.content, "The cat sits on the mat.");
}

/// A one-thread fake of the OpenAI embeddings endpoint on 127.0.0.1. Each request gets a
/// vector [chars, words, 1] per input, answered in reverse order (clients must sort by
/// `index`). The requests' bodies and Authorization headers are recorded.
struct FakeServer {
    url: String,
    seen: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
}

fn fake_server(status: u16, requests: usize) -> FakeServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut len, mut auth) = (0usize, String::new());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if lower.starts_with("authorization:") {
                    auth = line["authorization:".len()..].trim().to_string();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let inputs: Vec<String> = serde_json::from_value(request["input"].clone()).unwrap();
            log.lock().unwrap().push((auth, request));
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .rev()
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": [t.len() as f32, t.split_whitespace().count() as f32, 1.0]}))
                .collect();
            let reply = if status == 200 {
                serde_json::json!({"object": "list", "data": data, "model": "fake"}).to_string()
            } else {
                r#"{"error":{"message":"rate limited"}}"#.to_string()
            };
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            )
            .unwrap();
        }
    });
    FakeServer { url, seen }
}

#[test]
fn openai_client_posts_inputs_and_orders_vectors_by_index() {
    let server = fake_server(200, 1);
    let client = OpenAiEmbedder::new(
        &server.url,
        Some("sk-test".into()),
        "text-embedding-3-small",
    )
    .unwrap();
    let v = client.embed(&["one two three", "four"]).unwrap();
    assert_eq!(v, vec![vec![13.0, 3.0, 1.0], vec![4.0, 1.0, 1.0]]);
    assert_eq!(client.dimension(), 3);
    assert_eq!(client.model_id(), "openai:text-embedding-3-small");
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen[0].0, "Bearer sk-test");
    assert_eq!(
        seen[0].1,
        serde_json::json!({"model": "text-embedding-3-small", "input": ["one two three", "four"]})
    );
}

#[test]
fn openai_client_reports_http_errors_and_retrieval_falls_back() {
    let server = fake_server(429, 3);
    let client = OpenAiEmbedder::new(&server.url, None, "m").unwrap();
    let err = client.embed(&["x"]).unwrap_err();
    assert!(err.to_string().contains("status 429"), "{err}");

    let (pm, _) = memory();
    let mut pm = pm.with_embedder(Some(Arc::new(client)));
    pm.add(NewMemory::fact("the API gateway is rate limited"))
        .unwrap();
    let hits = pm
        .retrieve("rate limited gateway", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].parts.semantic, None);
}
