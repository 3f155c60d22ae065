use alembic_memory::{
    ListFilter, MemoryConfig, MemoryError, MemorySource, MemoryType, MemoryUpdate, NewMemory,
    RetrieveOptions, Scope,
};
use pretty_assertions::assert_eq;

use super::{T0, memory, memory_with};

#[test]
fn migrations_are_versioned_and_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let conn = alembic_store::open_project(dir.path()).unwrap();
    let pm = alembic_memory::PersistentMemory::open_project(dir.path(), MemoryConfig::default())
        .unwrap();
    drop(pm);
    // opening again does not re-run the steps
    alembic_memory::PersistentMemory::open_project(dir.path(), MemoryConfig::default()).unwrap();
    assert_eq!(
        alembic_store::schema_version(&conn, alembic_memory::SCHEMA_COMPONENT).unwrap(),
        3
    );
}

#[test]
fn add_get_update_list_forget() {
    let (mut pm, clock) = memory();
    let m = pm
        .add(
            NewMemory::fact("  The Payment module uses the Repository pattern  ")
                .with_type(MemoryType::Insight)
                .with_importance(8.0)
                .with_source(MemorySource::Bootstrap)
                .with_provenance("session:abc"),
        )
        .unwrap();
    assert!(m.id.starts_with("smem_") && m.id.len() == 17, "{}", m.id);
    assert_eq!(m.content, "The Payment module uses the Repository pattern");
    assert_eq!(m.created, T0);
    assert_eq!(m.valid_from, T0);
    assert_eq!(pm.get(&m.id).unwrap().unwrap(), m);

    clock.advance_days(1.0);
    let updated = pm
        .update(
            &m.id,
            MemoryUpdate {
                content: Some("The Payment module uses the Coordinator pattern".into()),
                importance: Some(9.0),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(updated.importance, 9.0);
    assert_eq!(updated.updated, T0 + alembic_memory::DAY_MS);
    // the FTS index follows the content through the update trigger
    let hits = pm
        .retrieve("coordinator", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        pm.retrieve("repository", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );

    pm.add(NewMemory::fact("second memory about CI")).unwrap();
    let listed = pm.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].content, "second memory about CI");

    assert!(pm.forget(&m.id).unwrap());
    assert!(!pm.forget(&m.id).unwrap());
    assert_eq!(pm.get(&m.id).unwrap(), None);
    assert!(
        pm.retrieve("coordinator", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn invalid_input_is_refused_with_a_reason() {
    let (mut pm, _) = memory();
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
        (
            NewMemory::fact("fine").with_importance(11.0),
            "expected a number from 1 to 10",
        ),
    ];
    for (input, expected) in cases {
        let err = pm.add(input).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
    let err = "opinion".parse::<MemoryType>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown type \"opinion\"; accepted: fact insight preference"
    );
    assert!(matches!(
        pm.update("smem_missing", MemoryUpdate::default()),
        Err(MemoryError::NotFound { .. })
    ));
}

#[test]
fn capacity_evicts_lowest_access_times_importance_then_oldest() {
    let config = MemoryConfig {
        max_per_scope: 3,
        ..MemoryConfig::default()
    };
    let (mut pm, clock) = memory_with(config);
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
    // a user-scope memory does not count against the project scope
    pm.add(NewMemory::fact("user preference").with_scope(Scope::User))
        .unwrap();
    // reading alpha gives it access_count 1 → 1 × 2 = 2 > bravo's 0
    pm.retrieve("alpha", &RetrieveOptions::default()).unwrap();
    clock.advance_days(0.1);
    let d = pm.add(NewMemory::fact("delta note")).unwrap();
    let ids: Vec<String> = pm
        .list(&ListFilter {
            scope: Some(Scope::Project),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    // bravo (0 × 2) and charlie (0 × 9) tie on the product; bravo is older → evicted
    assert_eq!(ids.len(), 3);
    assert!(!ids.contains(&b.id), "bravo should be evicted: {ids:?}");
    for kept in [&a.id, &c.id, &d.id] {
        assert!(ids.contains(kept));
    }
    assert_eq!(
        pm.list(&ListFilter {
            scope: Some(Scope::User),
            ..Default::default()
        })
        .unwrap()
        .len(),
        1
    );
}

#[test]
fn archive_after_30_days_forget_after_90_and_ttl() {
    let (mut pm, clock) = memory();
    let old = pm.add(NewMemory::fact("legacy build uses make")).unwrap();
    let ttl = pm
        .add(NewMemory::fact("temporary build flag is on").with_ttl_days(2.0))
        .unwrap();
    clock.advance_days(3.0);
    // expired: gone from retrieval at once, deleted by gc
    assert!(
        pm.retrieve("temporary flag", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
    let stats = pm.gc().unwrap();
    assert_eq!((stats.expired, stats.archived, stats.forgotten), (1, 0, 0));
    assert_eq!(pm.get(&ttl.id).unwrap(), None);

    clock.advance_days(28.0); // 31 days without access
    assert!(
        pm.retrieve("legacy build", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
    let stats = pm.gc().unwrap();
    assert_eq!(
        (stats.archived, stats.forgotten, stats.remaining),
        (1, 0, 1)
    );
    let archived = pm.get(&old.id).unwrap().unwrap();
    assert_eq!(archived.archived_at, Some(clock_now(&pm)));
    // recoverable
    let restored = pm.restore(&old.id).unwrap();
    assert_eq!(restored.archived_at, None);
    assert_eq!(
        pm.retrieve("legacy build", &RetrieveOptions::default())
            .unwrap()
            .len(),
        1
    );

    clock.advance_days(91.0);
    let stats = pm.gc().unwrap();
    assert_eq!((stats.forgotten, stats.remaining), (1, 0));
    assert_eq!(pm.get(&old.id).unwrap(), None);
}

fn clock_now(pm: &alembic_memory::PersistentMemory) -> i64 {
    pm.now_ms()
}

#[test]
fn lifetimes_are_configurable() {
    let config = MemoryConfig {
        archive_after_days: 2.0,
        forget_after_days: 5.0,
        ..MemoryConfig::default()
    };
    let (mut pm, clock) = memory_with(config);
    pm.add(NewMemory::fact("short lived note")).unwrap();
    clock.advance_days(3.0);
    assert_eq!(pm.gc().unwrap().archived, 1);
    clock.advance_days(3.0);
    assert_eq!(pm.gc().unwrap().forgotten, 1);
}

#[test]
fn export_import_round_trip_keeps_ids_and_history() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("We use tabs for indentation"))
        .unwrap();
    pm.consolidate(&[NewMemory::fact("We do not use tabs for indentation")])
        .unwrap();
    let exported = pm.export().unwrap();
    assert_eq!(exported.len(), 2);

    let (mut other, _) = memory();
    assert_eq!(other.import(&exported).unwrap(), (2, 0));
    assert_eq!(other.import(&exported).unwrap(), (0, 2));
    assert_eq!(other.export().unwrap(), exported);
    let stats = other.stats().unwrap();
    assert_eq!((stats.current, stats.history), (1, 1));
}

/// (maintained count, recount) per scope.
fn scope_counts(pm: &alembic_memory::PersistentMemory) -> Vec<(String, i64, i64)> {
    let conn = pm.connection();
    let mut stmt = conn
        .prepare(
            "select s.scope, s.current,
                    (select count(*) from semantic_memories m
                     where m.scope = s.scope and m.valid_to is null)
             from memory_scope_counts s order by s.scope",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn maintained_scope_counts_follow_every_kind_of_write() {
    let config = MemoryConfig {
        max_per_scope: 4,
        ..MemoryConfig::default()
    };
    let (mut pm, clock) = memory_with(config);
    let batch: Vec<NewMemory> = (0..6)
        .map(|i| NewMemory::fact(format!("batch note number {i} about caching")))
        .collect();
    pm.add_batch(&batch).unwrap();
    let kept = pm
        .add(NewMemory::fact("We use tabs for indentation").with_scope(Scope::Team))
        .unwrap();
    // REPLACE: the old version gets valid_to and leaves the count
    pm.consolidate(
        &[NewMemory::fact("We do not use tabs for indentation").with_scope(Scope::Team)],
    )
    .unwrap();
    pm.add(NewMemory::fact("short lived note").with_ttl_days(1.0))
        .unwrap();
    let exported = pm.export().unwrap();
    assert!(pm.forget(&kept.id).unwrap());
    clock.advance_days(2.0);
    pm.gc().unwrap();
    let counts = scope_counts(&pm);
    for (scope, maintained, recount) in &counts {
        assert_eq!(maintained, recount, "scope {scope}");
    }
    assert_eq!(
        counts
            .iter()
            .map(|c| (c.0.as_str(), c.1))
            .collect::<Vec<_>>(),
        vec![("project", 3), ("team", 1)]
    );
    let (mut other, _) = memory();
    other.import(&exported).unwrap();
    let counts = scope_counts(&other);
    assert!(counts.iter().all(|(_, m, r)| m == r), "{counts:?}");
}

#[test]
fn stats_count_by_state_scope_type_and_source() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("one fact")).unwrap();
    pm.add(
        NewMemory::fact("a preference")
            .with_type(MemoryType::Preference)
            .with_scope(Scope::User),
    )
    .unwrap();
    let stats = pm.stats().unwrap();
    assert_eq!(stats.current, 2);
    assert_eq!(
        stats.by_scope,
        vec![("project".to_string(), 1), ("user".to_string(), 1)]
    );
    assert_eq!(
        stats.by_type,
        vec![("fact".to_string(), 1), ("preference".to_string(), 1)]
    );
    assert_eq!(stats.by_source, vec![("user".to_string(), 2)]);
    assert_eq!(stats.avg_importance, 5.0);
}
