//! The one way to open a transaction on a team's rows: it names the team for the server's
//! row-level security policies (`alembic.team`, local to the transaction), so a query that
//! forgot its `team = $1` filter still cannot see another team's rows.

use sqlx::{PgPool, Postgres, Transaction};

/// Begins a transaction scoped to `team`. Every read and write of team rows goes through it.
pub async fn begin_team(
    pool: &PgPool,
    team: &str,
) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("select set_config('alembic.team', $1, true)")
        .bind(team)
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}
