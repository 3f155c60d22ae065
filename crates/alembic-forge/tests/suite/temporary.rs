//! TemporaryToolRegistry: TTL with an injected clock, additive renew, no overriding.

use std::sync::Arc;
use std::time::Duration;

use alembic_forge::{
    CompositionSpec, ForgeError, ForgeMode, ManualClock, TemporaryToolRegistry, composed_tool,
};
use alembic_tools::OutcomeStatus;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{harness, test_tools};

fn spec(name: &str) -> CompositionSpec {
    CompositionSpec::from_json(&format!(r#"{{"name": "{name}", "description": "classes of NetworkKit", "steps": [{{"tool": "get_module_classes", "args": {{"module": "NetworkKit"}}}}]}}"#)).unwrap()
}

#[test]
fn tools_expire_after_their_ttl_and_renew_adds_time() {
    let h = harness();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let temporary = TemporaryToolRegistry::with_clock(h.registry.clone(), clock.clone());
    let info = temporary
        .register(
            composed_tool(spec("nk_classes"), &h.registry),
            ForgeMode::Compose,
            Some(Duration::from_secs(60)),
        )
        .unwrap();
    assert_eq!(info.expires_at_ms, Some(1_060_000));
    assert!(
        h.registry
            .get("nk_classes")
            .unwrap()
            .definition
            .description
            .starts_with("[forged:compose] ")
    );

    clock.advance_ms(50_000);
    let renewed = temporary
        .renew("nk_classes", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        renewed.expires_at_ms,
        Some(1_120_000),
        "renew adds to the time left"
    );
    assert_eq!(renewed.remaining_ms(temporary.now_ms()), Some(70_000));
    assert!(h.call("nk_classes", json!({})).is_ok());

    clock.advance_ms(70_000);
    // expired: not callable even before cleanup, and gone afterwards
    let out = h.call("nk_classes", json!({}));
    assert_eq!(out.status, OutcomeStatus::Error);
    assert_eq!(
        out.error.as_deref(),
        Some("not found: forged tool \"nk_classes\" has expired")
    );
    assert!(!h.registry.contains("nk_classes"));
    assert!(temporary.is_empty());
    assert!(matches!(
        temporary.renew("nk_classes", Duration::from_secs(1)),
        Err(ForgeError::UnknownTool { .. })
    ));
}

#[test]
fn cleanup_removes_only_expired_forged_tools() {
    let h = harness();
    let clock = Arc::new(ManualClock::new(0));
    let temporary = TemporaryToolRegistry::with_clock(h.registry.clone(), clock.clone());
    temporary
        .register(
            composed_tool(spec("short_lived"), &h.registry),
            ForgeMode::Compose,
            Some(Duration::from_secs(10)),
        )
        .unwrap();
    temporary
        .register(
            composed_tool(spec("long_lived"), &h.registry),
            ForgeMode::Compose,
            None,
        )
        .unwrap();
    clock.advance_ms(10_000);
    assert_eq!(temporary.cleanup(), vec!["short_lived".to_string()]);
    assert_eq!(
        temporary
            .list()
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        vec!["long_lived"]
    );
    assert_eq!(temporary.list()[0].remaining_ms(temporary.now_ms()), None);
    let builtins = test_tools().len();
    assert_eq!(h.registry.len(), builtins + 1);
}

#[test]
fn a_forged_tool_never_overrides_or_removes_a_built_in() {
    let h = harness();
    let temporary = TemporaryToolRegistry::new(h.registry.clone());
    let err = temporary
        .register(
            composed_tool(spec("detect_class_patterns"), &h.registry),
            ForgeMode::Compose,
            None,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool name \"detect_class_patterns\" is taken by a built-in or saved tool; a forged tool never replaces one, pick another name"
    );
    assert!(!temporary.revoke("detect_class_patterns"));
    assert!(h.registry.contains("detect_class_patterns"));
    assert_eq!(
        h.registry
            .get("detect_class_patterns")
            .unwrap()
            .definition
            .description,
        "Detect design patterns used by classes."
    );
    // re-forging a temporary tool replaces the temporary one
    temporary
        .register(
            composed_tool(spec("again"), &h.registry),
            ForgeMode::Compose,
            None,
        )
        .unwrap();
    temporary
        .register(
            composed_tool(spec("again"), &h.registry),
            ForgeMode::Compose,
            Some(Duration::from_secs(5)),
        )
        .unwrap();
    assert_eq!(temporary.len(), 1);
    assert!(temporary.revoke("again"));
    assert!(!h.registry.contains("again"));
}
