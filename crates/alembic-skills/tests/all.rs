#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of alembic-skills: the skill tools through the real pipeline.

mod suite;
