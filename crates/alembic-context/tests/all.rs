//! Integration tests of alembic-context (one binary; modules in `suite/`).

// Fixture helpers outside `#[test]` functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
