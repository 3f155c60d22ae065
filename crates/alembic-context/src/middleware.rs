//! The memory middlewares of the tool pipeline and the per-loop state they share.
//!
//! One pipeline may serve many agent loops (and the MCP server and CLI, which have none). A
//! loop attaches its [`LoopMemory`] to the [`LoopDirectory`] under its caller id; the
//! middlewares find the loop of a call by `call.caller.id` and do nothing for callers without
//! one. Slots (fixed by alembic-tools' order contract):
//!
//! - **CacheCheck** (before, after SafetyGate): answers read-only calls from the session cache.
//! - **SubmitDedup** (before, so a duplicate is never written): refuses a submit whose title or
//!   code pattern was already submitted in this loop; records accepted submits in the loop's
//!   [`RunResults`] (after).
//! - **ObservationRecord** (after): the observation log of the loop's ActiveContext, and the
//!   session cache (store results of read-only calls; clear it after side effects).
//! - **TrackerSignal** (after): the exploration tracker's metrics; sets [`IsNew`].
//! - **TraceRecord** (after): the reasoning trace, with `is_new` from TrackerSignal.

use alembic_base::{Clock, lock};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use alembic_tools::{
    BeforeVerdict, CallResult, EffectClass, MetadataExtension, Middleware, MiddlewareError,
    MiddlewareSlot, PreparedCall, ToolMetadata, ToolOutput, async_trait,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::active::ScopeId;
use crate::coordinator::MemoryCoordinator;
use crate::exploration::ExplorationTracker;
use crate::observation::{ToolObservation, array_field, is_submit_tool, str_field};
use crate::run::RunResults;
use crate::session::{CacheKey, CachedResult, CandidateSummary, is_cacheable_tool};

/// The clock of the session cache's TTLs; tests pass a `ManualClock`.
pub type MillisClock = Arc<dyn Clock>;

/// Set by TrackerSignal: whether the call brought new information (read by TraceRecord).
/// Serialised as `"is_new"` in the call's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct IsNew(pub bool);

impl MetadataExtension for IsNew {
    const KEY: &'static str = "is_new";
}

impl IsNew {
    /// The flag in `meta`; false when TrackerSignal did not run.
    pub fn of(meta: &ToolMetadata) -> bool {
        meta.extensions.get::<IsNew>().is_some_and(|f| f.0)
    }
}

/// Set by SubmitDedup on an accepted submission. Serialised as `"is_submit"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct IsSubmit(pub bool);

impl MetadataExtension for IsSubmit {
    const KEY: &'static str = "is_submit";
}

impl IsSubmit {
    /// The flag in `meta`; false when SubmitDedup did not set it.
    pub fn of(meta: &ToolMetadata) -> bool {
        meta.extensions.get::<IsSubmit>().is_some_and(|f| f.0)
    }
}

/// Set by SubmitDedup when it refuses a duplicate: the warning the model sees instead of the
/// refusal. Serialised as `"dedup_message"`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct DedupMessage(pub String);

impl MetadataExtension for DedupMessage {
    const KEY: &'static str = "dedup_message";
    fn text_for_model(&self) -> Option<&str> {
        Some(&self.0)
    }
}

/// Titles and code-pattern fingerprints submitted in one loop.
#[derive(Debug, Default)]
struct SubmitLedger {
    titles: HashSet<String>,
    patterns: HashMap<String, String>,
    /// What each in-flight submit reserved, released again when the submit fails.
    reserved: HashMap<String, (String, Option<String>)>,
}

impl SubmitLedger {
    /// Why a submission titled `title` with fingerprint `fp` is a duplicate, and the rule.
    fn duplicate(
        &self,
        title: &str,
        norm: &str,
        fp: Option<&str>,
    ) -> Option<(String, &'static str)> {
        if !norm.is_empty() && self.titles.contains(norm) {
            return Some((
                format!(
                    "duplicate submission: a candidate titled \"{title}\" was already submitted in this run; submit something new or stop"
                ),
                "submit_dedup.title",
            ));
        }
        let first = self.patterns.get(fp?)?;
        Some((
            format!(
                "duplicate submission: the code pattern of \"{title}\" is the same as the already submitted \"{first}\""
            ),
            "submit_dedup.pattern",
        ))
    }
}

/// The memory state of one agent loop, shared by its middlewares and memory tools.
pub struct LoopMemory {
    pub coordinator: Arc<MemoryCoordinator>,
    pub scope: ScopeId,
    /// `None` for user chats (they have no exploration control).
    pub tracker: Option<Arc<Mutex<ExplorationTracker>>>,
    /// What the run submitted and collected (review_my_output, collect_scan_recipe).
    pub results: RunResults,
    project_root: PathBuf,
    clock: MillisClock,
    ledger: Mutex<SubmitLedger>,
    pending_keys: Mutex<HashMap<String, CacheKey>>,
}

impl std::fmt::Debug for LoopMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopMemory")
            .field("scope", &self.scope)
            .field("tracker", &self.tracker.is_some())
            .finish_non_exhaustive()
    }
}

impl LoopMemory {
    /// The memory of a loop working in `scope` (open it on the coordinator first).
    pub fn new(
        coordinator: Arc<MemoryCoordinator>,
        scope: ScopeId,
        tracker: Option<Arc<Mutex<ExplorationTracker>>>,
        project_root: impl Into<PathBuf>,
        clock: MillisClock,
    ) -> LoopMemory {
        LoopMemory {
            coordinator,
            scope,
            tracker,
            results: RunResults::default(),
            project_root: project_root.into(),
            clock,
            ledger: Mutex::new(SubmitLedger::default()),
            pending_keys: Mutex::new(HashMap::new()),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.now_ms()).unwrap_or(0)
    }

    /// Content hashes of the files a read call names (none for other tools). `None` when a
    /// named file cannot be read: such a call is not cached.
    fn file_hashes(&self, call: &PreparedCall) -> Option<Vec<(String, String)>> {
        if call.name() != "read_project_file" {
            return Some(Vec::new());
        }
        let mut paths: Vec<String> = str_field(&call.args, &["filePath", "path"])
            .map(str::to_string)
            .into_iter()
            .collect();
        if let Some(items) = array_field(&call.args, &["filePaths", "paths"]) {
            paths.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
        }
        // Through the guard, as the read itself goes: a link out, a FIFO or a device is not
        // hashed (the call is then not cached), never read.
        let guard = alembic_safety::PathGuard::new(&self.project_root).ok()?;
        paths
            .into_iter()
            .map(|p| {
                let bytes = guard.read(&p).ok()?;
                Some((p, hex::encode(Sha256::digest(&bytes))))
            })
            .collect()
    }
}

/// Loops by caller id. Install one per pipeline (also as a service, for the memory tools).
#[derive(Debug, Default)]
pub struct LoopDirectory {
    loops: Mutex<HashMap<String, Arc<LoopMemory>>>,
}

impl LoopDirectory {
    /// Routes calls of `caller_id` to `memory` until [`LoopDirectory::detach`].
    pub fn attach(&self, caller_id: impl Into<String>, memory: Arc<LoopMemory>) {
        lock(&self.loops).insert(caller_id.into(), memory);
    }

    pub fn detach(&self, caller_id: &str) -> Option<Arc<LoopMemory>> {
        lock(&self.loops).remove(caller_id)
    }

    pub fn get(&self, caller_id: &str) -> Option<Arc<LoopMemory>> {
        lock(&self.loops).get(caller_id).cloned()
    }
}

/// The five memory middlewares, sharing `directory`.
pub fn memory_middlewares(directory: Arc<LoopDirectory>) -> Vec<Arc<dyn Middleware>> {
    vec![
        Arc::new(CacheCheck(directory.clone())),
        Arc::new(SubmitDedup(directory.clone())),
        Arc::new(ObservationRecord(directory.clone())),
        Arc::new(TrackerSignal(directory.clone())),
        Arc::new(TraceRecord(directory)),
    ]
}

/// What the memory sees of a finished (or blocked) call.
fn observation(call: &PreparedCall, result: &CallResult) -> ToolObservation {
    match result {
        CallResult::Ok(out) => ToolObservation::ok(
            call.name(),
            call.args.clone(),
            out.data.clone(),
            out.text.clone(),
        ),
        CallResult::Failed { error, .. } => {
            ToolObservation::failed(call.name(), call.args.clone(), error.clone())
        }
    }
}

fn cacheable(call: &PreparedCall) -> bool {
    call.effect().is_side_effect_free() && is_cacheable_tool(call.name())
}

/// Serves read-only calls from the session cache.
#[derive(Debug)]
pub struct CacheCheck(pub Arc<LoopDirectory>);

#[async_trait]
impl Middleware for CacheCheck {
    fn name(&self) -> &str {
        "cache_check"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::CacheCheck
    }
    async fn before(
        &self,
        call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(BeforeVerdict::Continue);
        };
        let Some(session) = memory.coordinator.session() else {
            return Ok(BeforeVerdict::Continue);
        };
        if !cacheable(call) {
            return Ok(BeforeVerdict::Continue);
        }
        let Some(hashes) = memory.file_hashes(call) else {
            return Ok(BeforeVerdict::Continue);
        };
        let key = CacheKey::new(call.name(), &call.args, &hashes);
        let hit = lock(session).cached_result(&key, memory.now_ms());
        match hit {
            Some(r) => Ok(BeforeVerdict::Respond(ToolOutput::new(r.data, r.text))),
            None => {
                lock(&memory.pending_keys).insert(call.id.clone(), key);
                Ok(BeforeVerdict::Continue)
            }
        }
    }
}

/// Refuses duplicate submissions before they are written.
#[derive(Debug)]
pub struct SubmitDedup(pub Arc<LoopDirectory>);

/// Fingerprint of a code pattern: comments and whitespace removed, lower-cased, first 200
/// characters; `None` below 20 characters (too short to call two submissions the same).
pub fn pattern_fingerprint(code: &str) -> Option<String> {
    let mut out = String::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let line = if line.trim_start().starts_with('#') {
            ""
        } else {
            line
        };
        out.extend(
            line.chars()
                .filter(|c| !c.is_whitespace())
                .flat_map(char::to_lowercase),
        );
    }
    let fp: String = out.chars().take(200).collect();
    (fp.chars().count() >= 20).then_some(fp)
}

fn submit_pattern(args: &Value) -> Option<&str> {
    args.get("content")
        .and_then(|c| str_field(c, &["pattern", "code"]))
        .or_else(|| str_field(args, &["pattern", "code"]))
}

#[async_trait]
impl Middleware for SubmitDedup {
    fn name(&self) -> &str {
        "submit_dedup"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::SubmitDedup
    }
    async fn before(
        &self,
        call: &PreparedCall,
        meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        if !is_submit_tool(call.name()) {
            return Ok(BeforeVerdict::Continue);
        }
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(BeforeVerdict::Continue);
        };
        let title = str_field(&call.args, &["title", "name"])
            .unwrap_or("")
            .trim()
            .to_string();
        let norm = title.to_lowercase();
        let fp = submit_pattern(&call.args).and_then(pattern_fingerprint);
        let mut ledger = lock(&memory.ledger);
        let reason = ledger
            .duplicate(&title, &norm, fp.as_deref())
            .or_else(|| session_duplicate(&memory, &title, &norm));
        if let Some((reason, rule)) = reason {
            meta.extensions.insert(DedupMessage(format!("⚠ {reason}")));
            return Ok(BeforeVerdict::Block {
                reason,
                rule: rule.to_string(),
            });
        }
        if !norm.is_empty() {
            ledger.titles.insert(norm.clone());
        }
        if let Some(f) = &fp {
            ledger.patterns.insert(f.clone(), title.clone());
        }
        ledger.reserved.insert(call.id.clone(), (norm, fp));
        Ok(BeforeVerdict::Continue)
    }

    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(());
        };
        let mut ledger = lock(&memory.ledger);
        let Some((title, fp)) = ledger.reserved.remove(&call.id) else {
            return Ok(());
        };
        let accepted = match result {
            CallResult::Ok(out) => !matches!(
                str_field(&out.data, &["status"]),
                Some("rejected" | "error")
            ),
            CallResult::Failed { .. } => false,
        };
        if accepted {
            meta.extensions.insert(IsSubmit(true));
            if let Some(session) = memory.coordinator.session() {
                let submitted = CandidateSummary {
                    title: str_field(&call.args, &["title", "name"])
                        .unwrap_or("")
                        .trim()
                        .to_string(),
                    ..CandidateSummary::default()
                };
                lock(session).add_candidate(memory.scope.dimension(), submitted);
            }
            memory.results.record_submission(observation(call, result));
        } else {
            // A failed or rejected submission may be corrected and submitted again.
            ledger.titles.remove(&title);
            if let Some(f) = fp {
                ledger.patterns.remove(&f);
            }
        }
        Ok(())
    }
}

/// A title another dimension of the loop's bootstrap session already submitted: SubmitDedup
/// reaches across the dimensions of one session, not only across one loop's calls.
fn session_duplicate(
    memory: &LoopMemory,
    title: &str,
    norm: &str,
) -> Option<(String, &'static str)> {
    let session = memory.coordinator.session()?;
    if norm.is_empty() {
        return None;
    }
    let session = lock(session);
    let dim = session.dimension_with_candidate(norm)?;
    Some((
        format!(
            "duplicate submission: dimension \"{dim}\" of this bootstrap already submitted a candidate titled \"{title}\"; submit what this dimension adds, or stop"
        ),
        "submit_dedup.session",
    ))
}

/// Records the call in the observation log and the session cache.
#[derive(Debug)]
pub struct ObservationRecord(pub Arc<LoopDirectory>);

#[async_trait]
impl Middleware for ObservationRecord {
    fn name(&self) -> &str {
        "observation_record"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::ObservationRecord
    }
    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(());
        };
        let key = lock(&memory.pending_keys).remove(&call.id);
        if let (Some(session), CallResult::Ok(out)) = (memory.coordinator.session(), result) {
            let mut session = lock(session);
            let effect = call.effect();
            if matches!(
                effect,
                EffectClass::WritesProjectFiles | EffectClass::RunsCommands
            ) {
                session.invalidate_cache();
            } else if !effect.is_side_effect_free() {
                // Knowledge, memory and LLM calls change no file: reads of the project stay.
                session.invalidate_non_project_reads();
            } else if let (Some(key), false) = (key, meta.cache_hit) {
                let cached = CachedResult {
                    data: out.data.clone(),
                    text: out.text.clone(),
                };
                if effect == EffectClass::ReadsProjectFiles {
                    session.cache_project_read(key, cached, memory.now_ms());
                } else {
                    session.cache_result(key, cached, memory.now_ms());
                }
            }
        }
        let obs = observation(call, result);
        memory
            .coordinator
            .with_active(&memory.scope, |ac| ac.record_observation(obs))
            .map_err(|e| MiddlewareError(e.to_string()))
    }
}

/// Feeds the exploration tracker; sets [`IsNew`].
#[derive(Debug)]
pub struct TrackerSignal(pub Arc<LoopDirectory>);

#[async_trait]
impl Middleware for TrackerSignal {
    fn name(&self) -> &str {
        "tracker_signal"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::TrackerSignal
    }
    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(());
        };
        if let Some(tracker) = &memory.tracker {
            let is_new = lock(tracker).record_tool_call(&observation(call, result));
            meta.extensions.insert(IsNew(is_new));
        }
        if let (PLAN_TOOL, CallResult::Ok(out)) = (call.name(), result) {
            record_plan(&memory, &out.data)?;
        }
        Ok(())
    }
}

/// The tool whose validated plan becomes the loop's plan.
const PLAN_TOOL: &str = "plan_task";

/// Adopts a `plan_task` plan into the loop's working memory and tells its plan tracker, so
/// planning nudges follow the agent's own plan.
fn record_plan(memory: &LoopMemory, data: &Value) -> Result<(), MiddlewareError> {
    memory
        .coordinator
        .with_active(&memory.scope, |ac| {
            if ac.adopt_recorded_plan(data)
                && let Some(tracker) = &memory.tracker
            {
                lock(tracker).plan_recorded(ac);
            }
        })
        .map_err(|e| MiddlewareError(e.to_string()))
}

/// Appends the call to the reasoning trace of the loop's ActiveContext.
#[derive(Debug)]
pub struct TraceRecord(pub Arc<LoopDirectory>);

#[async_trait]
impl Middleware for TraceRecord {
    fn name(&self) -> &str {
        "trace_record"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::TraceRecord
    }
    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let Some(memory) = self.0.get(&call.caller.id) else {
            return Ok(());
        };
        let obs = observation(call, result);
        let is_new = IsNew::of(meta);
        memory
            .coordinator
            .with_active(&memory.scope, |ac| ac.record_action(&obs, is_new))
            .map_err(|e| MiddlewareError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_serialise_under_their_old_metadata_keys() {
        let mut meta = ToolMetadata::default();
        meta.extensions.insert(IsNew(true));
        meta.extensions.insert(DedupMessage("⚠ duplicate".into()));
        meta.extensions.insert(IsSubmit(false));
        let v = serde_json::to_value(&meta).unwrap();
        assert_eq!(
            (&v["is_new"], &v["dedup_message"], &v["is_submit"]),
            (
                &serde_json::json!(true),
                &serde_json::json!("⚠ duplicate"),
                &serde_json::json!(false)
            )
        );
        assert!((IsNew::of(&meta), IsSubmit::of(&meta)) == (true, false));
        assert!(!IsNew::of(&ToolMetadata::default()));
    }
    use pretty_assertions::assert_eq;

    #[test]
    fn fingerprints_ignore_comments_whitespace_and_case() {
        let a = pattern_fingerprint(
            "let client = APIClient.shared // the one client\nclient.send(request)",
        );
        let b = pattern_fingerprint("let  client = apiclient.shared\n\n  client.send( request )");
        assert_eq!(a, b);
        assert_eq!(pattern_fingerprint("x = 1"), None);
    }
}
