//! Integration tests of alembic-safety (one binary; modules in `suite/`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on setup errors"
)]

mod suite;
