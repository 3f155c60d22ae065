//! The tools through the real registry and pipeline (argument validation, safety gate,
//! handlers, services).

use alembic_knowledge::tools::TOOL_NAMES;
use alembic_tools::{OutcomeStatus, PresetCatalog, ToolModule, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Harness, register_with_store};

fn candidate(title: &str) -> Value {
    json!({
        "title": title,
        "description": "How the project retries failed requests",
        "content": {
            "markdown": "Requests go through `Net/Client.swift`, which retries with exponential backoff.",
            "pattern": "func send(_ r: Request) async throws -> Response {\n    try await retry(times: 3) { try await session.data(for: r) }\n}",
            "rationale": "transient failures"
        },
        "kind": "pattern",
        "sources": ["Net/Client.swift"],
        "tags": ["network"]
    })
}

async fn publish(h: &Harness, title: &str) -> String {
    let id = h.ok("submit_knowledge", candidate(title)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    h.ok("approve_candidate", json!({"candidateId": id})).await;
    h.ok("publish_recipe", json!({"recipeId": id})).await;
    id
}

#[test]
fn every_tool_is_registered_in_its_module_with_the_right_effect() {
    let registry = ToolRegistry::new();
    register_with_store(&registry, std::path::Path::new("."));
    let mut per_module = std::collections::BTreeMap::new();
    for name in TOOL_NAMES {
        let tool = registry
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        *per_module.entry(tool.definition.module).or_insert(0) += 1;
    }
    assert_eq!(per_module.get(&ToolModule::Query), Some(&6));
    assert_eq!(per_module.get(&ToolModule::Lifecycle), Some(&10));
    assert_eq!(per_module.get(&ToolModule::Guard), Some(&4));
    assert_eq!(per_module.get(&ToolModule::KnowledgeGraph), Some(&2));
    assert_eq!(per_module.get(&ToolModule::EvolutionTools), Some(&3));
    assert_eq!(per_module.get(&ToolModule::Composite), Some(&3));
    assert_eq!(per_module.get(&ToolModule::Infrastructure), Some(&1));
}

#[test]
fn the_insight_producer_stage_can_submit() {
    let registry = ToolRegistry::new();
    register_with_store(&registry, std::path::Path::new("."));
    let producer = PresetCatalog::builtin()
        .allowlist("bootstrap-producer")
        .unwrap();
    for tool in ["submit_knowledge", "submit_with_check"] {
        assert!(
            producer.allows(tool) && registry.get(tool).is_some(),
            "{tool}"
        );
    }
}

#[tokio::test]
async fn a_candidate_goes_from_submission_to_published_recipe() {
    let h = Harness::new();
    let sub = h
        .ok("submit_knowledge", candidate("Retry requests with backoff"))
        .await;
    assert_eq!(sub["status"], "submitted");
    assert_eq!(
        sub["warnings"],
        json!(["content.markdown is shorter than 200 characters"])
    );
    let id = sub["id"].as_str().unwrap();
    assert_eq!(
        h.ok("search_recipes", json!({"keyword": "backoff"})).await["total"],
        0
    );
    assert_eq!(
        h.ok(
            "search_candidates",
            json!({"keyword": "backoff", "status": "pending"})
        )
        .await["total"],
        1
    );

    let out = h
        .call_as(
            "alice",
            "approve_candidate",
            json!({"candidateId": id, "note": "good"}),
        )
        .await;
    assert_eq!(
        out.text_for_model(),
        format!("{id} \"Retry requests with backoff\": submitted -> approved")
    );
    h.call_as("alice", "publish_recipe", json!({"recipeId": id}))
        .await;

    let found = h
        .ok(
            "search_recipes",
            json!({"keyword": "backoff", "language": "swift"}),
        )
        .await;
    assert_eq!(found["items"][0]["id"], id);
    let detail = h.ok("get_recipe_detail", json!({"recipeId": id})).await;
    let who: Vec<_> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["to"].clone(), t["by"].clone()))
        .collect();
    assert_eq!(
        who,
        vec![
            (json!("submitted"), json!("agent:test")),
            (json!("approved"), json!("alice")),
            (json!("published"), json!("alice"))
        ]
    );
    assert_eq!(
        detail["entry"]["language"], "swift",
        "inferred from the sources"
    );
    let overview = h.ok("knowledge_overview", json!({})).await;
    assert_eq!(overview["topRecipes"][0]["id"], id);
    assert_eq!(overview["_meta"]["empty"], false);
    let stats = h.ok("get_project_stats", json!({})).await;
    assert_eq!(
        (
            stats["knowledge"]["recipes"].clone(),
            stats["knowledge"]["candidates"].clone()
        ),
        (json!(1), json!(0))
    );
}

#[tokio::test]
async fn lifecycle_refusals_say_what_is_allowed() {
    let h = Harness::new();
    let id = h.ok("submit_knowledge", candidate("Retry")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let err = h.err("publish_recipe", json!({"recipeId": id})).await;
    assert!(
        err.contains(
            "from submitted to published: allowed next states from submitted are approved, rejected"
        ),
        "{err}"
    );
    let err = h.err("reject_candidate", json!({"candidateId": id})).await;
    assert!(err.contains("reason"), "{err}");
    let err = h
        .err(
            "deprecate_recipe",
            json!({"recipeId": "k-nope", "reason": "x"}),
        )
        .await;
    assert!(err.contains("knowledge entry 'k-nope'"), "{err}");
}

#[tokio::test]
async fn invalid_and_duplicate_submissions_answer_rejected() {
    let h = Harness::new();
    let bad = h
        .ok("submit_knowledge", json!({"title": "Empty", "content": {}}))
        .await;
    assert_eq!(
        bad["status"], "rejected",
        "the SubmitDedup middleware reads this"
    );
    assert_eq!(bad["reason"], "validation_failed");
    h.ok("submit_knowledge", candidate("Retry requests with backoff"))
        .await;
    let dup = h
        .ok(
            "submit_knowledge",
            candidate("retry requests  with BACKOFF"),
        )
        .await;
    assert_eq!(
        (dup["status"].clone(), dup["reason"].clone()),
        (json!("rejected"), json!("duplicate_title"))
    );
    let mut similar = candidate("Exponential backoff for requests");
    similar["description"] = json!("How the project retries failed requests");
    let checked = h.ok("submit_with_check", similar).await;
    assert_eq!(checked["status"], "rejected");
    assert_eq!(checked["reason"], "duplicate");
    assert!(checked["highestSimilarity"].as_f64().unwrap() >= 0.7);
    let kind = h
        .err(
            "submit_knowledge",
            json!({"title": "x", "content": {"markdown": "y"}, "kind": "rumour"}),
        )
        .await;
    assert!(kind.contains("kind"), "{kind}");
}

#[tokio::test]
async fn rejected_candidates_are_revised_and_resubmitted() {
    let h = Harness::new();
    let id = h.ok("submit_knowledge", candidate("Retry")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    h.ok(
        "reject_candidate",
        json!({"candidateId": id, "reason": "too vague"}),
    )
    .await;
    let upd = h.ok("update_recipe", json!({"recipeId": id, "updates": {"title": "Retry failed requests three times", "content": {"rationale": "flaky network"}}})).await;
    assert_eq!(upd["status"], "submitted");
    let detail = h.ok("get_recipe_detail", json!({"recipeId": id})).await;
    assert_eq!(detail["entry"]["rationale"], "flaky network");
    assert!(
        detail["entry"]["pattern"]
            .as_str()
            .unwrap()
            .contains("retry(times: 3)"),
        "other content kept"
    );
    let published = publish(&h, "Another").await;
    let err = h
        .err(
            "update_recipe",
            json!({"recipeId": published, "updates": {"title": "x"}}),
        )
        .await;
    assert!(err.contains("propose an evolution"), "{err}");
}

#[tokio::test]
async fn duplicates_and_graph_edges() {
    let h = Harness::new();
    let a = publish(&h, "Retry requests with backoff").await;
    let b = h.ok("submit_knowledge", json!({"title": "Request timeouts", "content": {"markdown": "Every request has a 30 s timeout."}})).await["id"].as_str().unwrap().to_string();

    let dup = h
        .ok(
            "check_duplicate",
            json!({"candidate": {"title": "Retry Requests With Backoff"}}),
        )
        .await;
    assert_eq!(
        (dup["hasDuplicate"].clone(), dup["similar"][0]["id"].clone()),
        (json!(true), json!(a))
    );
    let none = h.ok("check_duplicate", json!({"candidateId": b})).await;
    assert_eq!(
        none["similar"],
        json!([]),
        "an entry is not its own duplicate"
    );

    h.ok(
        "add_graph_edge",
        json!({"fromId": b, "toId": a, "relation": "depends_on"}),
    )
    .await;
    let rel = h.ok("get_related_recipes", json!({"recipeId": a})).await;
    assert_eq!(rel["incoming"][0]["otherId"], b);
    let self_edge = h
        .err(
            "add_graph_edge",
            json!({"fromId": a, "toId": a, "relation": "requires"}),
        )
        .await;
    assert!(self_edge.contains("to itself"), "{self_edge}");
    let unknown = h
        .call(
            "add_graph_edge",
            json!({"fromId": a, "toId": b, "relation": "likes"}),
        )
        .await;
    assert_eq!(
        unknown.status,
        OutcomeStatus::InvalidArguments,
        "the schema's enum refuses it first"
    );
    let missing = h
        .err(
            "add_graph_edge",
            json!({"fromId": a, "toId": "k-000", "relation": "requires"}),
        )
        .await;
    assert!(missing.contains("'k-000'"), "{missing}");
}

#[tokio::test]
async fn guard_checks_files_through_pathguard_and_records_runs() {
    let h = Harness::new();
    h.write("src/lib.rs", "fn a() {\n    let x = y.unwrap();\n    // z.unwrap()\n    let password = \"hunter2hunter2\";\n}\n");
    let out = h
        .ok("guard_check_code", json!({"filePath": "src/lib.rs"}))
        .await;
    let found: Vec<_> = out["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["line"].clone(), v["ruleId"].clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            (json!(2), json!("rust-unwrap")),
            (json!(4), json!("hardcoded-secret"))
        ]
    );
    assert_eq!(out["language"], "rust");

    let escape = h
        .call("guard_check_code", json!({"filePath": "../outside.rs"}))
        .await;
    assert_eq!(
        escape.status,
        OutcomeStatus::Blocked,
        "{}",
        escape.text_for_model()
    );

    let missing = h
        .err("guard_check_code", json!({"filePath": "src/none.rs"}))
        .await;
    assert!(
        missing.starts_with("error (error): not found:"),
        "{missing}"
    );

    let snippet = h
        .ok(
            "guard_check_code",
            json!({"code": "let v = eval(input)", "language": "JavaScript"}),
        )
        .await;
    assert_eq!(snippet["violations"][0]["ruleId"], "js-eval");

    let runs = h
        .ok("query_violations", json!({"file": "src/lib.rs"}))
        .await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["violationCount"], 2);
    let stats = h.ok("query_violations", json!({"statsOnly": true})).await;
    assert_eq!(stats["stats"]["runs"], 2);
    assert_eq!(stats["stats"]["bySeverity"]["error"], 2);
}

#[tokio::test]
async fn project_rules_extend_and_override_builtins() {
    let h = Harness::new();
    h.write(".alembic/guard-rules.toml", "disabled = [\"rust-unwrap\"]\n[[rule]]\nid = \"no-println\"\ndescription = \"use tracing\"\nlanguages = [\"rust\"]\npattern = \"println!\"\nliteral = true\nseverity = \"warning\"\n");
    let rust = h.ok("list_guard_rules", json!({"language": "rust"})).await;
    let ids: Vec<_> = rust["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ids.contains(&"no-println".to_string()) && !ids.contains(&"rust-unwrap".to_string()),
        "{ids:?}"
    );
    assert!(
        !ids.contains(&"swift-force-try".to_string()),
        "language filter applies to built-ins"
    );
    let project_only = h
        .ok("list_guard_rules", json!({"includeBuiltIn": false}))
        .await;
    assert_eq!(project_only["total"], 1);
    let out = h
        .ok(
            "guard_check_code",
            json!({"code": "println!(\"x\"); a.unwrap();", "language": "rust"}),
        )
        .await;
    assert_eq!(out["violations"][0]["ruleId"], "no-println");
    assert_eq!(out["violationCount"], 1);

    h.write(".alembic/guard-rules.toml", "[[rule]]\nid = \"bad\"\ndescription = \"d\"\nlanguages = [\"*\"]\npattern = \"(\"\nseverity = \"info\"\n");
    let err = h.err("list_guard_rules", json!({})).await;
    assert!(err.contains("invalid guard rule 'bad'"), "{err}");
}

#[tokio::test]
async fn usage_feeds_feedback_stats_and_recommendations() {
    let h = Harness::new();
    let a = publish(&h, "Alpha recipe").await;
    let b = publish(&h, "Beta recipe").await;
    for _ in 0..3 {
        h.ok("record_usage", json!({"recipeId": b, "type": "adoption"}))
            .await;
    }
    h.ok(
        "record_usage",
        json!({"recipeId": a, "type": "application"}),
    )
    .await;
    let stats = h.ok("get_feedback_stats", json!({"recipeId": b})).await;
    assert_eq!(stats["global"]["adoptions"], 3);
    assert_eq!(stats["global"]["applications"], 1);
    assert_eq!(stats["topRecipes"][0]["id"], b);
    assert_eq!(stats["recipeStats"]["adoptions"], 3);
    let rec = h.ok("get_recommendations", json!({"limit": 1})).await;
    assert_eq!(rec["items"][0]["id"], b);
    let bad = h
        .call("record_usage", json!({"recipeId": a, "type": "like"}))
        .await;
    assert_eq!(bad.status, OutcomeStatus::InvalidArguments);
}

#[tokio::test]
async fn quality_and_validation_without_storing() {
    let h = Harness::new();
    let v = h
        .ok(
            "validate_candidate",
            json!({"candidate": {"title": "", "content": {}}}),
        )
        .await;
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"].as_array().unwrap().len(), 2);
    let good = h
        .ok(
            "validate_candidate",
            json!({"candidate": candidate("Retry")}),
        )
        .await;
    assert_eq!(good["valid"], true);
    let overview = h.ok("knowledge_overview", json!({})).await;
    assert_eq!(overview["_meta"]["empty"], true);
    let q = h
        .ok("quality_score", json!({"recipe": candidate("Retry")}))
        .await;
    assert_eq!(q["quality"]["code"], 1.0);
    assert_eq!(
        h.ok("get_project_stats", json!({})).await["knowledge"]["total"],
        0,
        "nothing stored"
    );
}

#[tokio::test]
async fn search_knowledge_reports_confidence() {
    let h = Harness::new();
    publish(&h, "Retry requests with backoff").await;
    let hit = h
        .ok("search_knowledge", json!({"query": "retry backoff"}))
        .await;
    assert_eq!(hit["_meta"]["confidence"], "high");
    assert_eq!(hit["results"][0]["reasoning"]["rank"], 1);
    let miss = h
        .ok("search_knowledge", json!({"query": "database migrations"}))
        .await;
    assert_eq!(miss["_meta"]["confidence"], "none");
}

#[tokio::test]
async fn evolution_proposals_and_confirmed_deprecation() {
    let h = Harness::new();
    let id = publish(&h, "Retry").await;
    let cand = h.ok("submit_knowledge", candidate("Other")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let err = h
        .err(
            "propose_evolution",
            json!({"recipeId": cand, "type": "enhance", "description": "d"}),
        )
        .await;
    assert!(err.contains("submitted"), "{err}");
    let p = h.ok("propose_evolution", json!({"recipeId": id, "type": "correction", "description": "moved", "evidence": {"sourceStatus": "moved"}, "confidence": 0.9})).await;
    assert_eq!(p["status"], "proposed");
    let again = h
        .err(
            "propose_evolution",
            json!({"recipeId": id, "type": "correction", "description": "again"}),
        )
        .await;
    assert!(again.contains("already exists"), "{again}");
    let skipped = h
        .ok(
            "skip_evolution",
            json!({"recipeId": id, "reason": "still right"}),
        )
        .await;
    assert_eq!(skipped["closedProposals"], 1);
    h.ok(
        "propose_evolution",
        json!({"recipeId": id, "type": "deprecate", "description": "code gone"}),
    )
    .await;
    let done = h
        .ok(
            "confirm_deprecation",
            json!({"recipeId": id, "reason": "code gone"}),
        )
        .await;
    assert_eq!(done["closedProposals"], 1);
    let detail = h.ok("get_recipe_detail", json!({"recipeId": id})).await;
    assert_eq!(detail["entry"]["status"], "deprecated");
    let statuses: Vec<_> = detail["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].clone())
        .collect();
    assert_eq!(statuses, vec![json!("skipped"), json!("executed")]);
}

#[tokio::test]
async fn rendered_texts() {
    let h = Harness::new();
    let id = publish(&h, "Retry requests with backoff").await;
    h.write("src/a.rs", "let a = b.unwrap();\n");
    let mut transcript = String::new();
    for (tool, args) in [
        ("search_recipes", json!({"keyword": "retry"})),
        ("get_project_stats", json!({})),
        ("guard_check_code", json!({"filePath": "src/a.rs"})),
        ("quality_score", json!({"recipeId": id})),
        (
            "validate_candidate",
            json!({"candidate": {"title": "T", "content": {"markdown": "short"}, "trigger": "x"}}),
        ),
    ] {
        let out = h.call(tool, args.clone()).await.text_for_model();
        let block = format!("### {tool} {args}\n{out}\n\n");
        transcript.push_str(&block.replace(&id, "<id>"));
    }
    insta::assert_snapshot!(transcript);
}

#[tokio::test]
async fn published_rule_entries_become_guard_rules() {
    let h = Harness::new();
    let rule = json!({
        "title": "Log through tracing, not println",
        "kind": "rule",
        "language": "rust",
        "content": {"markdown": "Output goes through tracing so it can be filtered."},
        "doClause": "use tracing::info!",
        "guards": [{"pattern": "println!", "literal": true, "severity": "error"}, {"pattern": "("}]
    });
    let id = h.ok("submit_knowledge", rule).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let code = json!({"code": "println!(\"hi\");", "language": "rust"});
    let before = h.ok("guard_check_code", code.clone()).await;
    assert_eq!(
        before["violationCount"], 0,
        "a candidate's guards do not apply"
    );
    h.ok("approve_candidate", json!({"candidateId": id})).await;
    h.ok("publish_recipe", json!({"recipeId": id})).await;
    let after = h.ok("guard_check_code", code).await;
    assert_eq!(
        after["violationCount"], 1,
        "the bad second guard is skipped"
    );
    let v = &after["violations"][0];
    assert_eq!(v["ruleId"], format!("{id}:1"));
    assert_eq!(v["severity"], "error");
    assert_eq!(v["fixSuggestion"], "use tracing::info!");
    let listed = h
        .ok("list_guard_rules", json!({"includeBuiltIn": false}))
        .await;
    assert_eq!(listed["rules"][0]["source"], "knowledge");
}

#[tokio::test]
async fn accepted_spellings_still_work_and_blanks_are_refused_by_name() {
    let h = Harness::new();
    // `name` for the title, `coreCode` for the pattern, one string for a list.
    let mut sub = candidate("placeholder");
    sub.as_object_mut().unwrap().remove("title");
    sub["name"] = json!("Retry with backoff");
    sub["tags"] = json!("network");
    sub["content"].as_object_mut().unwrap().remove("pattern");
    sub["coreCode"] = json!("retry(3) { send() }");
    sub["title"] = json!("  ");
    let id = h.ok("submit_knowledge", sub).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = h.ok("get_recipe_detail", json!({"id": id})).await;
    assert_eq!(shown["entry"]["title"], "Retry with backoff");
    assert_eq!(shown["entry"]["pattern"], "retry(3) { send() }");
    assert_eq!(shown["entry"]["tags"], json!(["network"]));
    let err = h
        .err(
            "reject_candidate",
            json!({"candidateId": id, "reason": "   "}),
        )
        .await;
    assert!(
        err.contains("\"reason\" is required and must not be blank"),
        "{err}"
    );
    let err = h.err("approve_candidate", json!({"recipeId": " "})).await;
    assert!(
        err.contains("\"recipeId\" (or \"candidateId\") is required"),
        "{err}"
    );
    let err = h
        .err(
            "propose_evolution",
            json!({"recipeId": id, "type": "enhance", "description": " "}),
        )
        .await;
    assert!(
        err.contains("\"description\" is required and must not be blank"),
        "{err}"
    );
}
