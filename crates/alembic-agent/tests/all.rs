#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of the agent runtime against fake vendor servers on loopback.

mod suite;
