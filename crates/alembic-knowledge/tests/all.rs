#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of alembic-knowledge: the store and the tools through the real pipeline.

mod suite;
