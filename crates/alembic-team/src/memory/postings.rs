//! Lexical ranking of team memories from the packed posting lists (schema step 5): the
//! query's posting lists come from the index in one statement, a few rows of parallel arrays
//! per term, and BM25 is computed here, as SQLite's FTS5 computes it, so scores match the
//! local store's.
//!
//! Why in the client: aggregating 20,000 postings per query in SQL cost PostgreSQL ~40 ms
//! of executor time on a loaded machine. Why packed: with one index row per posting
//! (step 3), reading the ~21,000 postings of two common words was the floor of a retrieval
//! (team-mix at load 7 on 2 cores: p50 29 ms of 42; the first page of rows 10 ms; the sum
//! here 2 ms); as blocks of up to 4,096 seqs they are some fifty rows. Computing each
//! posting's part in SQL instead (two arrays) was slower still: PostgreSQL's expression
//! evaluation costs more than the two arrays it saves. Exact top-k pruning (MaxScore) does
//! not help the common shape of two topic words and a rare one: the pool's threshold (two
//! topic hits, ~4.2) is below one topic's bound (idf·(k1+1), ~4.7), so every list must be
//! read anyway.

use sqlx::{PgConnection, Row};

use super::rows::ts_config;
use crate::error::TeamError;

/// FTS5's BM25 constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Which occurrences of a term count, and how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Weights {
    /// Content 1.0 and context `f64` (retrieval: FTS5's column weights).
    ContentAndContext(f64),
    /// Content only: a row matches when the term is in its content (consolidation's pool,
    /// SQLite's `search_text : (…)` column filter).
    ContentOnly,
}

/// One query term's postings (parallel arrays, one entry per memory holding the term).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PostingList {
    pub seqs: Vec<i64>,
    pub tf_a: Vec<i32>,
    pub tf_d: Vec<i32>,
    pub lens: Vec<i32>,
}

/// The posting lists of a query's terms and the team's corpus figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Postings {
    pub lists: Vec<PostingList>,
    /// Rows of the team (every state: FTS5 counts every indexed row).
    pub rows: i64,
    /// Their total length in tokens.
    pub total_len: i64,
}

/// The query's lexemes (after the same stemming as the stored text), each with the blocks
/// of its packed posting list (schema step 5) in block order, and the team's row count and
/// total length; a lexeme no memory holds gives one empty block. `offset 0` keeps the
/// lateral lookup a per-lexeme index probe: flattened into a join, a table without
/// statistics (just migrated) was planned as a scan of all the team's blocks (~1 s).
const FETCH: &str = concat!(
    "select q.i, coalesce(l.postings, ''::bytea),
            coalesce((select rows from team_memory_stats where team = $1), 0),
            coalesce((select total_len from team_memory_stats where team = $1), 0)
     from unnest(tsvector_to_array(to_tsvector(",
    ts_config!(),
    ", $2))) with ordinality q(lexeme, i)
     left join lateral (select block, postings from team_memory_lists
                        where team = $1 and lexeme = q.lexeme offset 0) l on true
     order by q.i, l.block"
);

/// Bytes of one stored posting: seq (8), tf_a, tf_d, len (4 each), big-endian.
const POSTING: usize = 20;

impl PostingList {
    /// Appends the postings of one stored block (schema step 5's layout, [`POSTING`] bytes
    /// each); a block whose length is not a whole number of postings is a decode error.
    fn extend_packed(&mut self, block: &[u8]) -> Result<(), sqlx::Error> {
        if !block.len().is_multiple_of(POSTING) {
            return Err(sqlx::Error::Decode(
                format!(
                    "a packed posting block of {} bytes, not a multiple of {POSTING}",
                    block.len()
                )
                .into(),
            ));
        }
        let n = block.len() / POSTING;
        self.seqs.reserve(n);
        self.tf_a.reserve(n);
        self.tf_d.reserve(n);
        self.lens.reserve(n);
        for p in block.chunks_exact(POSTING) {
            let (seq, rest) = p.split_at(8);
            let int = |at: usize| {
                i32::from_be_bytes([rest[at], rest[at + 1], rest[at + 2], rest[at + 3]])
            };
            self.seqs.push(i64::from_be_bytes([
                seq[0], seq[1], seq[2], seq[3], seq[4], seq[5], seq[6], seq[7],
            ]));
            self.tf_a.push(int(0));
            self.tf_d.push(int(4));
            self.lens.push(int(8));
        }
        Ok(())
    }
}

impl Postings {
    /// Reads the postings of the terms of `text` (space-separated query terms).
    pub(crate) async fn fetch(
        conn: &mut PgConnection,
        team: &str,
        text: &str,
    ) -> Result<Postings, TeamError> {
        let rows = sqlx::query(FETCH)
            .bind(team)
            .bind(text)
            .fetch_all(conn)
            .await?;
        let mut postings = Postings::default();
        let mut term = None;
        for r in &rows {
            postings.rows = r.try_get(2)?;
            postings.total_len = r.try_get(3)?;
            let i: i64 = r.try_get(0)?;
            if term != Some(i) {
                term = Some(i);
                postings.lists.push(PostingList::default());
            }
            if let Some(list) = postings.lists.last_mut() {
                list.extend_packed(r.try_get(1)?)?;
            }
        }
        Ok(postings)
    }

    /// (seq, BM25) of every matching memory, in no particular order ([`pages`] ranks them).
    /// FTS5's formula: for each term, idf·tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl)),
    /// idf = ln((N − n + 0.5) / (n + 0.5)) floored at 1e-6, avgdl at least 1.
    ///
    /// The terms' contributions are summed per memory after one stable sort by seq: each
    /// list's blocks come in seq order and a block is mostly sorted (an edit appends its seq
    /// again), so the sort merges a few sorted runs, cheaper than hashing some 20,000
    /// postings of two common terms. Each memory's terms are added
    /// in query order, as before, so scores do not change in the last bit.
    pub(crate) fn bm25(&self, weights: Weights) -> Vec<(i64, f64)> {
        let n_rows = self.rows as f64;
        let avgdl = (self.total_len as f64 / self.rows.max(1) as f64).max(1.0);
        let mut parts: Vec<(i64, f64)> =
            Vec::with_capacity(self.lists.iter().map(|l| l.seqs.len()).sum());
        for list in &self.lists {
            let counted = |i: usize| match weights {
                Weights::ContentAndContext(ctx) => {
                    f64::from(list.tf_a[i]) + ctx * f64::from(list.tf_d[i])
                }
                Weights::ContentOnly => f64::from(list.tf_a[i]),
            };
            let hits: Vec<usize> = (0..list.seqs.len())
                .filter(|&i| weights != Weights::ContentOnly || list.tf_a[i] > 0)
                .collect();
            let n = hits.len() as f64;
            let idf = ((n_rows - n + 0.5) / (n + 0.5)).ln().max(1e-6);
            for i in hits {
                let tf = counted(i);
                let norm = K1 * (1.0 - B + B * f64::from(list.lens[i]) / avgdl);
                parts.push((list.seqs[i], idf * tf * (K1 + 1.0) / (tf + norm)));
            }
        }
        // stable: a memory's parts stay in query-term order
        parts.sort_by_key(|p| p.0);
        let mut scores: Vec<(i64, f64)> = Vec::with_capacity(parts.len());
        for (seq, part) in parts {
            match scores.last_mut() {
                Some(last) if last.0 == seq => last.1 += part,
                _ => scores.push((seq, part)),
            }
        }
        scores
    }
}

/// Best first, ties by seq (a total order, so every page is the same whatever the input
/// order).
fn by_rank(a: &(i64, f64), b: &(i64, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// `scored` (seq, score) in rank order, a page at a time, the first `first` long and each
/// next one twice the last: callers keep the rows a page's filter lets through and stop once
/// they have enough, so only the best matches are read (a filter that drops many rows costs
/// a few more, growing, pages) and only the pages read are sorted (the rest is partitioned).
pub(crate) fn pages(
    scored: Vec<(i64, f64)>,
    first: usize,
) -> impl Iterator<Item = Vec<(i64, f64)>> {
    let mut page = first.max(1);
    let mut rest = scored;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() > page {
            rest.select_nth_unstable_by(page - 1, by_rank);
        }
        let tail = rest.split_off(page.min(rest.len()));
        let mut head = std::mem::replace(&mut rest, tail);
        head.sort_unstable_by(by_rank);
        page = page.saturating_mul(2);
        Some(head)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn list(entries: &[(i64, i32, i32, i32)]) -> PostingList {
        PostingList {
            seqs: entries.iter().map(|e| e.0).collect(),
            tf_a: entries.iter().map(|e| e.1).collect(),
            tf_d: entries.iter().map(|e| e.2).collect(),
            lens: entries.iter().map(|e| e.3).collect(),
        }
    }

    #[test]
    fn packed_blocks_read_as_stored_and_a_partial_posting_is_refused() {
        // team_memory_posting(4097, 2, 0, 12) || team_memory_posting(5000, 0, 1, 7)
        let mut block = Vec::new();
        for (seq, a, d, n) in [(4097_i64, 2_i32, 0_i32, 12_i32), (5000, 0, 1, 7)] {
            block.extend(seq.to_be_bytes());
            for v in [a, d, n] {
                block.extend(v.to_be_bytes());
            }
        }
        let mut list = list(&[(1, 1, 1, 1)]);
        list.extend_packed(&block).unwrap();
        list.extend_packed(&[]).unwrap();
        assert_eq!(
            list,
            super::tests::list(&[(1, 1, 1, 1), (4097, 2, 0, 12), (5000, 0, 1, 7)])
        );
        assert!(list.extend_packed(&block[..30]).is_err());
        assert_eq!(list.seqs.len(), 3, "nothing appended from a bad block");
    }

    #[test]
    fn bm25_is_fts5s_formula() {
        // 10 rows of total length 40 (avgdl 4); "rare" in row 1's content; "common" in row
        // 1's context (twice, weight 0.5) and in the content of rows 2 (long) and 3 (short)
        let postings = Postings {
            lists: vec![
                list(&[(1, 1, 0, 4)]),
                list(&[(1, 0, 2, 4), (2, 2, 0, 8), (3, 1, 0, 2)]),
            ],
            rows: 10,
            total_len: 40,
        };
        let term = |n: f64, tf: f64, len: f64| {
            let idf = ((10.0 - n + 0.5) / (n + 0.5)).ln().max(1e-6);
            idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / 4.0))
        };
        let check = |got: Vec<(i64, f64)>, want: Vec<(i64, f64)>| {
            let got: Vec<(i64, f64)> = pages(got, usize::MAX).flatten().collect();
            assert_eq!(
                got.iter().map(|r| r.0).collect::<Vec<_>>(),
                want.iter().map(|r| r.0).collect::<Vec<_>>()
            );
            for (g, w) in got.iter().zip(&want) {
                assert!((g.1 - w.1).abs() < 1e-12, "{g:?} vs {w:?}");
            }
        };
        check(
            postings.bm25(Weights::ContentAndContext(0.5)),
            vec![
                (1, term(1.0, 1.0, 4.0) + term(3.0, 1.0, 4.0)),
                (3, term(3.0, 1.0, 2.0)),
                (2, term(3.0, 2.0, 8.0)),
            ],
        );
        // content only: row 1 matches on "rare" alone, and "common" is in two documents
        check(
            postings.bm25(Weights::ContentOnly),
            vec![
                (1, term(1.0, 1.0, 4.0)),
                (3, term(2.0, 1.0, 2.0)),
                (2, term(2.0, 2.0, 8.0)),
            ],
        );
    }

    #[test]
    fn pages_walk_the_ranking_in_order() {
        let scored = vec![(9, 1.0), (4, 2.0), (7, 3.0), (2, 2.0), (5, 0.5), (8, 0.1)];
        let pages: Vec<Vec<i64>> = pages(scored, 1)
            .map(|p| p.into_iter().map(|r| r.0).collect())
            .collect();
        // ties (4 and 2 at 2.0) by seq; pages of 1, 2, 4
        assert_eq!(pages, vec![vec![7], vec![2, 4], vec![9, 5, 8]]);
    }
}
