//! `load_skill` and `create_skill` through the pipeline: allowlist, safety, audit, names,
//! overwrite, and the one format read back.

use alembic_skills::{SkillLocation, read_skill};
use alembic_tools::{Allowlist, Caller, OutcomeStatus};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Harness;

fn review_skill() -> serde_json::Value {
    json!({
        "name": "review-checklist",
        "description": "What to check before approving a candidate",
        "content": "# Review checklist\n\n- evidence from the code\n",
        "arguments": {"type": "object", "properties": {"candidateId": {"type": "string", "description": "the candidate"}}, "required": ["candidateId"]}
    })
}

#[tokio::test]
async fn the_tools_are_infrastructure_with_their_effects() {
    let h = Harness::new();
    let effects: Vec<(String, &str, &str)> = ["load_skill", "create_skill", "suggest_skills"]
        .iter()
        .map(|name| {
            let def = &h.registry().get(name).unwrap().definition;
            (name.to_string(), def.module.as_str(), def.effect.as_str())
        })
        .collect();
    assert_eq!(
        effects,
        vec![
            ("load_skill".into(), "infrastructure", "read_only"),
            (
                "create_skill".into(),
                "infrastructure",
                "writes_project_files"
            ),
            ("suggest_skills".into(), "infrastructure", "read_only"),
        ]
    );
}

#[tokio::test]
async fn a_created_skill_is_loaded_listed_and_audited() {
    let h = Harness::new();
    let created = h.ok("create_skill", review_skill()).await;
    let path = h.root().join(".alembic/skills/review-checklist/SKILL.md");
    assert_eq!(
        created,
        json!({"name": "review-checklist", "path": path, "replaced": false})
    );
    let read = read_skill(h.root(), "review-checklist").unwrap();
    assert_eq!(read.location, SkillLocation::Project);
    assert_eq!(read.skill.created_by.as_deref(), Some("agent:test"));
    assert_eq!(read.skill.prompt_arguments()[0].name, "candidateId");

    let loaded = h
        .ok("load_skill", json!({"skillName": "review-checklist"}))
        .await;
    assert_eq!(
        loaded,
        json!({
            "skillName": "review-checklist",
            "location": "project",
            "source": "written",
            "description": "What to check before approving a candidate",
            "arguments": {"type": "object", "properties": {"candidateId": {"type": "string", "description": "the candidate"}}, "required": ["candidateId"]},
            "content": "# Review checklist\n\n- evidence from the code\n"
        })
    );
    let builtin = h
        .ok("load_skill", json!({"skillName": "forge-a-tool"}))
        .await;
    assert_eq!(builtin["location"], json!("builtin"));

    let listed = h.ok("load_skill", json!({})).await;
    let names: Vec<(&str, &str)> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["skillName"].as_str().unwrap(),
                s["location"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("forge-a-tool", "builtin"),
            ("review-checklist", "project"),
            ("write-a-recipe", "builtin")
        ]
    );

    let audit: Vec<(String, String, String)> = h
        .audit
        .entries()
        .into_iter()
        .map(|e| (e.caller, e.tool, e.verdict))
        .collect();
    let call = |tool: &str| ("agent:test".to_string(), tool.to_string(), "ok".to_string());
    assert_eq!(
        audit,
        vec![
            call("create_skill"),
            call("load_skill"),
            call("load_skill"),
            call("load_skill")
        ]
    );
}

#[tokio::test]
async fn names_that_are_paths_or_not_kebab_case_are_refused_and_nothing_is_written() {
    let h = Harness::new();
    let rule = "a skill name is one kebab-case word such as \"retry-with-backoff\": lower-case letters, digits and single hyphens, starting with a letter, 3 to 64 characters";
    for (name, reason) in [
        ("../../etc", "is a path, not a name"),
        ("skills/evil", "is a path, not a name"),
        ("..\\up", "is a path, not a name"),
        (
            "Review_Checklist",
            "does not start with a lower-case letter",
        ),
        (
            "review_checklist",
            "has characters other than lower-case letters, digits and hyphens",
        ),
        ("review-", "has a hyphen at the end or two in a row"),
    ] {
        let mut args = review_skill();
        args["name"] = json!(name);
        let out = h.call("create_skill", args).await;
        assert_eq!(
            (out.status, out.error.unwrap_or_default()),
            (
                OutcomeStatus::InvalidArguments,
                format!("argument \"name\": skill name \"{name}\" {reason}; {rule}")
            )
        );
        let load = h.call("load_skill", json!({"skillName": name})).await;
        assert_eq!(
            (load.status, load.error.unwrap_or_default()),
            (
                OutcomeStatus::InvalidArguments,
                format!("argument \"skillName\": skill name \"{name}\" {reason}; {rule}")
            )
        );
    }
    // too short: the schema's minLength refuses it before the handler
    let mut args = review_skill();
    args["name"] = json!("ab");
    assert_eq!(
        h.call("create_skill", args).await.status,
        OutcomeStatus::InvalidArguments
    );
    assert!(!h.root().join(".alembic").exists());
}

#[tokio::test]
async fn existing_and_builtin_skills_are_not_replaced_unless_asked() {
    let h = Harness::new();
    h.ok("create_skill", review_skill()).await;
    let mut again = review_skill();
    again["content"] = json!("# v2\n");
    let refused = h.call("create_skill", again.clone()).await;
    let path = h.root().join(".alembic/skills/review-checklist/SKILL.md");
    assert_eq!(
        (refused.status, refused.error.unwrap_or_default()),
        (
            OutcomeStatus::InvalidArguments,
            format!(
                "skill \"review-checklist\" already exists in {}; pass overwrite to replace it, or pick another name",
                path.display()
            )
        )
    );
    assert!(
        read_skill(h.root(), "review-checklist")
            .unwrap()
            .skill
            .body
            .contains("evidence")
    );
    again["overwrite"] = json!(true);
    let replaced = h.ok("create_skill", again).await;
    assert_eq!(replaced["replaced"], json!(true));
    assert_eq!(
        read_skill(h.root(), "review-checklist").unwrap().skill.body,
        "# v2\n"
    );

    let mut builtin = review_skill();
    builtin["name"] = json!("forge-a-tool");
    builtin["overwrite"] = json!(true);
    let out = h.call("create_skill", builtin).await;
    assert_eq!(
        out.error.unwrap_or_default(),
        "\"forge-a-tool\" is the name of a built-in skill; a project skill needs another name"
    );

    let mut front = review_skill();
    front["name"] = json!("with-front-matter");
    front["content"] = json!("---\nname: x\n---\nbody");
    let out = h.call("create_skill", front).await;
    assert_eq!(
        out.error.unwrap_or_default(),
        "argument \"content\": starts with a front matter block (`---`); give the markdown body only, name and description are arguments of their own"
    );
    let mut bad_args = review_skill();
    bad_args["name"] = json!("bad-arguments");
    bad_args["arguments"] = json!({"type": "array"});
    let out = h.call("create_skill", bad_args).await;
    assert_eq!(
        out.error.unwrap_or_default(),
        "skill \"bad-arguments\": `arguments` must have \"type\": \"object\", got \"array\""
    );
    assert!(!h.root().join(".alembic/skills/bad-arguments").exists());
}

#[tokio::test]
async fn an_unknown_skill_names_the_available_ones() {
    let h = Harness::new();
    let out = h
        .call("load_skill", json!({"skillName": "no-such-skill"}))
        .await;
    assert_eq!(
        (out.status, out.error.unwrap_or_default()),
        (
            OutcomeStatus::Error,
            "not found: skill \"no-such-skill\" (available skills: forge-a-tool, write-a-recipe)"
                .into()
        )
    );
}

#[tokio::test]
async fn the_allowlist_and_the_safety_gate_decide_before_the_handler() {
    let h = Harness::new();
    // a caller whose preset has only load_skill cannot create skills
    let reader = Caller::new("agent:reader", Allowlist::only(["load_skill"]));
    let out = h
        .call_with(reader.clone(), "create_skill", review_skill())
        .await;
    assert_eq!(out.status, OutcomeStatus::Blocked);
    assert!(!h.root().join(".alembic").exists());
    assert!(
        h.call_with(reader, "load_skill", json!({"skillName": "write-a-recipe"}))
            .await
            .is_ok()
    );
    let refused = h.audit.entries()[0].clone();
    assert_eq!(
        (refused.tool.as_str(), refused.verdict.as_str()),
        ("create_skill", "blocked")
    );
    assert!(refused.rule.is_some(), "{refused:?}");

    // a pipeline without the project's policy lets only side-effect-free tools run
    let dir = tempfile::tempdir().unwrap();
    let bare = Harness::with_safety(dir, None);
    let out = bare.call("create_skill", review_skill()).await;
    assert_eq!(out.status, OutcomeStatus::Blocked, "{out:?}");
    assert!(!bare.root().join(".alembic").exists());
    assert!(
        bare.call("load_skill", json!({"skillName": "forge-a-tool"}))
            .await
            .is_ok()
    );
    let audited: Vec<(String, String)> = bare
        .audit
        .entries()
        .into_iter()
        .map(|e| (e.tool, e.verdict))
        .collect();
    assert_eq!(
        audited,
        vec![
            ("create_skill".into(), "blocked".into()),
            ("load_skill".into(), "ok".into())
        ]
    );
}
