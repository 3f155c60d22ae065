mod bootstrap;
mod budgets;
mod chat_exploration;
mod loop_behaviour;
mod roundtrip;
mod scenario;
mod support;
