use super::*;
use crate::session::SessionFinding;
use pretty_assertions::assert_eq;

struct FixedMemories(Vec<RecalledMemory>);

impl PersistentRecall for FixedMemories {
    fn recall(&self, _query: Option<&str>, limit: usize) -> Vec<RecalledMemory> {
        self.0.iter().take(limit).cloned().collect()
    }
}

fn memory(content: &str) -> RecalledMemory {
    RecalledMemory {
        kind: "fact".into(),
        content: content.into(),
        importance: 7.0,
    }
}

fn scope(id: &str) -> ScopeId {
    ScopeId::new(id)
}

#[test]
fn the_three_profiles_split_the_default_budget() {
    let c = MemoryCoordinator::default();
    assert_eq!(c.total_budget(), 4000);
    let tuple = |a: Allocation| (a.active_context, a.session, a.persistent, a.conversation);
    assert_eq!(
        tuple(c.allocation(BudgetProfile::Analyst)),
        (1800, 1400, 600, 200)
    );
    assert_eq!(
        tuple(c.allocation(BudgetProfile::Producer)),
        (1000, 2200, 600, 200)
    );
    assert_eq!(
        tuple(c.allocation(BudgetProfile::User)),
        (800, 0, 2400, 800)
    );
}

#[test]
fn configure_takes_twelve_and_a_half_percent_and_reallocates() {
    let mut c = MemoryCoordinator::default();
    c.configure(1_000_000);
    assert_eq!(c.total_budget(), 125_000);
    assert_eq!(c.allocation(BudgetProfile::Analyst).active_context, 56_250);
    assert_eq!(c.message_budget(1_000_000), 1_000_000 - 125_000 - 8_000);
    c.configure(32_000);
    assert_eq!(c.message_budget(32_000), 32_000 - 4_000 - 8_000);
    assert_eq!(c.message_budget(5_000), 0);
}

#[test]
fn token_counts_are_exact_for_known_models() {
    assert!(MemoryCoordinator::for_model("gpt-4o").meter().is_exact());
    assert!(
        !MemoryCoordinator::for_model("claude-sonnet-4-6")
            .meter()
            .is_exact()
    );
}

#[test]
fn static_prompt_orders_tiers_and_passes_surplus_to_the_dynamic_prompt() {
    let session = Arc::new(Mutex::new(SessionStore::new()));
    lock(&session).store_report(DimensionReport {
        dim_id: "architecture".into(),
        completed_at_ms: 1,
        analysis_text: "Layered.".into(),
        findings: vec![SessionFinding {
            finding: "APIClient is shared".into(),
            evidence: "Net/APIClient.swift:3".into(),
            importance: 8,
        }],
        ..DimensionReport::default()
    });
    let c = MemoryCoordinator::default()
        .with_persistent(Arc::new(FixedMemories(vec![memory(
            "Use Result for errors",
        )])))
        .with_session(session);
    let s = scope("networking:analyst");
    c.open_scope(
        s.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    let request = StaticPromptRequest {
        query: Some("networking"),
        dimension: Some("networking"),
        conversation_summary: Some("The user asked about retries."),
        ..StaticPromptRequest::default()
    };
    let text = c.static_prompt(&s, &request).unwrap();
    insta::assert_snapshot!("static_prompt", text);
    let used = c.meter().count(&text);
    // All three tiers are far below their shares: almost everything is surplus.
    let budget = c.dynamic_budget(&s).unwrap();
    assert!(budget > 1800 + 2000 - used, "{budget}");
    assert!(budget <= 1800 + 2200);
}

#[test]
fn a_closure_is_a_recall_source() {
    let recall = |query: Option<&str>, limit: usize| -> Vec<RecalledMemory> {
        (0..limit.min(2))
            .map(|i| memory(&format!("{} {i}", query.unwrap_or("any"))))
            .collect()
    };
    let c = MemoryCoordinator::default().with_persistent(Arc::new(recall));
    let s = scope("chat");
    c.open_scope(
        s.clone(),
        BudgetProfile::User,
        ActiveContextOptions::default(),
    );
    let request = StaticPromptRequest {
        query: Some("payments"),
        ..StaticPromptRequest::default()
    };
    assert_eq!(
        c.static_prompt(&s, &request).unwrap(),
        "## Long-term memory\n- [fact] payments 0\n- [fact] payments 1"
    );
}

#[test]
fn static_sections_are_cut_to_their_share() {
    let many: Vec<RecalledMemory> = (0..15)
        .map(|i| memory(&format!("memory {i} {}", "x".repeat(400))))
        .collect();
    let c = MemoryCoordinator::default().with_persistent(Arc::new(FixedMemories(many)));
    let s = scope("chat");
    c.open_scope(
        s.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    let text = c
        .static_prompt(&s, &StaticPromptRequest::default())
        .unwrap();
    assert!(c.meter().count(&text) <= 600, "{}", c.meter().count(&text));
    assert!(text.starts_with("## Long-term memory\n- [fact] memory 0"));
}

#[test]
fn scopes_do_not_leak_into_each_other() {
    let c = MemoryCoordinator::default();
    let a = scope("architecture:analyst");
    let b = scope("networking:analyst");
    c.open_scope(
        a.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    c.open_scope(
        b.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    c.note_finding(&a, "Singleton APIClient", "Net/APIClient.swift:3", 9.0)
        .unwrap();
    assert!(
        c.dynamic_prompt(&a)
            .unwrap()
            .contains("Singleton APIClient")
    );
    assert_eq!(c.dynamic_prompt(&b).unwrap(), "");
    // opening a third scope does not redirect the others
    c.open_scope(
        scope("conventions:analyst"),
        BudgetProfile::Producer,
        ActiveContextOptions::default(),
    );
    assert!(
        c.dynamic_prompt(&a)
            .unwrap()
            .contains("Singleton APIClient")
    );
}

#[test]
fn closing_a_scope_stores_the_report_with_the_distillate() {
    let session = Arc::new(Mutex::new(SessionStore::new()));
    let c = MemoryCoordinator::default().with_session(session.clone());
    let s = scope("networking:analyst");
    c.open_scope(
        s.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    let msg = c
        .note_finding(&s, "Retries use backoff", "Net/Retry.swift:9", 7.0)
        .unwrap();
    assert_eq!(
        msg,
        "📌 noted [7/10]: \"Retries use backoff\" — 1 key findings in working memory"
    );
    let report = DimensionReport {
        completed_at_ms: 5,
        ..DimensionReport::default()
    };
    let distilled = c.close_scope(&s, Some(report)).unwrap();
    assert_eq!(distilled.key_findings.len(), 1);
    let stored = lock(&session).report("networking").cloned().unwrap();
    assert_eq!(stored.distilled, Some(distilled));
    assert_eq!(
        c.note_finding(&s, "x", "", 5.0).unwrap_err().to_string(),
        "working memory scope \"networking:analyst\" is not open; open it with open_scope before the run"
    );
}

#[test]
fn the_profile_is_per_scope() {
    let c = MemoryCoordinator::default();
    let a = scope("a:analyst");
    let p = scope("b:producer");
    c.open_scope(
        a.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    c.open_scope(
        p.clone(),
        BudgetProfile::Producer,
        ActiveContextOptions::default(),
    );
    assert_eq!(c.dynamic_budget(&a).unwrap(), 1800);
    assert_eq!(c.dynamic_budget(&p).unwrap(), 1000);
    c.set_profile(&a, BudgetProfile::Producer).unwrap();
    assert_eq!(c.dynamic_budget(&a).unwrap(), 1000);
}

#[test]
fn the_split_follows_the_model_context_and_the_cap() {
    let split = |context: usize, cap: Option<usize>| {
        let mut c = MemoryCoordinator::default();
        c.configure(context);
        if let Some(cap) = cap {
            c.cap_total(cap);
        }
        let s = c.split(context);
        (s.memory, s.messages, s.window_budget())
    };
    // 1M: 125k memory, 1M − 125k − 8k for the messages; the window may use all but the margin.
    assert_eq!(split(1_000_000, None), (125_000, 867_000, 997_000));
    assert_eq!(split(200_000, None), (25_000, 167_000, 197_000));
    assert_eq!(split(16_000, None), (2_000, 6_000, 13_000));
    // A cap lowers the memory share and gives the difference to the messages.
    assert_eq!(split(1_000_000, Some(20_000)), (20_000, 972_000, 997_000));
    // A cap above the 12.5 % changes nothing.
    assert_eq!(split(16_000, Some(20_000)), (2_000, 6_000, 13_000));
}

#[test]
fn a_larger_memory_budget_recalls_more_memories() {
    let many: Vec<RecalledMemory> = (0..200)
        .map(|i| memory(&format!("memory number {i} about the payment module")))
        .collect();
    let lines = |context: usize| {
        let mut c =
            MemoryCoordinator::default().with_persistent(Arc::new(FixedMemories(many.clone())));
        c.configure(context);
        c.open_scope(
            scope("s"),
            BudgetProfile::User,
            ActiveContextOptions::default(),
        );
        let text = c
            .static_prompt(&scope("s"), &StaticPromptRequest::default())
            .unwrap();
        text.lines().filter(|l| l.starts_with("- [fact]")).count()
    };
    let (small, large) = (lines(16_000), lines(1_000_000));
    assert_eq!(large, MAX_RECALL);
    assert!(small < MIN_RECALL + 1 && small > 0, "{small}");
}
