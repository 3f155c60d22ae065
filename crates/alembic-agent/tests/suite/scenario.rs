//! Seed scenario 1: memory-driven skipping. The first run explores, notes the pattern and
//! keeps it in long-term memory; the second run with the same question finds it in the system
//! prompt and answers in one round.

use alembic_llm::ProviderKind;
use alembic_llm::fake::{FakeReply, FakeTurn, RecordedRequest};
use alembic_memory::ListFilter;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{FACT, Harness, body_tokens, memory};

const QUESTION: &str = "Which design pattern does the Payment module use?";

/// A model that answers from memory when the fact is in its system prompt, and otherwise
/// searches, notes what it found, then answers.
fn model(request: &RecordedRequest) -> FakeReply {
    let input = body_tokens(request);
    // Long-term memory renders as "- [fact] …"; the noted finding in working memory
    // ("- [9/10] …") does not count as remembered.
    if request
        .system_prompt()
        .contains(&format!("- [fact] {FACT}"))
    {
        return FakeTurn::text(format!(
            "{FACT} (remembered): PaymentCoordinator drives the flow and PaymentRepository abstracts storage."
        ))
        .with_usage(input, 45)
        .into();
    }
    let results = request.tool_results();
    if results.is_empty() {
        FakeTurn::new()
            .tool_call("c1", "search_project_code", json!({"pattern": "Payment"}))
            .with_usage(input, 25)
            .into()
    } else if !results.iter().any(|r| r.contains("noted")) {
        FakeTurn::new()
            .tool_call(
                "c2",
                "note_finding",
                json!({"finding": FACT, "evidence": "Payment/PaymentCoordinator.swift:2", "importance": 8.5}),
            )
            .with_usage(input, 40)
            .into()
    } else {
        FakeTurn::text(format!(
            "{FACT}: PaymentCoordinator (Payment/PaymentCoordinator.swift) owns a PaymentRepository, implemented by RemotePaymentRepository."
        ))
        .with_usage(input, 50)
        .into()
    }
}

#[tokio::test]
async fn the_second_run_answers_from_memory_in_one_round() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    let store = memory();
    h.memory = Some(store.clone());
    h.server.respond_with(model);

    let first = h.ask("chat", QUESTION).await;
    assert_eq!(first.rounds, 3);
    assert_eq!(
        first.tool_names(),
        vec!["search_project_code", "note_finding"]
    );
    assert!(!h.requests()[0].system_prompt().contains(FACT));
    let kept = store
        .with_store(|m| m.list(&ListFilter::default()))
        .unwrap();
    let fact = kept
        .iter()
        .find(|m| m.content == FACT)
        .expect("the noted fact is in long-term memory");
    assert_eq!(fact.importance, 9.0, "importance 8.5 noted as 9/10");
    let provenance = fact.provenance.as_deref().unwrap();
    assert!(
        provenance.contains(&first.run_id) && provenance.contains(QUESTION),
        "{provenance}"
    );

    let before = h.requests().len();
    let second = h.ask("chat", QUESTION).await;
    assert_eq!(second.rounds, 1);
    assert_eq!(second.tool_calls, vec![]);
    assert!(second.answer.contains("(remembered)"));
    let system = h.requests()[before].system_prompt();
    assert!(system.contains(&format!("- [fact] {FACT}")), "{system}");
    let root = h.project.path().display().to_string();
    insta::assert_snapshot!("second_run_system_prompt", system.replace(&root, "[ROOT]"));
    // The first run's third request: working memory holds the search and the noted finding.
    insta::assert_snapshot!("first_run_round_3_system_prompt", h.system_prompt(2));

    println!(
        "scenario 1 without memory: {} rounds, {} tokens in / {} out; with memory: {} round, {} in / {} out",
        first.rounds,
        first.usage.input_tokens,
        first.usage.output_tokens,
        second.rounds,
        second.usage.input_tokens,
        second.usage.output_tokens
    );
    assert!(second.usage.total() < first.usage.total());
}

#[tokio::test]
async fn without_long_term_memory_every_run_explores_again() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server.respond_with(model);
    assert_eq!(h.ask("chat", QUESTION).await.rounds, 3);
    assert_eq!(h.ask("chat", QUESTION).await.rounds, 3);
}
