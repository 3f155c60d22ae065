//! The one way to open a transaction on a team's rows: it names the team for the server's
//! row-level security policies (`alembic.team`, local to the transaction), so a query that
//! forgot its `team = $1` filter still cannot see another team's rows.

use sqlx::{AssertSqlSafe, PgPool, Postgres, Transaction};

/// Begins a transaction scoped to `team`. Every read and write of team rows goes through it.
///
/// One round trip: `begin` and the `set_config` go as one simple query (sqlx's custom begin
/// statement), so the team is named before any statement of the transaction runs. The simple
/// protocol has no parameters, so the name is quoted as PostgreSQL's `quote_literal` quotes.
pub async fn begin_team(
    pool: &PgPool,
    team: &str,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    begin(pool, team, "").await
}

/// [`begin_team`] for a transaction whose writes are only counters (a retrieval's access
/// counts): its commit does not wait for the WAL flush (`synchronous_commit = off`, for this
/// transaction only), so a server crash may lose the last few counts, never a memory or an
/// edit. Set in the same round trip as the begin.
pub async fn begin_team_unflushed(
    pool: &PgPool,
    team: &str,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    begin(
        pool,
        team,
        ", set_config('synchronous_commit', 'off', true)",
    )
    .await
}

async fn begin(
    pool: &PgPool,
    team: &str,
    more: &str,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    let begin = format!(
        "begin; select set_config('alembic.team', {}, true){more}",
        quote_literal(team)
    );
    pool.begin_with(AssertSqlSafe(begin)).await
}

/// `s` as an SQL string literal whatever `standard_conforming_strings` says: quotes doubled,
/// and with a backslash, an `E''` literal with backslashes doubled.
fn quote_literal(s: &str) -> String {
    let quoted = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

#[cfg(test)]
mod tests {
    use super::quote_literal;

    #[test]
    fn quote_literal_doubles_quotes_and_escapes_backslashes() {
        assert_eq!(quote_literal("platform-1"), "'platform-1'");
        assert_eq!(quote_literal("o'brien"), "'o''brien'");
        assert_eq!(quote_literal(r"a\'b"), r"E'a\\''b'");
    }
}
