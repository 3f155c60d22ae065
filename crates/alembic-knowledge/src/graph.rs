//! Typed edges between knowledge entries, and the counts behind `get_project_stats`.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::error::KnowledgeError;
use crate::model::{Edge, RELATIONS, Status};
use crate::store::{KnowledgeStore, status_in};

/// An edge together with the title and status of the entry at its other end.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Neighbour {
    #[serde(flatten)]
    pub edge: Edge,
    pub other_id: String,
    pub other_title: String,
    pub other_status: Status,
}

/// Edges around one entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Neighbours {
    pub outgoing: Vec<Neighbour>,
    pub incoming: Vec<Neighbour>,
}

/// Counts over the whole knowledge base.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub total: u64,
    pub candidates: u64,
    pub recipes: u64,
    pub by_status: BTreeMap<String, u64>,
    pub by_kind: BTreeMap<String, u64>,
    pub by_language: BTreeMap<String, u64>,
    pub edges: u64,
    pub edges_by_relation: BTreeMap<String, u64>,
    pub open_proposals: u64,
    pub guard_runs: u64,
}

/// Relations along which a change to an entry reaches the entries that point at it
/// (`B -requires-> A`: changing A affects B).
pub const IMPACT_RELATIONS: &[&str] = &[
    "requires",
    "extends",
    "enforces",
    "depends_on",
    "inherits",
    "implements",
    "calls",
    "prerequisite",
];

/// Most entries one impact analysis reports.
pub const MAX_IMPACTED: usize = 200;

/// An entry a change reaches, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impacted {
    pub id: String,
    pub title: String,
    pub status: Status,
    /// Edges between the analysed entry and this one.
    pub depth: usize,
    /// The relation of this entry's own edge (toward the entry before it on the path).
    pub relation: String,
    /// Entry ids from the analysed entry to this one.
    pub path: Vec<String>,
    /// The relation of each edge along `path`.
    pub relations: Vec<String>,
}

/// What an impact analysis found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    pub impacted: Vec<Impacted>,
    /// More entries were reached than [`MAX_IMPACTED`].
    pub truncated: bool,
}

/// Checks `relation` against the vocabulary.
pub fn check_relation(relation: &str) -> Result<String, KnowledgeError> {
    let r = relation.trim().to_ascii_lowercase().replace('-', "_");
    if RELATIONS.contains(&r.as_str()) {
        Ok(r)
    } else {
        Err(KnowledgeError::UnknownValue {
            field: "relation",
            value: relation.to_string(),
            accepted: "requires, extends, enforces, depends_on, inherits, implements, calls, \
                       prerequisite, data_flow, conflicts, related, alternative, deprecated_by, \
                       solves, references",
        })
    }
}

impl KnowledgeStore {
    /// Adds (or re-weights) the edge `from -relation-> to`. Both entries must exist and differ.
    /// Returns the edge and whether it was new.
    pub(crate) fn put_edge(
        &mut self,
        from: &str,
        to: &str,
        relation: &str,
        weight: f64,
        by: &str,
    ) -> Result<(Edge, bool), KnowledgeError> {
        let relation = check_relation(relation)?;
        if from == to {
            return Err(KnowledgeError::SelfEdge {
                id: from.to_string(),
            });
        }
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        status_in(&tx, from)?;
        status_in(&tx, to)?;
        let existed = tx
            .query_row(
                "select 1 from knowledge_edges where from_id = ?1 and to_id = ?2 and relation = ?3",
                params![from, to, relation],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        tx.execute(
            "insert into knowledge_edges (from_id, to_id, relation, weight, created_by, created_at) \
             values (?1, ?2, ?3, ?4, ?5, ?6) on conflict (from_id, to_id, relation) \
             do update set weight = excluded.weight",
            params![from, to, relation, weight, by, now],
        )?;
        tx.commit()?;
        let edge = Edge {
            from_id: from.to_string(),
            to_id: to.to_string(),
            relation,
            weight,
            created_by: by.to_string(),
            created_at: now,
        };
        Ok((edge, !existed))
    }

    /// Edges leaving and entering `id`, optionally of one relation.
    pub(crate) fn edges_around(
        &self,
        id: &str,
        relation: Option<&str>,
    ) -> Result<Neighbours, KnowledgeError> {
        status_in(&self.conn, id)?;
        let relation = relation.map(check_relation).transpose()?;
        Ok(Neighbours {
            outgoing: self.edges_where("from_id", "to_id", id, relation.as_deref())?,
            incoming: self.edges_where("to_id", "from_id", id, relation.as_deref())?,
        })
    }

    fn edges_where(
        &self,
        this: &str,
        other: &str,
        id: &str,
        relation: Option<&str>,
    ) -> Result<Vec<Neighbour>, KnowledgeError> {
        let sql = format!(
            "select g.from_id, g.to_id, g.relation, g.weight, g.created_by, g.created_at, \
             e.id, e.title, e.status from knowledge_edges g join knowledge_entries e \
             on e.id = g.{other} where g.{this} = ?1 and (?2 is null or g.relation = ?2) \
             order by g.relation, e.title"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params![id, relation], |r| {
            Ok((
                Edge {
                    from_id: r.get(0)?,
                    to_id: r.get(1)?,
                    relation: r.get(2)?,
                    weight: r.get(3)?,
                    created_by: r.get(4)?,
                    created_at: r.get(5)?,
                },
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, String>(8)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (edge, other_id, other_title, status) = row?;
            out.push(Neighbour {
                edge,
                other_id,
                other_title,
                other_status: crate::store::parse_status(&status)?,
            });
        }
        Ok(out)
    }

    /// Counts by status, kind, language and relation.
    pub(crate) fn counts_all(&self) -> Result<Stats, KnowledgeError> {
        let mut stats = Stats {
            by_status: self.counts("select status, count(*) from knowledge_entries group by 1")?,
            by_kind: self.counts("select kind, count(*) from knowledge_entries group by 1")?,
            by_language: self.counts(
                "select case when language = '' then '(none)' else language end, count(*) \
                 from knowledge_entries group by 1",
            )?,
            edges_by_relation: self
                .counts("select relation, count(*) from knowledge_edges group by 1")?,
            ..Stats::default()
        };
        for (status, n) in &stats.by_status {
            stats.total += n;
            match crate::store::parse_status(status)? {
                s if s.is_candidate() => stats.candidates += n,
                Status::Published => stats.recipes += n,
                _ => {}
            }
        }
        stats.edges = stats.edges_by_relation.values().sum();
        stats.open_proposals =
            self.count("select count(*) from evolution_proposals where status = 'open'")?;
        stats.guard_runs = self.count("select count(*) from guard_runs")?;
        Ok(stats)
    }

    fn counts(&self, sql: &str) -> Result<BTreeMap<String, u64>, KnowledgeError> {
        let mut stmt = self.conn.prepare(sql)?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (k, n) = row?;
            out.insert(k, n.max(0) as u64);
        }
        Ok(out)
    }

    pub(crate) fn count(&self, sql: &str) -> Result<u64, KnowledgeError> {
        let n: i64 = self.conn.query_row(sql, [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }
}
