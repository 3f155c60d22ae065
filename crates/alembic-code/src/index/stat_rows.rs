//! The per-file rows whole-project queries read instead of every summary.
//!
//! Next to its summary, each file has one `code_file_stats` row (its extension, its number
//! of free functions, and its type declarations reduced to what merging types and resolving
//! parents read: names, kinds, lines, parents, origins, categories and method names) and one
//! `code_chunks` row per semantic-search chunk (type, method or function: symbol, place,
//! the last line of its text, and the hash of the text an embedder is given), whose identifier
//! words are in the FTS5 table `code_chunk_words` (same rowid). Embedding vectors live in
//! `code_chunk_vectors`, keyed by chunk hash and model, so an unchanged chunk is never
//! embedded again, whichever file it moves to. All of them are replaced with the summary in
//! the same transaction.

use std::collections::BTreeMap;

use alembic_store::rusqlite::{self, Connection, params};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::language::Lang;
use crate::semantic::{CodeChunk, chunks_of, embedding_text, words};
use crate::summary::{FileSummary, Method, TypeDecl};

/// Schema step 4: the rows above (step 3 is the call rows, `call_rows.rs`).
pub(super) const MIGRATION_SQL: &str = "create table code_file_stats (
        path text primary key,
        extension text not null,
        functions integer not null,
        types text not null
    );
    create table code_chunks (
        id integer primary key,
        path text not null,
        seq integer not null,
        symbol text not null,
        kind text not null,
        language text not null,
        line integer not null,
        end_line integer not null,
        text_end integer not null,
        hash blob not null
    );
    create index code_chunks_path on code_chunks(path, seq);
    create virtual table code_chunk_words using fts5(
        words, content = '', contentless_delete = 1,
        tokenize = \"unicode61 remove_diacritics 0 categories 'L* N* M* So Co'\"
    );
    create table code_chunk_vectors (
        hash blob not null,
        model text not null,
        vector blob not null,
        primary key (hash, model)
    ) without rowid;";

/// What a file contributes to the rows of this module, computed by the parallel readers.
pub(crate) struct FileStats {
    extension: String,
    functions: usize,
    /// The type skeleton, JSON.
    types: String,
    chunks: Vec<ChunkRow>,
}

/// One chunk as stored.
struct ChunkRow {
    symbol: String,
    kind: &'static str,
    line: usize,
    end_line: usize,
    text_end: usize,
    /// Identifier words of the symbol, path and text, space-separated (one FTS5 token each).
    words: String,
    hash: Vec<u8>,
}

/// The extension counted in the overview: `.rs`, or `(none)`.
pub(crate) fn extension_of(path: &str) -> String {
    std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map_or_else(|| "(none)".to_string(), |e| format!(".{e}"))
}

/// The stats rows of a parsed file whose source is `text`.
pub(crate) fn file_stats(summary: &FileSummary, text: &str) -> serde_json::Result<FileStats> {
    let lines: Vec<&str> = text.lines().collect();
    let mut chunks = Vec::new();
    chunks_of(summary, &lines, &mut chunks);
    Ok(FileStats {
        extension: extension_of(&summary.path),
        functions: summary.functions.len(),
        types: serde_json::to_string(&skeleton(&summary.types))?,
        chunks: chunks.iter().map(chunk_row).collect(),
    })
}

fn chunk_row(c: &CodeChunk) -> ChunkRow {
    ChunkRow {
        symbol: c.symbol.clone(),
        kind: c.kind,
        line: c.line,
        end_line: c.end_line,
        text_end: c.text_end,
        words: words(&format!("{} {} {}", c.symbol, c.file, c.text)).join(" "),
        hash: chunk_hash(c),
    }
}

/// The hash a chunk's vector is stored under: of the text the embedder is given (the first
/// 128 bits of its SHA-256).
pub(crate) fn chunk_hash(c: &CodeChunk) -> Vec<u8> {
    Sha256::digest(embedding_text(c).as_bytes())[..16].to_vec()
}

/// Type declarations with only what [`crate::merge`] and parent resolution read (method
/// names and kinds, not signatures, bodies' places or properties).
pub(super) fn skeleton(types: &[TypeDecl]) -> Vec<TypeDecl> {
    types
        .iter()
        .map(|t| TypeDecl {
            methods: t
                .methods
                .iter()
                .map(|m| Method {
                    name: m.name.clone(),
                    is_static: m.is_static,
                    signature: String::new(),
                    line: 0,
                    end_line: 0,
                    is_declaration: m.is_declaration,
                    is_optional: m.is_optional,
                    complexity: 0,
                })
                .collect(),
            properties: Vec::new(),
            ..t.clone()
        })
        .collect()
}

/// Deletes every row of this module, vectors included (a forced rebuild embeds again).
pub(super) const DELETE_ALL: &str = "delete from code_file_stats; delete from code_chunks;
    insert into code_chunk_words (code_chunk_words) values ('delete-all');
    delete from code_chunk_vectors;";

/// Deletes the rows of one file.
pub(super) fn delete_file(conn: &Connection, path: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "delete from code_chunk_words where rowid in (select id from code_chunks where path = ?1)",
    )?
    .execute(params![path])?;
    conn.prepare_cached("delete from code_chunks where path = ?1")?
        .execute(params![path])?;
    conn.prepare_cached("delete from code_file_stats where path = ?1")?
        .execute(params![path])?;
    Ok(())
}

/// Writes the rows of one file (its old rows are already deleted).
pub(super) fn write_file(
    conn: &Connection,
    summary: &FileSummary,
    stats: &FileStats,
) -> rusqlite::Result<()> {
    let path = summary.path.as_str();
    conn.prepare_cached(
        "insert into code_file_stats (path, extension, functions, types) values (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        path,
        stats.extension,
        sql_int(stats.functions),
        stats.types
    ])?;
    let mut chunk = conn.prepare_cached(
        "insert into code_chunks (path, seq, symbol, kind, language, line, end_line, text_end, hash)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut words =
        conn.prepare_cached("insert into code_chunk_words (rowid, words) values (?1, ?2)")?;
    for (seq, c) in stats.chunks.iter().enumerate() {
        chunk.execute(params![
            path,
            sql_int(seq),
            c.symbol,
            c.kind,
            summary.language.name(),
            sql_int(c.line),
            sql_int(c.end_line),
            sql_int(c.text_end),
            c.hash
        ])?;
        words.execute(params![conn.last_insert_rowid(), c.words])?;
    }
    Ok(())
}

fn sql_int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Files and free functions in the index.
pub(super) fn file_totals(conn: &Connection) -> rusqlite::Result<(usize, usize)> {
    conn.query_row(
        "select (select count(*) from code_files),
                (select coalesce(sum(functions), 0) from code_file_stats)",
        [],
        |r| {
            Ok((
                usize::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                usize::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
            ))
        },
    )
}

/// Files per language.
pub(super) fn languages(conn: &Connection) -> rusqlite::Result<BTreeMap<Lang, usize>> {
    let mut stmt = conn.prepare("select language, count(*) from code_files group by language")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (name, n) = row?;
        if let Some(lang) = Lang::from_name(&name) {
            out.insert(lang, usize::try_from(n).unwrap_or(0));
        }
    }
    Ok(out)
}

/// Files per extension.
pub(super) fn extensions(conn: &Connection) -> rusqlite::Result<BTreeMap<String, usize>> {
    let mut stmt =
        conn.prepare("select extension, count(*) from code_file_stats group by extension")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    rows.map(|row| row.map(|(e, n)| (e, usize::try_from(n).unwrap_or(0))))
        .collect()
}

/// Every file that declares a type, as a summary holding only its type skeleton, in path
/// order.
pub(super) fn type_skeletons(conn: &Connection) -> rusqlite::Result<Vec<FileSummary>> {
    skeletons(
        conn,
        "select s.path, f.language, s.types from code_file_stats s
         join code_files f on f.path = s.path where s.types != '[]' order by s.path",
    )
}

/// Every file, as a summary holding its type skeleton and its free functions (names only):
/// what resolving call sites reads of the files not being resolved.
pub(super) fn resolution_skeletons(conn: &Connection) -> rusqlite::Result<Vec<FileSummary>> {
    let mut out = skeletons(
        conn,
        "select f.path, f.language, coalesce(s.types, '[]') from code_files f
         left join code_file_stats s on s.path = f.path order by f.path",
    )?;
    let mut stmt = conn.prepare(
        "select path, name from code_callables where kind = 'function' order by path, rowid",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut at = 0;
    for row in rows {
        let (path, name) = row?;
        // Both are in path order: advance to the function's file.
        while out.get(at).is_some_and(|f| f.path < path) {
            at += 1;
        }
        if let Some(f) = out.get_mut(at).filter(|f| f.path == path) {
            f.functions.push(Method {
                name,
                is_static: false,
                signature: String::new(),
                line: 0,
                end_line: 0,
                is_declaration: false,
                is_optional: false,
                complexity: 0,
            });
        }
    }
    Ok(out)
}

fn skeletons(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<FileSummary>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let rows: Vec<(String, String, String)> = rows.collect::<rusqlite::Result<_>>()?;
    // Decoding is most of the cost: in parallel, keeping path order.
    let decoded = rows.into_par_iter().filter_map(|(path, language, json)| {
        let (Some(language), Ok(types)) = (
            Lang::from_name(&language),
            serde_json::from_str::<Vec<TypeDecl>>(&json),
        ) else {
            tracing::warn!(path, "undecodable type skeleton row");
            return None;
        };
        Some(FileSummary {
            path,
            language,
            line_count: 0,
            imports: Vec::new(),
            types,
            functions: Vec::new(),
            calls: Vec::new(),
            has_entry_point: false,
        })
    });
    Ok(decoded.collect())
}
