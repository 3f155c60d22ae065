//! Memory from conversations, against the OpenAI fake server: at the end of a run the model
//! extracts facts and the user's stated preferences (one bounded call, validated JSON), which
//! go through the consolidator with the noted findings; a second session answers from them.
//! Switched off, nothing is kept and no call is made; `/remember` keeps the user's words.

use alembic_agent::{
    AgentPreset, EXTRACTION_MAX_TOKENS, Extraction, MEMORY_EXTRACTION_SYSTEM_PROMPT, RunRequest,
};
use alembic_llm::ProviderKind;
use alembic_llm::fake::{FakeReply, FakeTurn, RecordedRequest};
use alembic_memory::{Action, ListFilter, MemoryType};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{Harness, memory, user_messages};

const FIRST: &str = "Where does the payment flow start? Please always cite files as path:line.";
const SECOND: &str = "Which type starts the payment flow?";
const FACT: &str = "The payment flow starts in PaymentCoordinator.start (Payment/PaymentCoordinator.swift:4), which calls PaymentRepository.load.";
const PREFERENCE: &str = "The user wants files cited as path:line.";

fn is_extraction(request: &RecordedRequest) -> bool {
    request.system_prompt() == MEMORY_EXTRACTION_SYSTEM_PROMPT
}

fn extraction_answer() -> FakeReply {
    let memories = json!({"memories": [
        {"type": "fact", "content": FACT, "importance": 8},
        {"type": "preference", "content": PREFERENCE, "importance": 7},
    ]});
    FakeTurn::text(memories.to_string())
        .with_usage(300, 60)
        .into()
}

/// Session 1 searches, then answers; session 2 answers from memory when the fact is in its
/// system prompt. Extraction calls get the two memories above.
fn model(request: &RecordedRequest) -> FakeReply {
    if is_extraction(request) {
        return extraction_answer();
    }
    if request
        .system_prompt()
        .contains(&format!("- [fact] {FACT}"))
    {
        return FakeTurn::text(
            "PaymentCoordinator (Payment/PaymentCoordinator.swift:4), as found before.",
        )
        .into();
    }
    if request.tool_results().is_empty() {
        FakeTurn::new()
            .tool_call("c1", "search_project_code", json!({"pattern": "start"}))
            .into()
    } else {
        FakeTurn::text(
            "It starts in PaymentCoordinator.start (Payment/PaymentCoordinator.swift:4).",
        )
        .into()
    }
}

#[tokio::test]
async fn a_second_session_answers_from_what_the_first_one_extracted() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    let store = memory();
    h.memory = Some(store.clone());
    h.server.respond_with(model);

    let first = h.ask("chat", FIRST).await;
    assert_eq!(first.tool_names(), vec!["search_project_code"]);
    assert_eq!(first.memory.extraction, Extraction::Used { memories: 2 });
    let saved: Vec<(Action, MemoryType, &str)> = first
        .memory
        .saved
        .iter()
        .map(|m| (m.action, m.kind, m.content.as_str()))
        .collect();
    assert_eq!(
        saved,
        vec![
            (Action::Added, MemoryType::Fact, FACT),
            (Action::Added, MemoryType::Preference, PREFERENCE)
        ]
    );
    assert_eq!(first.memory.extraction_usage.requests, 1);
    assert_eq!(first.memory.extraction_usage.input_tokens, 300);
    // The run's own usage does not include the extraction call.
    assert_eq!(first.usage.requests, 2);
    // The extraction call: bounded, no tools, over the question and the answer.
    let extraction = h.requests().into_iter().find(is_extraction).unwrap();
    assert_eq!(extraction.offered_tools(), Vec::<String>::new());
    assert_eq!(
        extraction.body["max_completion_tokens"],
        EXTRACTION_MAX_TOKENS
    );
    let transcript = user_messages(&extraction).join("\n");
    assert!(transcript.starts_with(&format!("User: {FIRST}\n\nAssistant: It starts in")));
    let kept = store
        .with_store(|m| m.list(&ListFilter::default()))
        .unwrap();
    let preference = kept.iter().find(|m| m.content == PREFERENCE).unwrap();
    assert!(
        preference
            .provenance
            .as_deref()
            .unwrap()
            .contains(&first.run_id)
    );

    // Session 2: a new agent over the same store.
    let before = h.requests().len();
    let request = RunRequest::new(SECOND, AgentPreset::from_name("chat"));
    let second = h
        .agent()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    let system = h.requests()[before].system_prompt();
    assert!(system.contains(&format!("- [fact] {FACT}")), "{system}");
    assert!(
        system.contains(&format!("- [preference] {PREFERENCE}")),
        "{system}"
    );
    assert_eq!(second.rounds, 1);
    assert_eq!(second.tool_calls, vec![]);
    assert!(second.answer.contains("as found before"));
    // Session 2's extraction proposes the same two memories: the consolidator updates them.
    assert_eq!((second.memory.added, second.memory.updated), (0, 2));
}

#[tokio::test]
async fn switched_off_nothing_is_kept_and_no_call_is_made() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    let store = memory();
    h.memory = Some(store.clone());
    h.options.extract_from_conversations = false;
    h.server.respond_with(model);
    let report = h.ask("chat", FIRST).await;
    assert_eq!(report.memory.extraction, Extraction::Off);
    assert_eq!(report.memory.saved, vec![]);
    assert!(!h.requests().iter().any(is_extraction));
    let kept = store
        .with_store(|m| m.list(&ListFilter::default()))
        .unwrap();
    assert_eq!(kept, vec![]);
}

#[tokio::test]
async fn an_invalid_extraction_falls_back_to_the_answers_key_fact() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    h.memory = Some(memory());
    h.server.respond_with(|request| {
        if is_extraction(request) {
            return FakeTurn::text("I would remember the coordinator.").into();
        }
        model(request)
    });
    let report = h.ask("chat", FIRST).await;
    let Extraction::Failed { error } = &report.memory.extraction else {
        panic!("{:?}", report.memory.extraction);
    };
    assert!(error.contains("expected a JSON object"), "{error}");
    let saved: Vec<&str> = report
        .memory
        .saved
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        saved,
        vec!["It starts in PaymentCoordinator.start (Payment/PaymentCoordinator.swift:4)."]
    );
}

#[tokio::test]
async fn remember_keeps_the_users_words_and_what_the_model_extracts() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    let store = memory();
    h.memory = Some(store.clone());
    h.server.push(extraction_answer());
    let note = "Payment code must never log card numbers";
    let report = h
        .agent()
        .remember(
            "User: Who owns card data?\n\nAssistant: PaymentRepository.",
            Some(note),
            &CancellationToken::new(),
        )
        .await;
    let saved: Vec<(MemoryType, &str)> = report
        .saved
        .iter()
        .map(|m| (m.kind, m.content.as_str()))
        .collect();
    assert_eq!(
        saved,
        vec![
            (MemoryType::Fact, note),
            (MemoryType::Fact, FACT),
            (MemoryType::Preference, PREFERENCE)
        ]
    );
    let transcript = user_messages(&h.requests()[0]).join("\n");
    assert!(transcript.ends_with(&format!("The user asked to remember: {note}")));
    let kept = store
        .with_store(|m| m.list(&ListFilter::default()))
        .unwrap();
    let stored = kept.iter().find(|m| m.content == note).unwrap();
    assert_eq!(stored.importance, 8.0);
}
