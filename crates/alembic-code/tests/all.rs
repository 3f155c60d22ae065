//! Integration tests of alembic-code (one binary; modules in `suite/`).

mod suite;
