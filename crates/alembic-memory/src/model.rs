//! The memory record and the values its fields take.

use serde::{Deserialize, Serialize};

use crate::error::MemoryError;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every accepted value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            const ACCEPTED: &'static str = concat!($($text, " "),+);

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = MemoryError;
            fn from_str(s: &str) -> Result<Self, MemoryError> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err(MemoryError::UnknownValue {
                        field: $field,
                        value: s.to_string(),
                        accepted: $name::ACCEPTED.trim_end(),
                    }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// What kind of knowledge a memory holds.
    MemoryType, "type", { Fact => "fact", Insight => "insight", Preference => "preference" }
);
string_enum!(
    /// Who produced a memory.
    MemorySource, "source", { Bootstrap => "bootstrap", User => "user", System => "system" }
);
string_enum!(
    /// Who a memory belongs to: this project, the user across projects, or a shared team store.
    Scope, "scope", { Project => "project", User => "user", Team => "team" }
);

/// One stored memory. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    pub scope: Scope,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    pub content: String,
    pub source: MemorySource,
    /// 1..=10.
    pub importance: f64,
    pub access_count: i64,
    pub last_accessed: i64,
    pub created: i64,
    pub updated: i64,
    /// TTL: the memory is expired (gone from retrieval, deleted by gc) from this time on.
    pub expires_at: Option<i64>,
    pub source_dimension: Option<String>,
    /// Where the memory came from (a session, a file, "merge:<id>", a dialog turn id …).
    pub provenance: Option<String>,
    /// Text around the memory that helps find it (searched with a lower weight, not shown).
    #[serde(default)]
    pub context: Option<String>,
    /// Set when the memory was archived for lack of access; archived memories leave retrieval.
    pub archived_at: Option<i64>,
    /// Since when the memory holds.
    pub valid_from: i64,
    /// Until when it held; set when a newer memory superseded it (REPLACE or MERGE).
    pub valid_to: Option<i64>,
    /// The memory that replaced this one.
    pub superseded_by: Option<String>,
    pub tags: Vec<String>,
}

impl Memory {
    /// True when the memory is current: not superseded, not archived and not expired at `now`.
    pub fn is_active(&self, now_ms: i64) -> bool {
        self.valid_to.is_none()
            && self.archived_at.is_none()
            && self.expires_at.is_none_or(|t| t > now_ms)
    }
}

/// Input of [`crate::PersistentMemory::add`] and of consolidation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NewMemory {
    #[serde(rename = "type")]
    pub kind: MemoryType,
    pub content: String,
    pub source: MemorySource,
    pub scope: Scope,
    pub importance: f64,
    pub ttl_days: Option<f64>,
    pub source_dimension: Option<String>,
    pub provenance: Option<String>,
    /// Text around the memory that helps find it, e.g. the preceding dialog turn.
    pub context: Option<String>,
    pub tags: Vec<String>,
    /// When the fact started to hold; defaults to now. Importers and benchmarks set it.
    pub valid_from: Option<i64>,
}

impl Default for NewMemory {
    fn default() -> Self {
        NewMemory {
            kind: MemoryType::Fact,
            content: String::new(),
            source: MemorySource::User,
            scope: Scope::Project,
            importance: 5.0,
            ttl_days: None,
            source_dimension: None,
            provenance: None,
            context: None,
            tags: Vec::new(),
            valid_from: None,
        }
    }
}

impl NewMemory {
    /// A fact with default metadata.
    pub fn fact(content: impl Into<String>) -> NewMemory {
        NewMemory {
            content: content.into(),
            ..NewMemory::default()
        }
    }

    pub fn with_type(mut self, kind: MemoryType) -> Self {
        self.kind = kind;
        self
    }

    pub fn with_importance(mut self, importance: f64) -> Self {
        self.importance = importance;
        self
    }

    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    pub fn with_source(mut self, source: MemorySource) -> Self {
        self.source = source;
        self
    }

    pub fn with_ttl_days(mut self, days: f64) -> Self {
        self.ttl_days = Some(days);
        self
    }

    pub fn with_provenance(mut self, provenance: impl Into<String>) -> Self {
        self.provenance = Some(provenance.into());
        self
    }

    pub fn with_context_text(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub fn with_valid_from(mut self, ms: i64) -> Self {
        self.valid_from = Some(ms);
        self
    }

    /// Refuses what the store would refuse: blank content, content longer than
    /// `max_content_chars` (after trimming), an importance outside 1..=10.
    pub fn check(&self, max_content_chars: usize) -> Result<(), MemoryError> {
        let len = self.content.trim().chars().count();
        if len == 0 {
            return Err(MemoryError::EmptyContent { min: 1 });
        }
        if len > max_content_chars {
            return Err(MemoryError::ContentTooLong {
                len,
                max: max_content_chars,
            });
        }
        if !(1.0..=10.0).contains(&self.importance) || self.importance.is_nan() {
            return Err(MemoryError::BadImportance {
                value: self.importance,
            });
        }
        Ok(())
    }
}

/// Fields [`crate::PersistentMemory::update`] may change; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryUpdate {
    pub content: Option<String>,
    pub importance: Option<f64>,
    pub kind: Option<MemoryType>,
    /// `Some(None)` removes the TTL.
    pub ttl_days: Option<Option<f64>>,
    pub tags: Option<Vec<String>>,
}
