use super::*;
use crate::text::TokenMeter;
use pretty_assertions::assert_eq;

fn finding(text: &str, evidence: &str, importance: u8) -> SessionFinding {
    SessionFinding {
        finding: text.to_string(),
        evidence: evidence.to_string(),
        importance,
    }
}

fn report(dim: &str, at: u64, findings: Vec<SessionFinding>) -> DimensionReport {
    DimensionReport {
        dim_id: dim.to_string(),
        completed_at_ms: at,
        analysis_text: format!("Analysis of {dim}."),
        findings,
        referenced_files: vec!["Net/APIClient.swift".into(), format!("{dim}/main.swift")],
        ..DimensionReport::default()
    }
}

fn sample() -> SessionStore {
    let mut s = SessionStore::new();
    let mut arch = report(
        "architecture",
        1,
        vec![
            finding(
                "APIClient is a Singleton used by every feature",
                "Net/APIClient.swift:12",
                9,
            ),
            finding(
                "Features are split into SwiftPM modules",
                "Package.swift:1",
                6,
            ),
        ],
    );
    arch.digest = Some(DimensionDigest {
        summary: "Layered app: features → services → NetworkKit.".into(),
        cross_refs: [(
            "networking".to_string(),
            "check how APIClient retries".to_string(),
        )]
        .into(),
        gaps: vec!["persistence layer not examined".into()],
        ..DimensionDigest::default()
    });
    s.store_report(arch);
    s.store_report(report(
        "conventions",
        2,
        vec![finding(
            "Every APIClient call goes through a Result type",
            "Net/APIClient.swift:40, Net/Result.swift:3",
            7,
        )],
    ));
    s.add_candidate(
        "conventions",
        CandidateSummary {
            title: "Result-based errors".into(),
            ..CandidateSummary::default()
        },
    );
    s
}

#[test]
fn evidence_files_strip_line_suffixes_and_split_lists() {
    assert_eq!(
        evidence_files("a.swift:12, dir/b.rs:3-9"),
        vec!["a.swift", "dir/b.rs"]
    );
    assert_eq!(evidence_files(r"C:\src\x.rs:4"), vec![r"C:\src\x.rs"]);
    assert_eq!(evidence_files("see the docs"), Vec::<String>::new());
    assert_eq!(evidence_files("Package.swift"), vec!["Package.swift"]);
}

#[test]
fn replacing_a_report_does_not_duplicate_evidence_or_cross_refs() {
    let mut s = sample();
    let again = s.report("architecture").cloned().unwrap();
    s.store_report(again);
    assert_eq!(s.evidence_index()["Net/APIClient.swift"].len(), 2);
    assert_eq!(s.cross_refs().len(), 1);
    assert_eq!(
        s.completed_dimensions(),
        vec!["architecture", "conventions"]
    );
}

#[test]
fn evidence_search_matches_files_and_findings() {
    let s = sample();
    let hits = s.search_evidence("apiclient", None);
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].importance, 9);
    assert_eq!(s.search_evidence("result", Some("conventions")).len(), 2);
    assert_eq!(s.search_evidence("result", Some("architecture")).len(), 0);
}

#[test]
fn context_for_a_dimension_renders_other_dimensions_and_suggestions() {
    let mut s = sample();
    s.reflect_tier(1, &["architecture", "conventions"]);
    let text = s.context_for_dimension("networking", &["retry"], 10_000, &TokenMeter::default());
    insta::assert_snapshot!("context_for_networking", text);
}

#[test]
fn context_for_a_dimension_stays_within_any_budget() {
    let mut s = sample();
    s.reflect_tier(1, &["architecture", "conventions"]);
    let meter = TokenMeter::default();
    for budget in [0, 5, 20, 40, 80, 160, 400] {
        let text = s.context_for_dimension("networking", &[], budget, &meter);
        assert!(
            meter.count(&text) <= budget,
            "budget {budget}: {}",
            meter.count(&text)
        );
    }
    assert_eq!(
        SessionStore::new().context_for_dimension("x", &[], 1000, &meter),
        ""
    );
}

#[test]
fn keywords_rank_relevant_dimensions_first() {
    let s = sample();
    let text = s.context_for_dimension("networking", &["Result"], 10_000, &TokenMeter::default());
    let conv = text.find("### conventions").unwrap();
    let arch = text.find("### architecture").unwrap();
    assert!(conv < arch, "{text}");
}

#[test]
fn the_producer_gets_its_findings_and_the_suggestions_for_it() {
    let s = sample();
    assert_eq!(s.distilled_for_producer("missing"), None);
    let mut s2 = s.clone();
    s2.store_report(report(
        "networking",
        3,
        vec![finding("Retries use backoff", "Net/Retry.swift:9", 8)],
    ));
    let p = s2.distilled_for_producer("networking").unwrap();
    assert_eq!(p.findings.len(), 1);
    assert_eq!(
        p.cross_refs,
        vec![CrossReference {
            from: "architecture".into(),
            to: "networking".into(),
            detail: "check how APIClient retries".into()
        }]
    );
}

#[test]
fn tier_reflections_are_rule_based() {
    let mut s = sample();
    let r = s.reflect_tier(1, &["architecture", "conventions", "not-run"]);
    assert_eq!(r.completed_dimensions, vec!["architecture", "conventions"]);
    insta::assert_debug_snapshot!("tier_reflection", r);
}

#[test]
fn each_tier_reflection_renders_once_under_its_own_number() {
    let mut s = sample();
    s.reflect_tier(1, &["architecture"]);
    s.reflect_tier(2, &["conventions"]);
    let text = s.context_for_dimension("networking", &[], 10_000, &TokenMeter::default());
    assert_eq!(text.matches("### Tier 1 synthesis").count(), 1, "{text}");
    assert_eq!(text.matches("### Tier 2 synthesis").count(), 1, "{text}");
    assert_eq!(text.matches("### Tier 3 synthesis").count(), 0, "{text}");
    // The reflections go before the dimensions they condense (they win a tight share).
    let tier = text.find("### Tier 1 synthesis").unwrap();
    let dims = text.find("### architecture").unwrap();
    assert!(tier < dims, "{text}");
}

#[test]
fn a_report_stored_again_without_digest_or_distillate_keeps_them() {
    let mut s = sample();
    let mut bare = s.report("architecture").cloned().unwrap();
    bare.digest = None;
    bare.distilled = None;
    let before = s.report("architecture").unwrap().digest.clone();
    s.store_report(DimensionReport {
        distilled: Some(DistilledContext::default()),
        ..bare.clone()
    });
    s.store_report(bare);
    let kept = s.report("architecture").unwrap();
    assert_eq!(kept.digest, before);
    assert_eq!(kept.distilled, Some(DistilledContext::default()));
}

#[test]
fn only_unfinished_reports_are_discarded() {
    let mut s = sample();
    s.store_report(report("networking", 0, vec![finding("half done", "", 5)]));
    s.discard_unfinished("networking");
    s.discard_unfinished("architecture");
    assert_eq!(s.report("networking"), None);
    assert!(s.report("architecture").is_some());
}
