//! Model-aware budgets: the coordinator takes 12.5 % of the model's context for memory, the
//! window gets the rest but the reserves, and a bigger model's request carries more memories.

use alembic_agent::{AgentPreset, RunRequest};
use alembic_llm::ProviderKind;
use alembic_llm::fake::FakeTurn;
use alembic_memory::NewMemory;
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::support::{Harness, memory};

/// (model, context, memory, messages, window budget) for a 1M, a 200k and a 16k model.
#[tokio::test]
async fn the_split_follows_the_model() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    let rows: Vec<(&str, usize, usize, usize, usize)> =
        ["gpt-4.1", "claude-haiku-4-5", "gpt-3.5-turbo"]
            .into_iter()
            .map(|model| {
                let s = h.agent_for(model).context_split();
                (model, s.context, s.memory, s.messages, s.window_budget())
            })
            .collect();
    assert_eq!(
        rows,
        vec![
            ("gpt-4.1", 1_000_000, 125_000, 867_000, 997_000),
            ("claude-haiku-4-5", 200_000, 25_000, 167_000, 197_000),
            // 12.5 % of 16,385 rounds to 2,048.
            ("gpt-3.5-turbo", 16_385, 2_048, 6_337, 13_385),
        ]
    );
}

#[tokio::test]
async fn the_memory_cap_limits_the_memory_budget() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    h.options.memory_budget_cap = Some(20_000);
    let s = h.agent_for("gpt-4.1").context_split();
    assert_eq!((s.memory, s.messages), (20_000, 972_000));
}

/// Counts the long-term memory lines in the first request of a chat run on `model`.
async fn memories_sent(model: &str) -> usize {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    let store = memory();
    // Sixty relevant memories of about 60 tokens each: more than a 16k model's persistent
    // share (60 % of 2,048 tokens) holds, far less than a 1M model's.
    let memories: Vec<NewMemory> = (0..60)
        .map(|i| {
            NewMemory::fact(format!(
                "Payment note {i}: the Payment module keeps its checkout state in PaymentStore{i}, \
                 retries failed charges through PaymentRetryPolicy{i} and reports every outcome \
                 to the PaymentAudit{i} log before it returns"
            ))
        })
        .collect();
    store.with_store(|m| m.add_batch(&memories)).unwrap();
    h.memory = Some(store);
    h.server
        .push(FakeTurn::text("The Payment module has many notes."))
        // the memory extraction at the end of the run: nothing new
        .push(FakeTurn::text(r#"{"memories": []}"#));
    let request = RunRequest::new(
        "What does the Payment module do?",
        AgentPreset::from_name("chat"),
    );
    h.agent_for(model)
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    let system = h.requests()[0].system_prompt();
    system
        .lines()
        .filter(|l| l.starts_with("- [fact] Payment note"))
        .count()
}

#[tokio::test]
async fn a_large_model_request_carries_more_memories_than_a_small_one() {
    let large = memories_sent("gpt-4.1").await;
    let small = memories_sent("gpt-3.5-turbo").await;
    println!("memories in the request: 1M model {large}, 16k model {small}");
    assert_eq!(
        large, 60,
        "every relevant memory fits in a 1M model's share"
    );
    assert!(small > 0 && small < 20, "16k model: {small}");
}
