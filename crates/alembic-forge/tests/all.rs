#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of alembic-forge: one binary, modules in `suite/`.

mod suite;
