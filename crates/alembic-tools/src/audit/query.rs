//! Reading the audit log by filter, with stats, and the `query_audit_log` tool over it.
//!
//! The reader opens the database read-only for each query, so the tool cannot write the log
//! whatever happens (the reference's version also called `getStats` without its time range).
//! Stats cover every record the filter matches; the records come newest first, a page at a
//! time (`beforeSeq` continues where the previous page ended).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use alembic_store::rusqlite::{self, Connection, OpenFlags, ToSql, params_from_iter};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{AuditError, AuditRecord, SELECT_RECORD, row_to_record};
use crate::definition::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use crate::registry::{RegistryError, ToolRegistry};

/// Verdicts that mean "a gate refused the call".
const REFUSED: &[&str] = &["blocked"];

/// Which records to read. `None` fields do not filter; times are stored-format strings
/// (RFC 3339 with microseconds, UTC), compared as text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    pub caller: Option<String>,
    pub tool: Option<String>,
    pub verdict: Option<String>,
    /// Text the outcome summary contains.
    pub outcome: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    /// Only records with a smaller sequence number (paging).
    pub before_seq: Option<i64>,
    pub limit: usize,
}

/// Counts and durations over every record a query matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditStats {
    pub total: u64,
    /// Refused by a gate (verdict `blocked`).
    pub refused: u64,
    /// Neither ok nor refused: errors, invalid arguments, unknown tools, time-outs, cancels.
    pub failed: u64,
    pub by_verdict: BTreeMap<String, u64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// One page of records, newest first, and the stats of the whole match.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    pub stats: AuditStats,
    pub records: Vec<AuditRecord>,
    /// Pass as `beforeSeq` for the next page; `None` on the last page.
    pub next_before_seq: Option<i64>,
}

/// Read-only access to a project's audit log.
#[derive(Debug, Clone)]
pub struct AuditReader {
    db: PathBuf,
}

impl AuditReader {
    /// The audit log in the project database under `root` (which may not exist yet).
    pub fn for_project(root: &Path) -> Self {
        AuditReader {
            db: alembic_store::project_db_path(root),
        }
    }

    /// The audit log in the database file `db`.
    pub fn at(db: impl Into<PathBuf>) -> Self {
        AuditReader { db: db.into() }
    }

    /// Runs `q`. A project without a database or an audit table has an empty log.
    pub fn query(&self, q: &AuditQuery) -> Result<AuditPage, AuditError> {
        if !self.db.exists() {
            return Ok(AuditPage::default());
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.db, flags)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let has_table: bool = conn.query_row(
            "select count(*) > 0 from sqlite_master where type = 'table' and name = 'audit_log'",
            [],
            |r| r.get(0),
        )?;
        if !has_table {
            return Ok(AuditPage::default());
        }
        query_page(&conn, q)
    }
}

/// The filter as SQL with its parameters (everything but paging).
fn filter_sql(q: &AuditQuery) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut params = Vec::new();
    let mut add = |clause: &str, value: &Option<String>| {
        if let Some(v) = value {
            params.push(v.clone());
            clauses.push(clause.replace('?', &format!("?{}", params.len())));
        }
    };
    add("caller = ?", &q.caller);
    add("tool = ?", &q.tool);
    add("verdict = ?", &q.verdict);
    add("instr(outcome, ?) > 0", &q.outcome);
    add("ts >= ?", &q.since);
    add("ts <= ?", &q.until);
    let sql = if clauses.is_empty() {
        "1 = 1".to_string()
    } else {
        clauses.join(" and ")
    };
    (sql, params)
}

fn query_page(conn: &Connection, q: &AuditQuery) -> Result<AuditPage, AuditError> {
    let (filter, params) = filter_sql(q);
    let stats = stats(conn, &filter, &params)?;
    let mut page_params: Vec<&dyn ToSql> = params.iter().map(|p| p as &dyn ToSql).collect();
    let before = q.before_seq.unwrap_or(i64::MAX);
    let limit = i64::try_from(q.limit.max(1)).unwrap_or(i64::MAX);
    page_params.push(&before);
    page_params.push(&limit);
    let n = params.len();
    let sql = format!(
        "{SELECT_RECORD} where {filter} and seq < ?{} order by seq desc limit ?{}",
        n + 1,
        n + 2
    );
    let mut stmt = conn.prepare(&sql)?;
    let records: Vec<AuditRecord> = stmt
        .query_map(params_from_iter(page_params), row_to_record)?
        .collect::<Result<_, _>>()?;
    let next_before_seq = match records.last() {
        Some(last) if more_before(conn, &filter, &params, last.seq)? => Some(last.seq),
        _ => None,
    };
    Ok(AuditPage {
        stats,
        records,
        next_before_seq,
    })
}

fn more_before(
    conn: &Connection,
    filter: &str,
    params: &[String],
    seq: i64,
) -> rusqlite::Result<bool> {
    let sql = format!(
        "select exists(select 1 from audit_log where {filter} and seq < ?{})",
        params.len() + 1
    );
    let mut all: Vec<&dyn ToSql> = params.iter().map(|p| p as &dyn ToSql).collect();
    all.push(&seq);
    conn.query_row(&sql, params_from_iter(all), |r| r.get(0))
}

fn stats(conn: &Connection, filter: &str, params: &[String]) -> rusqlite::Result<AuditStats> {
    let mut by_verdict = BTreeMap::new();
    let sql = format!("select verdict, count(*) from audit_log where {filter} group by verdict");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(params), |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    for row in rows {
        let (verdict, n) = row?;
        by_verdict.insert(verdict, u64::try_from(n).unwrap_or(0));
    }
    let sql = format!("select duration_us from audit_log where {filter} order by duration_us");
    let mut stmt = conn.prepare(&sql)?;
    let durations: Vec<i64> = stmt
        .query_map(params_from_iter(params), |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let total: u64 = by_verdict.values().sum();
    let refused: u64 = REFUSED.iter().filter_map(|v| by_verdict.get(*v)).sum();
    let ok = by_verdict.get("ok").copied().unwrap_or(0);
    Ok(AuditStats {
        total,
        refused,
        failed: total - refused - ok,
        by_verdict,
        p50_ms: percentile_ms(&durations, 50),
        p95_ms: percentile_ms(&durations, 95),
    })
}

/// Nearest-rank percentile of sorted microsecond durations, in milliseconds.
fn percentile_ms(sorted_us: &[i64], p: usize) -> Option<f64> {
    if sorted_us.is_empty() {
        return None;
    }
    let rank = (p * sorted_us.len()).div_ceil(100).max(1);
    Some(sorted_us[rank - 1] as f64 / 1000.0)
}

/// A time argument as the log stores times: RFC 3339 (`2026-11-30T21:00:00Z`, fractions and
/// a space instead of `T` accepted) or a date, which means the start of that day (the end of
/// it when `end_of_day`).
pub fn parse_time(name: &str, value: &str, end_of_day: bool) -> Result<String, ToolError> {
    let v = value.trim();
    let full = if v.len() == 10 {
        format!(
            "{v}T{}Z",
            if end_of_day {
                "23:59:59.999999"
            } else {
                "00:00:00"
            }
        )
    } else {
        v.to_string()
    };
    humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .map(|t| humantime::format_rfc3339_micros(t).to_string())
        .map_err(|_| {
            ToolError::Invalid(format!(
                "argument \"{name}\": expected an RFC 3339 UTC time such as \
                 2026-11-30T21:00:00Z or a date such as 2026-11-30, got \"{value}\""
            ))
        })
}

/// How a call ended, as the log records it.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Ok,
    Error,
    Blocked,
    InvalidArguments,
    UnknownTool,
    TimedOut,
    Cancelled,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Error => "error",
            Verdict::Blocked => "blocked",
            Verdict::InvalidArguments => "invalid_arguments",
            Verdict::UnknownTool => "unknown_tool",
            Verdict::TimedOut => "timed_out",
            Verdict::Cancelled => "cancelled",
        }
    }
}

fn twenty() -> i64 {
    20
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueryArgs {
    /// caller id, e.g. "cli", "mcp:cursor" or "agent:chat:1"
    caller: Option<String>,
    /// tool name
    tool: Option<String>,
    /// how the call ended
    verdict: Option<Verdict>,
    /// text the outcome summary contains (an error message, a rule)
    outcome: Option<String>,
    /// records at or after this time (RFC 3339 UTC, or a date)
    since: Option<String>,
    /// records at or before this time (RFC 3339 UTC, or a date: its end)
    until: Option<String>,
    /// next page: records older than this sequence number (nextBeforeSeq of the last page)
    #[schemars(range(min = 1))]
    before_seq: Option<i64>,
    /// records shown per page
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = 200))]
    limit: i64,
}

impl QueryArgs {
    fn into_query(self) -> Result<AuditQuery, ToolError> {
        let blank = |s: Option<String>| s.filter(|v| !v.trim().is_empty());
        Ok(AuditQuery {
            caller: blank(self.caller),
            tool: blank(self.tool),
            verdict: self.verdict.map(|v| v.as_str().to_string()),
            outcome: blank(self.outcome),
            since: blank(self.since)
                .map(|s| parse_time("since", &s, false))
                .transpose()?,
            until: blank(self.until)
                .map(|s| parse_time("until", &s, true))
                .transpose()?,
            before_seq: self.before_seq,
            limit: self.limit.clamp(1, 200) as usize,
        })
    }
}

/// Registers `query_audit_log` over `reader`.
pub fn register_tools(
    registry: &ToolRegistry,
    reader: Arc<AuditReader>,
) -> Result<(), RegistryError> {
    registry.register(query_audit_log(reader))
}

fn query_audit_log(reader: Arc<AuditReader>) -> ToolDefinition {
    ToolDefinition::typed::<QueryArgs>(
        "query_audit_log",
        "Read the audit log of tool calls (newest first) by caller, tool, verdict, outcome text \
         and time range, with stats over all matches: total, refused, failed, p50/p95 duration. \
         Read-only; page with beforeSeq.",
        ToolModule::Infrastructure,
        EffectClass::ReadOnly,
    )
    .blocking(reader, |reader, args| {
        let query = args.into_query()?;
        let page = reader
            .query(&query)
            .map_err(|e| ToolError::failed(format!("cannot read the audit log: {e}")))?;
        Ok(render(&page))
    })
}

fn render(page: &AuditPage) -> ToolOutput {
    let s = &page.stats;
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    let mut text = format!(
        "{} matching call(s): {} refused, {} failed; p50 {}, p95 {}\n",
        s.total,
        s.refused,
        s.failed,
        ms(s.p50_ms),
        ms(s.p95_ms)
    );
    for r in &page.records {
        let e = &r.entry;
        let rule = e
            .rule
            .as_deref()
            .map(|x| format!(" [{x}]"))
            .unwrap_or_default();
        text.push_str(&format!(
            "#{} {} {} {} {}{rule} {:.1} ms: {}\n",
            r.seq,
            e.ts,
            e.caller,
            e.tool,
            e.verdict,
            e.duration_us as f64 / 1000.0,
            e.outcome.lines().next().unwrap_or_default()
        ));
    }
    if let Some(next) = page.next_before_seq {
        text.push_str(&format!("more: beforeSeq {next}"));
    }
    let data = json!({"stats": page.stats, "records": page.records,
        "nextBeforeSeq": page.next_before_seq});
    ToolOutput::new(data, text.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let us: Vec<i64> = (1..=20).map(|i| i * 1000).collect();
        assert_eq!(percentile_ms(&us, 50), Some(10.0));
        assert_eq!(percentile_ms(&us, 95), Some(19.0));
        assert_eq!(percentile_ms(&[7000], 95), Some(7.0));
        assert_eq!(percentile_ms(&[], 50), None);
    }

    #[test]
    fn times_are_read_in_the_stored_format() {
        assert_eq!(
            parse_time("since", "2026-11-30T21:00:00Z", false).unwrap(),
            "2026-11-30T21:00:00.000000Z"
        );
        assert_eq!(
            parse_time("until", "2026-11-30", true).unwrap(),
            "2026-11-30T23:59:59.999999Z"
        );
        let err = parse_time("since", "yesterday", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: argument \"since\": expected an RFC 3339 UTC time such as \
             2026-11-30T21:00:00Z or a date such as 2026-11-30, got \"yesterday\""
        );
    }
}
