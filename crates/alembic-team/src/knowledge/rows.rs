//! Row-level SQL of the team knowledge entries. Every statement filters by `team`; callers
//! own the transaction (opened with [`crate::tx::begin_team`]).

use alembic_knowledge::text::entry_search_text;
use alembic_knowledge::{Entry, Filter, Kind, KnowledgeError, NewEntry, Status};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::error::TeamError;

/// The entry columns, in the order [`decode`] reads them. A macro so every statement is one
/// literal (`concat!`): sqlx accepts only SQL text known at compile time.
macro_rules! entry_columns {
    () => {
        "id, title, description, kind, knowledge_type, category, language, trigger, content, \
         pattern, rationale, extra, tags, sources, quality, status, created_by, created_at, \
         updated_at, views, adoptions, applications, version"
    };
}

/// The filter of [`Filter`] over `e`, with its parameters from `$4` (statuses), `$5` kind,
/// `$6` language, `$7` category, `$8` knowledge type: the same for listing and search.
macro_rules! filter_clause {
    () => {
        "($4::text[] is null or e.status = any($4))
         and ($5::text is null or lower(e.kind) = lower($5))
         and ($6::text is null or lower(e.language) = lower($6))
         and ($7::text is null or lower(e.category) = lower($7))
         and ($8::text is null or lower(e.knowledge_type) = lower($8))"
    };
}
pub(crate) use {entry_columns, filter_clause};

/// The bound values of [`filter_clause!`].
pub(crate) struct FilterArgs {
    pub statuses: Option<Vec<String>>,
    pub kind: Option<String>,
    pub language: Option<String>,
    pub category: Option<String>,
    pub knowledge_type: Option<String>,
    pub limit: i64,
}

impl FilterArgs {
    pub fn of(f: &Filter) -> FilterArgs {
        let text = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        FilterArgs {
            statuses: (!f.statuses.is_empty())
                .then(|| f.statuses.iter().map(|s| s.as_str().to_string()).collect()),
            kind: f.kind.map(|k| k.as_str().to_string()),
            language: text(f.language.as_deref()),
            category: text(f.category.as_deref()),
            knowledge_type: text(f.knowledge_type.as_deref()),
            limit: if f.limit == 0 { 20 } else { f.limit as i64 },
        }
    }

    /// Binds `$4`–`$8` of [`filter_clause!`] and the limit as `$9`, after the caller's
    /// `$1`–`$3`.
    pub fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(&self.statuses)
            .bind(&self.kind)
            .bind(&self.language)
            .bind(&self.category)
            .bind(&self.knowledge_type)
            .bind(self.limit)
    }
}

fn corrupt(id: &str, what: &str, e: KnowledgeError) -> TeamError {
    TeamError::Knowledge(KnowledgeError::Corrupt(format!(
        "entry '{id}' has a bad {what}: {e}"
    )))
}

fn json<T: serde::de::DeserializeOwned>(id: &str, what: &str, text: &str) -> Result<T, TeamError> {
    serde_json::from_str(text).map_err(|e| {
        TeamError::Knowledge(KnowledgeError::Corrupt(format!(
            "entry '{id}' has a bad {what}: {e}"
        )))
    })
}

/// Decodes a row selected with [`entry_columns!`] first.
pub(crate) fn decode(row: &PgRow) -> Result<Entry, TeamError> {
    let id: String = row.try_get(0)?;
    let kind: String = row.try_get(3)?;
    let status: String = row.try_get(15)?;
    let count =
        |i: usize| -> Result<u64, TeamError> { Ok(row.try_get::<i64, _>(i)?.max(0) as u64) };
    Ok(Entry {
        title: row.try_get(1)?,
        description: row.try_get(2)?,
        kind: kind.parse::<Kind>().map_err(|e| corrupt(&id, "kind", e))?,
        knowledge_type: row.try_get(4)?,
        category: row.try_get(5)?,
        language: row.try_get(6)?,
        trigger: row.try_get(7)?,
        content: row.try_get(8)?,
        pattern: row.try_get(9)?,
        rationale: row.try_get(10)?,
        extra: json(&id, "extra", &row.try_get::<String, _>(11)?)?,
        tags: json(&id, "tags", &row.try_get::<String, _>(12)?)?,
        sources: json(&id, "sources", &row.try_get::<String, _>(13)?)?,
        quality: row.try_get(14)?,
        status: status
            .parse::<Status>()
            .map_err(|e| corrupt(&id, "status", e))?,
        created_by: row.try_get(16)?,
        created_at: row.try_get(17)?,
        updated_at: row.try_get(18)?,
        views: count(19)?,
        adoptions: count(20)?,
        applications: count(21)?,
        version: row.try_get(22)?,
        id,
    })
}

/// The entry `id` of `team`, if any.
pub(crate) async fn find(
    conn: &mut PgConnection,
    team: &str,
    id: &str,
) -> Result<Option<Entry>, TeamError> {
    let sql = concat!(
        "select ",
        entry_columns!(),
        " from team_knowledge_entries where team = $1 and id = $2"
    );
    let row = sqlx::query(sql)
        .bind(team)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(decode).transpose()
}

/// The entry `id` of `team`, or `NotFound` naming it.
pub(crate) async fn get(conn: &mut PgConnection, team: &str, id: &str) -> Result<Entry, TeamError> {
    find(conn, team, id).await?.ok_or_else(|| not_found(id))
}

/// The entry `id`, locked for the rest of the transaction (writers of one entry serialise).
pub(crate) async fn get_for_update(
    conn: &mut PgConnection,
    team: &str,
    id: &str,
) -> Result<Entry, TeamError> {
    let sql = concat!(
        "select ",
        entry_columns!(),
        " from team_knowledge_entries where team = $1 and id = $2 for update"
    );
    let row = sqlx::query(sql)
        .bind(team)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref()
        .map(decode)
        .transpose()?
        .ok_or_else(|| not_found(id))
}

pub(crate) fn not_found(id: &str) -> TeamError {
    TeamError::Knowledge(KnowledgeError::NotFound { id: id.to_string() })
}

/// Serialises a team's knowledge writes that check something across entries (titles).
pub(crate) async fn lock_team(conn: &mut PgConnection, team: &str) -> Result<(), TeamError> {
    sqlx::query("select pg_advisory_xact_lock(hashtext('team_knowledge'), hashtext($1))")
        .bind(team)
        .execute(conn)
        .await?;
    Ok(())
}

/// The live entry (not deprecated) of `team` whose normalised title is `title_norm`.
pub(crate) async fn live_title(
    conn: &mut PgConnection,
    team: &str,
    title_norm: &str,
    except: Option<&str>,
) -> Result<Option<(String, Status)>, TeamError> {
    let row = sqlx::query(
        "select id, status from team_knowledge_entries where team = $1 and title_norm = $2
         and status <> 'deprecated' and id <> coalesce($3, '') order by seq limit 1",
    )
    .bind(team)
    .bind(title_norm)
    .bind(except)
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let id: String = row.try_get(0)?;
    let status: String = row.try_get(1)?;
    let status = status
        .parse::<Status>()
        .map_err(|e| corrupt(&id, "status", e))?;
    Ok(Some((id, status)))
}

/// Refuses `title` when another live entry of `team` has it.
pub(crate) async fn check_title(
    conn: &mut PgConnection,
    team: &str,
    title: &str,
    except: Option<&str>,
) -> Result<(), TeamError> {
    let norm = alembic_knowledge::model::normalise_title(title);
    match live_title(conn, team, &norm, except).await? {
        Some((existing_id, status)) => Err(TeamError::Knowledge(KnowledgeError::DuplicateTitle {
            title: title.to_string(),
            existing_id,
            status,
        })),
        None => Ok(()),
    }
}

/// What one write stores besides the entry's content.
pub(crate) struct Stamp<'a> {
    pub team: &'a str,
    pub author: &'a str,
    pub now: i64,
}

/// Inserts `e` as it is (id, status, counters, version, times): creation and import.
pub(crate) async fn insert(
    conn: &mut PgConnection,
    s: &Stamp<'_>,
    e: &Entry,
) -> Result<(), TeamError> {
    let new = NewEntry::from(e);
    let search = entry_search_text(&e.title, &e.description, &e.content, &e.pattern, &e.tags);
    sqlx::query(
        "insert into team_knowledge_entries (team, id, title, title_norm, description, kind,
             knowledge_type, category, language, trigger, content, pattern, rationale, extra, tags,
             sources, quality, status, created_by, created_at, updated_at, views, adoptions,
             applications, version, author, search_text, search)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
             $19, $20, $21, $22, $23, $24, $25, $26, $27, to_tsvector('english', $27))",
    )
    .bind(s.team)
    .bind(&e.id)
    .bind(e.title.trim())
    .bind(alembic_knowledge::model::normalise_title(&e.title))
    .bind(&e.description)
    .bind(e.kind.as_str())
    .bind(&new.knowledge_type)
    .bind(&new.category)
    .bind(&new.language)
    .bind(&new.trigger)
    .bind(&new.content)
    .bind(&new.pattern)
    .bind(&new.rationale)
    .bind(json_text(&new.extra))
    .bind(json_text(&new.tags))
    .bind(json_text(&new.sources))
    .bind(e.quality)
    .bind(e.status.as_str())
    .bind(&e.created_by)
    .bind(e.created_at)
    .bind(e.updated_at)
    .bind(e.views as i64)
    .bind(e.adoptions as i64)
    .bind(e.applications as i64)
    .bind(e.version)
    .bind(s.author)
    .bind(search)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the content fields of `new` (and `quality`) over entry `id`, bumping its version.
pub(crate) async fn write_content(
    conn: &mut PgConnection,
    s: &Stamp<'_>,
    id: &str,
    new: &NewEntry,
    quality: Option<f64>,
) -> Result<(), TeamError> {
    let kind = new
        .kind
        .unwrap_or_else(|| Kind::from_knowledge_type(&new.knowledge_type));
    let search = entry_search_text(
        &new.title,
        &new.description,
        &new.content,
        &new.pattern,
        &new.tags,
    );
    sqlx::query(
        "update team_knowledge_entries set title = $3, title_norm = $4, description = $5,
             kind = $6, knowledge_type = $7, category = $8, language = $9, trigger = $10,
             content = $11, pattern = $12, rationale = $13, extra = $14, tags = $15, sources = $16,
             quality = $17, search_text = $18, search = to_tsvector('english', $18),
             updated_at = $19, version = version + 1, author = $20
         where team = $1 and id = $2",
    )
    .bind(s.team)
    .bind(id)
    .bind(new.title.trim())
    .bind(alembic_knowledge::model::normalise_title(&new.title))
    .bind(&new.description)
    .bind(kind.as_str())
    .bind(&new.knowledge_type)
    .bind(&new.category)
    .bind(&new.language)
    .bind(&new.trigger)
    .bind(&new.content)
    .bind(&new.pattern)
    .bind(&new.rationale)
    .bind(json_text(&new.extra))
    .bind(json_text(&new.tags))
    .bind(json_text(&new.sources))
    .bind(quality)
    .bind(search)
    .bind(s.now)
    .bind(s.author)
    .execute(conn)
    .await?;
    Ok(())
}

/// One lifecycle move of `id` (already checked), with its history row.
pub(crate) async fn move_to(
    conn: &mut PgConnection,
    s: &Stamp<'_>,
    id: &str,
    from: Status,
    to: Status,
    by: &str,
    reason: Option<&str>,
) -> Result<(), TeamError> {
    sqlx::query(
        "update team_knowledge_entries set status = $3, updated_at = $4, version = version + 1,
             author = $5 where team = $1 and id = $2",
    )
    .bind(s.team)
    .bind(id)
    .bind(to.as_str())
    .bind(s.now)
    .bind(s.author)
    .execute(&mut *conn)
    .await?;
    insert_history(conn, s, id, Some(from), to, s.now, by, reason).await
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn insert_history(
    conn: &mut PgConnection,
    s: &Stamp<'_>,
    id: &str,
    from: Option<Status>,
    to: Status,
    at: i64,
    by: &str,
    reason: Option<&str>,
) -> Result<(), TeamError> {
    sqlx::query(
        "insert into team_knowledge_history (team, entry_id, from_status, to_status, at, by,
             reason, author) values ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(s.team)
    .bind(id)
    .bind(from.map(Status::as_str))
    .bind(to.as_str())
    .bind(at)
    .bind(by)
    .bind(reason)
    .bind(s.author)
    .execute(conn)
    .await?;
    Ok(())
}

fn json_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}
