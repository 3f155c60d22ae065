//! `semantic_search_code` from the stored chunks ([`super::stat_rows`]): FTS5 finds the
//! chunks sharing a word with the query and scores them by `bm25()`, which
//! [`crate::semantic::SemanticIndex`] computes the same way in memory; vectors are read from
//! `code_chunk_vectors`, and only chunks whose hash has no vector for the model are embedded
//! (their text is cut again from the file, as at index time).

use std::collections::{BTreeMap, HashMap};

use alembic_store::rusqlite::{self, Connection, OptionalExtension, params};

use super::{CodeIndex, IndexError, rows};
use crate::language::Lang;
use crate::semantic::{
    CodeChunk, CodeEmbedder, MAX_EMBEDDED_CHUNKS, QueryVector, Scores, SemanticHit, SemanticSearch,
    chunk_text, chunks_of, dot, embed_batches, embedding_text, preview, words,
};
use crate::summary::TypeKind;

/// The embedded chunks of the index for one model (the first [`MAX_EMBEDDED_CHUNKS`] in
/// path order), which hybrid ranking compares with every query.
#[derive(Debug, Default)]
pub struct ChunkVectors {
    chunks: usize,
    vectors: Vec<(Candidate, Vec<f32>)>,
    /// Why chunks were not embedded (the first failing batch), if they were not.
    embed_error: Option<String>,
}

impl ChunkVectors {
    /// No vectors (no embedder) over `chunks` chunks.
    pub fn counted(chunks: usize) -> ChunkVectors {
        ChunkVectors {
            chunks,
            ..ChunkVectors::default()
        }
    }

    /// Chunks in the index (embedded or not).
    pub fn len(&self) -> usize {
        self.chunks
    }

    pub fn is_empty(&self) -> bool {
        self.chunks == 0
    }

    /// Chunks that have a vector.
    pub fn embedded(&self) -> usize {
        self.vectors.len()
    }
}

/// What ranking reads of a chunk before its row is shown.
#[derive(Debug, Clone)]
struct Candidate {
    id: i64,
    symbol: String,
    language: String,
    path: String,
    seq: i64,
}

impl Candidate {
    /// From a row whose first columns are `id, symbol, language, path, seq`.
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
        Ok(Candidate {
            id: r.get(0)?,
            symbol: r.get(1)?,
            language: r.get(2)?,
            path: r.get(3)?,
            seq: r.get(4)?,
        })
    }
}

/// A chunk to embed: where it is and the hash its vector is stored under.
struct Pending {
    candidate: Candidate,
    hash: Vec<u8>,
}

impl CodeIndex {
    /// The vectors of the embedded chunks for `embedder`'s model, embedding those that have
    /// none (a failing batch leaves its chunks lexical-only and is reported by the search).
    pub fn chunk_vectors(&self, embedder: &dyn CodeEmbedder) -> Result<ChunkVectors, IndexError> {
        let model = embedder.model_id();
        let mut out = ChunkVectors {
            chunks: chunk_count(&self.conn)?,
            ..ChunkVectors::default()
        };
        let mut missing = Vec::new();
        for p in first_chunks(&self.conn)? {
            match stored_vector(&self.conn, &p.hash, model)? {
                Some(v) => out.vectors.push((p.candidate, v)),
                None => missing.push(p),
            }
        }
        let texts = self.chunk_texts(&missing)?;
        let missing: Vec<(Pending, String)> = missing
            .into_iter()
            .filter_map(|p| {
                let text = texts.get(&p.candidate.id)?.clone();
                Some((p, text))
            })
            .collect();
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        let mut error = None;
        embed_batches(embedder, &texts, &mut error, |at, vectors| {
            let tx = self.conn.unchecked_transaction()?;
            for ((p, _), v) in missing[at..].iter().zip(vectors) {
                put_vector(&tx, &p.hash, model, &v)?;
                out.vectors.push((p.candidate.clone(), v));
            }
            tx.commit()
        })?;
        out.embed_error = error;
        prune_stale(&self.conn, model, out.vectors.len())?;
        out.vectors
            .sort_by(|(a, _), (b, _)| (&a.path, a.seq).cmp(&(&b.path, b.seq)));
        Ok(out)
    }

    /// The embedding texts of `pending` chunks, cut from their files as at index time; a
    /// chunk whose file changed since (its hash differs) is left out.
    fn chunk_texts(&self, pending: &[Pending]) -> Result<HashMap<i64, String>, IndexError> {
        let mut by_path: BTreeMap<&str, Vec<&Pending>> = BTreeMap::new();
        for p in pending {
            by_path.entry(&p.candidate.path).or_default().push(p);
        }
        let mut out = HashMap::new();
        for (path, list) in by_path {
            let (Some(summary), Ok(bytes)) =
                (rows::summary(&self.conn, path)?, self.guard.read(path))
            else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let mut chunks = Vec::new();
            chunks_of(&summary, &lines, &mut chunks);
            for p in list {
                let chunk = usize::try_from(p.candidate.seq)
                    .ok()
                    .and_then(|i| chunks.get(i));
                if let Some(c) = chunk.filter(|c| super::stat_rows::chunk_hash(c) == p.hash) {
                    out.insert(p.candidate.id, embedding_text(c));
                }
            }
        }
        Ok(out)
    }

    /// Best `top_k` stored chunks for `query` (optionally of one language), ranked as
    /// [`crate::semantic::SemanticIndex::search`] ranks the same chunks: BM25 normalised by
    /// the query's best, blended with cosine similarity when `vectors` and the embedder give
    /// one.
    pub fn search_chunks(
        &self,
        query: &str,
        top_k: usize,
        language: Option<&str>,
        vectors: Option<&ChunkVectors>,
        embedder: Option<&dyn CodeEmbedder>,
    ) -> Result<SemanticSearch, IndexError> {
        let no_error = None;
        let embedded = vectors.is_some_and(|v| !v.vectors.is_empty());
        let embed_error = vectors.map_or(&no_error, |v| &v.embed_error);
        let query = QueryVector::new(query, embedded, embedder, embed_error);
        let (Some(q), Some(vectors)) = (&query.vector, vectors) else {
            let ranked = lexical_ranked(&self.conn, &words(query.text), top_k, language)?;
            let hits = self.hits(ranked, top_k)?;
            return Ok(query.search(hits));
        };
        let lexical = lexical_matches(&self.conn, &words(query.text))?;
        let max = lexical.iter().map(|(_, raw)| *raw).fold(0.0f64, f64::max);
        let mut scored: HashMap<i64, (Candidate, f64, Option<f32>)> = lexical
            .into_iter()
            .map(|(c, raw)| (c.id, (c, raw, None)))
            .collect();
        for (c, v) in &vectors.vectors {
            let entry = scored.entry(c.id).or_insert_with(|| (c.clone(), 0.0, None));
            entry.2 = Some(dot(q, v));
        }
        let ranked: Vec<(Scores, Candidate)> = scored
            .into_values()
            .filter(|(c, _, _)| language.is_none_or(|l| c.language.eq_ignore_ascii_case(l)))
            .filter_map(|(c, raw, cosine)| Some((Scores::blend(raw, max, cosine)?, c)))
            .collect();
        let hits = self.hits(ranked, top_k)?;
        Ok(query.search(hits))
    }

    /// The best `top_k` of `ranked` (by score, then symbol, path and place) as hits with
    /// their previews.
    fn hits(
        &self,
        mut ranked: Vec<(Scores, Candidate)>,
        top_k: usize,
    ) -> Result<Vec<SemanticHit>, IndexError> {
        ranked.sort_by(|(a, x), (b, y)| {
            b.score()
                .total_cmp(&a.score())
                .then_with(|| (&x.symbol, &x.path, x.seq).cmp(&(&y.symbol, &y.path, y.seq)))
        });
        ranked.truncate(top_k);
        let mut hits = Vec::with_capacity(ranked.len());
        let mut files: HashMap<String, Option<String>> = HashMap::new();
        for (scores, c) in ranked {
            let Some(chunk) = shown_chunk(&self.conn, &c)? else {
                continue;
            };
            // The preview is cut from the file (refreshed before the query) as at index time.
            let text = files.entry(c.path).or_insert_with_key(|path| {
                let bytes = self.guard.read(path).ok()?;
                Some(String::from_utf8_lossy(&bytes).into_owned())
            });
            let preview = text.as_deref().map_or_else(String::new, |text| {
                let lines: Vec<&str> = text.lines().collect();
                preview(&chunk_text(&lines, chunk.line, chunk.text_end))
            });
            hits.push(scores.hit(chunk, preview));
        }
        Ok(hits)
    }

    /// Chunks in the index.
    pub fn chunk_count(&self) -> Result<usize, IndexError> {
        Ok(chunk_count(&self.conn)?)
    }
}

fn chunk_count(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row("select count(*) from code_chunks", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| usize::try_from(n).unwrap_or(0))
}

/// The chunks that get vectors: the first [`MAX_EMBEDDED_CHUNKS`] in path order.
fn first_chunks(conn: &Connection) -> rusqlite::Result<Vec<Pending>> {
    let mut stmt = conn.prepare(
        "select id, symbol, language, path, seq, hash from code_chunks
         order by path, seq limit ?1",
    )?;
    let limit = i64::try_from(MAX_EMBEDDED_CHUNKS).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![limit], |r| {
        Ok(Pending {
            candidate: Candidate::from_row(r)?,
            hash: r.get(5)?,
        })
    })?;
    rows.collect()
}

fn stored_vector(
    conn: &Connection,
    hash: &[u8],
    model: &str,
) -> rusqlite::Result<Option<Vec<f32>>> {
    let blob: Option<Vec<u8>> = conn
        .prepare_cached("select vector from code_chunk_vectors where hash = ?1 and model = ?2")?
        .query_row(params![hash, model], |r| r.get(0))
        .optional()?;
    Ok(blob.map(|b| {
        b.chunks_exact(4)
            .map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
            .collect()
    }))
}

/// Drops the model's vectors of chunks that no longer exist (edited or deleted since) once
/// they outnumber the live ones, so the table stays within twice the embedded chunks without
/// a scan after every change.
fn prune_stale(conn: &Connection, model: &str, embedded: usize) -> rusqlite::Result<()> {
    let stored: i64 = conn.query_row(
        "select count(*) from code_chunk_vectors where model = ?1",
        params![model],
        |r| r.get(0),
    )?;
    if usize::try_from(stored).unwrap_or(0) > 2 * embedded {
        conn.execute(
            "delete from code_chunk_vectors
             where model = ?1 and hash not in (select hash from code_chunks)",
            params![model],
        )?;
    }
    Ok(())
}

fn put_vector(conn: &Connection, hash: &[u8], model: &str, v: &[f32]) -> rusqlite::Result<()> {
    let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    conn.prepare_cached(
        "insert or replace into code_chunk_vectors (hash, model, vector) values (?1, ?2, ?3)",
    )?
    .execute(params![hash, model, blob])?;
    Ok(())
}

/// Chunks sharing a word with the query, with FTS5's `bm25()` (positive).
fn lexical_matches(
    conn: &Connection,
    query_words: &[String],
) -> rusqlite::Result<Vec<(Candidate, f64)>> {
    if query_words.is_empty() {
        return Ok(Vec::new());
    }
    // Words are letters and digits only, so quoting each makes a plain term.
    let expr: Vec<String> = query_words.iter().map(|w| format!("\"{w}\"")).collect();
    let mut stmt = conn.prepare_cached(
        "select c.id, c.symbol, c.language, c.path, c.seq, -bm25(code_chunk_words)
         from code_chunk_words join code_chunks c on c.id = code_chunk_words.rowid
         where code_chunk_words match ?1",
    )?;
    let rows = stmt.query_map(params![expr.join(" OR ")], |r| {
        Ok((Candidate::from_row(r)?, r.get::<_, f64>(5)?))
    })?;
    rows.collect()
}

/// Lexical ranking without vectors: every match's score from FTS5 alone (no join), then the
/// chunk rows of the best only, a whole group of equal (rounded) scores at a time, until
/// `top_k` pass the language filter; every chunk left out scores below all of them, so the
/// best `top_k` are the same as ranking every match.
fn lexical_ranked(
    conn: &Connection,
    query_words: &[String],
    top_k: usize,
    language: Option<&str>,
) -> rusqlite::Result<Vec<(Scores, Candidate)>> {
    if query_words.is_empty() {
        return Ok(Vec::new());
    }
    let expr: Vec<String> = query_words.iter().map(|w| format!("\"{w}\"")).collect();
    let mut stmt = conn.prepare_cached(
        "select w.rowid, -bm25(code_chunk_words) from code_chunk_words w
         where code_chunk_words match ?1 and exists (select 1 from code_chunks c where c.id = w.rowid)",
    )?;
    let matches = stmt.query_map(params![expr.join(" OR ")], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    })?;
    let matches: Vec<(i64, f64)> = matches.collect::<rusqlite::Result<_>>()?;
    let max = matches.iter().map(|(_, raw)| *raw).fold(0.0f64, f64::max);
    let mut scored: Vec<(Scores, i64)> = matches
        .into_iter()
        .filter_map(|(id, raw)| Some((Scores::blend(raw, max, None)?, id)))
        .collect();
    scored.sort_by(|(a, _), (b, _)| b.score().total_cmp(&a.score()));
    let mut row = conn
        .prepare_cached("select id, symbol, language, path, seq from code_chunks where id = ?1")?;
    let mut out = Vec::new();
    let mut start = 0;
    while start < scored.len() && out.len() < top_k {
        let score = scored[start].0.score();
        let end = scored[start..]
            .iter()
            .position(|(s, _)| s.score() != score)
            .map_or(scored.len(), |n| start + n);
        for (scores, id) in &scored[start..end] {
            let c = row.query_row(params![id], Candidate::from_row).optional()?;
            if let Some(c) =
                c.filter(|c| language.is_none_or(|l| c.language.eq_ignore_ascii_case(l)))
            {
                out.push((*scores, c));
            }
        }
        start = end;
    }
    Ok(out)
}

/// The chunk a hit shows (its text left empty).
fn shown_chunk(conn: &Connection, c: &Candidate) -> rusqlite::Result<Option<CodeChunk>> {
    let row = conn
        .prepare_cached("select kind, line, end_line, text_end from code_chunks where id = ?1")?
        .query_row(params![c.id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .optional()?;
    let Some((kind, line, end_line, text_end)) = row else {
        return Ok(None);
    };
    let (Some(kind), Some(language)) = (static_kind(&kind), Lang::from_name(&c.language)) else {
        tracing::warn!(path = c.path, kind, "undecodable code chunk row");
        return Ok(None);
    };
    let number = |n: i64| usize::try_from(n).unwrap_or(0);
    Ok(Some(CodeChunk {
        symbol: c.symbol.clone(),
        kind,
        language: language.name(),
        file: c.path.clone(),
        line: number(line),
        end_line: number(end_line),
        text_end: number(text_end),
        text: String::new(),
    }))
}

/// The chunk kind a stored name stands for.
fn static_kind(name: &str) -> Option<&'static str> {
    const KINDS: [TypeKind; 7] = [
        TypeKind::Class,
        TypeKind::Struct,
        TypeKind::Enum,
        TypeKind::Union,
        TypeKind::Protocol,
        TypeKind::Extension,
        TypeKind::Members,
    ];
    KINDS
        .iter()
        .map(|k| k.name())
        .chain(["method", "function"])
        .find(|k| *k == name)
}
