//! The knowledge entry (one entity for candidates and recipes), its lifecycle and the
//! relation vocabulary of the knowledge graph.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::KnowledgeError;

/// Where an entry is in its review lifecycle. Candidates are `draft`, `submitted`,
/// `approved` and `rejected`; recipes are `published` (in use) and `deprecated` (retired).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Draft,
    Submitted,
    Approved,
    Rejected,
    Published,
    Deprecated,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Draft,
        Status::Submitted,
        Status::Approved,
        Status::Rejected,
        Status::Published,
        Status::Deprecated,
    ];
    /// States in which an entry is still a candidate under review.
    pub const CANDIDATE: [Status; 4] = [
        Status::Draft,
        Status::Submitted,
        Status::Approved,
        Status::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Submitted => "submitted",
            Status::Approved => "approved",
            Status::Rejected => "rejected",
            Status::Published => "published",
            Status::Deprecated => "deprecated",
        }
    }

    /// The states an entry may move to from this one. A rejected candidate goes back to
    /// draft to be corrected; a deprecated recipe is final (submit a new candidate instead).
    pub fn next(self) -> &'static [Status] {
        match self {
            Status::Draft => &[Status::Submitted],
            Status::Submitted => &[Status::Approved, Status::Rejected],
            Status::Approved => &[Status::Published, Status::Rejected],
            Status::Rejected => &[Status::Draft],
            Status::Published => &[Status::Deprecated],
            Status::Deprecated => &[],
        }
    }

    pub fn can_move_to(self, to: Status) -> bool {
        self.next().contains(&to)
    }

    pub fn is_candidate(self) -> bool {
        Status::CANDIDATE.contains(&self)
    }

    /// Whether a reason is required to enter this state.
    pub fn needs_reason(self) -> bool {
        matches!(self, Status::Rejected | Status::Deprecated)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = KnowledgeError;
    /// Also accepts the reference's older words: pending → submitted, active → published.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        let found = match s.as_str() {
            "pending" => Some(Status::Submitted),
            "active" | "applied" => Some(Status::Published),
            _ => Status::ALL.into_iter().find(|st| st.as_str() == s),
        };
        found.ok_or(KnowledgeError::UnknownValue {
            field: "status",
            value: s,
            accepted: "draft, submitted, approved, rejected, published, deprecated",
        })
    }
}

/// What sort of knowledge an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Something code must or must not do (may carry guard patterns).
    Rule,
    /// A reusable way of doing something, usually with a code pattern.
    Pattern,
    /// A fact about the project (relations, data flow, module layout).
    Fact,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Rule => "rule",
            Kind::Pattern => "pattern",
            Kind::Fact => "fact",
        }
    }

    /// The kind a knowledge type implies when the submitter gave none.
    pub fn from_knowledge_type(knowledge_type: &str) -> Kind {
        match knowledge_type {
            "code-standard" | "code-style" | "best-practice" | "boundary-constraint" => Kind::Rule,
            "code-relation"
            | "inheritance"
            | "call-chain"
            | "data-flow"
            | "event-and-data-flow"
            | "module-dependency"
            | "dev-document" => Kind::Fact,
            _ => Kind::Pattern,
        }
    }
}

impl FromStr for Kind {
    type Err = KnowledgeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rule" => Ok(Kind::Rule),
            "pattern" => Ok(Kind::Pattern),
            "fact" => Ok(Kind::Fact),
            other => Err(KnowledgeError::UnknownValue {
                field: "kind",
                value: other.to_string(),
                accepted: "rule, pattern, fact",
            }),
        }
    }
}

/// Relations an edge of the knowledge graph may carry.
pub const RELATIONS: &[&str] = &[
    "requires",
    "extends",
    "enforces",
    "depends_on",
    "inherits",
    "implements",
    "calls",
    "prerequisite",
    "data_flow",
    "conflicts",
    "related",
    "alternative",
    "deprecated_by",
    "solves",
    "references",
];

/// What a submitter provides for a new entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewEntry {
    pub title: String,
    pub description: String,
    pub kind: Option<Kind>,
    pub knowledge_type: String,
    pub category: String,
    pub language: String,
    pub trigger: Option<String>,
    /// Markdown explanation.
    pub content: String,
    /// Code pattern (a short skeleton).
    pub pattern: String,
    pub rationale: String,
    pub tags: Vec<String>,
    /// Project files the knowledge was found in (evidence).
    pub sources: Vec<String>,
    /// Other structured fields, kept as given.
    pub extra: Map<String, Value>,
}

/// A stored entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: String,
    pub title: String,
    pub description: String,
    pub kind: Kind,
    pub knowledge_type: String,
    pub category: String,
    pub language: String,
    pub trigger: Option<String>,
    pub content: String,
    pub pattern: String,
    pub rationale: String,
    pub tags: Vec<String>,
    pub sources: Vec<String>,
    pub extra: Map<String, Value>,
    pub quality: Option<f64>,
    pub status: Status,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub views: u64,
    pub adoptions: u64,
    pub applications: u64,
    /// Bumped by every edit and status change; optimistic writes name the version they read
    /// and get [`KnowledgeError::Conflict`] when the entry moved on.
    #[serde(default = "first_version")]
    pub version: i64,
}

fn first_version() -> i64 {
    1
}

/// One status change of an entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub from: Option<Status>,
    pub to: Status,
    pub at: i64,
    pub by: String,
    pub reason: Option<String>,
}

/// An edge of the knowledge graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from_id: String,
    pub to_id: String,
    pub relation: String,
    pub weight: f64,
    pub created_by: String,
    pub created_at: i64,
}

/// The content fields of a stored entry (what an edit or an import writes).
impl From<&Entry> for NewEntry {
    fn from(e: &Entry) -> NewEntry {
        NewEntry {
            title: e.title.clone(),
            description: e.description.clone(),
            kind: Some(e.kind),
            knowledge_type: e.knowledge_type.clone(),
            category: e.category.clone(),
            language: e.language.clone(),
            trigger: e.trigger.clone(),
            content: e.content.clone(),
            pattern: e.pattern.clone(),
            rationale: e.rationale.clone(),
            tags: e.tags.clone(),
            sources: e.sources.clone(),
            extra: e.extra.clone(),
        }
    }
}

/// Lower-cased title with whitespace collapsed: two titles are "the same" when these match.
pub fn normalise_title(title: &str) -> String {
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_allows_only_the_documented_moves() {
        assert!(Status::Draft.can_move_to(Status::Submitted));
        assert!(Status::Submitted.can_move_to(Status::Approved));
        assert!(Status::Submitted.can_move_to(Status::Rejected));
        assert!(Status::Approved.can_move_to(Status::Published));
        assert!(Status::Published.can_move_to(Status::Deprecated));
        assert!(!Status::Submitted.can_move_to(Status::Published));
        assert!(!Status::Deprecated.can_move_to(Status::Published));
        assert!(Status::Deprecated.next().is_empty());
    }

    #[test]
    fn status_accepts_reference_words() {
        assert_eq!("pending".parse::<Status>().ok(), Some(Status::Submitted));
        assert_eq!("Active".parse::<Status>().ok(), Some(Status::Published));
        let err = "live".parse::<Status>().err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("draft, submitted")));
    }

    #[test]
    fn kind_follows_knowledge_type() {
        assert_eq!(Kind::from_knowledge_type("code-style"), Kind::Rule);
        assert_eq!(Kind::from_knowledge_type("data-flow"), Kind::Fact);
        assert_eq!(Kind::from_knowledge_type("whatever"), Kind::Pattern);
    }

    #[test]
    fn titles_normalise_case_and_spaces() {
        assert_eq!(
            normalise_title("  Retry   With Backoff "),
            "retry with backoff"
        );
    }
}
