//! The LoCoMo targets of issue 4, checked in-process on the lexical channel (deterministic,
//! no model needed). The MiniLM figures come from `alembic-bench locomo --embedder-dir`.

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

#[test]
fn lexical_retrieval_meets_the_locomo_targets() {
    let conversations = locomo::load(&data()).unwrap();
    assert_eq!(conversations.len(), 7);
    let report = locomo::evaluate(&conversations, None).unwrap();
    println!("{}", locomo::render(&report));
    let (d, r) = (&report.default, &report.relevance_only);
    assert!(
        r.hit_at_10 >= 0.70,
        "relevance-only hit@10 {:.3} < 0.70",
        r.hit_at_10
    );
    assert!(r.mrr >= 0.48, "relevance-only MRR {:.3} < 0.48", r.mrr);
    assert!(
        d.hit_at_10 >= 0.70,
        "default hit@10 {:.3} < 0.70",
        d.hit_at_10
    );
    assert!(d.mrr >= 0.48, "default MRR {:.3} < 0.48", d.mrr);
    assert!(
        d.hit_at_10 >= r.hit_at_10 - 0.02,
        "default loses {:.3} hit@10 to relevance only",
        r.hit_at_10 - d.hit_at_10
    );
}
