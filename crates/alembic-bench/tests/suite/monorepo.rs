//! A tiny configuration of the monorepo benchmark (the Python fixture project, in this
//! process) runs every library row, so the benchmark cannot rot.

use alembic_bench::monorepo::{Options, render, run};
use pretty_assertions::assert_eq;

#[test]
fn the_monorepo_benchmark_measures_every_library_row_on_a_small_tree() {
    let tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../alembic-code/tests/fixtures/python");
    let report = run(&Options {
        tree: Some(tree),
        max_files: None,
        alembic: None,
        queries: 12,
    })
    .unwrap();
    assert_eq!(report.mode, "library");
    assert_eq!(report.source_files, 2);
    assert_eq!(report.class_name, "Animal");
    assert_eq!(report.mixed_queries, 12);
    for (row, value) in [
        ("full index", report.full_index.wall_ms),
        ("one-file index", report.one_file_reindex.wall_ms),
        ("cold query", report.cold_query.wall_ms),
        ("first query", report.first_query_ms),
        ("later query", report.later_query_ms_p50),
        ("database", report.database_mb),
    ] {
        assert!(value > 0.0, "{row}: {value}");
    }
    let cold: Vec<&str> = report
        .cold_whole_project
        .iter()
        .map(|(query, _)| query.split(' ').next().unwrap_or_default())
        .collect();
    assert_eq!(
        cold,
        [
            "get_project_overview",
            "get_class_hierarchy",
            "get_category_map",
            "semantic_search_code",
            "query_call_graph",
            "query_code_graph",
            "query_code_graph",
            "query_code_graph",
        ]
    );
    assert!(
        report
            .cold_whole_project
            .iter()
            .all(|(_, run)| run.wall_ms > 0.0)
    );
    assert!(
        report.mix_p50_ms.contains_key("get_project_overview"),
        "{:?}",
        report.mix_p50_ms
    );
    assert!(report.full_index.cpu_ms.is_some());
    assert!(report.rss_after_queries_mb.is_some_and(|mb| mb > 1.0));
    assert_eq!(report.missing.len(), 2, "{:?}", report.missing);
    let text = render(&report);
    for row in [
        "full index: ",
        "index after one changed file: ",
        "cold get_class_hierarchy Animal: ",
        "graph query: first ",
        "resident memory after 12 mixed queries: ",
        "not measured: search_project_code vs rg",
        "cold get_project_overview {}: ",
        "cold query_code_graph {\"action\":\"topology\"}: ",
        "mixed queries, p50 ms: ",
    ] {
        assert!(text.contains(row), "{row} missing from\n{text}");
    }
}
