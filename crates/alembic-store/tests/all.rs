#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Integration tests of alembic-store, one binary (see `suite/`).

mod suite;
