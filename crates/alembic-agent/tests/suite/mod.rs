mod bootstrap;
mod budgets;
mod chat_exploration;
mod l2_summary;
mod loop_behaviour;
mod roundtrip;
mod scenario;
mod support;
