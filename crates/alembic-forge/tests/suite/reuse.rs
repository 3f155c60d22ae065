//! Reuse: schema-driven argument pre-filling, scored, registered as an alias tool.

use alembic_forge::reuse::{ForgeRequest, REUSE_THRESHOLD, alias_name, best_reuse, find_reuse};
use alembic_forge::{AliasSpec, ForgeMode, TemporaryToolRegistry, alias_tool};
use alembic_tools::{Allowlist, OutcomeStatus};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{data, harness};

#[test]
fn the_seed_example_prefills_the_category() {
    let h = harness();
    let req = ForgeRequest::new("搜索 Network 分类的 Recipe", "search", "Network");
    let m = find_reuse(&h.registry, &Allowlist::All, &req).unwrap();
    assert_eq!(
        (m.tool.as_str(), json!(m.preset_args)),
        ("search_recipes", json!({"category": "Network"}))
    );
    assert!(m.score >= REUSE_THRESHOLD, "{m:?}");
}

#[test]
fn targets_fill_the_matching_slot_or_name_the_tool() {
    let h = harness();
    let cases = [
        // the target is an enum member of the tool's parameter
        (
            ForgeRequest::new("show guard rules for Swift", "list", "Swift"),
            Some(("list_guard_rules", json!({"language": "swift"}))),
        ),
        // the target fills the `module` slot
        (
            ForgeRequest::new(
                "get the class hierarchy of the NetworkKit module",
                "read",
                "NetworkKit",
            ),
            Some(("get_module_classes", json!({"module": "NetworkKit"}))),
        ),
        // the target is what the tool is about: nothing to pre-fill
        (
            ForgeRequest::new("find recipes", "find", "recipes"),
            Some(("search_recipes", json!({}))),
        ),
        // no verb in common
        (
            ForgeRequest::new("delete recipes in Network", "delete", "Network"),
            None,
        ),
        // a regex pattern is a pattern slot too
        (
            ForgeRequest::new("search the code for retry loops", "search", "retry"),
            Some(("search_project_code", json!({"pattern": "retry"}))),
        ),
        // a verb in common but no slot the target fits
        (
            ForgeRequest::new("analyze Network", "analyze", "Network"),
            None,
        ),
        // a substring of a name is not a match
        (ForgeRequest::new("list guard", "list", "guar"), None),
    ];
    for (req, want) in cases {
        let got =
            find_reuse(&h.registry, &Allowlist::All, &req).map(|m| (m.tool, json!(m.preset_args)));
        assert_eq!(got, want.map(|(t, a)| (t.to_string(), a)), "{req:?}");
    }
}

#[test]
fn a_tool_outside_the_allowlist_is_never_reused() {
    let h = harness();
    let req = ForgeRequest::new("search Network recipes", "search", "Network");
    let got = find_reuse(&h.registry, &Allowlist::only(["search_project_code"]), &req);
    assert_eq!(got, None);
    assert!(best_reuse(&h.registry, &Allowlist::All, &req).is_some());
}

#[test]
fn the_alias_merges_presets_and_still_validates_against_the_original() {
    let h = harness();
    let req = ForgeRequest::new("search Network category recipes", "search", "Network");
    let m = find_reuse(&h.registry, &Allowlist::All, &req).unwrap();
    let spec = AliasSpec {
        name: alias_name(&m.tool, &req.target),
        tool: m.tool.clone(),
        preset_args: m.preset_args.clone(),
        description: None,
    };
    assert_eq!(spec.name, "search_recipes_network");
    let temporary = TemporaryToolRegistry::new(h.registry.clone());
    temporary
        .register(
            alias_tool(&spec, &h.registry).unwrap(),
            ForgeMode::Reuse,
            None,
        )
        .unwrap();
    let schema = &h
        .registry
        .get("search_recipes_network")
        .unwrap()
        .definition
        .parameters;
    assert_eq!(
        schema["properties"]["category"]["default"],
        json!("Network")
    );

    let out = h.call("search_recipes_network", json!({"keyword": "retry"}));
    assert_eq!(
        data(&out),
        json!({"category": "Network", "keyword": "retry", "limit": null})
    );
    // the call's own arguments win over the presets
    let out = h.call("search_recipes_network", json!({"category": "UI"}));
    assert_eq!(data(&out)["category"], json!("UI"));
    // the original's schema checks the merged arguments (limit is 1..=50 there)
    let bad = AliasSpec {
        name: "search_recipes_many".into(),
        tool: "search_recipes".into(),
        preset_args: json!({"limit": 500}).as_object().unwrap().clone(),
        description: None,
    };
    temporary
        .register(
            alias_tool(&bad, &h.registry).unwrap(),
            ForgeMode::Reuse,
            None,
        )
        .unwrap();
    let out = h.call("search_recipes_many", json!({}));
    assert_ne!(out.status, OutcomeStatus::Ok);
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("nested call to \"search_recipes\""),
        "{out:?}"
    );
    // the nested call is audited under the alias call
    let entries = h.audit.entries();
    let outer = entries
        .iter()
        .find(|e| e.tool == "search_recipes_network")
        .unwrap();
    let inner = entries.iter().find(|e| e.tool == "search_recipes").unwrap();
    assert_eq!(
        inner.parent_call_id.as_deref(),
        Some(outer.call_id.as_str())
    );
}

#[test]
fn the_waterfall_reuses_then_composes_then_reports_every_reason() {
    use alembic_forge::{CompositionSpec, ForgeInputs, ToolForge};
    let h = harness();
    let forge = ToolForge::new(TemporaryToolRegistry::new(h.registry.clone()), false);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reuse = rt
        .block_on(forge.forge(
            &ForgeRequest::new("search Network category recipes", "search", "Network"),
            ForgeInputs {
                allowlist: &Allowlist::All,
                composition: None,
                composer: None,
                generator: None,
            },
        ))
        .unwrap();
    assert_eq!(
        (reuse.mode, reuse.tool.as_str()),
        (ForgeMode::Reuse, "search_recipes_network")
    );

    let spec = CompositionSpec::from_json(r#"{"name": "analyze_networkkit", "description": "d", "steps": [{"tool": "get_module_classes", "args": {"module": "NetworkKit"}}]}"#).unwrap();
    let request = ForgeRequest::new("分析 NetworkKit 完整架构", "analyze", "NetworkKit");
    let composed = rt
        .block_on(forge.forge(
            &request,
            ForgeInputs {
                allowlist: &Allowlist::All,
                composition: Some(spec),
                composer: None,
                generator: None,
            },
        ))
        .unwrap();
    assert_eq!(
        (composed.mode, composed.tool.as_str()),
        (ForgeMode::Compose, "analyze_networkkit")
    );
    assert!(forge.temporary.is_temporary("analyze_networkkit"));

    let err = rt
        .block_on(forge.forge(
            &request,
            ForgeInputs {
                allowlist: &Allowlist::All,
                composition: None,
                composer: None,
                generator: None,
            },
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("no forge mode could serve the request: reuse: no existing tool matches"),
        "{err}"
    );
    assert!(
        err.contains("compose: no composition was offered")
            && err.contains("generate: generate mode is off"),
        "{err}"
    );
}
