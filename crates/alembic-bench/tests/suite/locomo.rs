//! The LoCoMo targets of issue 4, checked in-process: on the lexical channel, and fused with
//! all-MiniLM-L6-v2 (the model that `scripts/fetch-models` installs; a missing model fails the
//! test, it is part of the suite, not optional).

use std::path::PathBuf;

use alembic_bench::locomo;
use pretty_assertions::assert_eq;

fn data() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/locomo-dev.json");
    assert!(
        path.is_file(),
        "LoCoMo dev split missing at {}: the benchmark data lives in ../shared/data next to the repository",
        path.display()
    );
    path
}

#[test]
fn evidence_ids_are_normalised() {
    assert_eq!(
        locomo::normalise_evidence("D8:6; D9:17"),
        vec!["D8:6", "D9:17"]
    );
    assert_eq!(locomo::normalise_evidence("D:11:26"), vec!["D11:26"]);
    assert_eq!(locomo::normalise_evidence("D30:05"), vec!["D30:5"]);
    assert_eq!(locomo::normalise_evidence("D"), Vec::<String>::new());
    assert_eq!(
        locomo::parse_session_date("1:56 pm on 8 May, 2023"),
        Some(1_683_554_160_000)
    );
    assert_eq!(
        locomo::parse_session_date("12:19 am on 4 January, 2024"),
        Some(1_704_327_540_000)
    );
}

/// Both rankings reach `hit_at_10` and `mrr`, and the default loses at most 0.02 hit@10.
fn assert_targets(report: &locomo::Report, hit_at_10: f64, mrr: f64) {
    println!("{}", locomo::render(report));
    let (d, r) = (&report.default, &report.relevance_only);
    for (name, m) in [("relevance-only", r), ("default", d)] {
        assert!(
            m.hit_at_10 >= hit_at_10,
            "{name} hit@10 {:.3} < {hit_at_10}",
            m.hit_at_10
        );
        assert!(m.mrr >= mrr, "{name} MRR {:.3} < {mrr}", m.mrr);
    }
    assert!(
        d.hit_at_10 >= r.hit_at_10 - 0.02,
        "default loses {:.3} hit@10 to relevance only",
        r.hit_at_10 - d.hit_at_10
    );
}

#[test]
fn lexical_retrieval_meets_the_locomo_targets() {
    let conversations = locomo::load(&data()).unwrap();
    assert_eq!(conversations.len(), 7);
    let report = locomo::evaluate(&conversations, None).unwrap();
    assert_targets(&report, 0.70, 0.48);
}

/// The all-MiniLM-L6-v2 directory (`ALEMBIC_MINILM_DIR` or where `scripts/fetch-models`
/// installs it). Missing files fail the test with the command that fetches them.
fn minilm_dir() -> PathBuf {
    let dir = alembic_memory::default_model_dir()
        .expect("HOME or ALEMBIC_MINILM_DIR must be set to find the model");
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        assert!(
            dir.join(file).is_file(),
            "all-MiniLM-L6-v2 {file} not found in {}: run scripts/fetch-models (or set ALEMBIC_MINILM_DIR)",
            dir.display()
        );
    }
    dir
}

#[test]
fn minilm_retrieval_meets_the_locomo_targets() {
    let conversations = locomo::load(&data()).unwrap();
    let embedder = alembic_memory::build_embedder(&alembic_memory::EmbedderConfig::Local {
        dir: minilm_dir(),
    })
    .unwrap();
    let report = locomo::evaluate_with(&conversations, embedder, true).unwrap();
    assert_eq!(report.embedder, "all-MiniLM-L6-v2");
    assert_targets(&report, 0.76, 0.52);
}
