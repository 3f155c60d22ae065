//! Full-text search of [`PgKnowledge`], ranked as SQLite's knowledge search: the OR of the
//! query's words (the knowledge tokenizer, CJK split into unigrams and bigrams) over the same
//! index text, ordered by BM25 as FTS5 computes it (k1 1.2, b 0.75, idf floored at 1e-6, N and
//! the average length over the team's entries), ties by age; every filter inside the query;
//! hits scored by `alembic_knowledge::backend::score_hits` (coverage), like SQLite's.

use alembic_knowledge::backend::score_hits;
use alembic_knowledge::text::query_terms;
use alembic_knowledge::{Filter, Hit, KnowledgeError};

use super::PgKnowledge;
use super::rows::{self, entry_columns, filter_clause};
use crate::tx::begin_team;

/// A `to_tsquery` text: the OR of the quoted terms, so user text never becomes query syntax.
fn ts_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

const BM25: &str = concat!(
    "with q as (select distinct lexeme from unnest(to_tsvector('english', $2))),
     corpus as (select count(*)::float8 as total,
                       greatest(coalesce(avg(search_len), 1)::float8, 1.0) as avgdl
                from team_knowledge_entries where team = $1),
     idf as (select q.lexeme, greatest(ln((corpus.total - d.n + 0.5) / (d.n + 0.5)), 1e-6) as idf
             from q cross join corpus
             cross join lateral (select count(*)::float8 as n from team_knowledge_entries t
                                 where t.team = $1
                                   and t.search @@ plainto_tsquery('simple', q.lexeme)) d),
     cand as (select e.seq, e.search, e.search_len from team_knowledge_entries e,
                     to_tsquery('english', $3) tq
              where e.team = $1 and e.search @@ tq and ",
    filter_clause!(),
    "),
     scored as (select c.seq,
                       sum(i.idf * (t.tf * 2.2)
                           / (t.tf + 1.2 * (0.25 + 0.75 * c.search_len / corpus.avgdl))) as score
                from cand c cross join corpus
                cross join lateral (
                    select u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 as tf
                    from unnest(c.search) u) t
                join idf i on i.lexeme = t.lexeme
                group by c.seq)
     select ",
    entry_columns!(),
    " from scored s join team_knowledge_entries e on e.seq = s.seq and e.team = $1
     order by s.score desc, e.seq asc limit $9"
);

pub(super) fn search(
    kb: &PgKnowledge,
    query: &str,
    filter: &Filter,
) -> Result<Vec<Hit>, KnowledgeError> {
    let terms = query_terms(query);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let (text, tsq) = (terms.join(" "), ts_query(&terms));
    let f = rows::FilterArgs::of(filter);
    let entries = kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        // planned with its arguments every time (a generic plan of a CTE like this is slow)
        let query = sqlx::query(BM25)
            .persistent(false)
            .bind(&who.team)
            .bind(&text)
            .bind(&tsq);
        let found = f.bind(query).fetch_all(&mut *tx).await?;
        found.iter().map(rows::decode).collect()
    })?;
    Ok(score_hits(query, entries))
}
