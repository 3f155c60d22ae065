//! The FTS5 index over a content table, written once for every component that searches text.

/// SQL (a `&'static str`) that creates an external-content FTS5 table `fts` over `columns` of
/// `table`, keyed by the integer primary key `rowid`, and the three triggers that keep it in
/// step with the table: `<fts>_insert`, `<fts>_delete` and `<fts>_update` (fired only when an
/// indexed column changes).
///
/// It is a macro rather than a function so that it can sit inside a `const` [`crate::Migration`]
/// (`concat!` it with the rest of the step's SQL): a migration's text is fixed at compile time.
///
/// ```
/// use alembic_store::{Migration, fts5_index_sql, migrate, open_in_memory};
/// const STEPS: &[Migration] = &[Migration {
///     version: 1,
///     sql: concat!(
///         "create table notes (seq integer primary key, body text not null);\n",
///         fts5_index_sql!(table: "notes", fts: "notes_fts", rowid: "seq",
///             columns: ["body"], tokenize: "porter unicode61 remove_diacritics 2"),
///     ),
/// }];
/// let mut conn = open_in_memory().unwrap();
/// migrate(&mut conn, "notes", STEPS).unwrap();
/// conn.execute("insert into notes (body) values ('retry with backoff')", []).unwrap();
/// let hits: i64 = conn
///     .query_row("select count(*) from notes_fts where notes_fts match 'retries'", [], |r| r.get(0))
///     .unwrap();
/// assert_eq!(hits, 1);
/// ```
#[macro_export]
macro_rules! fts5_index_sql {
    (
        table: $table:literal,
        fts: $fts:literal,
        rowid: $rowid:literal,
        columns: [$first:literal $(, $rest:literal)* $(,)?],
        tokenize: $tokenize:literal $(,)?
    ) => {
        concat!(
            "create virtual table ", $fts, " using fts5(\n",
            "    ", $first, ",\n", $("    ", $rest, ",\n",)*
            "    content = '", $table, "',\n",
            "    content_rowid = '", $rowid, "',\n",
            "    tokenize = '", $tokenize, "'\n",
            ");\n",
            "create trigger ", $fts, "_insert after insert on ", $table, " begin\n",
            "    insert into ", $fts, " (rowid, ", $first $(, ", ", $rest)*, ")\n",
            "        values (new.", $rowid, ", new.", $first $(, ", new.", $rest)*, ");\n",
            "end;\n",
            "create trigger ", $fts, "_delete after delete on ", $table, " begin\n",
            "    insert into ", $fts, " (", $fts, ", rowid, ", $first $(, ", ", $rest)*, ")\n",
            "        values ('delete', old.", $rowid, ", old.", $first $(, ", old.", $rest)*, ");\n",
            "end;\n",
            "create trigger ", $fts, "_update after update of ", $first $(, ", ", $rest)*,
            " on ", $table, " begin\n",
            "    insert into ", $fts, " (", $fts, ", rowid, ", $first $(, ", ", $rest)*, ")\n",
            "        values ('delete', old.", $rowid, ", old.", $first $(, ", old.", $rest)*, ");\n",
            "    insert into ", $fts, " (rowid, ", $first $(, ", ", $rest)*, ")\n",
            "        values (new.", $rowid, ", new.", $first $(, ", new.", $rest)*, ");\n",
            "end;\n",
        )
    };
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use crate::{Migration, migrate, open_in_memory};

    const CONTENT: &str =
        "create table docs (seq integer primary key, title text not null, body text not null);\n";

    /// What the memory and knowledge migrations wrote by hand before this macro.
    const HAND_WRITTEN: &str = r#"
create virtual table docs_fts using fts5(
    title,
    body,
    content = 'docs',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
create trigger docs_fts_insert after insert on docs begin
    insert into docs_fts (rowid, title, body)
        values (new.seq, new.title, new.body);
end;
create trigger docs_fts_delete after delete on docs begin
    insert into docs_fts (docs_fts, rowid, title, body)
        values ('delete', old.seq, old.title, old.body);
end;
create trigger docs_fts_update after update of title, body on docs begin
    insert into docs_fts (docs_fts, rowid, title, body)
        values ('delete', old.seq, old.title, old.body);
    insert into docs_fts (rowid, title, body)
        values (new.seq, new.title, new.body);
end;
"#;

    const GENERATED: &str = fts5_index_sql!(
        table: "docs",
        fts: "docs_fts",
        rowid: "seq",
        columns: ["title", "body"],
        tokenize: "porter unicode61 remove_diacritics 2",
    );

    fn schema(fts_sql: &'static str) -> Vec<(String, String, String)> {
        let mut conn = open_in_memory().unwrap();
        let steps = [
            Migration {
                version: 1,
                sql: CONTENT,
            },
            Migration {
                version: 2,
                sql: fts_sql,
            },
        ];
        migrate(&mut conn, "docs", &steps).unwrap();
        let mut stmt = conn
            .prepare(
                "select type, name, sql from sqlite_master where sql is not null order by name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)))
            .unwrap()
            .map(|row| {
                let (kind, name, sql) = row.unwrap();
                (
                    kind,
                    name,
                    sql.split_whitespace().collect::<Vec<_>>().join(" "),
                )
            })
            .collect()
    }

    #[test]
    fn generated_sql_is_the_hand_written_sql() {
        assert_eq!(
            GENERATED.split_whitespace().collect::<Vec<_>>(),
            HAND_WRITTEN.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(schema(GENERATED), schema(HAND_WRITTEN));
    }

    #[test]
    fn triggers_keep_the_index_in_step() {
        let mut conn = open_in_memory().unwrap();
        let steps = [
            Migration {
                version: 1,
                sql: CONTENT,
            },
            Migration {
                version: 2,
                sql: GENERATED,
            },
        ];
        migrate(&mut conn, "docs", &steps).unwrap();
        let hits = |conn: &rusqlite::Connection, q: &str| -> i64 {
            conn.query_row(
                "select count(*) from docs_fts where docs_fts match ?1",
                [q],
                |r| r.get(0),
            )
            .unwrap()
        };
        conn.execute(
            "insert into docs (title, body) values ('retry', 'backoff')",
            [],
        )
        .unwrap();
        assert_eq!((hits(&conn, "retry"), hits(&conn, "backoff")), (1, 1));
        conn.execute("update docs set body = 'jitter'", []).unwrap();
        assert_eq!((hits(&conn, "backoff"), hits(&conn, "jitter")), (0, 1));
        conn.execute("delete from docs", []).unwrap();
        assert_eq!((hits(&conn, "retry"), hits(&conn, "jitter")), (0, 0));
    }
}

/// What re-indexing a searchable table found (and did): its rows, and how many held index
/// text that differs from what the current tokenizer writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReindexReport {
    pub rows: u64,
    pub stale: u64,
    /// Whether the stale rows were rewritten and the FTS5 index rebuilt (not on a dry run).
    pub written: bool,
}

/// Rebuilds the external-content FTS5 index `fts` from its content table (FTS5's `rebuild`
/// command), e.g. after index text was recomputed. Run it inside the transaction that changed
/// the rows, so the index never lags behind them.
pub fn rebuild_fts5(conn: &rusqlite::Connection, fts: &str) -> rusqlite::Result<()> {
    conn.execute(&format!("insert into {fts} ({fts}) values ('rebuild')"), [])?;
    Ok(())
}
