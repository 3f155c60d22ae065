//! How an entry maps to rows of `knowledge_entries` and `knowledge_history`: the column
//! lists, the parameters insert and update bind, and reading an entry back from a row.

use rusqlite::{Connection, Row, params};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::KnowledgeError;
use crate::model::{Entry, Kind, NewEntry, Status, normalise_title};
use crate::text;

/// The columns [`entry_from_row`] reads, in its order.
pub(super) const COLUMNS: &str = "id, title, description, kind, knowledge_type, category, language, trigger, \
    content, pattern, rationale, extra, tags, sources, quality, status, created_by, created_at, \
    updated_at, views, adoptions, applications, version";

fn json_text<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}

fn kind_of(new: &NewEntry) -> Kind {
    new.kind
        .unwrap_or_else(|| Kind::from_knowledge_type(&new.knowledge_type))
}

fn entry_search_text(new: &NewEntry) -> String {
    search_text_of(
        &new.title,
        &new.description,
        &new.content,
        &new.pattern,
        &new.tags,
    )
}

pub(super) use text::entry_search_text as search_text_of;

/// The columns an entry's content fills, as named parameters: insert and update write the
/// same list, so a new column cannot be stored by one and forgotten by the other.
struct EntryColumns {
    title: String,
    title_norm: String,
    kind: &'static str,
    extra: String,
    tags: String,
    sources: String,
    search_text: String,
}

const ENTRY_COLUMNS: [&str; 16] = [
    "title",
    "title_norm",
    "description",
    "kind",
    "knowledge_type",
    "category",
    "language",
    "trigger",
    "content",
    "pattern",
    "rationale",
    "extra",
    "tags",
    "sources",
    "quality",
    "search_text",
];

impl EntryColumns {
    fn of(new: &NewEntry) -> Self {
        EntryColumns {
            title: new.title.trim().to_string(),
            title_norm: normalise_title(&new.title),
            kind: kind_of(new).as_str(),
            extra: json_text(&new.extra),
            tags: json_text(&new.tags),
            sources: json_text(&new.sources),
            search_text: entry_search_text(new),
        }
    }

    /// Parameters in the order of [`ENTRY_COLUMNS`], named `:<column>`.
    fn params<'a>(
        &'a self,
        new: &'a NewEntry,
        quality: &'a Option<f64>,
    ) -> Vec<(&'static str, &'a dyn rusqlite::ToSql)> {
        vec![
            (":title", &self.title as &dyn rusqlite::ToSql),
            (":title_norm", &self.title_norm),
            (":description", &new.description),
            (":kind", &self.kind),
            (":knowledge_type", &new.knowledge_type),
            (":category", &new.category),
            (":language", &new.language),
            (":trigger", &new.trigger),
            (":content", &new.content),
            (":pattern", &new.pattern),
            (":rationale", &new.rationale),
            (":extra", &self.extra),
            (":tags", &self.tags),
            (":sources", &self.sources),
            (":quality", quality),
            (":search_text", &self.search_text),
        ]
    }
}

pub(super) fn insert_entry(
    conn: &Connection,
    id: &str,
    new: &NewEntry,
    status: Status,
    by: &str,
    quality: Option<f64>,
    now: i64,
) -> Result<(), KnowledgeError> {
    let columns = EntryColumns::of(new);
    let mut params = columns.params(new, &quality);
    let status = status.as_str();
    params.extend([
        (":id", &id as &dyn rusqlite::ToSql),
        (":status", &status),
        (":by", &by),
        (":now", &now),
    ]);
    let names = ENTRY_COLUMNS.join(", ");
    let values = ENTRY_COLUMNS.map(|c| format!(":{c}")).join(", ");
    conn.execute(
        &format!(
            "insert into knowledge_entries (id, {names}, status, created_by, created_at, \
             updated_at) values (:id, {values}, :status, :by, :now, :now)"
        ),
        params.as_slice(),
    )?;
    Ok(())
}

pub(super) fn update_entry(
    conn: &Connection,
    id: &str,
    new: &NewEntry,
    quality: Option<f64>,
    now: i64,
) -> Result<(), KnowledgeError> {
    let columns = EntryColumns::of(new);
    let mut params = columns.params(new, &quality);
    params.extend([(":id", &id as &dyn rusqlite::ToSql), (":now", &now)]);
    let sets = ENTRY_COLUMNS.map(|c| format!("{c} = :{c}")).join(", ");
    conn.execute(
        &format!(
            "update knowledge_entries set {sets}, updated_at = :now, version = version + 1 \
             where id = :id"
        ),
        params.as_slice(),
    )?;
    Ok(())
}

/// Inserts an exported entry as it was (id, status, author, times, counters, version).
pub(super) fn import_entry(conn: &Connection, e: &Entry) -> Result<(), KnowledgeError> {
    let new = NewEntry::from(e);
    let columns = EntryColumns::of(&new);
    let mut params = columns.params(&new, &e.quality);
    let status = e.status.as_str();
    let counters = [e.views, e.adoptions, e.applications].map(|n| n as i64);
    params.extend([
        (":id", &e.id as &dyn rusqlite::ToSql),
        (":status", &status),
        (":by", &e.created_by),
        (":created_at", &e.created_at),
        (":updated_at", &e.updated_at),
        (":views", &counters[0]),
        (":adoptions", &counters[1]),
        (":applications", &counters[2]),
        (":version", &e.version),
    ]);
    let names = ENTRY_COLUMNS.join(", ");
    let values = ENTRY_COLUMNS.map(|c| format!(":{c}")).join(", ");
    conn.execute(
        &format!(
            "insert into knowledge_entries (id, {names}, status, created_by, created_at, \
             updated_at, views, adoptions, applications, version) values (:id, {values}, \
             :status, :by, :created_at, :updated_at, :views, :adoptions, :applications, :version)"
        ),
        params.as_slice(),
    )?;
    Ok(())
}

pub(crate) fn insert_history(
    conn: &Connection,
    id: &str,
    from: Option<Status>,
    to: Status,
    at: i64,
    by: &str,
    reason: Option<&str>,
) -> Result<(), KnowledgeError> {
    conn.execute(
        "insert into knowledge_history (entry_id, from_status, to_status, at, by, reason) \
         values (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, from.map(Status::as_str), to.as_str(), at, by, reason],
    )?;
    Ok(())
}

fn json_col<T: serde::de::DeserializeOwned>(r: &Row<'_>, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    serde_json::from_str(&s).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn enum_col<T: std::str::FromStr>(r: &Row<'_>, i: usize) -> rusqlite::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let s: String = r.get(i)?;
    s.parse::<T>().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

pub(super) fn entry_from_row(r: &Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        id: r.get(0)?,
        title: r.get(1)?,
        description: r.get(2)?,
        kind: enum_col(r, 3)?,
        knowledge_type: r.get(4)?,
        category: r.get(5)?,
        language: r.get(6)?,
        trigger: r.get(7)?,
        content: r.get(8)?,
        pattern: r.get(9)?,
        rationale: r.get(10)?,
        extra: json_col::<Map<String, Value>>(r, 11)?,
        tags: json_col(r, 12)?,
        sources: json_col(r, 13)?,
        quality: r.get(14)?,
        status: enum_col(r, 15)?,
        created_by: r.get(16)?,
        created_at: r.get(17)?,
        updated_at: r.get(18)?,
        views: r.get::<_, i64>(19)?.max(0) as u64,
        adoptions: r.get::<_, i64>(20)?.max(0) as u64,
        applications: r.get::<_, i64>(21)?.max(0) as u64,
        version: r.get(22)?,
    })
}
