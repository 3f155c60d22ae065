//! Integration tests of alembic-code (one binary; modules in `suite/`).
// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod suite;
