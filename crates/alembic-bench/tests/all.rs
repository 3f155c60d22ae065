//! Integration tests of alembic-bench (one binary; modules in `suite/`).
// Helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
