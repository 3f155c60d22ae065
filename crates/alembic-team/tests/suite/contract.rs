//! The memory contract: the same tests against SQLite and PostgreSQL.

use alembic_memory::{
    Action, ConsolidateStats, DAY_MS, ListFilter, MemoryBackend, MemoryConfig, MemoryError,
    MemorySource, MemoryType, MemoryUpdate, NewMemory, RetrieveOptions, Scope,
};
use pretty_assertions::assert_eq;

use super::{KINDS, T0, open};

fn ids(pm: &dyn MemoryBackend, scope: Scope) -> Vec<String> {
    pm.list(&ListFilter {
        scope: Some(scope),
        ..Default::default()
    })
    .unwrap()
    .into_iter()
    .map(|m| m.id)
    .collect()
}

fn found(pm: &mut dyn MemoryBackend, query: &str) -> Vec<String> {
    pm.retrieve(query, &RetrieveOptions::default())
        .unwrap()
        .into_iter()
        .map(|s| s.memory.content)
        .collect()
}

#[test]
fn add_get_update_list_forget() {
    for kind in KINDS {
        let (mut pm, clock) = open(kind, MemoryConfig::default());
        let m = pm
            .add(
                NewMemory::fact("  The Payment module uses the Repository pattern  ")
                    .with_type(MemoryType::Insight)
                    .with_importance(8.0)
                    .with_source(MemorySource::Bootstrap)
                    .with_provenance("session:abc"),
            )
            .unwrap();
        assert_eq!(m.content, "The Payment module uses the Repository pattern");
        assert_eq!((m.created, m.valid_from), (T0, T0));
        assert_eq!(pm.get(&m.id).unwrap().unwrap(), m, "{kind:?}");

        clock.advance_days(1.0);
        let change = MemoryUpdate {
            content: Some("The Payment module uses the Coordinator pattern".into()),
            importance: Some(9.0),
            tags: Some(vec!["payments".into()]),
            ..Default::default()
        };
        let updated = pm.update(&m.id, change).unwrap();
        assert_eq!(updated.importance, 9.0);
        assert_eq!(updated.updated, T0 + DAY_MS);
        assert_eq!(pm.get(&m.id).unwrap().unwrap(), updated, "{kind:?}");
        // the search index follows the content
        assert_eq!(found(pm.as_mut(), "coordinator").len(), 1, "{kind:?}");
        assert!(found(pm.as_mut(), "repository").is_empty(), "{kind:?}");

        pm.add(NewMemory::fact("second memory about CI")).unwrap();
        let listed = pm.list(&ListFilter::default()).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].content, "second memory about CI", "{kind:?}");

        assert!(pm.forget(&m.id).unwrap());
        assert!(!pm.forget(&m.id).unwrap());
        assert_eq!(pm.get(&m.id).unwrap(), None);
        assert!(found(pm.as_mut(), "coordinator").is_empty(), "{kind:?}");
    }
}

#[test]
fn invalid_input_is_refused_with_a_reason() {
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        let cases: Vec<(NewMemory, &str)> = vec![
            (NewMemory::fact("   "), "memory content is empty"),
            (
                NewMemory::fact("x".repeat(2001)),
                "2001 characters; at most 2000",
            ),
            (
                NewMemory::fact("fine").with_importance(0.0),
                "importance 0 is out of range",
            ),
        ];
        for (input, expected) in cases {
            let err = pm.add(input).unwrap_err().to_string();
            assert!(err.contains(expected), "{kind:?}: {err}");
        }
        assert!(
            matches!(
                pm.update("smem_missing", MemoryUpdate::default()),
                Err(MemoryError::NotFound { .. })
            ),
            "{kind:?}"
        );
        assert!(matches!(
            pm.restore("smem_missing"),
            Err(MemoryError::NotFound { .. })
        ));
        assert!(
            pm.list(&ListFilter::default()).unwrap().is_empty(),
            "{kind:?}"
        );
    }
}

#[test]
fn capacity_evicts_lowest_access_times_importance_then_oldest() {
    for kind in KINDS {
        let config = MemoryConfig {
            max_per_scope: 3,
            ..MemoryConfig::default()
        };
        let (mut pm, clock) = open(kind, config);
        let a = pm
            .add(NewMemory::fact("alpha note").with_importance(2.0))
            .unwrap();
        clock.advance_days(0.1);
        let b = pm
            .add(NewMemory::fact("bravo note").with_importance(2.0))
            .unwrap();
        clock.advance_days(0.1);
        let c = pm
            .add(NewMemory::fact("charlie note").with_importance(9.0))
            .unwrap();
        pm.add(NewMemory::fact("user preference").with_scope(Scope::User))
            .unwrap();
        // reading alpha gives it access_count 1 → 1 × 2 = 2 > bravo's 0
        assert_eq!(found(pm.as_mut(), "alpha"), ["alpha note"]);
        clock.advance_days(0.1);
        let d = pm.add(NewMemory::fact("delta note")).unwrap();
        let kept = ids(pm.as_ref(), Scope::Project);
        assert_eq!(kept.len(), 3, "{kind:?}");
        assert!(
            !kept.contains(&b.id),
            "{kind:?}: bravo should be evicted: {kept:?}"
        );
        for id in [&a.id, &c.id, &d.id] {
            assert!(kept.contains(id), "{kind:?}");
        }
        assert_eq!(ids(pm.as_ref(), Scope::User).len(), 1, "{kind:?}");
    }
}

#[test]
fn archive_after_30_days_forget_after_90_and_ttl() {
    for kind in KINDS {
        let (mut pm, clock) = open(kind, MemoryConfig::default());
        let old = pm.add(NewMemory::fact("legacy build uses make")).unwrap();
        let ttl = pm
            .add(NewMemory::fact("temporary build flag is on").with_ttl_days(2.0))
            .unwrap();
        clock.advance_days(3.0);
        assert!(found(pm.as_mut(), "temporary flag").is_empty(), "{kind:?}");
        let stats = pm.gc().unwrap();
        assert_eq!(
            (stats.expired, stats.archived, stats.forgotten),
            (1, 0, 0),
            "{kind:?}"
        );
        assert_eq!(pm.get(&ttl.id).unwrap(), None);

        clock.advance_days(28.0);
        assert!(found(pm.as_mut(), "legacy build").is_empty(), "{kind:?}");
        let stats = pm.gc().unwrap();
        assert_eq!(
            (stats.archived, stats.forgotten, stats.remaining),
            (1, 0, 1),
            "{kind:?}"
        );
        assert_eq!(
            pm.get(&old.id).unwrap().unwrap().archived_at,
            Some(T0 + 31 * DAY_MS)
        );
        assert_eq!(pm.restore(&old.id).unwrap().archived_at, None);
        assert_eq!(found(pm.as_mut(), "legacy build").len(), 1, "{kind:?}");

        clock.advance_days(91.0);
        let stats = pm.gc().unwrap();
        assert_eq!((stats.forgotten, stats.remaining), (1, 0), "{kind:?}");
        assert_eq!(pm.get(&old.id).unwrap(), None);
    }
}

fn counts(s: &ConsolidateStats) -> (usize, usize, usize, usize, usize) {
    (s.added, s.updated, s.merged, s.skipped, s.replaced)
}

#[test]
fn consolidation_adds_updates_merges_skips_and_replaces() {
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        let stats = pm
            .consolidate(&[
                NewMemory::fact("The payment module uses the repository pattern")
                    .with_importance(4.0),
                NewMemory::fact("ok"),
                NewMemory::fact("Networking goes through URLSession with a retry policy"),
            ])
            .unwrap();
        assert_eq!(counts(&stats), (2, 0, 0, 1, 0), "{kind:?}");

        let stats = pm
            .consolidate(&[
                NewMemory::fact("The payment module uses the repository pattern.")
                    .with_importance(7.0),
            ])
            .unwrap();
        assert_eq!(counts(&stats), (0, 1, 0, 0, 0), "{kind:?}");
        let m = pm
            .get(stats.outcomes[0].id.as_ref().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!((m.importance, m.access_count), (7.0, 1), "{kind:?}");

        let stats = pm
            .consolidate(&[NewMemory::fact(
                "Networking goes through URLSession with an exponential retry policy and circuit breaker",
            )])
            .unwrap();
        assert_eq!(counts(&stats), (0, 0, 1, 0, 0), "{kind:?}");
        let merged = stats.outcomes[0].id.clone().unwrap();
        assert!(
            pm.get(&merged)
                .unwrap()
                .unwrap()
                .content
                .contains("circuit breaker")
        );
        let old = pm
            .get(stats.outcomes[0].previous.as_ref().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            old.superseded_by.as_deref(),
            Some(merged.as_str()),
            "{kind:?}"
        );
        assert_eq!(pm.history(&merged).unwrap().len(), 2, "{kind:?}");

        pm.add(NewMemory::fact("We use tabs for indentation"))
            .unwrap();
        let stats = pm
            .consolidate(&[NewMemory::fact("We do not use tabs for indentation")])
            .unwrap();
        assert_eq!(stats.outcomes[0].action, Action::Replaced, "{kind:?}");
        assert_eq!(
            found(pm.as_mut(), "tabs indentation"),
            ["We do not use tabs for indentation"]
        );
    }
}

#[test]
fn retrieval_finds_cjk_text_and_filters_by_scope_and_type() {
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        pm.add(NewMemory::fact("支付模块使用仓储模式")).unwrap();
        pm.add(NewMemory::fact("The release train leaves on Tuesdays").with_scope(Scope::Team))
            .unwrap();
        pm.add(
            NewMemory::fact("Prefer small release branches")
                .with_type(MemoryType::Preference)
                .with_scope(Scope::Team),
        )
        .unwrap();
        assert_eq!(
            found(pm.as_mut(), "仓储模式"),
            ["支付模块使用仓储模式"],
            "{kind:?}"
        );
        let team_prefs = pm
            .retrieve(
                "release",
                &RetrieveOptions {
                    scope: Some(Scope::Team),
                    kind: Some(MemoryType::Preference),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(team_prefs.len(), 1, "{kind:?}");
        assert_eq!(
            team_prefs[0].memory.content,
            "Prefer small release branches"
        );
        assert_eq!(
            team_prefs[0].memory.access_count, 0,
            "the result shows the row as read"
        );
        let project = pm
            .retrieve(
                "release",
                &RetrieveOptions {
                    scope: Some(Scope::Project),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(project.is_empty(), "{kind:?}");
        // retrieval counted the access
        let listed = pm.list(&ListFilter::default()).unwrap();
        let pref = listed
            .iter()
            .find(|m| m.kind == MemoryType::Preference)
            .unwrap();
        assert_eq!(pref.access_count, 1, "{kind:?}");
    }
}

#[test]
fn the_more_relevant_memory_ranks_first() {
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        pm.add(NewMemory::fact("The cache layer uses Redis"))
            .unwrap();
        pm.add(NewMemory::fact(
            "Redis cluster failover: the Redis sentinel promotes a replica of Redis",
        ))
        .unwrap();
        pm.add(NewMemory::fact("Unrelated note on logging"))
            .unwrap();
        let hits = pm
            .retrieve("redis sentinel failover", &RetrieveOptions::default())
            .unwrap();
        assert_eq!(hits.len(), 2, "{kind:?}");
        assert!(
            hits[0].memory.content.starts_with("Redis cluster"),
            "{kind:?}"
        );
        assert!(
            hits[0].parts.relevance > hits[1].parts.relevance,
            "{kind:?}"
        );
        assert_eq!(hits[0].parts.lexical, Some(1.0), "{kind:?}");
    }
}

#[test]
fn export_import_round_trip_keeps_ids_and_history() {
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        pm.add(NewMemory::fact("We use tabs for indentation"))
            .unwrap();
        pm.consolidate(&[NewMemory::fact("We do not use tabs for indentation")])
            .unwrap();
        let exported = pm.export().unwrap();
        assert_eq!(exported.len(), 2, "{kind:?}");
        let (mut other, _) = open(kind, MemoryConfig::default());
        assert_eq!(other.import(&exported).unwrap(), (2, 0), "{kind:?}");
        assert_eq!(other.import(&exported).unwrap(), (0, 2), "{kind:?}");
        assert_eq!(other.export().unwrap(), exported, "{kind:?}");
        assert_eq!(
            found(other.as_mut(), "tabs"),
            ["We do not use tabs for indentation"]
        );
    }
}
