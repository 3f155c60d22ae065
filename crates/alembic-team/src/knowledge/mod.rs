//! [`PgKnowledge`]: the knowledge base of one team on a PostgreSQL server, behind the same
//! [`KnowledgeBackend`] trait as the SQLite store.
//!
//! Rules are the knowledge crate's: lifecycle moves ([`check_transition`]), editability
//! ([`check_editable`]), versions ([`check_version`]), proposal vocabulary, relation
//! vocabulary, the index text and the hit score. This module only stores. Invariants:
//! - every transaction is opened with [`crate::tx::begin_team`] and every statement filters
//!   by the client's team, so a team never reads or writes another team's rows;
//! - every write is one transaction; a write that checks across entries (titles) holds the
//!   team's knowledge lock, and a write to one entry locks its row first, so two reviewers
//!   moving the same candidate at once serialise: with the version each read, one wins and
//!   the other gets [`KnowledgeError::Conflict`] naming the entry, never a lost update;
//! - every write records its author (the client's `[team] author`) and bumps the row's
//!   version.

mod exchange;
mod graph;
mod rows;
mod search;

use std::future::Future;
use std::sync::Arc;

use alembic_knowledge::backend::{
    RESUBMIT_REASON, check_editable, check_transition, check_version, new_entry_id, resubmit_moves,
};
use alembic_knowledge::evolution::Proposal;
use alembic_knowledge::graph::{Neighbours, Stats};
use alembic_knowledge::guard::{GuardRun, GuardStats, Violation};
use alembic_knowledge::tools::KnowledgeOpener;
use alembic_knowledge::{
    Edge, Entry, Filter, Hit, ImportReport, Kind, KnowledgeBackend, KnowledgeError,
    KnowledgeExport, Moved, NewEntry, Status, Transition, Usage,
};
use alembic_memory::Clock;
use serde_json::Value;
use sqlx::{PgPool, Row};

use crate::client::PgClient;
use crate::config::TeamConfig;
use crate::error::TeamError;
use crate::memory::check_team_name;
use crate::schema::{KNOWLEDGE_COMPONENT, KNOWLEDGE_MIGRATIONS, migrate};
use crate::tx::begin_team;
use rows::{Stamp, entry_columns, filter_clause};

/// The team and author every statement of one client carries.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    pub team: String,
    pub author: String,
}

impl Who {
    fn stamp(&self, now: i64) -> Stamp<'_> {
        Stamp {
            team: &self.team,
            author: &self.author,
            now,
        }
    }
}

/// A team's knowledge base on a PostgreSQL server (see the module docs).
pub struct PgKnowledge {
    client: Arc<PgClient>,
    who: Who,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for PgKnowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgKnowledge")
            .field("server", &self.client.server())
            .field("team", &self.who.team)
            .finish_non_exhaustive()
    }
}

/// What a [`alembic_knowledge::KnowledgeService`] calls to open the team's knowledge base on
/// first use ([`alembic_knowledge::KnowledgeService::with_team`]); the label names the team.
pub fn knowledge_opener(team: TeamConfig, clock: Arc<dyn Clock>) -> (String, KnowledgeOpener) {
    let label = format!("team {}", team.team);
    let open: KnowledgeOpener = Box::new(move || {
        PgKnowledge::open(&team, Arc::clone(&clock))
            .map(|k| Box::new(k) as Box<dyn KnowledgeBackend>)
            .map_err(|e| e.to_string())
    });
    (label, open)
}

impl PgKnowledge {
    /// Connects to the team server (bounded by the connect timeout) and brings the team
    /// knowledge schema up to date; a server schema newer than this build is refused.
    pub fn open(team: &TeamConfig, clock: Arc<dyn Clock>) -> Result<PgKnowledge, TeamError> {
        check_team_name(&team.team)?;
        let client = Arc::new(PgClient::connect(team)?);
        let server = client.server().to_string();
        client.run(move |pool| async move {
            migrate(&pool, &server, KNOWLEDGE_COMPONENT, KNOWLEDGE_MIGRATIONS).await
        })?;
        Ok(PgKnowledge {
            client,
            who: Who {
                team: team.team.clone(),
                author: team.author.clone(),
            },
            clock,
        })
    }

    pub fn team(&self) -> &str {
        &self.who.team
    }

    pub fn server(&self) -> &str {
        self.client.server()
    }

    /// Runs `f` with this client's team and author on the pool.
    fn run<T, F, Fut>(&self, f: F) -> Result<T, KnowledgeError>
    where
        T: Send + 'static,
        F: FnOnce(Who, PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, TeamError>> + Send + 'static,
    {
        self.client.run_as(&self.who, f)
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// The stored entry `create` writes for `new`.
fn new_row(new: &NewEntry, status: Status, by: &str, quality: Option<f64>, now: i64) -> Entry {
    Entry {
        id: new_entry_id(),
        title: new.title.trim().to_string(),
        description: new.description.clone(),
        kind: new
            .kind
            .unwrap_or_else(|| Kind::from_knowledge_type(&new.knowledge_type)),
        knowledge_type: new.knowledge_type.clone(),
        category: new.category.clone(),
        language: new.language.clone(),
        trigger: new.trigger.clone(),
        content: new.content.clone(),
        pattern: new.pattern.clone(),
        rationale: new.rationale.clone(),
        tags: new.tags.clone(),
        sources: new.sources.clone(),
        extra: new.extra.clone(),
        quality,
        status,
        created_by: by.to_string(),
        created_at: now,
        updated_at: now,
        views: 0,
        adoptions: 0,
        applications: 0,
        version: 1,
    }
}

impl KnowledgeBackend for PgKnowledge {
    fn describe(&self) -> String {
        format!("team {} on {}", self.who.team, self.client.server())
    }

    fn create(
        &mut self,
        new: &NewEntry,
        status: Status,
        by: &str,
        quality: Option<f64>,
    ) -> Result<Entry, KnowledgeError> {
        let entry = new_row(new, status, by, quality, self.now());
        let by = by.to_string();
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            rows::check_title(&mut tx, &who.team, &entry.title, None).await?;
            let s = who.stamp(entry.created_at);
            rows::insert(&mut tx, &s, &entry).await?;
            rows::insert_history(&mut tx, &s, &entry.id, None, status, s.now, &by, None).await?;
            tx.commit().await?;
            Ok(entry)
        })
    }

    fn get(&self, id: &str) -> Result<Entry, KnowledgeError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::get(&mut tx, &who.team, &id).await
        })
    }

    fn live_title(&self, title: &str) -> Result<Option<(String, Status)>, KnowledgeError> {
        let norm = alembic_knowledge::model::normalise_title(title);
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::live_title(&mut tx, &who.team, &norm, None).await
        })
    }

    fn history(&self, id: &str) -> Result<Vec<Transition>, KnowledgeError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::get(&mut tx, &who.team, &id).await?;
            let found = sqlx::query(
                "select from_status, to_status, at, by, reason from team_knowledge_history
                 where team = $1 and entry_id = $2 order by seq",
            )
            .bind(&who.team)
            .bind(&id)
            .fetch_all(&mut *tx)
            .await?;
            found.iter().map(|r| exchange::transition(&id, r)).collect()
        })
    }

    fn transition(
        &mut self,
        id: &str,
        to: Status,
        by: &str,
        reason: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let (id, by, reason) = (id.to_string(), by.to_string(), reason.map(str::to_string));
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            let e = rows::get_for_update(&mut tx, &who.team, &id).await?;
            check_version(&id, expected, e.version)?;
            let reason = check_transition(&id, e.status, to, reason.as_deref())?;
            rows::move_to(&mut tx, &who.stamp(now), &id, e.status, to, &by, reason).await?;
            let after = rows::get(&mut tx, &who.team, &id).await?;
            tx.commit().await?;
            Ok(after)
        })
    }

    fn update(
        &mut self,
        id: &str,
        new: &NewEntry,
        quality: Option<f64>,
        resubmit_by: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let (id, new) = (id.to_string(), new.clone());
        let resubmit_by = resubmit_by.map(str::to_string);
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            let e = rows::get_for_update(&mut tx, &who.team, &id).await?;
            check_version(&id, expected, e.version)?;
            check_editable(&id, e.status)?;
            rows::check_title(&mut tx, &who.team, &new.title, Some(&id)).await?;
            let s = who.stamp(now);
            rows::write_content(&mut tx, &s, &id, &new, quality).await?;
            if let Some(by) = &resubmit_by {
                let mut from = e.status;
                for to in resubmit_moves(e.status) {
                    check_transition(&id, from, *to, Some(RESUBMIT_REASON))?;
                    rows::move_to(&mut tx, &s, &id, from, *to, by, Some(RESUBMIT_REASON)).await?;
                    from = *to;
                }
            }
            let after = rows::get(&mut tx, &who.team, &id).await?;
            tx.commit().await?;
            Ok(after)
        })
    }

    fn list(&self, filter: &Filter) -> Result<Vec<Entry>, KnowledgeError> {
        let f = rows::FilterArgs::of(filter);
        self.run(move |who, pool| async move {
            let sql = concat!(
                "select ",
                entry_columns!(),
                " from team_knowledge_entries e where e.team = $1 and $2::text is null
                   and $3::text is null and ",
                filter_clause!(),
                " order by e.updated_at desc, e.seq desc limit $9"
            );
            let mut tx = begin_team(&pool, &who.team).await?;
            let query = sqlx::query(sql)
                .bind(&who.team)
                .bind(None::<String>)
                .bind(None::<String>);
            let found = f.bind(query).fetch_all(&mut *tx).await?;
            found.iter().map(rows::decode).collect()
        })
    }

    fn search(&self, query: &str, filter: &Filter) -> Result<Vec<Hit>, KnowledgeError> {
        search::search(self, query, filter)
    }

    fn live_entries(&self) -> Result<Vec<Entry>, KnowledgeError> {
        self.run(move |who, pool| async move {
            let sql = concat!(
                "select ",
                entry_columns!(),
                " from team_knowledge_entries where team = $1 and status <> 'deprecated'
                  order by seq"
            );
            let mut tx = begin_team(&pool, &who.team).await?;
            let found = sqlx::query(sql).bind(&who.team).fetch_all(&mut *tx).await?;
            found.iter().map(rows::decode).collect()
        })
    }

    fn record_usage(&mut self, id: &str, usage: Usage) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let id = id.to_string();
        let (views, adoptions, applications) = match usage {
            Usage::View => (1i64, 0i64, 0i64),
            Usage::Adoption => (0, 1, 0),
            Usage::Application => (0, 0, 1),
        };
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            let changed = sqlx::query(
                "update team_knowledge_entries set views = views + $3, adoptions = adoptions + $4,
                     applications = applications + $5, last_used_at = $6, author = $7
                 where team = $1 and id = $2",
            )
            .bind(&who.team)
            .bind(&id)
            .bind(views)
            .bind(adoptions)
            .bind(applications)
            .bind(now)
            .bind(&who.author)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if changed == 0 {
                return Err(rows::not_found(&id));
            }
            let after = rows::get(&mut tx, &who.team, &id).await?;
            tx.commit().await?;
            Ok(after)
        })
    }

    fn set_quality(&mut self, id: &str, quality: f64) -> Result<(), KnowledgeError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            let changed = sqlx::query(
                "update team_knowledge_entries set quality = $3, author = $4
                 where team = $1 and id = $2",
            )
            .bind(&who.team)
            .bind(&id)
            .bind(quality)
            .bind(&who.author)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if changed == 0 {
                return Err(rows::not_found(&id));
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn add_edge(
        &mut self,
        from: &str,
        to: &str,
        relation: &str,
        weight: f64,
        by: &str,
    ) -> Result<(Edge, bool), KnowledgeError> {
        graph::add_edge(self, from, to, relation, weight, by)
    }

    fn neighbours(&self, id: &str, relation: Option<&str>) -> Result<Neighbours, KnowledgeError> {
        graph::neighbours(self, id, relation)
    }

    fn stats(&self) -> Result<Stats, KnowledgeError> {
        graph::stats(self)
    }

    fn propose(
        &mut self,
        entry_id: &str,
        kind: &str,
        description: &str,
        evidence: &Value,
        confidence: f64,
        by: &str,
    ) -> Result<Proposal, KnowledgeError> {
        graph::propose(self, entry_id, kind, description, evidence, confidence, by)
    }

    fn proposals_for(&self, entry_id: &str) -> Result<Vec<Proposal>, KnowledgeError> {
        graph::proposals_for(self, entry_id)
    }

    fn confirm_deprecation(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        graph::close_proposals(self, entry_id, reason, by, true)
    }

    fn skip_evolution(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        graph::close_proposals(self, entry_id, reason, by, false)
    }

    fn record_guard_run(
        &mut self,
        target: &str,
        language: &str,
        violations: &[Violation],
        by: &str,
    ) -> Result<i64, KnowledgeError> {
        let run = GuardRun {
            run: 0,
            target: target.to_string(),
            language: language.to_string(),
            violation_count: violations.len() as u64,
            checked_at: self.now(),
            checked_by: by.to_string(),
            violations: violations.to_vec(),
        };
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            let seq = exchange::insert_guard_run(&mut tx, &who, &run).await?;
            tx.commit().await?;
            Ok(seq)
        })
    }

    fn guard_runs(
        &self,
        target: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GuardRun>, KnowledgeError> {
        let target = target.map(str::to_string);
        let limit = limit.min(i64::MAX as usize) as i64;
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            exchange::guard_runs(&mut tx, &who.team, target.as_deref(), limit, true).await
        })
    }

    fn guard_stats(&self) -> Result<GuardStats, KnowledgeError> {
        graph::guard_stats(self)
    }

    fn guard_overrides(&self) -> Result<Option<String>, KnowledgeError> {
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            let row = sqlx::query("select rules from team_guard_overrides where team = $1")
                .bind(&who.team)
                .fetch_optional(&mut *tx)
                .await?;
            Ok(row.map(|r| r.try_get::<String, _>(0)).transpose()?)
        })
    }

    fn set_guard_overrides(&mut self, text: Option<&str>, by: &str) -> Result<(), KnowledgeError> {
        if let Some(text) = text {
            alembic_knowledge::GuardRules::load_layers(Some(text), None)?;
        }
        let now = self.now();
        let (text, by) = (text.map(str::to_string), by.to_string());
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            exchange::put_guard_overrides(&mut tx, &who, text.as_deref(), &by, now, true).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn reindex(&mut self, dry_run: bool) -> Result<alembic_store::ReindexReport, KnowledgeError> {
        exchange::reindex(self, dry_run)
    }

    fn export(&self) -> Result<KnowledgeExport, KnowledgeError> {
        exchange::export(self)
    }

    fn import(&mut self, data: &KnowledgeExport) -> Result<ImportReport, KnowledgeError> {
        exchange::import(self, data)
    }

    fn remove_moved(&mut self, moved: &Moved) -> Result<usize, KnowledgeError> {
        exchange::remove_moved(self, moved)
    }
}
