//! Integration tests of alembic-team against a real PostgreSQL server (modules in `suite/`).
// Helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
