//! Integration tests for alembic-llm: each provider against a fake vendor server on 127.0.0.1.
// Helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod suite;
