//! Integration tests of alembic-context (one binary; modules in `suite/`).

mod suite;
