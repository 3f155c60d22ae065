//! Readers over both stores: with a team configured, what people and agents read (`alembic
//! memory search|list`, the MCP memory resources, the agent's recall, `memory_recall`)
//! includes the team's memories from the server, each marked with the store it came from.
//! A team store that cannot be reached never hides the local memories: the reader gets them
//! with the reason (`team_error`).

use serde::Serialize;

use alembic_tools::ToolError;

use crate::{ListFilter, Memory, MemoryService, RetrieveOptions, Scope, ScoredMemory};

/// Which store a memory shown to a reader lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The project's SQLite file.
    Local,
    /// The team store on the server.
    Team,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Local => "local",
            Origin::Team => "team",
        }
    }
}

/// A memory (or a scored one) with the store it came from; serialised flat, with `store`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Located<T> {
    #[serde(flatten)]
    pub item: T,
    pub store: Origin,
}

/// What a reader found in both stores.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<T> {
    pub items: Vec<Located<T>>,
    /// Why the team store could not be read (its memories are missing from `items`).
    pub team_error: Option<String>,
}

/// The row id of a found item, to show a memory present in both stores (a pulled one) once.
trait HasId {
    fn id(&self) -> &str;
}

impl HasId for Memory {
    fn id(&self) -> &str {
        &self.id
    }
}

impl HasId for ScoredMemory {
    fn id(&self) -> &str {
        &self.memory.id
    }
}

/// Local items first, then the team's that are not already there; the caller orders them.
fn merge<T: HasId>(
    local: Vec<T>,
    team: Result<Option<Vec<T>>, ToolError>,
) -> (Vec<Located<T>>, Option<String>) {
    let mut items: Vec<Located<T>> = local
        .into_iter()
        .map(|item| Located {
            item,
            store: Origin::Local,
        })
        .collect();
    let team_error = match team {
        Ok(found) => {
            let seen: std::collections::HashSet<String> =
                items.iter().map(|l| l.item.id().to_string()).collect();
            items.extend(
                found
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| !seen.contains(t.id()))
                    .map(|item| Located {
                        item,
                        store: Origin::Team,
                    }),
            );
            None
        }
        Err(e) => Some(e.to_string()),
    };
    (items, team_error)
}

/// True when a read of `scope` (`None`: every scope) may find team memories.
fn reaches_team(scope: Option<Scope>) -> bool {
    scope.is_none_or(|s| s == Scope::Team)
}

impl MemoryService {
    /// Memories relevant to `query` from the local store and, with a team configured, the
    /// team store, best first, `options.limit` in all. Each store normalises relevance over
    /// its own candidates; the merged list is ordered by score.
    pub fn recall(
        &self,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Found<ScoredMemory>, ToolError> {
        let local = self.with_store(|m| m.retrieve(query, options))?;
        let team = if reaches_team(options.scope) {
            let options = RetrieveOptions {
                scope: Some(Scope::Team),
                ..options.clone()
            };
            self.with_team_store(|t| t.retrieve(query, &options))
        } else {
            Ok(None)
        };
        let (mut items, team_error) = merge(local, team);
        items.sort_by(|a, b| b.item.score.total_cmp(&a.item.score));
        items.truncate(options.limit);
        Ok(Found { items, team_error })
    }

    /// Memories of both stores as [`ListFilter`] selects them, most recently updated first
    /// (never builds the embedder).
    pub fn list_everywhere(&self, filter: &ListFilter) -> Result<Found<Memory>, ToolError> {
        let local = self
            .read(|m| m.list(filter))?
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let team = if reaches_team(filter.scope) {
            let filter = ListFilter {
                scope: Some(Scope::Team),
                ..filter.clone()
            };
            self.read_team(|t| t.list(&filter))
        } else {
            Ok(None)
        };
        let (mut items, team_error) = merge(local, team);
        items.sort_by_key(|l| std::cmp::Reverse(l.item.updated));
        if let Some(limit) = filter.limit {
            items.truncate(limit);
        }
        Ok(Found { items, team_error })
    }
}
