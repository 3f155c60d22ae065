//! Evolution proposals: how published recipes change after review (agents propose; a
//! confirmed deprecation or a skip closes the proposals).

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::{check_proposal_target, check_proposal_type, new_proposal_id};
use crate::error::KnowledgeError;
use crate::model::Status;
use crate::store::{KnowledgeStore, status_in, transition_in};

/// Proposal types an agent may file.
pub const PROPOSAL_TYPES: &[&str] = &["enhance", "correction", "deprecate", "merge", "supersede"];

/// A stored proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    pub id: String,
    pub entry_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub description: String,
    pub evidence: Value,
    pub confidence: f64,
    pub status: String,
    pub proposed_by: String,
    pub proposed_at: i64,
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<String>,
    pub resolution: Option<String>,
}

impl KnowledgeStore {
    /// Files a proposal against a published recipe. One open proposal per recipe and type.
    pub(crate) fn file_proposal(
        &mut self,
        entry_id: &str,
        kind: &str,
        description: &str,
        evidence: &Value,
        confidence: f64,
        by: &str,
    ) -> Result<Proposal, KnowledgeError> {
        check_proposal_type(kind)?;
        let now = self.now();
        let id = new_proposal_id();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        check_proposal_target(entry_id, status_in(&tx, entry_id)?)?;
        let open: Option<String> = tx
            .query_row(
                "select id from evolution_proposals where entry_id = ?1 and type = ?2 \
                 and status = 'open'",
                params![entry_id, kind],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(proposal_id) = open {
            return Err(KnowledgeError::DuplicateProposal {
                entry_id: entry_id.to_string(),
                kind: kind.to_string(),
                proposal_id,
            });
        }
        tx.execute(
            "insert into evolution_proposals (id, entry_id, type, description, evidence, \
             confidence, status, proposed_by, proposed_at) values (?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7, ?8)",
            params![
                id,
                entry_id,
                kind,
                description,
                evidence.to_string(),
                confidence.clamp(0.0, 1.0),
                by,
                now
            ],
        )?;
        tx.commit()?;
        self.proposal(&id)
    }

    fn proposal(&self, id: &str) -> Result<Proposal, KnowledgeError> {
        self.proposals_where("id = ?1", id)?
            .pop()
            .ok_or_else(|| KnowledgeError::NotFound { id: id.to_string() })
    }

    /// Proposals of one entry, oldest first.
    pub(crate) fn proposals_of(&self, entry_id: &str) -> Result<Vec<Proposal>, KnowledgeError> {
        self.proposals_where("entry_id = ?1", entry_id)
    }

    fn proposals_where(&self, clause: &str, arg: &str) -> Result<Vec<Proposal>, KnowledgeError> {
        let mut stmt = self.conn.prepare(&format!(
            "select id, entry_id, type, description, evidence, confidence, status, proposed_by, \
             proposed_at, resolved_at, resolved_by, resolution from evolution_proposals \
             where {clause} order by seq"
        ))?;
        let rows = stmt.query_map([arg], |r| {
            let evidence: String = r.get(4)?;
            Ok(Proposal {
                id: r.get(0)?,
                entry_id: r.get(1)?,
                kind: r.get(2)?,
                description: r.get(3)?,
                evidence: serde_json::from_str(&evidence).unwrap_or(Value::Null),
                confidence: r.get(5)?,
                status: r.get(6)?,
                proposed_by: r.get(7)?,
                proposed_at: r.get(8)?,
                resolved_at: r.get(9)?,
                resolved_by: r.get(10)?,
                resolution: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Deprecates a published recipe and closes its open proposals as executed, atomically.
    /// Returns how many proposals were closed.
    pub(crate) fn deprecate_closing(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        self.close_proposals(entry_id, "executed", reason, by, |tx, now| {
            transition_in(tx, entry_id, Status::Deprecated, by, Some(reason), now)
        })
    }

    /// Records that a recipe was looked at and left as it is: its open proposals are closed
    /// as skipped with the reason. Returns how many were closed.
    pub(crate) fn skip_closing(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        self.close_proposals(entry_id, "skipped", reason, by, |tx, _| {
            status_in(tx, entry_id).map(|_| ())
        })
    }

    /// In one immediate transaction: `first` (which may refuse), then the open proposals of
    /// `entry_id` closed as `outcome`. Returns how many were closed.
    fn close_proposals(
        &mut self,
        entry_id: &str,
        outcome: &str,
        reason: &str,
        by: &str,
        first: impl FnOnce(&rusqlite::Connection, i64) -> Result<(), KnowledgeError>,
    ) -> Result<usize, KnowledgeError> {
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        first(&tx, now)?;
        let closed = close_open(&tx, entry_id, outcome, reason, by, now)?;
        tx.commit()?;
        Ok(closed)
    }
}

fn close_open(
    conn: &rusqlite::Connection,
    entry_id: &str,
    status: &str,
    reason: &str,
    by: &str,
    now: i64,
) -> Result<usize, KnowledgeError> {
    Ok(conn.execute(
        "update evolution_proposals set status = ?2, resolved_at = ?3, resolved_by = ?4, \
         resolution = ?5 where entry_id = ?1 and status = 'open'",
        params![entry_id, status, now, by, reason],
    )?)
}
